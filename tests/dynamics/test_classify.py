"""Attractor classification on maps whose regimes are known."""

import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.dynamics.classify import REGIMES, classify, detect_period, regime_names, zero_one_test
from attnphys.dynamics.maps import LOGISTIC, ROTATION
from attnphys.dynamics.orbits import OrbitSpec, orbit_sweep

SPEC = OrbitSpec(steps=20_000, transient=5_000, k=1, align=1000, n_orbit=2000)


def _logistic(rs):
    B = len(rs)
    return orbit_sweep(LOGISTIC, SPEC, jnp.full((B, 1), 0.3), jnp.zeros(B), jnp.asarray(rs))


@pytest.mark.parametrize("r,regime,period", [(2.8, "fixed_point", 1), (3.2, "periodic", 2), (3.5, "periodic", 4),
                                             (3.83, "periodic", 3), (4.0, "chaotic", 0)])
def test_logistic_regimes(r, regime, period):
    out = _logistic([r])
    ev = classify(np.asarray(out["orbit"]), np.asarray(out["exponents"]))
    assert regime_names(ev["regime"])[0] == regime
    assert ev["period"][0] == period
    assert ev["agree"][0]
    if regime == "chaotic":
        assert ev["K"][0] > 0.9 and ev["lambda1"][0] == pytest.approx(np.log(2), abs=0.02)
    else:
        assert ev["lambda1"][0] < 0


def test_irrational_rotation_is_quasi_periodic():
    omega = (np.sqrt(5) - 1) / 2
    spec = OrbitSpec(steps=20_000, transient=100, k=2, n_orbit=2000)
    out = orbit_sweep(ROTATION, spec, jnp.array([[1.0, 0.0]]), jnp.zeros(1), jnp.asarray([omega]))
    ev = classify(np.asarray(out["orbit"]), np.asarray(out["exponents"]))
    assert regime_names(ev["regime"])[0] == "quasi_periodic"
    assert ev["period"][0] == 0 and abs(ev["lambda1"][0]) < 1e-10
    assert ev["K"][0] < 0.2 and ev["agree"][0]


def test_rational_rotation_is_periodic():
    spec = OrbitSpec(steps=4000, transient=0, k=2, n_orbit=1000)
    out = orbit_sweep(ROTATION, spec, jnp.array([[1.0, 0.0]]), jnp.zeros(1), jnp.asarray([2 / 7]))
    ev = classify(np.asarray(out["orbit"]), np.asarray(out["exponents"]))
    assert regime_names(ev["regime"])[0] == "periodic" and ev["period"][0] == 7


def test_divergent_and_nonfinite():
    orbit = np.ones((3, 100, 2))
    orbit[0, 50:] = np.nan
    orbit[1] *= 1e9
    ev = classify(orbit)
    assert regime_names(ev["regime"]).tolist() == ["divergent", "divergent", "fixed_point"]


def test_period_needs_confirmations_and_tolerance():
    t = np.arange(40)
    y = np.where(t % 5 == 0, 1.0, 0.0)[None, :, None]
    assert detect_period(y, confirmations=3)[0] == 5
    assert detect_period(y, confirmations=8)[0] == 0  # 40 samples hold too few repeats of 5
    noisy = y + 1e-6 * np.random.default_rng(0).normal(size=y.shape)
    assert detect_period(noisy, tol=1e-8)[0] == 0
    assert detect_period(noisy, tol=1e-4)[0] == 5


def test_zero_one_test_separates_regular_from_chaotic():
    x = [0.3]
    for _ in range(5000):
        x.append(4.0 * x[-1] * (1 - x[-1]))
    chaotic = np.asarray(x[1001:])
    regular = np.sin(0.7 * np.arange(4000)) + 0.5 * np.sin(0.7 * np.sqrt(2) * np.arange(4000))
    K = zero_one_test(np.stack([chaotic, regular]))
    assert K[0] > 0.9 and K[1] < 0.1
    assert np.isnan(zero_one_test(np.ones(10)))


def test_regime_names_cover_codes():
    assert list(regime_names(np.arange(len(REGIMES)))) == list(REGIMES)
