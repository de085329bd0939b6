"""Lyapunov exponents against maps whose exponents are known (theory: docs/theory/dynamics.md §2)."""

import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.dynamics._lyapunov import gram_schmidt, log_abs_det_average, lyapunov, scaled_norm, sorted_exponents
from attnphys.dynamics.maps import HENON, LINEAR, LOGISTIC, FunctionMap, autonomous

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


@pytest.mark.slow
@pytest.mark.parametrize("name,m,x0,p,steps", MAPS, ids=[m[0] for m in MAPS])
def test_leading_k_equals_top_of_full_spectrum(name, m, x0, p, steps):
    D = x0.shape[0]
    full = sorted_exponents(lyapunov(m, x0, None, p, steps=steps, align=200).exponents)
    for k in range(1, D):
        top = sorted_exponents(lyapunov(m, x0, None, p, steps=steps, k=k, align=200).exponents)
        np.testing.assert_allclose(top, full[:k], atol=2e-3)


@pytest.mark.slow
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
    a = lyapunov(FunctionMap(step=f, jacobian=jac), x0, None, p, steps=5000)
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


# ---------------------------------------------------------------- hardening (theory: dynamics.md §2.2–2.3)


def test_nan_start_raises_with_step_and_params():
    """A NaN state must surface: an error naming the step and the parameters, not finite exponents."""
    from attnphys.errors import NonFiniteError

    with pytest.raises(NonFiniteError, match=r"step 0 .*params=\[1.4,0.3\]") as e:
        lyapunov(HENON, jnp.array([jnp.nan, 0.1]), None, jnp.array([1.4, 0.3]), steps=100)
    assert e.value.step == 0
    r = lyapunov(HENON, jnp.array([jnp.nan, 0.1]), None, jnp.array([1.4, 0.3]), steps=100, check=False)
    assert int(r.nonfinite) == 0 and np.all(np.isnan(r.exponents))
    assert not np.any(r.zero_hits)  # a NaN column is not an annihilated one


def test_overflowing_orbit_reports_its_first_nonfinite_step():
    """x ↦ x², started at 10: x_t = 10^(2^t) overflows float64 (1.8e308) after the step t = 8 → 9."""
    from attnphys.errors import NonFiniteError

    sq = autonomous(lambda x, p: x * x)
    r = lyapunov(sq, jnp.array([10.0]), None, None, steps=20, check=False)
    assert int(r.nonfinite) == 8
    with pytest.raises(NonFiniteError):
        lyapunov(sq, jnp.array([10.0]), None, None, steps=20)


def test_nonfinite_is_reported_inside_jit_without_raising():
    import jax

    f = jax.jit(lambda x: lyapunov(HENON, x, None, jnp.array([1.4, 0.3]), steps=10).nonfinite)
    assert int(f(jnp.array([jnp.nan, 0.0]))) == 0
    assert int(f(jnp.array([0.1, 0.1]))) == -1


def test_scaled_norm_does_not_underflow():
    """‖(1e-200, 1e-200)‖ = √2·1e-200: sqrt(v·v) would give 0 (1e-400 underflows)."""
    V = jnp.array([[1e-200, 0.0], [1e-200, 1e-300]])
    Q, r, hit = gram_schmidt(V)
    assert float(r[0]) == pytest.approx(np.sqrt(2) * 1e-200, rel=1e-14)
    assert float(r[1]) == pytest.approx(1e-300 / np.sqrt(2), rel=1e-12)
    assert not hit.any()
    np.testing.assert_allclose(Q.T @ Q, np.eye(2), atol=1e-14)
    assert float(scaled_norm(jnp.array([3e-170, 4e-170]))) == pytest.approx(5e-170, rel=1e-15)
    assert float(scaled_norm(jnp.zeros(3))) == 0.0
    assert np.isnan(float(scaled_norm(jnp.array([1.0, jnp.nan]))))


def test_tiny_exponents_are_exact_below_the_old_underflow():
    """diag(1e-170, 1e-175): with Δ = 1 every |R_ii| is below 1e-162 (where sqrt(v·v) underflows)."""
    d = jnp.array([1e-170, 1e-175])
    r = lyapunov(LINEAR, jnp.ones(2), None, jnp.diag(d), steps=200, init="identity")
    np.testing.assert_allclose(r.exponents, np.log(np.asarray(d)), rtol=1e-14)
    assert not np.any(r.zero_hits)


def test_dependent_column_gives_minus_infinity_and_is_counted():
    """[[1, 1], [0, 0]] maps everything onto e1: the second column is exactly dependent after one step."""
    V = jnp.array([[1.0, 1.0], [0.0, 0.0]])
    Q, r, hit = gram_schmidt(V)
    assert hit.tolist() == [False, True] and float(r[1]) == 0.0
    A = jnp.array([[1.0, 1.0], [0.0, 0.0]])
    res = lyapunov(LINEAR, jnp.ones(2), None, A, steps=200, init="identity")
    assert np.isneginf(float(res.exponents[1])) and float(res.zero_hits[1]) == 200
    assert np.isfinite(float(res.exponents[0]))
    assert int(res.nonfinite) == -1  # −∞ from an annihilation is not a non-finite state


