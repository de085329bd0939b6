"""Chaos indicators against known answers (theory: docs/theory/dynamics.md §11): the mean finite-time exponent of
the logistic map at r = 4 is ln 2; SALI/GALI of the standard map and of two coupled standard maps follow
exponential laws (rates = differences of Lyapunov exponents) on chaotic orbits and the power laws t^{−2(j−N)} on
regular ones; the weighted Birkhoff average of a rotation reaches the exact mean to round-off; the
recurrence-time entropy is 0 on periodic orbits and positive on chaotic ones."""

import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import i0

from attnphys.dynamics import (
    alignment_indices,
    autonomous,
    bump_weight,
    finite_time_lyapunov,
    local_lyapunov_map,
    recurrence_time_entropy,
    weighted_birkhoff,
)
from attnphys.dynamics.maps import HENON, LOGISTIC, ROTATION
from attnphys.errors import InputError

TWO_PI = 2 * np.pi


def _standard(x, K):
    """Chirikov's standard map on the torus: p' = p + K sin θ, θ' = θ + p'."""
    p = x[1] + K * jnp.sin(x[0])
    return jnp.stack([jnp.mod(x[0] + p, TWO_PI), jnp.mod(p + np.pi, TWO_PI) - np.pi])


def _coupled(x, p):
    """Two standard maps coupled through the potential −β cos(θ1 − θ2) (symplectic, 4-D); p = (K1, K2, β)."""
    th, mom = x[:2], x[2:]
    force = jnp.stack([p[0] * jnp.sin(th[0]), p[1] * jnp.sin(th[1])]) + p[2] * jnp.sin(th[0] - th[1]) * jnp.array(
        [1.0, -1.0]
    )
    mom = mom + force
    return jnp.concatenate([jnp.mod(th + mom, TWO_PI), mom])


STANDARD = autonomous(_standard)
COUPLED = autonomous(_coupled)


# -- finite-time exponents ------------------------------------------------------------------------------------


def test_ftle_mean_logistic_r4_is_ln2():
    ds = finite_time_lyapunov(
        LOGISTIC, jnp.linspace(0.1, 0.9, 8)[:, None], None, jnp.asarray(4.0), window=100, windows=100, transient=100
    )
    assert ds["ftle"].shape == (8, 100, 1)
    assert float(ds["ftle"].mean()) == pytest.approx(np.log(2.0), abs=3e-3)
    # the distribution: r = 4 is conjugate to the tent map by h(y) = sin²(πy/2), so log|f'| = ln 2 + g(Ty) − g(y),
    # g = ln|h'|, and λ_τ = ln 2 + (g(y_τ) − g(y_0))/τ: the spread falls as 1/τ (not 1/√τ), with
    # std(λ_τ) = sqrt(2 var ln|sin πy|)/τ = π/(√6 τ) for y uniform
    spread = float(np.sqrt((ds["std"].values ** 2).mean())) * 100
    assert spread == pytest.approx(np.pi / np.sqrt(6), rel=0.15)


def test_ftle_windows_add_up_to_benettin():
    """The windows' mean is the Benettin estimate over all the steps (Hénon: λ ≈ 0.419, −1.623)."""
    ds = finite_time_lyapunov(
        HENON, jnp.array([0.1, 0.1]), None, jnp.array([1.4, 0.3]), window=500, windows=60, transient=100, exponents=2
    )
    np.testing.assert_allclose(ds["mean"].values[0], [0.419, -1.623], atol=0.02)
    # the sum rule holds window by window: λ1 + λ2 = ln b exactly
    np.testing.assert_allclose(ds["ftle"].values[0].sum(axis=-1), np.log(0.3), atol=1e-12)


@pytest.mark.slow
def test_local_lyapunov_map_grid():
    """Rotation: every start has exponent 0; the grid is labelled by the components it varies."""
    ds = local_lyapunov_map(
        ROTATION,
        jnp.asarray(0.1234),
        axes={0: np.linspace(-1, 1, 3), "x1": np.linspace(0.1, 1, 4)},
        base=jnp.zeros(2),
        steps=50,
        exponents=2,
    )
    assert ds["ftle"].dims == ("x0", "x1", "exponent") and ds["ftle"].shape == (3, 4, 2)
    np.testing.assert_allclose(ds["ftle"].values, 0.0, atol=1e-12)
    lm = local_lyapunov_map(
        STANDARD, jnp.asarray(6.0), axes={1: np.linspace(-3, 3, 5)}, base=jnp.array([1.0, 0.0]), steps=300
    )
    assert np.all(lm["ftle"].values > 0.8)  # the sea of K = 6 (λ1 ≈ 1.13)


