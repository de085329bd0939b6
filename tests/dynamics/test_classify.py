"""Attractor classification on maps whose regimes are known."""

import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.dynamics.classify import REGIMES, classify, detect_period, regime_names, zero_one_test
from attnphys.dynamics.maps import LINEAR, LOGISTIC, ROTATION, FunctionMap
from attnphys.dynamics.orbits import OrbitSpec, orbit, orbit_sweep

SPEC = OrbitSpec(steps=20_000, transient=5_000, k=1, align=1000, n_orbit=2000)


def _logistic(rs):
    B = len(rs)
    return orbit_sweep(LOGISTIC, SPEC, jnp.full((B, 1), 0.3), jnp.zeros(B), jnp.asarray(rs))


@pytest.mark.parametrize(
    "r,regime,period",
    [(2.8, "fixed_point", 1), (3.2, "periodic", 2), (3.5, "periodic", 4), (3.83, "periodic", 3), (4.0, "chaotic", 0)],
)
@pytest.mark.slow
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


@pytest.mark.slow
def test_irrational_rotation_is_quasi_periodic():
    omega = (np.sqrt(5) - 1) / 2
    spec = OrbitSpec(steps=20_000, transient=100, k=2, n_orbit=2000)
    out = orbit_sweep(ROTATION, spec, jnp.array([[1.0, 0.0]]), jnp.zeros(1), jnp.asarray([omega]))
    ev = classify(np.asarray(out["orbit"]), np.asarray(out["exponents"]))
    assert regime_names(ev["regime"])[0] == "quasi_periodic"
    assert ev["period"][0] == 0 and abs(ev["lambda1"][0]) < 1e-10
    assert ev["K"][0] < 0.2 and ev["agree"][0]


@pytest.mark.slow
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
    assert np.isnan(zero_one_test(np.full(200, 0.3)))  # constant: D_c(n) is rounding noise, K undefined
    assert np.isnan(zero_one_test(np.r_[chaotic[:199], np.nan]))


