import json

import numpy as np
import pytest

import attnphys
from attnphys.dmft import final_windows, from_window, preset, trajectories
from attnphys.io import load, save

PAPER = preset("paper")


@pytest.mark.slow
def test_dataset_layout_and_metadata():
    ds = trajectories(PAPER, start="token", steps=40, transient=10, record_every=5, sweep={"beta_o": [1.0, 1.26]})
    for name in ("att", "mo", "mo_se", "mv", "mq", "mk"):
        assert ds[name].dims == ("beta_o", "step", "feature")
    np.testing.assert_array_equal(ds.step, [10, 15, 20, 25, 30, 35])
    cfg = json.loads(ds.attrs["config"])
    assert cfg["M"] == 3 and cfg["correlations"]["seed"] == 1
    assert ds.attrs["attnphys_version"] == attnphys.__version__
    assert json.loads(ds.attrs["schedule"]) == {"steps": 40, "transient": 10, "record_every": 5}


def test_two_dimensional_sweep_equals_single_runs():
    ds = trajectories(PAPER, start="checkpoint", steps=60, sweep={"beta_o": [0.5, 2.0], "beta_att": [1.0, 2.2, 3.0]})
    assert ds.att.dims == ("beta_o", "beta_att", "step", "feature") and ds.att.shape[:2] == (2, 3)
    one = trajectories(PAPER.replace(beta_o=2.0, beta_att=1.0), start="checkpoint", steps=60)
    np.testing.assert_allclose(ds.att.sel(beta_o=2.0, beta_att=1.0).values, one.att.values, atol=1e-13)


def test_epsilon_sweep_from_token_rebuilds_the_token_per_epsilon():
    ds = trajectories(PAPER, start="token", steps=5, sweep={"epsilon": [0.0, 0.02]})
    one = trajectories(PAPER.replace(epsilon=0.0), start="token", steps=5)
    np.testing.assert_allclose(ds.att.sel(epsilon=0.0).values, one.att.values, atol=1e-15)


@pytest.mark.slow
def test_initial_condition_dimension_and_continuation():
    first = trajectories(PAPER.replace(beta_o=1.26), start="checkpoint", steps=100)
    [w] = final_windows(first)
    both = trajectories(PAPER.replace(beta_o=1.26), start="checkpoint", steps=200)
    cont = trajectories(PAPER.replace(beta_o=1.26), start=w, steps=100)
    np.testing.assert_array_equal(cont.att.values, both.att.values[100:])
    ics = trajectories(PAPER, start=[w, from_window(PAPER, first.final_A.values, first.final_pe.values)], steps=3)
    assert ics.att.dims[0] == "ic" and ics.sizes["ic"] == 2


@pytest.mark.parametrize("suffix", [".zarr", ".nc"])
def test_save_and_load_roundtrip(tmp_path, suffix):
    ds = trajectories(PAPER, start="token", steps=10, sweep={"beta_o": [1.0, 2.0]})
    path = save(ds, tmp_path / f"run{suffix}")
    back = load(path)
    np.testing.assert_array_equal(back.mo_se.values, ds.mo_se.values)
    assert back.attrs["config"] == ds.attrs["config"]


def test_bad_sweep_is_rejected():
    with pytest.raises(ValueError, match="unknown sweep field 'mo_se_convention'"):
        trajectories(PAPER, steps=5, sweep={"mo_se_convention": [2, 3]})
    with pytest.raises(ValueError, match="unknown sweep field 'nope'"):
        trajectories(PAPER, steps=5, sweep={"nope": [2, 3]})
    with pytest.raises(ValueError, match="non-empty"):
        trajectories(PAPER, steps=5, sweep={"beta_o": []})


def test_structural_fields_are_swept_one_model_per_value():
    """M changes the couplings: every value runs its own model; the feature axis is NaN-padded to the largest M."""
    ds = trajectories(PAPER, steps=8, sweep={"M": [2, 3]})
    assert ds.mo_se.dims == ("M", "step", "feature") and ds.sizes["feature"] == 3
    assert np.isnan(ds.mo_se.sel(M=2).values[..., 2]).all()
    alone = trajectories(PAPER.replace(M=2), steps=8)
    np.testing.assert_array_equal(ds.mo_se.sel(M=2).values[..., :2], alone.mo_se.values)