# -- SALI, GALI -----------------------------------------------------------------------------------------------


def test_gali2_chaotic_decays_at_twice_lambda1():
    """Standard map, K = 6: GALI_2 ~ exp(−(λ1 − λ2) t) = exp(−2 λ1 t) (area preserving), λ1 ≈ 1.13."""
    starts = jnp.stack([jnp.linspace(0.2, 6.0, 16), jnp.linspace(-3.0, 3.0, 16)], axis=1)
    lam = finite_time_lyapunov(STANDARD, starts[:1], None, jnp.asarray(6.0), window=20_000, align=100, exponents=2)
    lam1, lam2 = lam["mean"].values[0]
    ds = alignment_indices(STANDARD, starts, None, jnp.asarray(6.0), steps=10)
    logg = np.log(ds["gali"].values[:, :, 0]).mean(axis=0)
    rate = -np.polyfit(ds["time"].values[2:], logg[2:], 1)[0]
    assert rate == pytest.approx(lam1 - lam2, rel=0.1)
    # in two dimensions SALI = 2 sin(φ/2) and GALI_2 = sin φ for the angle φ between the vectors: equal as φ → 0
    sali, gali = ds["sali"].values[:, 2:], ds["gali"].values[:, 2:, 0]
    np.testing.assert_allclose(sali, gali, rtol=1e-2)


def test_gali2_regular_standard_map_power_law():
    """K = 0.5, a rotational torus (N = 1): GALI_2 ~ t^{−2}."""
    ds = alignment_indices(STANDARD, jnp.array([0.5, 1.0]), None, jnp.asarray(0.5), steps=10_000, every=10)
    g, t = ds["gali"].values[0, :, 0], ds["time"].values
    assert np.polyfit(np.log(t[100:]), np.log(g[100:]), 1)[0] == pytest.approx(-2.0, abs=0.1)


@pytest.mark.slow
def test_gali_coupled_standard_maps_regular_and_chaotic():
    """4-D symplectic map (N = 2). Regular (weak kicks): GALI_2 ~ const, GALI_3 ~ t^{−2}, GALI_4 ~ t^{−4}, SALI
    bounded away from 0. Chaotic (strong kicks): SALI and every GALI fall to round-off within a few hundred steps."""
    reg = alignment_indices(
        COUPLED, jnp.array([0.5, 1.0, 0.7, 1.3]), None, jnp.array([0.05, 0.07, 0.001]), steps=20_000, every=20
    )
    t = reg["time"].values
    late = t > 2000
    slopes = [np.polyfit(np.log(t[late]), np.log(reg["gali"].values[0, late, j]), 1)[0] for j in range(3)]
    assert slopes[0] == pytest.approx(0.0, abs=0.15)
    assert slopes[1] == pytest.approx(-2.0, abs=0.2)
    assert slopes[2] == pytest.approx(-4.0, abs=0.3)
    assert reg["sali"].values[0, late].min() > 1e-3
    ch = alignment_indices(
        COUPLED, jnp.array([0.5, 1.0, 0.7, 1.3]), None, jnp.array([3.0, 3.5, 0.5]), steps=400, every=4
    )
    assert ch["sali"].values[0, -1] < 1e-12
    assert np.all(ch["gali"].values[0, -1] < 1e-12)


# -- weighted Birkhoff averages -------------------------------------------------------------------------------


def test_weighted_birkhoff_rotation_to_round_off():
    """Rotation by the golden angle of (1, 0), f = exp(x): the exact mean over the circle is I0(1)."""
    ds = weighted_birkhoff(
        ROTATION,
        jnp.array([1.0, 0.0]),
        None,
        jnp.asarray((np.sqrt(5) - 1) / 2),
        n=4000,
        observable=lambda x, a, p: jnp.exp(x[0]),
    )
    assert abs(float(ds["average"].values[0, 0]) - i0(1.0)) < 1e-13
    assert abs(float(ds["plain"].values[0, 0]) - i0(1.0)) > 1e-7  # the plain mean is only ~1/N accurate
    assert float(ds["digits"].values[0]) > 13


