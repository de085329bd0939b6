"""Lyapunov exponents against maps whose exponents are known (spec dmft.md §5)."""

import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.dynamics.lyapunov import gram_schmidt, log_abs_det_average, lyapunov, sorted_exponents
from attnphys.dynamics.maps import HENON, LINEAR, LOGISTIC, Map

# (name, map, x0, params, steps): every map with a full spectrum we check the generic properties on
MAPS = [
    ("henon", HENON, jnp.array([0.1, 0.1]), jnp.array([1.4, 0.3]), 50_000),
    ("logistic", LOGISTIC, jnp.array([0.3]), jnp.asarray(4.0), 50_000),
    ("linear", LINEAR, jnp.array([1.0, -0.5, 0.25]), jnp.diag(jnp.array([1.5, 0.5, -0.2])), 200),
]


def test_henon_known_exponents():
    r = lyapunov(HENON, jnp.array([0.1, 0.1]), None, jnp.array([1.4, 0.3]), steps=200_000, align=1000)
    lam = sorted_exponents(r.exponents)
    assert lam[0] == pytest.approx(0.419, abs=3e-3)
    assert lam[1] == pytest.approx(-1.623, abs=3e-3)


def test_logistic_r4_is_ln2():
    r = lyapunov(LOGISTIC, jnp.array([0.3]), None, jnp.asarray(4.0), steps=200_000, align=100)
    assert float(r.exponents[0]) == pytest.approx(np.log(2.0), abs=5e-3)


@pytest.mark.parametrize("init", ["identity", "random"])
def test_diagonal_linear_map_exact(init):
    d = jnp.array([2.0, 0.7, -0.3, 0.05])
    # random vectors first rotate onto the eigenbasis (error ∝ 0.35^t): align them, then count
    r = lyapunov(LINEAR, jnp.ones(4), None, jnp.diag(d), steps=300, init=init, align=0 if init == "identity" else 200)
    np.testing.assert_allclose(sorted_exponents(r.exponents), np.sort(np.log(np.abs(d)))[::-1], rtol=0, atol=1e-12)


@pytest.mark.parametrize("name,m,x0,p,steps", MAPS, ids=[m[0] for m in MAPS])
def test_sum_rule(name, m, x0, p, steps):
    """Σλ_i = ⟨log|det J_t|⟩ along the same orbit."""
    r = lyapunov(m, x0, None, p, steps=steps)
    assert float(jnp.sum(r.exponents)) == pytest.approx(log_abs_det_average(m, x0, None, p, steps), abs=1e-10)


@pytest.mark.parametrize("name,m,x0,p,steps", MAPS, ids=[m[0] for m in MAPS])
def test_leading_k_equals_top_of_full_spectrum(name, m, x0, p, steps):
    D = x0.shape[0]
    full = sorted_exponents(lyapunov(m, x0, None, p, steps=steps, align=200).exponents)
    for k in range(1, D):
        top = sorted_exponents(lyapunov(m, x0, None, p, steps=steps, k=k, align=200).exponents)
        np.testing.assert_allclose(top, full[:k], atol=2e-3)


def test_reorthonormalising_less_often_gives_the_same_exponents():
    r1 = lyapunov(HENON, jnp.array([0.1, 0.1]), None, jnp.array([1.4, 0.3]), steps=60_000, align=500)
    r5 = lyapunov(HENON, jnp.array([0.1, 0.1]), None, jnp.array([1.4, 0.3]), steps=60_000, align=500, reortho_every=5)
    np.testing.assert_allclose(r1.exponents, r5.exponents, atol=1e-9)


def test_history_converges_to_final_estimate():
    r = lyapunov(HENON, jnp.array([0.1, 0.1]), None, jnp.array([1.4, 0.3]), steps=20_000, history_every=1000)
    assert r.history.shape == (20, 2)
    np.testing.assert_allclose(r.history[-1], r.exponents, rtol=1e-12)
    assert abs(float(r.history[-1, 0] - r.history[-2, 0])) < abs(float(r.history[1, 0] - r.history[0, 0])) + 1e-3


def test_analytic_jacobian_equals_jvp():
    def f(x, aux, p):
        return HENON.step(x, aux, p)

    def jac(x, aux, p):
        return jnp.array([[-2 * p[0] * x[0], 1.0], [p[1], 0.0]])

    x0, p = jnp.array([0.1, 0.1]), jnp.array([1.4, 0.3])
    a = lyapunov(Map(step=f, jacobian=jac), x0, None, p, steps=5000)
    b = lyapunov(HENON, x0, None, p, steps=5000)
    np.testing.assert_allclose(a.exponents, b.exponents, atol=1e-12)


def test_gram_schmidt_orthonormal_and_annihilated_columns():
    rng = np.random.default_rng(3)
    V = jnp.asarray(rng.normal(size=(6, 4)))
    Q, r, hit = gram_schmidt(V)
    np.testing.assert_allclose(Q.T @ Q, np.eye(4), atol=1e-13)
    np.testing.assert_allclose(np.abs(np.linalg.qr(np.asarray(V))[1].diagonal()), r, rtol=1e-12)
    assert not hit.any()
    V0 = V.at[:, 2].set(0.0)
    Q, r, hit = gram_schmidt(V0)
    np.testing.assert_allclose(Q.T @ Q, np.eye(4), atol=1e-13)
    assert hit.tolist() == [False, False, True, False]
    assert float(r[2]) == np.finfo(np.float64).tiny


def test_invalid_k():
    with pytest.raises(ValueError, match="k must be"):
        lyapunov(HENON, jnp.array([0.1, 0.1]), None, jnp.array([1.4, 0.3]), steps=10, k=3)
