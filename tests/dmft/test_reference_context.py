"""The reference's trajectories from a context window (its scripts ``simulate_mf_trajectory_inf_from_context.py``
and ``simulate_mf_trajectory_inf_paper_3pats.py``, the same file), checked record by record against runs of the
authors' code (tests/data/reference_context.npz, written by ``scripts/reference_vectors.py --context``)."""

import json
from pathlib import Path

import numpy as np
import pytest

from attnphys.dmft import preset, trajectories
from attnphys.dmft._commands.lyapunov import LyapunovJob
from attnphys.dmft._commands.trajectory import TrajectoryJob
from attnphys.dmft.initial import from_file, from_window, paper_checkpoint_path
from attnphys.dmft.reference import CONTEXT_TRAJECTORY_BETAS, is_context_trajectory
from attnphys.dmft.starts import CheckpointStart, FileStart, WindowStart
from attnphys.errors import InputError
from attnphys.jobs import build_job

from .test_reference import BIF, write

VECTORS = np.load(Path(__file__).resolve().parents[1] / "data" / "reference_context.npz")
RUNS = sorted({k.split("/")[0] for k in VECTORS.files if "/" in k})
STATS = ("att", "mo", "mo_se", "mv", "mq", "mk")
STEPS = int(VECTORS["steps"])


def _run(name: str):
    p = json.loads(str(VECTORS[f"{name}/params"]))
    start = WindowStart(
        att_window=tuple(map(tuple, VECTORS[f"{name}/att_window"])),
        pe_window=tuple(map(tuple, VECTORS[f"{name}/pe_window"])),
    )
    return p, trajectories(preset("paper", beta_o=p["beta_o"]), start=start, steps=STEPS)


def test_the_vectors_hold_the_scripts_betas_and_a_partial_context():
    betas = sorted(json.loads(str(VECTORS[f"{n}/params"]))["beta_o"] for n in RUNS if n.startswith("beta"))
    assert tuple(betas) == CONTEXT_TRAJECTORY_BETAS
    assert VECTORS["partial2/att_window"].shape == (2, 3) and VECTORS["beta1.4/att_window"].shape == (4, 3)


@pytest.mark.parametrize("name", RUNS)
def test_each_context_run_reproduces_the_reference_record_by_record(name):
    """From the reference's context window every recorded step agrees: to 1e-13 over the first 20 steps, and
    to 1e-9 over all 40 — the orbits leave the β_o = 3 window through an unstable transient that amplifies
    the last bit (measured: ≤ 2e-15 at step 20, 3.3e-11 at step 40 at β_o = 1.28)."""
    _, ds = _run(name)
    for s in STATS:
        ref = VECTORS[f"{name}/{s}"]
        assert ds[s].shape == ref.shape == (STEPS, 3)
        np.testing.assert_allclose(ds[s].values[:20], ref[:20], rtol=0, atol=1e-13, err_msg=f"{name} {s}")
        np.testing.assert_allclose(ds[s].values, ref, rtol=0, atol=1e-9, err_msg=f"{name} {s}")
    assert np.ptp(VECTORS[f"{name}/att"][-10:], axis=0).max() > 1e-3  # a run that moves


def test_a_context_shorter_than_the_window_fills_it_and_sets_the_fill_count():
    cfg = preset("paper")
    A = VECTORS["partial2/att_window"]
    win = from_window(cfg, A, VECTORS["partial2/pe_window"])
    assert int(win.n) == 2
    np.testing.assert_array_equal(np.asarray(win.A)[:2], A)
    np.testing.assert_array_equal(np.asarray(win.A)[2:], 0.0)
    with pytest.raises(ValueError, match=r"context of 2 rows but the fill count n is 3"):
        from_window(cfg, A, VECTORS["partial2/pe_window"], n=3)
    with pytest.raises(ValueError, match=r"must have shape \(L, M\) = \(4, 3\) \(or \(n, 3\)"):
        from_window(cfg, np.zeros((5, 3)), VECTORS["partial2/pe_window"])


def test_a_partial_context_file_is_a_start(tmp_path):
    """The reference's .npz layout with fewer attention rows than L reads as a start of that fill count, and
    runs as the reference's simulate(context_att, context_pe)."""
    f = tmp_path / "ctx.npz"
    np.savez(f, att_window=VECTORS["partial2/att_window"], pe_window=VECTORS["partial2/pe_window"])
    assert int(from_file(preset("paper"), f).n) == 2
    ds = trajectories(preset("paper", beta_o=1.27), start=FileStart(path=str(f)), steps=STEPS)
    np.testing.assert_allclose(ds["att"].values, VECTORS["partial2/att"], rtol=0, atol=1e-12)


