"""Paths that leave the attractor are found against the prediction's own scale, reported apart and left out
of the comparison; the library names its arguments; the comparison writes to NetCDF and reads back equal
(theory: docs/theory/fluctuations.md §5)."""

import numpy as np
import pytest
import scipy.stats
import xarray as xr
from typer.testing import CliRunner

from attnphys.dmft import compare_fluctuations, preset
from attnphys.dmft._api.fluctuation_check import _compare_size, left_steps, outlier_sigmas
from attnphys.errors import InputError

runner = CliRunner()


def synthetic(names=("mv", "mk"), steps=200, M=2, n=10_000, paths=400, seed=0):
    """A prediction over ``steps`` steps (mean field a sine, bias 30, N·var 4 except feature 1 of the first
    record, deterministic: var 0 and no deviation) and Gaussian paths that follow it exactly."""
    rng = np.random.default_rng(seed)
    t = np.arange(steps)
    data, fin = {}, {}
    for i, k in enumerate(names):
        mf = np.stack([np.sin(0.3 * t + j) for j in range(M)], axis=1)
        var = np.full((steps, M), 4.0)
        if i == 0:
            var[:, 1] = 0.0
        data[k] = (("step", "feature"), mf)
        data[f"{k}_bias"] = (("step", "feature"), np.full((steps, M), 30.0))
        data[f"{k}_var"] = (("step", "feature"), var)
        fin[k] = mf + 30.0 / n + np.sqrt(var / n) * rng.standard_normal((paths, steps, M))
    data["spread"] = (("step",), np.full(steps, 2.0))
    pred = xr.Dataset(data, coords={"step": 100 + t, "feature": np.arange(M)})
    return pred, fin


def compare(pred, fin, n=10_000, window=16):
    P, T = next(iter(fin.values())).shape[:2]
    k = outlier_sigmas(P * T * sum(v.shape[2] for v in fin.values()))
    return _compare_size(pred, fin, n, period=T, z=1.96, k=k, window=window, threshold=0.1), k


def test_the_threshold_is_the_union_bound_over_every_check():
    for checks, alpha in ((1, 1e-6), (18_000_000, 1e-6), (5, 0.01)):
        k = outlier_sigmas(checks, alpha)
        assert checks * 2 * scipy.stats.norm.sf(k) == pytest.approx(alpha, rel=1e-9)
    assert outlier_sigmas(1000 * 1000 * 18) == pytest.approx(7.518, abs=1e-3)


@pytest.mark.parametrize(
    ("runs", "T", "window", "left"),
    [
        ([], 40, 16, -1),  # never beyond
        ([(10, 15)], 40, 16, -1),  # 5 steps: a brief excursion
        ([(10, 18)], 40, 16, -1),  # 8 of 16: half is not more than half
        ([(10, 19)], 40, 16, 10),  # 9 of 16
        ([(3, 6), (20, 40)], 40, 16, 20),  # an early excursion, then a departure: left at the departure
        ([(20, 26), (28, 40)], 40, 16, 20),  # a departure with a dip back inside: one run
        ([(2, 5)], 6, 16, -1),  # a window shorter than 16 steps: half of all of it is not enough
        ([(2, 6)], 6, 16, 2),  # and more than half is
    ],
)
def test_a_path_leaves_when_beyond_on_most_of_a_window(runs, T, window, left):
    beyond = np.zeros((2, T), bool)
    for a, b in runs:
        beyond[1, a:b] = True
    assert left_steps(beyond, window).tolist() == [-1, left]


def test_gaussian_paths_are_all_kept_and_agree():
    pred, fin = synthetic()
    out, _ = compare(pred, fin)
    assert out["paths_compared"] == 400 and np.all(np.isnan(out["left_step"]))
    assert np.all(np.isnan(out["excursion_step"]))  # the deterministic feature is not flagged
    assert out["expansion_holds"] and out["validity"].startswith("holds: every path")
    assert abs(out["mv_std_ratio"][0] - 1) < 0.02
    assert np.all(np.abs(out["mk_std_ratio"] - 1) < 0.02)


def test_a_path_forced_off_the_attractor_is_reported_and_left_out():
    """Path 37 jumps 1.0 (50 predicted std) off at step index 60 and stays; path 5 makes a 3-step excursion
    of 0.3 (15 std). Without the detection the first feature's standard deviation would be 2.3 times the
    prediction."""
    pred, fin = synthetic()
    for k in fin:
        fin[k][37, 60:, 0] += 1.0
        fin[k][5, 120:123, 0] -= 0.3
    out, k = compare(pred, fin)
    assert np.flatnonzero(np.isfinite(out["left_step"])).tolist() == [37]
    assert out["left_step"][37] == 160  # the prediction's step coordinate (the window starts at 100)
    assert out["excursion_step"][5] == 220 and out["excursion_step"][37] == 160
    assert out["paths_compared"] == 399 and not out["expansion_holds"]
    assert "path 37 at step 160" in out["validity"] and "1 paths made brief excursions" in out["validity"]
    for name in ("mv", "mk"):
        assert abs(out[f"{name}_std_ratio"][0] - 1) < 0.03, name  # the excursion of path 5 is kept
        allp = fin[name][:, :, 0].std(0, ddof=1)
        assert np.sqrt(np.mean(allp**2) / (4.0 / 10_000)) > 2  # what the comparison said with path 37
    assert out["mv_std_measured"].shape == (200, 2)


