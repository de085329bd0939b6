"""The ``attnphys dmft`` commands end to end (through the command line)."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from attnphys.cli import app
from attnphys.io import load

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.mark.slow
def test_trajectory_command_writes_store_and_figures(tmp_path):
    out = tmp_path / "run.zarr"
    res = invoke("dmft", "trajectory", "--preset", "paper", "--beta-o", "1.26", "--steps", "300",
                 "--transient", "0", "--start", "token", "--out", out, "--plot", tmp_path / "fig")
    assert res.exit_code == 0, res.output
    ds = load(out)
    assert ds.mo_se.dims == ("step", "feature") and ds.sizes["step"] == 300
    np.testing.assert_allclose(ds.att.values[0], [-0.0616206, -0.1589711, 0.4744080], atol=5e-8)
    assert json.loads(ds.attrs["config"])["beta_o"] == 1.26
    assert sorted(p.name for p in (tmp_path / "fig").iterdir()) == [
        "trajectory_planes.png", "trajectory_spectrum.png", "trajectory_timeseries.png"]


@pytest.mark.slow
def test_several_values_sweep(tmp_path):
    out = tmp_path / "s.zarr"
    res = invoke("dmft", "trajectory", "--beta-o", "0.5,1.0,3.0", "--steps", "20", "--out", out,
                 "--start", "checkpoint", "--record-every", "5")
    assert res.exit_code == 0, res.output
    ds = load(out)
    np.testing.assert_array_equal(ds.beta_o, [0.5, 1.0, 3.0])
    assert ds.sizes["step"] == 4


def test_start_from_json_file(tmp_path):
    win = tmp_path / "w.json"
    win.write_text(json.dumps({"att_window": [[0.1, 0.2, 0.3]] * 4, "pe_window": [[1, 1], [1, -1], [-1, 1], [-1, -1]]}))
    res = invoke("dmft", "trajectory", "--start", win, "--steps", "5", "--out", tmp_path / "j.zarr")
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["--beta-o", "-1"], "--beta-o"),
        (["--epsilon", "1.5"], "epsilon"),
        (["--transient", "50", "--steps", "10"], "--transient"),
        (["--start", "missing.json"], "does not exist"),
        (["--preset", "nope"], "unknown preset"),
    ],
)
def test_bad_input_fails_with_clear_message(tmp_path, args, message):
    out = tmp_path / "x.zarr"
    res = invoke("dmft", "trajectory", "--steps", "10", "--out", out, *args)
    assert res.exit_code == 2
    assert message in res.output
    assert not out.exists()


def test_bad_config_file_names_field(tmp_path):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"L": 9}))
    res = invoke("dmft", "trajectory", "--config", cfg, "--steps", "5", "--out", tmp_path / "y.zarr")
    assert res.exit_code == 2 and "L = 9" in res.output


@pytest.mark.slow
def test_lyapunov_command(tmp_path):
    out = tmp_path / "ly.zarr"
    res = invoke("dmft", "lyapunov", "--preset", "paper", "--beta-o", "2.0", "--steps", "3000", "--transient", "1000",
                 "--start", "token", "--out", out)
    assert res.exit_code == 0, res.output
    ds = load(out)
    assert ds.exponents.dims == ("exponent",) and ds.sizes["exponent"] == 12
    assert np.all(np.diff(ds.exponents.values) <= 0) and ds.exponents.values[0] > 0.01


@pytest.mark.slow
def test_bifurcation_command_cold_and_continuation(tmp_path):
    from attnphys.sweeps import open_result

    common = ["dmft", "bifurcation", "--preset", "paper", "--param", "beta_o", "--start-value", "1.0", "--stop-value",
              "2.0", "--num", "5", "--steps", "3000", "--transient", "2000", "--exponents", "2", "--n-orbit", "200"]
    res = invoke(*common, "--out", tmp_path / "bif.zarr", "--plot", tmp_path / "bif.png")
    assert res.exit_code == 0, res.output
    ds = open_result(tmp_path / "bif.zarr")
    assert ds.exponents.dims == ("beta_o", "exponent") and ds.orbit.dims == ("beta_o", "sample", "feature")
    assert {"regime", "period", "lambda1", "lambda2", "K", "agree", "section", "section_count", "unreliable",
            "parallel_fraction"} <= set(ds.data_vars)
    assert (tmp_path / "bif.png").exists() and (tmp_path / "bif_sections.png").exists()
    assert json.loads(ds.attrs["orbit_spec"])["reortho_every"] == 1
    res = invoke(*common, "--continuation", "both", "--out", tmp_path / "cont.zarr", "--plot", tmp_path / "cont.png")
    assert res.exit_code == 0, res.output
    assert load(tmp_path / "cont.zarr").regime.dims == ("direction", "beta_o")


@pytest.mark.slow
def test_phase_diagram_command_and_resume_guard(tmp_path):
    from attnphys.sweeps import open_result

    args = ["dmft", "phase-diagram", "--x", "beta_o", "0.5", "2.5", "3", "--y", "beta_att", "1.5", "2.2", "2",
            "--steps", "1500", "--transient", "1000", "--exponents", "1", "--n-orbit", "100", "--chunk", "4"]
    res = invoke(*args, "--out", tmp_path / "p.zarr", "--plot", tmp_path / "p.png")
    assert res.exit_code == 0, res.output
    assert open_result(tmp_path / "p.zarr").regime.shape == (3, 2) and (tmp_path / "p.png").exists()
    res = invoke(*args[:-1], "7", "--out", tmp_path / "p.zarr")
    assert res.exit_code == 2 and "different sweep" in res.output
    res = invoke("dmft", "phase-diagram", "--x", "beta_o", "3", "0", "5", "--out", tmp_path / "q.zarr")
    assert res.exit_code == 2 and "reversed range" in res.output
    res = invoke("dmft", "phase-diagram", "--x", "beta_q", "0", "1", "2", "--out", tmp_path / "r.zarr")
    assert res.exit_code == 2 and "unknown sweep field 'beta_q'" in res.output
    assert not (tmp_path / "q.zarr").exists() and not (tmp_path / "r.zarr").exists()


def test_orbit_commands_pass_the_reorthonormalisation_interval_to_their_task(tmp_path):
    from attnphys.dmft._commands.diagrams import BifurcationJob, PhaseDiagramJob

    for job in (BifurcationJob, PhaseDiagramJob):
        assert job(out=tmp_path / "o.zarr").plan().task.reortho_every == 1
        task = job(out=tmp_path / "o.zarr", reortho_every=5).plan().task
        assert task.reortho_every == 5 and task.spec(task.config).reortho_every == 5


@pytest.mark.slow
def test_finite_and_converge_commands(tmp_path):
    res = invoke("dmft", "finite", "--preset", "paper", "--n", "9900", "--paths", "4", "--beta-o", "1.0", "--steps", "100",
                 "--out", tmp_path / "fin.zarr")
    assert res.exit_code == 0, res.output
    ds = load(tmp_path / "fin.zarr")
    assert ds.mo_se.dims == ("path", "step", "feature") and ds.attrs["n_se_finite"] == 9900
    res = invoke("dmft", "converge", "--preset", "paper", "--beta-o", "0.5,1.0", "--n", "100,1000,10000",
                 "--paths", "4", "--steps", "120", "--horizon", "50", "--transient", "20", "--out", tmp_path / "c.zarr",
                 "--plot", tmp_path / "c.png")
    assert res.exit_code == 0, res.output
    c = load(tmp_path / "c.zarr")
    assert list(c.n.values) == [99, 990, 9999] and c.slope.dims == ("beta_o",)
    assert (tmp_path / "c.png").exists()
    res = invoke("dmft", "finite", "--n", "1000", "--out", tmp_path / "x.zarr")
    assert res.exit_code == 2 and "multiple of n_se" in res.output




def test_a_correlations_mapping_without_a_kind_changes_the_presets_correlations():
    from attnphys.dmft._commands.trajectory import TrajectoryJob
    from attnphys.dmft.config import preset
    from attnphys.jobs import build_job

    cfg = build_job(TrajectoryJob, {"correlations": {"seed": 5}}).configuration()
    base = preset("paper").correlations
    assert cfg.correlations.kind == base.kind and cfg.correlations.seed == 5 != base.seed
    assert cfg.correlations.model_dump(exclude={"seed"}) == base.model_dump(exclude={"seed"})


def test_an_entry_of_a_correlations_mapping_that_the_kind_lacks_is_refused():
    from attnphys.dmft._commands.trajectory import TrajectoryJob
    from attnphys.errors import InputError

    job = TrajectoryJob(correlations={"kind": "random", "n_segments": 5})
    with pytest.raises(InputError, match=r"--correlations.n_segments: applies to the segments and reference correlation kinds only"):
        job.configuration()
