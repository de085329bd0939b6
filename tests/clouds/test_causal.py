"""Causal attention with an ALiBi slope and the lost-in-the-middle profile (docs/theory/particles.md §12):
the kinetic Green's function, its critical time, and the particle flow's linear response."""

import numpy as np
import pytest
from scipy.linalg import expm
from scipy.special import iv

from attnphys.clouds import causal_alibi_weights, causal_influence, critical_time, middle_profile
from attnphys.clouds._causal import causal_kernel
from attnphys.errors import InputError


def test_critical_time_agrees_with_the_published_script():
    """λ = 1, M = 8, 20 modes: the values printed by the authors' script (six decimals)."""
    got = critical_time([1.0, 2.0, 3.0], alibi=1.0, needle=8.0, modes=20)
    np.testing.assert_allclose(got, [2.457489, 0.600716, 0.174018], atol=5e-7)


def test_kernel_is_the_series_and_solves_the_discrete_volterra_equation():
    """ψ_c(y) = Σ c^{k+1} y^k/(k!(k+1)!) and, for N → ∞, N · [exp(a t W_N)]_{N,k} → g_{a}(t; s_k)."""
    from math import factorial

    c, y, lam = 1.7, 2.3, 1.5
    series = sum(c ** (k + 1) * y**k / (factorial(k) * factorial(k + 1)) for k in range(60))
    s = np.log1p(np.expm1(lam) / np.exp(y)) / lam  # Y_λ(s) = y
    coeff = lam * np.exp(lam * s) / np.expm1(lam)
    assert causal_kernel(c, s, lam) == pytest.approx(coeff * series, rel=1e-12)
    N, a, t = 1000, 2 * iv(1, 1.0), 1.3
    G = expm(a * t * causal_alibi_weights(N + 1, lam))[N, :N] * N
    sk = (np.arange(N) + 0.5) / N
    inner = (sk > 0.1) & (sk < 0.95)
    np.testing.assert_allclose(G[inner], causal_kernel(a * t, sk[inner], lam), rtol=3e-3)


def test_zero_slope_is_the_limit_of_small_slopes():
    s = np.linspace(0.05, 0.95, 7)
    np.testing.assert_allclose(causal_kernel(0.8, s, 1e-7), causal_kernel(0.8, s, 0.0), rtol=1e-6)


def test_profile_is_u_shaped_until_the_critical_time():
    ds = middle_profile(1.0, [0.5, 2.0, 2.4, 2.5, 4.0], positions=4000)
    tc = float(ds.critical_time)
    assert 2.4 < tc < 2.5
    assert ds.u_shaped.values.tolist() == [True, True, True, False, False]
    assert np.all(np.diff(ds.minimum_position.values[:3]) > 0)  # the lost middle moves toward the end


def test_weights_are_causal_and_stochastic():
    W = causal_alibi_weights(9, 2.0)
    assert np.all(np.triu(W) == 0)
    np.testing.assert_allclose(W[1:].sum(1), 1.0)
    assert np.all(np.diff(W[-1, :-1]) > 0)  # ALiBi: nearer tokens weigh more


@pytest.mark.slow
def test_particle_flow_follows_the_greens_function():
    """The linear response of the last position of 17 positions × 10 particles (jacfwd through the solver)
    is the kinetic prediction up to the O(1/N) discretisation."""
    ds = causal_influence(1.0, [0.5, 1.5], alibi=1.0, positions=16, particles=10, modes=3)
    assert float(ds.deviation) < 0.035
    # the prediction with a 10 % faster mode growth is further away than the tolerance
    bad = middle_profile(1.0, [0.55, 1.65], modes=3)
    assert float(bad.influence.interp(position=0.5).values[1]) > 1.04 * float(
        ds.influence.sel(position=0.5, method="nearest").values[1]
    )


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(beta=0.0), "beta"),
        (dict(alibi=-1.0), "alibi"),
        (dict(needle=0.0), "needle"),
        (dict(modes=0), "modes"),
    ],
)
def test_bad_arguments_name_the_field(kwargs, field):
    args = dict(beta=1.0, alibi=1.0, needle=8.0, modes=4) | kwargs
    with pytest.raises(InputError, match=field):
        critical_time(args.pop("beta"), **args)
    with pytest.raises(InputError, match="particles"):
        causal_influence(1.0, [1.0], particles=4, modes=4)
    with pytest.raises(InputError, match="times"):
        middle_profile(1.0, [-1.0])