def test_too_few_paths_left_leave_the_summaries_nan():
    pred, fin = synthetic(paths=3)
    for k in fin:
        fin[k][:2, 10:, 0] += 0.3
    out, _ = compare(pred, fin)
    assert out["paths_compared"] == 1 and np.isnan(out["mv_std_ratio"][0])
    assert "too few paths remain" in out["validity"] and not out["expansion_holds"]


def test_past_the_predicted_horizon_no_path_is_judged():
    """The predicted spread reaches the threshold at step index 120: a path that leaves after it is not
    reported (the expansion no longer describes single paths), one that leaves before it is, and the
    expansion does not hold either way."""
    pred, fin = synthetic()
    pred["spread"][120:] = 20.0  # 20/sqrt(1e4) = 0.2 >= 0.1
    for k in fin:
        fin[k][3, 140:, 0] += 1.0
        fin[k][9, 50:, 0] += 1.0
    out, _ = compare(pred, fin)
    assert out["horizon"] == 220 and np.flatnonzero(np.isfinite(out["left_step"])).tolist() == [9]
    assert not out["expansion_holds"] and "reaches the threshold at step 220" in out["validity"]


@pytest.mark.parametrize(
    ("sizes", "said"),
    [
        ([100], "multiple of n_se = 99"),
        ([990, 990], "distinct"),
        ([], "distinct"),
        ([990.0], "integers"),
        (["990"], "integers"),
        ([True], "integers"),
        (990, "sequence"),
    ],
)
def test_the_library_names_its_argument_not_the_option(sizes, said):
    with pytest.raises(InputError, match=said) as e:
        compare_fluctuations(preset("paper"), sizes, paths=4, steps=10)
    assert e.value.field == "sizes" and "--" not in str(e.value)


def _fake_simulation(monkeypatch):
    """The comparison's prediction and simulation replaced by the synthetic ones, path 2 forced off."""
    import attnphys.dmft._api.finite as finite_api
    import attnphys.dmft._api.fluctuation_check as check

    names = ("att", "mo", "mo_se", "mv", "mq", "mk")
    pred, fin = synthetic(names=names, steps=40, M=3, n=990, paths=6)
    pred = pred.assign_coords(step=np.arange(40))
    pred.attrs.update(config="{}", start="token", start_step=0, analysis="fluctuations", prediction="paths")
    for k in names:
        fin[k][2, 8:, 0] += 1.0

    def fake_prediction(cfg, **kw):
        return pred

    def fake_paths(cfg, n, **kw):
        return xr.Dataset({k: (("path", "step", "feature"), v) for k, v in fin.items()})

    monkeypatch.setattr(check, "fluctuations", fake_prediction)
    monkeypatch.setattr(finite_api, "finite_trajectories", fake_paths)


@pytest.mark.parametrize("suffix", [".nc", pytest.param(".zarr", marks=pytest.mark.slow)])
def test_the_comparison_writes_and_reads_back_equal(tmp_path, monkeypatch, suffix):
    """Every type of the comparison (bool, int32, strings, float64; a seed beyond int32 as an attribute)
    written by ``--out`` and read back equal, with plain xarray and with the package's reader."""
    from attnphys.cli import app
    from attnphys.io import load

    _fake_simulation(monkeypatch)
    out = tmp_path / f"c{suffix}"
    args = ["dmft", "fluctuations", "--steps", "40", "--n", "990", "--paths", "6", "--seed", "4000000000"]
    res = runner.invoke(app, [*args, "--out", str(out)])
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.replace("│", " ").split())  # the table's lines joined
    assert "path 2 at step 8" in said and "over 5 of 6 paths" in said
    back = load(out)
    plain = xr.open_dataset(out) if suffix == ".nc" else xr.open_zarr(out)
    for ds in (back, plain.load()):
        assert ds.expansion_holds.dtype == bool and not bool(ds.expansion_holds[0])
        assert str(ds.validity.values[0]).startswith("does not hold for 1 of 6 paths")
        assert ds.paths_compared.values.tolist() == [5] and ds.left_step.values[0, 2] == 8
        assert ds.attrs["seed"] == 4_000_000_000 and ds.attrs["outlier_window"] == 16
    assert set(back.data_vars) == set(plain.data_vars)
    for v in back.data_vars:
        np.testing.assert_array_equal(back[v].values, plain[v].values)


@pytest.mark.slow
def test_the_comparison_at_beta_3_reports_the_one_path_that_switched(tmp_path):
    """β_o = 3, N = 9,900, 1,000 paths from the first token (seed 7; about 30 s on two cores): path 669
    leaves the period-24 orbit at step 9, the only one; without it every overlap's standard deviation is
    within 2 % of the prediction (measured 0.2 %) and the attention output's within 5 % (0.958–0.988). With it
    they were 1.46–3.16 times the prediction."""
    ds = compare_fluctuations(preset("paper", beta_o=3.0), [9900], paths=1000, seed=7)
    left = ds.left_step.values[0]
    assert np.flatnonzero(np.isfinite(left)).tolist() == [669] and left[669] == 9
    assert int(ds.paths_compared[0]) == 999 and not bool(ds.expansion_holds[0])
    assert "path 669 at step 9" in str(ds.validity.values[0])
    for k in ("mo", "mo_se", "mv", "mq", "mk"):
        assert np.all(np.abs(ds[f"{k}_std_ratio"].values - 1) <= 0.02), (k, ds[f"{k}_std_ratio"].values)
    assert np.all(np.abs(ds["att_std_ratio"].values - 1) <= 0.05)
    ds.to_netcdf(tmp_path / "c.nc")
    back = xr.open_dataset(tmp_path / "c.nc").load()
    for v in ds.data_vars:
        np.testing.assert_array_equal(ds[v].values, back[v].values)
