"""Fitted convergence slopes: confidence intervals that cover, and the noise-limited flag."""

import numpy as np
import pytest

from attnphys.dmft._convergence import path_noise, slope_fit


def test_slope_interval_covers_the_true_slope_at_its_level():
    """log10 d = 1 − ½ log10 N + Gaussian noise at 5 sizes: the 95% t interval covers −½ in 95% of fits."""
    rng = np.random.default_rng(0)
    ns = np.array([1e2, 1e3, 1e4, 1e5, 1e6]) / 10
    hits = []
    for _ in range(2000):
        d = 10 ** (1 - 0.5 * np.log10(ns) + 0.1 * rng.standard_normal(ns.size))
        f = slope_fit(ns, d)
        hits.append(f["ci_low"] <= -0.5 <= f["ci_high"])
    assert abs(np.mean(hits) - 0.95) < 4 * np.sqrt(0.95 * 0.05 / len(hits))


def test_exact_power_law_and_two_sizes():
    ns = np.array([1e3, 1e4, 1e5])
    f = slope_fit(ns, ns**-0.5)
    assert f["slope"] == pytest.approx(-0.5, abs=1e-12) and f["ci_high"] - f["ci_low"] < 1e-9
    two = slope_fit(ns[:2], ns[:2] ** -0.5)
    assert two["slope"] == pytest.approx(-0.5) and np.isnan(two["ci_low"]) and two["n_fit"] == 2


def test_a_distance_at_its_noise_floor_is_flagged():
    ns = np.array([1e3, 1e4, 1e5])
    d = np.array([1e-2, 4e-3, 2.8e-3])  # flattening out
    assert slope_fit(ns, d, noise=np.full(3, 2e-3))["noise_limited"] == 1
    assert slope_fit(ns, ns**-0.5, noise=np.full(3, 1e-5))["noise_limited"] == 0
    assert slope_fit(ns, d)["noise_limited"] == -1


def test_path_noise_is_the_spread_of_the_paths():
    """Paths = mean field + independent noise: the long-run noise is the spread of the path statistics."""
    rng = np.random.default_rng(1)
    P, T, F = 400, 300, 2
    mf = np.zeros((T, F))
    fin = 0.1 * rng.standard_normal((P, T, F))
    rms_noise, stat_noise = path_noise(fin, mf, horizon=100, transient=100)
    # the time mean of 200 samples of N(0, 0.01): sd 0.1/sqrt(200)
    assert stat_noise == pytest.approx(0.1 / np.sqrt(200) * np.sqrt(1 + 1 / P), rel=0.15)
    # mean square over 100 × 2 samples of N(0, 0.01): sd 0.01 sqrt(2/200); rms 0.1
    assert rms_noise == pytest.approx(0.01 * np.sqrt(2 / 200) / (2 * 0.1 * np.sqrt(P)), rel=0.15)
    assert np.isnan(path_noise(fin[:1], mf, 100, 100)[0])


def test_converge_reports_intervals_and_noise():
    from attnphys.dmft import converge, preset

    c = preset("paper", beta_o=0.8, beta_att=0.5)
    ds = converge(c, [990, 9900, 99_000], sweep={"beta_o": [0.8]}, paths=8, steps=120, horizon=40, transient=40)
    for v in ("slope_ci_low", "slope_ci_high", "slope_noise_limited", "stat_slope_ci_low", "rms_noise", "stat_noise"):
        assert v in ds and ds[v].attrs["long_name"]
    assert float(ds.slope_ci_low[0]) <= float(ds.slope[0]) <= float(ds.slope_ci_high[0])
    assert int(ds.slope_noise_limited[0]) == 0
    assert "point_seed" not in ds
