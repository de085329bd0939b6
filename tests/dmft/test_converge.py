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


@pytest.mark.slow
def test_converge_reports_intervals_and_noise():
    from attnphys.dmft import converge, preset

    c = preset("paper", beta_o=0.8, beta_att=0.5)
    ds = converge(c, [990, 9900, 99_000], sweep={"beta_o": [0.8]}, paths=8, steps=120, horizon=40, transient=40)
    for v in ("slope_ci_low", "slope_ci_high", "slope_noise_limited", "stat_slope_ci_low", "rms_noise", "stat_noise"):
        assert v in ds and ds[v].attrs["long_name"]
    assert float(ds.slope_ci_low[0]) <= float(ds.slope[0]) <= float(ds.slope_ci_high[0])
    assert int(ds.slope_noise_limited[0]) == 0
    assert "point_seed" not in ds


def test_paths_on_another_attractor_are_found():
    """Sixteen paths that follow the mean field to O(N^-1/2) and six of them replaced by an orbit far away
    (as at β_o = 3, N = 990 of the paper preset): the fraction is 6/16, 0 without them, NaN with four paths."""
    from attnphys.dmft._convergence import paths_elsewhere

    rng = np.random.default_rng(3)
    P, T, F = 16, 200, 3
    mf = np.sin(np.arange(T)[:, None] / 7.0 + np.arange(F))
    fin = mf[None] + 0.03 * rng.standard_normal((P, T, F))
    assert paths_elsewhere(fin, mf, horizon=T) == 0.0
    fin[[4, 6, 7, 11, 14, 15], 40:] = -mf[40:]  # left within the horizon
    assert paths_elsewhere(fin, mf, horizon=T) == pytest.approx(6 / 16)
    assert paths_elsewhere(fin, mf, horizon=30) == 0.0  # not within the first 30 steps
    assert np.isnan(paths_elsewhere(fin[:4], mf, horizon=T))


def test_a_size_on_another_attractor_is_left_out_of_the_slope():
    """The distances measured at β_o = 3 of the paper preset (16 paths, 600 steps, horizon 200): N = 990
    has 6 of 16 paths on another attractor and its RMS deviation is 26× that at 9,900 (the law says √10);
    fitting it gave −0.96 [−4.3, 2.4]. Left out, with a warning, the two larger sizes give −0.50."""
    import xarray as xr

    from attnphys.dmft._convergence import fit_slopes, slope_text

    n = np.array([990, 9900, 99000])
    base = xr.Dataset(
        {
            "rms_deviation": (("beta_o", "n"), [[0.25512969, 0.00961931, 0.00303343]]),
            "stat_distance": (("beta_o", "n"), [[8.0066e-03, 2.7327e-04, 8.6338e-05]]),
        },
        coords={"beta_o": [3.0], "n": n},
    )
    before = fit_slopes(base.copy())
    assert float(before.slope[0]) == pytest.approx(-0.962, abs=1e-3)
    flagged = base.assign(elsewhere_fraction=(("beta_o", "n"), [[6 / 16, 0.0, 0.0]]))
    with pytest.warns(UserWarning, match=r"beta_o = 3, N = 990: 38% of the finite-N paths left"):
        ds = fit_slopes(flagged)
    assert float(ds.slope[0]) == pytest.approx(-0.501, abs=1e-3) and int(ds.slope_n_fit[0]) == 2
    assert int(ds.stat_slope_n_fit[0]) == 2
    assert "N = 990 left out (paths on another attractor)" in slope_text(ds.isel(beta_o=0))


@pytest.mark.slow
@pytest.mark.long
def test_converge_at_beta_3_leaves_out_the_size_on_another_attractor():
    from attnphys.dmft import converge, preset

    with pytest.warns(UserWarning, match="N = 990"):
        ds = converge(
            preset("paper"),
            [990, 9900, 99000],
            sweep={"beta_o": [3.0]},
            paths=16,
            steps=600,
            horizon=200,
            transient=300,
        )
    d = ds.isel(beta_o=0)
    assert float(d.elsewhere_fraction[0]) > 0 and float(d.elsewhere_fraction[1:].max()) == 0
    assert float(d.slope) == pytest.approx(-0.5, abs=0.03)