def test_weighted_birkhoff_digits_separate_chaos():
    chaos = weighted_birkhoff(LOGISTIC, jnp.array([0.3]), None, jnp.asarray(4.0), n=2000, transient=100)
    assert float(chaos["digits"].values[0]) < 5
    # standard map K = 0.5, two rotational tori; a smooth observable of the torus (θ is taken mod 2π)
    reg = weighted_birkhoff(
        STANDARD,
        jnp.array([[0.5, 1.0], [0.0, 2.5]]),
        None,
        jnp.asarray(0.5),
        n=4000,
        observable=lambda x, a, p: jnp.stack([jnp.cos(x[0]), jnp.sin(x[0]), x[1]]),
    )
    assert np.all(reg["digits"].values > 11)


def test_bump_weight():
    s = jnp.array([-0.5, 0.0, 0.5, 1.0, 2.0])
    np.testing.assert_allclose(bump_weight(s), [0.0, 0.0, np.exp(-4.0), 0.0, 0.0], rtol=1e-15)


# -- recurrence-time entropy ----------------------------------------------------------------------------------


@pytest.mark.parametrize("r,period", [(3.2, 2), (3.5, 4), (3.83, 3)])
def test_rte_zero_on_periodic_orbits(r, period):
    ds = recurrence_time_entropy(LOGISTIC, jnp.array([[0.3], [0.6]]), None, jnp.asarray(r), n=400)
    np.testing.assert_array_equal(ds["entropy"].values, 0.0)
    np.testing.assert_allclose(ds["mean_time"].values, period)
    assert np.all(ds["lines"].values > 0)


def test_rte_positive_on_chaos():
    ds = recurrence_time_entropy(LOGISTIC, jnp.array([0.3]), None, jnp.asarray(4.0), n=600)
    assert float(ds["entropy"].values[0]) > 2.0
    h = recurrence_time_entropy(HENON, jnp.array([0.1, 0.1]), None, jnp.array([1.4, 0.3]), n=600)
    assert float(h["entropy"].values[0]) > 2.0


# -- arguments ------------------------------------------------------------------------------------------------


def test_bad_arguments_are_named():
    p = jnp.asarray(4.0)
    x = jnp.array([0.3])
    with pytest.raises(InputError, match="window"):
        finite_time_lyapunov(LOGISTIC, x, None, p, window=0)
    with pytest.raises(InputError, match="exponents"):
        finite_time_lyapunov(LOGISTIC, x, None, p, window=5, exponents=2)
    with pytest.raises(InputError, match="vectors"):
        alignment_indices(LOGISTIC, x, None, p, steps=5)
    with pytest.raises(InputError, match="x0"):
        weighted_birkhoff(LOGISTIC, jnp.zeros((2, 2, 1)), None, p, n=10)
    with pytest.raises(InputError, match="threshold"):
        recurrence_time_entropy(LOGISTIC, x, None, p, threshold=-1.0)
    with pytest.raises(InputError, match="axes"):
        local_lyapunov_map(LOGISTIC, p, axes={3: [0.1]}, base=x, steps=5)
    with pytest.raises(InputError, match="m"):
        weighted_birkhoff("logistic", x, None, p, n=10)  # type: ignore[arg-type]


def test_divergence_is_reported_with_its_step():
    """The logistic map at r = 5 sends x = 0.3 to −∞ within a few steps: every indicator says so, naming a step."""
    from attnphys.errors import NonFiniteError

    x, p = jnp.array([[0.5], [0.3]]), jnp.asarray(5.0)
    for run in (
        lambda: finite_time_lyapunov(LOGISTIC, x, None, p, window=10, windows=5),
        lambda: weighted_birkhoff(LOGISTIC, x, None, p, n=20),
        lambda: recurrence_time_entropy(LOGISTIC, x, None, p, n=50, transient=0),
    ):
        with pytest.raises(NonFiniteError, match="step"):
            run()
    with pytest.raises(NonFiniteError, match="step"):
        alignment_indices(HENON, jnp.array([3.0, 3.0]), None, jnp.array([1.4, 0.3]), steps=40)
