"""Kinetic-Ising mean-field methods against the exact enumeration of small networks and Monte Carlo
(theory: docs/theory/fluctuations.md §6)."""

import numpy as np
import pytest

from attnphys.dynamics import (
    KINETIC_ISING_METHODS,
    asymmetric_sk,
    kinetic_ising_errors,
    kinetic_ising_exact,
    kinetic_ising_mean_field,
    kinetic_ising_sample,
)
from attnphys.errors import InputError


@pytest.mark.slow
def test_without_couplings_every_method_is_exact():
    H = np.linspace(-0.8, 0.6, 5)
    ex = kinetic_ising_exact(H, np.zeros((5, 5)), steps=3)
    np.testing.assert_allclose(ex.m.values, np.tanh(H)[None].repeat(3, 0), atol=1e-14)
    for method in KINETIC_ISING_METHODS:
        e = kinetic_ising_errors(kinetic_ising_mean_field(H, np.zeros((5, 5)), steps=3, method=method), ex)
        assert max(e.attrs.values()) < 1e-28, (method, e.attrs)


@pytest.mark.slow
def test_the_expansions_gain_orders_in_the_couplings_against_the_exact_solution():
    # 10 spins, asymmetric Gaussian couplings scaled by eps: exact moments by enumerating 2^10 states
    H, J0 = asymmetric_sk(10, beta=1.0, j0=0.0, js=1.0, seed=4)
    err = {}
    for eps in (0.5, 0.25):
        ex = kinetic_ising_exact(H, eps * J0, steps=6)
        err[eps] = {
            m: kinetic_ising_errors(kinetic_ising_mean_field(H, eps * J0, steps=6, method=m), ex).attrs
            for m in KINETIC_ISING_METHODS
        }
    # the squared error of m falls like eps^(2k) for an error O(J^k): naive k ~ 2, TAP (Onsager term) k >= 3
    order = {m: np.log2(err[0.5][m]["error_m"] / err[0.25][m]["error_m"]) / 2 for m in KINETIC_ISING_METHODS}
    assert order["naive"] < 2.2 and order["tap"] > order["naive"] + 0.75, order
    assert order["plefka_t"] > order["naive"] + 0.75 and order["plefka2_t"] > order["naive"] + 0.75, order
    for eps in err:  # the pairwise reference captures correlations best
        for k in ("error_C", "error_D"):
            assert err[eps]["plefka2_t"][k] < min(err[eps][m][k] for m in ("naive", "tap", "plefka_t")), (eps, k)


@pytest.mark.slow
def test_monte_carlo_moments_agree_with_the_exact_enumeration():
    H, J = asymmetric_sk(6, beta=1.0, js=0.5, seed=1)
    ex = kinetic_ising_exact(H, J, steps=4)
    mc = kinetic_ising_sample(H, J, steps=4, samples=20_000, seed=3, batch=5000)
    z = np.abs(mc.m.values - ex.m.values) / np.maximum(mc.m_se.values, 1e-12)
    assert np.max(z) < 5, np.max(z)
    # covariances: standard error about 1/sqrt(20000) = 0.007
    assert np.max(np.abs(mc.C.values - ex.C.values)) < 0.04
    assert np.max(np.abs(mc.D.values - ex.D.values)) < 0.04


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda: kinetic_ising_mean_field(np.zeros(3), np.zeros((3, 2)), steps=2), "J"),
        (lambda: kinetic_ising_mean_field(np.zeros(3), np.zeros((3, 3)), steps=0), "steps"),
        (lambda: kinetic_ising_mean_field(np.zeros(3), np.zeros((3, 3)), steps=2, method="bethe"), "method"),
        (lambda: kinetic_ising_mean_field(np.zeros(3), np.zeros((3, 3)), steps=2, m0=[2, 0, 0]), "m0"),
        (lambda: kinetic_ising_exact(np.zeros(15), np.zeros((15, 15)), steps=1), "H"),
        (lambda: kinetic_ising_sample(np.zeros(3), np.zeros((3, 3)), steps=2, samples=1), "samples"),
        (lambda: kinetic_ising_sample(np.zeros(3), np.zeros((3, 3)), steps=2, samples=9, s0=[1, 0, 1]), "s0"),
    ],
)
def test_bad_inputs_are_named(call, named):
    with pytest.raises(InputError, match=rf"^{named}:"):
        call()