def test_annihilated_direction_is_minus_infinity():
    """A = diag(2, 0): the second direction is killed at every step → −∞ (not log(tiny)/T ≈ −708/T)."""
    res = lyapunov(LINEAR, jnp.zeros(2), None, jnp.diag(jnp.array([2.0, 0.0])), steps=200, init="identity")
    assert float(res.exponents[0]) == pytest.approx(np.log(2.0), abs=1e-14)
    assert np.isneginf(float(res.exponents[1])) and float(res.zero_hits[1]) == 200


@pytest.mark.parametrize("every", [7, 50])
def test_long_intervals_do_not_overflow(every):
    """diag(1e30, 1e-30): Δ = 50 would overflow (1e1500) without the per-step rescaling."""
    d = jnp.array([1e30, 1e-30])
    r = lyapunov(LINEAR, jnp.zeros(2), None, jnp.diag(d), steps=200, reortho_every=every, init="identity")
    np.testing.assert_allclose(r.exponents, np.log(np.asarray(d)), rtol=1e-13)
    assert not np.any(r.unreliable)


@pytest.mark.slow
def test_rescale_divides_by_exact_powers_of_two():
    """Columns spanning 10^±300: each is divided by the power of two of its max-abs entry, bit for bit
    what ldexp gives, with the logarithm of the divisor accumulated; a column at the smallest normal
    number is scaled to 1/2 (2^{-e} = 2^{1021} stays finite), a non-finite one is left as it is."""
    from attnphys.dynamics._lyapunov import _rescale

    rng = np.random.default_rng(3)
    Q = rng.normal(size=(12, 40)) * 10.0 ** rng.uniform(-300, 300, size=40)
    Q[:, 0] = 0.0
    Q[:, 1] = np.inf
    Q2, L = _rescale(jnp.asarray(Q), jnp.zeros(40))
    Q2, L = np.asarray(Q2), np.asarray(L)
    e = np.frexp(np.max(np.abs(Q), axis=0))[1]
    np.testing.assert_array_equal(Q2[:, 2:], np.ldexp(Q[:, 2:], -e[None, 2:]))
    np.testing.assert_allclose(L[2:], e[2:] * np.log(2.0), rtol=1e-15)
    assert np.all((np.max(np.abs(Q2[:, 2:]), axis=0) >= 0.5) & (np.max(np.abs(Q2[:, 2:]), axis=0) < 1))
    assert np.all(Q2[:, 0] == 0) and L[0] == 0 and np.all(np.isinf(Q2[:, 1])) and L[1] == 0
    tiny, Lt = _rescale(jnp.full((3, 1), 2.0**-1022), jnp.zeros(1))
    assert np.all(np.asarray(tiny) == 0.5) and float(Lt[0]) == pytest.approx(-1021 * np.log(2.0), rel=1e-15)


@pytest.mark.slow
def test_too_long_interval_is_flagged():
    """Hénon: Δ ≤ 10 agrees with Δ = 1 and is not flagged; Δ ≥ the window makes λ₂ garbage, flagged."""
    x0, p = jnp.array([0.1, 0.1]), jnp.array([1.4, 0.3])
    ref = lyapunov(HENON, x0, None, p, steps=60_000, align=500)
    ok = lyapunov(HENON, x0, None, p, steps=60_000, align=500, reortho_every=10)
    np.testing.assert_allclose(ok.exponents, ref.exponents, atol=1e-9)
    assert not np.any(ok.unreliable) and not np.any(ref.unreliable)
    bad = lyapunov(HENON, x0, None, p, steps=60_000, align=500, reortho_every=60_000)
    assert float(bad.exponents[1]) > 0  # the failure the flag is for
    assert bool(bad.unreliable[1]) and not bool(bad.unreliable[0])
    assert float(bad.exponents[0]) == pytest.approx(float(ref.exponents[0]), abs=1e-9)


def test_random_is_the_default_initial_vectors():
    """diag(0.5, 2), k = 1: the identity start stays on e1 (λ = ln 0.5); the default finds ln 2."""
    A = jnp.diag(jnp.array([0.5, 2.0]))
    default = lyapunov(LINEAR, jnp.zeros(2), None, A, steps=200, k=1, align=100)
    assert float(default.exponents[0]) == pytest.approx(np.log(2.0), abs=1e-12)
    ident = lyapunov(LINEAR, jnp.zeros(2), None, A, steps=200, k=1, init="identity")
    assert float(ident.exponents[0]) == pytest.approx(np.log(0.5), abs=1e-12)


def test_single_precision_is_warned_about():
    from attnphys.dynamics.checks import warn_if_single_precision
    from attnphys.errors import PrecisionWarning

    with pytest.warns(PrecisionWarning, match="configure"):
        warn_if_single_precision(np.zeros(3, np.float32))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_single_precision(np.zeros(3))