def _zero_one_by_definition(phi, n_c=64, seed=0):
    """K straight from the definition: p_c + i q_c as running sums, M_c(n) as a mean over t."""
    N = phi.size
    ncut = max(N // 10, 2)
    cs = np.random.default_rng(seed).uniform(np.pi / 5, 4 * np.pi / 5, size=n_c)
    n = np.arange(1, ncut + 1)
    Ks = []
    for c in cs:
        z = np.cumsum(phi * np.exp(1j * np.arange(1, N + 1) * c))
        M = np.array([np.mean(np.abs(z[k:] - z[:-k]) ** 2) for k in n])
        D = M - phi.mean() ** 2 * (1 - np.cos(n * c)) / (1 - np.cos(c))
        Ks.append(np.corrcoef(n, D)[0, 1])
    return np.median(Ks)


@pytest.mark.parametrize("N", [20, 29, 137, 1000])
def test_zero_one_test_matches_its_definition(N):
    rng = np.random.default_rng(N)
    series = [
        rng.normal(size=N) + 0.7,  # noise with a mean: K near 1
        np.cos(0.9 * np.arange(N)) + 2.0,  # periodic with a mean: the oscillatory term removed
        np.cumsum(rng.normal(size=N)) * 0.1,  # a random walk
    ]
    K = zero_one_test(np.stack(series))
    np.testing.assert_allclose(K, [_zero_one_by_definition(s) for s in series], rtol=0, atol=1e-9)


def test_window_sums_match_their_definition():
    from attnphys.dynamics.classify import _window_sums

    rng = np.random.default_rng(3)
    N, ncut = 60, 6
    phi = rng.normal(size=(3, N)) + 0.7
    G = np.zeros((3, ncut, ncut))
    for n in range(1, ncut + 1):
        for d in range(n):
            for t in range(N - n):
                s = np.arange(t + 1 + d, t + n + 1)
                G[:, d, n - 1] += (phi[:, s] * phi[:, s - d]).sum(axis=-1)
    np.testing.assert_allclose(_window_sums(phi, ncut), G, rtol=1e-13, atol=1e-12)


def test_regime_names_cover_codes():
    assert list(regime_names(np.arange(len(REGIMES)))) == list(REGIMES)


# ---------------------------------------------------------------- full state, undefined agreement, undetermined


LINEAR_SPEC = OrbitSpec(steps=300, transient=50, k=1, align=50, n_orbit=200)
"""One spec for the linear-map orbits below (one compilation)."""


def _quarter_turn():
    """A rotation by 90° observed through |x|²: the observable is constant while the state has period 4."""
    return FunctionMap(
        step=lambda x, aux, p: (jnp.stack([-x[1], x[0]]), aux), observe=lambda x, aux, p: jnp.sum(x**2, keepdims=True)
    )


def test_constant_observable_is_labelled_by_the_full_state():
    spec = OrbitSpec(steps=400, transient=0, n_orbit=200)
    out = orbit(_quarter_turn(), spec, jnp.array([0.6, 0.8]), None, None)
    y, f = np.asarray(out["orbit"]), np.asarray(out["fingerprint"])
    assert np.ptp(y) == 0.0  # the observable is constant
    obs_only = classify(y[None])
    assert regime_names(obs_only["regime"])[0] == "fixed_point"  # what the observable alone says
    ev = classify(y[None], fingerprint=f[None])
    assert regime_names(ev["regime"])[0] == "periodic"
    assert ev["period"][0] == 4 and ev["period_observable"][0] == 1


def test_fingerprint_of_a_large_state_is_a_projection():
    from attnphys.dynamics.fingerprint import fingerprint, fingerprint_matrix

    x = np.random.default_rng(1).normal(size=(5, 12))
    P = fingerprint_matrix(12, 4)
    assert P.shape == (4, 12)
    np.testing.assert_allclose(fingerprint(x, 4), x @ P.T, rtol=1e-14)
    np.testing.assert_allclose(fingerprint(x[:, :3], 4), x[:, :3])  # D ≤ n: the state itself


@pytest.mark.slow
def test_agree_is_undefined_when_K_is():
    """An exact fixed point: the 0–1 test of a constant series is NaN, so agreement is undefined (−1), not
    False (the label is right)."""
    out = orbit_sweep(LINEAR, LINEAR_SPEC, jnp.zeros((1, 2)), jnp.zeros(1), jnp.diag(jnp.array([0.5, 0.2]))[None])
    ev = classify(np.asarray(out["orbit"]), np.asarray(out["exponents"]))
    assert regime_names(ev["regime"])[0] == "fixed_point"
    assert np.isnan(ev["K"][0])
    assert ev["agree"].dtype == np.int8 and ev["agree"][0] == -1
    chaotic = classify(np.asarray(_logistic([4.0])["orbit"]))
    assert chaotic["agree"][0] == 1


def test_period_longer_than_the_window_is_undetermined_without_exponents():
    """A rotation by 1/600 recorded over 1000 steps: the period (600) exceeds what the window can confirm."""
    spec = OrbitSpec(steps=3000, transient=0, n_orbit=1000)
    out = orbit(ROTATION, spec, jnp.array([1.0, 0.0]), None, jnp.asarray(1 / 600))
    ev = classify(np.asarray(out["orbit"])[None], fingerprint=np.asarray(out["fingerprint"])[None])
    assert regime_names(ev["regime"])[0] == "undetermined"
    assert ev["recurrence"][0] == 600 and ev["period"][0] == 0 and ev["agree"][0] == -1
    assert REGIMES[-1] == "undetermined"  # appended: earlier codes unchanged
    # a chaotic window does not recur exactly and keeps its 0–1 verdict
    chaos = classify(np.asarray(_logistic([4.0])["orbit"]))
    assert regime_names(chaos["regime"])[0] == "chaotic" and chaos["recurrence"][0] == 0


def test_orbit_sweeps_start_from_random_vectors_by_default():
    """diag(0.5, 2), k = 1: +ln 2 with the default start, ln 0.5 with the identity start."""
    assert OrbitSpec(steps=1).init == "random"
    A = jnp.diag(jnp.array([0.5, 2.0]))[None]
    out = orbit_sweep(LINEAR, LINEAR_SPEC, jnp.zeros((1, 2)), jnp.zeros(1), A)
    assert float(out["exponents"][0, 0]) == pytest.approx(np.log(2.0), abs=1e-12)
    # (the identity start would give ln 0.5: tests/dynamics/test_lyapunov.py)


def test_thresholds_are_documented():
    """θ = 5e−4 against the reference's 1e−4 is documented where users look (options and theory page)."""
    import pathlib

    from attnphys.dynamics.classify import ClassifyOptions

    assert ClassifyOptions().theta == 5e-4
    assert "1e−4" in ClassifyOptions.__doc__ and "bifurcation" in ClassifyOptions.__doc__
    page = (pathlib.Path(__file__).parents[2] / "docs/theory/dynamics.md").read_text()
    sec = page[page.index("### 4.2") : page.index("### 4.3")]
    assert "10^{-4}" in sec and "5\\times10^{-4}" in sec


# ---------------------------------------------------------------- evidence that disagrees: undetermined


def _windows():
    """A chaotic window (logistic r = 4) and a regular one (two incommensurate sines), 2000 samples."""
    x = [0.3]
    for _ in range(3000):
        x.append(4.0 * x[-1] * (1 - x[-1]))
    t = np.arange(2000)
    regular = np.sin(0.7 * t) + 0.5 * np.sin(0.7 * np.sqrt(2) * t)
    return np.stack([np.asarray(x[1001:]), regular])[..., None]


@pytest.mark.parametrize(
    "which,lam1,regime,reason",
    [
        (0, -0.0011, "undetermined", "evidence_disagrees"),  # contracting exponent, K ≈ 1 (seed 4, β_o = 1.445)
        (1, +0.0015, "undetermined", "evidence_disagrees"),  # positive exponent, K ≈ 0
        (0, +0.0015, "chaotic", "exponent_and_zero_one_test"),
        (1, -0.0011, "periodic", "exponent_and_zero_one_test"),  # period −1: longer than the window confirms
        (1, +0.0001, "quasi_periodic", "exponent_and_zero_one_test"),
        (0, +0.0001, "undetermined", "evidence_disagrees"),  # λ₁ ≈ 0 but K ≈ 1
    ],
)
def test_disagreeing_evidence_is_undetermined(which, lam1, regime, reason):
    from attnphys.dynamics.classify import REGIME_REASONS

    w = _windows()[which : which + 1]
    ev = classify(w, np.array([[lam1, -1.0]]))
    assert regime_names(ev["regime"])[0] == regime
    assert REGIME_REASONS[ev["regime_reason"][0]] == reason
    assert ev["period"][0] == (-1 if regime == "periodic" else 0)
    assert ev["agree"][0] == (-1 if regime == "undetermined" else 1)


def test_an_inconclusive_zero_one_test_leaves_the_exponent_to_decide():
    """K ≈ 0.44 (a regular signal with a weak chaotic part): inconclusive. A resolved exponent decides alone;
    an exponent within its resolution does not."""
    from attnphys.dynamics.classify import REGIME_REASONS

    chaos, regular = _windows()[:, :, 0]
    t = np.arange(regular.size)
    w = (0.16 * chaos + np.sin(0.7 * t) + 0.5 * np.sin(0.7 * np.sqrt(2) * t))[None, :, None]
    ev = classify(np.repeat(w, 3, axis=0), np.array([[0.03], [-0.01], [1e-4]]))
    assert 0.3 < ev["K"][0] < 0.7
    assert list(regime_names(ev["regime"])) == ["chaotic", "periodic", "undetermined"]
    assert [REGIME_REASONS[c] for c in ev["regime_reason"]] == [
        "exponent_alone",
        "exponent_alone",
        "exponent_within_resolution",
    ]
    assert list(ev["agree"]) == [-1, -1, -1]


def test_exponent_within_resolution_without_a_zero_one_test_is_undetermined():
    """19 samples: no period and K undefined; λ₁ within θ of 0 decides nothing, λ₁ well above θ decides."""
    from attnphys.dynamics.classify import REGIME_REASONS

    w = np.random.default_rng(0).normal(size=(2, 19, 1))
    ev = classify(w, np.array([[1e-4], [0.2]]))
    assert np.isnan(ev["K"]).all()
    assert list(regime_names(ev["regime"])) == ["undetermined", "chaotic"]
    assert [REGIME_REASONS[c] for c in ev["regime_reason"]] == ["exponent_within_resolution", "exponent_alone"]


def test_codes_and_sentinels_are_cf_flags_on_the_variables():
    """flag_values/flag_meanings name every code (and the −1 fill); every sentinel is explained."""
    import xarray as xr

    from attnphys.dynamics.classify import CLASSIFY_ATTRS, REGIME_REASONS, regime_counts

    ev = classify(_windows(), np.array([[0.69, -1.0], [0.0015, -1.0]]))
    ds = xr.Dataset({k: (("point",), v, CLASSIFY_ATTRS[k]) for k, v in ev.items()})
    for name in ("regime", "regime_reason", "agree"):
        a = ds[name].attrs
        meanings = a["flag_meanings"].split()
        assert len(meanings) == len(a["flag_values"]) and a["flag_values"].dtype == ds[name].dtype
        assert meanings[list(a["flag_values"]).index(-1)] in ("not_computed", "undefined")
    assert ds.regime.attrs["flag_meanings"].split()[1:] == list(REGIMES)
    assert ds.regime_reason.attrs["flag_meanings"].split()[1:] == list(REGIME_REASONS)
    assert "-1" in ds.period.attrs["comment"] and "0:" in ds.period.attrs["comment"]
    assert regime_counts(ds.regime.values) == "chaotic: 1, undetermined: 1"


def test_the_list_of_undetermined_values_says_where_it_is_cut():
    """Every undetermined point in grid order with its reason and evidence; a cut list says how many it left out."""
    import xarray as xr

    from attnphys.dynamics.classify import REGIME_CODE, REGIME_REASONS, undetermined_values

    codes = np.full(30, REGIME_CODE["periodic"])
    codes[[2, 5, 7, 11, 13, 17, 19, 23]] = REGIME_CODE["undetermined"]
    reason = REGIME_REASONS.index("evidence_disagrees")
    ds = xr.Dataset(
        {
            "regime": ("beta_o", codes),
            "regime_reason": ("beta_o", np.full(30, reason)),
            "lambda1": ("beta_o", np.linspace(-0.01, 0.01, 30)),
            "K": ("beta_o", np.full(30, 0.95)),
        },
        coords={"beta_o": np.arange(30) / 10},
    )
    full = undetermined_values(ds, limit=None)
    assert len(full) == 8 and full[0].startswith("beta_o=0.2: evidence_disagrees (λ1 = ")
    assert full[0].endswith("K = 0.95)")
    cut = undetermined_values(ds, limit=3)
    assert cut[:3] == full[:3] and cut[3] == "… and 5 more"
    assert undetermined_values(ds, limit=8) == full


def test_a_clearly_positive_exponent_decides_over_a_record_of_few_lyapunov_times():
    """λ₁ = 0.006 (the logistic map at r = 3.85) over a 2,000-sample window that looks regular (K ≈ 0):
    12 Lyapunov times are too few for the 0–1 test, the exponent decides (was undetermined); over a window
    of 200 Lyapunov times the disagreement stands."""
    from attnphys.dynamics.classify import REGIME_REASONS

    w = _windows()[1:2]
    ev = classify(w, np.array([[0.006, -1.0]]))
    assert regime_names(ev["regime"])[0] == "chaotic"
    assert REGIME_REASONS[ev["regime_reason"][0]] == "exponent_alone"
    ev = classify(w, np.array([[0.1, -1.0]]))
    assert regime_names(ev["regime"])[0] == "undetermined"


def test_an_infinitely_contracting_point_is_a_fixed_point_without_an_overflow_warning():
    """λ₁ = −∞ (a superstable point: the tangent dies) is classified with no numpy warning: the weak-chaos
    rule compares n·λ₁ with the record's Lyapunov times, which must not overflow at −∞ read as −1.8e308."""
    import warnings

    orbit = np.zeros((1, 200, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        ev = classify(orbit, np.array([[-np.inf, -np.inf]]))
    assert regime_names(ev["regime"]).tolist() == ["fixed_point"]