def test_the_diagram_configuration_runs_the_scripts_trajectories(tmp_path):
    """cfgs/bif_diagram_inf_0.yaml, as the scripts read it: its range ignored, the β_o = 3 window of chpt_path
    as the start, the scripts' six β_o in one batch (β_o in the file is the placeholder −1), the paper's
    network; its schedule (175000 steps, 100000 transient) kept."""
    job = build_job(TrajectoryJob, {}, write(tmp_path, BIF))
    cfg = job.configuration()
    assert (cfg.M, cfg.L, cfg.P, cfg.n_se, cfg.correlations.kind) == (3, 4, 2, 99, "segments")
    assert job.start == CheckpointStart()
    assert tuple(job.beta_o) == CONTEXT_TRAJECTORY_BETAS
    assert (job.steps, job.transient) == (175000, 100000)
    # the lyapunov command reads it the same way (the scripts compute the exponents too)
    ly = build_job(LyapunovJob, {}, write(tmp_path, BIF))
    assert ly.start == CheckpointStart() and tuple(ly.beta_o) == CONTEXT_TRAJECTORY_BETAS
    # the scripts load chpt_path whatever load_chpt says; the command line wins
    job = build_job(
        TrajectoryJob, {"beta_o": (1.27,)}, write(tmp_path, BIF.replace("load_chpt: True", "load_chpt: False"))
    )
    assert job.start == CheckpointStart() and tuple(job.beta_o) == (1.27,)


def test_the_configuration_through_the_command_line_reproduces_the_reference(tmp_path):
    from typer.testing import CliRunner

    from attnphys.cli import app
    from attnphys.io import load

    out = tmp_path / "c.zarr"
    cmd = ["dmft", "trajectory", "--config", str(write(tmp_path, BIF)), "--beta-o", "1.27,1.4"]
    res = CliRunner().invoke(app, [*cmd, "--steps", str(STEPS), "--transient", "0", "--out", str(out)])
    assert res.exit_code == 0, res.output
    ds = load(out)
    assert ds.attrs["start"] == "checkpoint"
    for i, b in enumerate((1.27, 1.4)):
        for s in STATS:
            np.testing.assert_allclose(
                ds[s].isel(beta_o=i).values, VECTORS[f"beta{b}/{s}"], rtol=0, atol=1e-12, err_msg=f"{b} {s}"
            )


def test_the_checkpoint_is_the_references_context_window():
    data = json.loads(paper_checkpoint_path().read_text())
    np.testing.assert_array_equal(np.asarray(data["att_window"]), VECTORS["beta1.4/att_window"])
    np.testing.assert_array_equal(np.asarray(data["pe_window"]), VECTORS["beta1.4/pe_window"])


@pytest.mark.parametrize(
    "change, reading",
    [
        ((), True),
        (("chpt_path: ", "chpt_path_x: "), False),
        (("max_sim_steps: 175000", "max_sim_steps: 175000\ncontinuation_diagram: True"), False),
        (("correlations_from_weights: 3", "correlations_from_weights: 4"), False),
        (("min_bifurcation_value: 0.0", "min_bifurcation_value_gamma: 0.0"), False),
    ],
)
def test_only_a_one_parameter_diagram_with_a_context_is_read_as_the_scripts(change, reading):
    import yaml

    data = yaml.safe_load(BIF.replace(*change) if change else BIF)
    assert is_context_trajectory(data, set(TrajectoryJob.model_fields)) is reading
    assert not is_context_trajectory(yaml.safe_load(BIF), {"start", "start_value", "stop_value"})


def test_an_unsupported_key_of_the_scripts_configuration_is_named(tmp_path):
    with pytest.raises(InputError) as e:
        build_job(TrajectoryJob, {}, write(tmp_path, BIF.replace("reorder_weights: False", "reorder_weights: True")))
    assert "reorder_weights: true (shuffled shared weights) is not supported" in str(e.value)
    with pytest.raises(InputError) as e:
        build_job(TrajectoryJob, {}, write(tmp_path, BIF + "context_tokens: 3\n"))
    assert "context_tokens: unknown key" in str(e.value)


def test_other_commands_still_refuse_the_diagram_range(tmp_path):
    """Only the scripts' outputs (a trajectory, its exponents) read a diagram's file that way: another command
    that starts from a window refuses its range by name rather than sweeping the scripts' β_o."""
    from attnphys.dmft._commands.attractors import StabilityJob

    assert "start" in StabilityJob.model_fields and "start_value" not in StabilityJob.model_fields
    with pytest.raises(InputError) as e:
        build_job(StabilityJob, {}, write(tmp_path, BIF))
    assert "min_bifurcation_value" in str(e.value)
