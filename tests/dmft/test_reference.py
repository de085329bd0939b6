"""The reference implementation's files as inputs: YAML configurations, .npz checkpoints, hand-set weights."""

import hashlib
import json
import re
import tomllib
import warnings
from fnmatch import fnmatch
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from attnphys.cli import app
from attnphys.dmft import preset
from attnphys.dmft._commands.diagrams import BifurcationJob, PhaseDiagramJob
from attnphys.dmft._commands.trajectory import TrajectoryJob
from attnphys.dmft.initial import from_file, paper_checkpoint_path
from attnphys.dmft.reference import (
    CONTEXT_TRAJECTORY_BETAS,
    REFERENCE_CHECKPOINTS,
    REFERENCE_KEYS,
    reference_checkpoint,
)
from attnphys.dmft.starts import CheckpointStart, FileStart, PatternStart, TokenStart
from attnphys.errors import InputError
from attnphys.io import load
from attnphys.jobs import build_job

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path("/work/shared/data/reference")
runner = CliRunner()

# the keys and values of the authors' bif_diagram_inf_0.yaml (every key their configurations use)
BIF = """\
semantic_embedding_size: 99
beta_o: -1
beta_att: 2.2
min_bifurcation_value: 0.0
max_bifurcation_value: 3.0
epsilon_pe: 0.02
num_transient_steps: 100000
max_sim_steps: 175000
ini_token_from_w: 1
reorder_weights: False
normalize_weights_str_o: "N"
normalize_weights_str_att: "N**2*np.sqrt(M)"
scaling_o: 1
scaling_att: 100
filtering_range: 0.001
compute_inf_normalization: True
correlations_from_weights: 3
gaussian_scale: "0.5"
pe_mode: 0
num_segments_corrs: 3
save_non_transient: False
save_not_plot: True
bifurcation_mode: out
inf_mode: True
load_chpt: True
chpt_path: "results_betas_ft/beta3.0/seed-1-transient_steps-100000-max_sim_steps-175000.npz"
compute_lyapunov: True
"""

CONT_PE5 = (
    BIF.replace("min_bifurcation_value: 0.0", "min_bifurcation_value: 1.25")
    .replace("max_bifurcation_value: 3.0", "max_bifurcation_value: 1.55")
    .replace(
        "num_transient_steps: 100000\nmax_sim_steps: 175000",
        "num_transient_steps: 0\nmax_sim_steps: 150000\nnum_transient_steps_pre: 100000\nmax_sim_steps_pre: 100512",
    )
    .replace(
        'chpt_path: "results_betas_ft/beta3.0/seed-1-transient_steps-100000-max_sim_steps-175000.npz"',
        'chpt_path: "chpt/continuation/exp_pe5/general_beta_idx-258_value_1.554_window_chpt.npz"',
    )
    + "continuation_diagram: True\n"
)


def write(tmp_path, text, name="bif_diagram_inf_0.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_bifurcation_config_loads_to_the_paper_preset_with_the_head_schedule(tmp_path):
    job = build_job(BifurcationJob, {}, write(tmp_path, BIF))
    assert job.preset == "paper" and job.configuration() == preset("paper")
    assert (job.steps, job.transient) == (175_000, 100_000)
    assert isinstance(job.start, CheckpointStart)
    assert (job.param, job.start_value, job.stop_value, job.section_tol) == ("beta_o", 0.0, 3.0, 0.001)
    assert job.exponents == BifurcationJob.model_fields["exponents"].default and job.continuation is None


@pytest.mark.skipif(not SHARED.is_dir(), reason="the authors' files are not on this machine")
@pytest.mark.parametrize(
    "name",
    [
        "bif_diagram_inf_0.yaml",
        "bif_diagram_inf_0_zoom-in.yaml",
        "cont_diagram_inf_0.yaml",
        "exp_pe2__cont_diagram_inf_0_zoom-in_1.yaml",
        "exp_pe5__cont_diagram_inf_0.yaml",
        "exp_pe5__cont_diagram_inf_0_zoom-in_1.yaml",
    ],
)
def test_the_authors_diagram_configurations_load(name):
    job = build_job(BifurcationJob, {}, SHARED / "configs" / name)
    job.configuration()
    assert job.preset == ("paper-pe5" if "pe5" in name else "paper")
    if name == "bif_diagram_inf_0.yaml":
        assert (job.steps, job.transient, job.start) == (175_000, 100_000, CheckpointStart())


def test_phase_diagram_config_maps_its_axes_and_the_command_line_wins(tmp_path):
    text = "\n".join(
        line
        for line in BIF.splitlines()
        if "bifurcation_value" not in line
        and "bifurcation_mode" not in line
        and "compute_lyapunov" not in line
        and line != "max_sim_steps: 175000"
    ) + (
        "\nmin_bifurcation_value_beta: 0.0\nmax_bifurcation_value_beta: 3.0\nmin_bifurcation_value_gamma: 0.5\n"
        "max_bifurcation_value_gamma: 2.5\nmax_sim_steps: 120000\n"
    )  # a key given twice is refused
    job = build_job(PhaseDiagramJob, {"steps": 5000, "transient": 1000}, write(tmp_path, text, "phase.yaml"))
    assert job.x == ("beta_o", 0.5, 2.5, 201) and job.y == ("beta_att", 0.0, 3.0, 201)
    assert (job.steps, job.transient) == (5000, 1000)


def test_command_line_values_override_the_file(tmp_path):
    job = build_job(
        BifurcationJob, {"steps": 3000, "transient": 1000, "start": "token", "beta_att": "2.0"}, write(tmp_path, BIF)
    )
    assert (job.steps, job.transient, job.start) == (3000, 1000, TokenStart())
    assert job.configuration().beta_att == 2.0


def test_continuation_config_maps_the_pre_phase_and_the_shipped_checkpoint(tmp_path):
    job = build_job(BifurcationJob, {}, write(tmp_path, CONT_PE5, "exp_pe5__cont_diagram_inf_0_zoom-in_1.yaml"))
    cfg = job.configuration()
    assert job.preset == "paper-pe5" and (cfg.L, cfg.P) == (32, 5)
    assert job.continuation == "down"
    # the pre-phase (100,512 steps from the neighbour's context) is the transient of every value
    assert (job.steps, job.transient) == (100_512 + 150_000, 100_512)
    assert isinstance(job.start, FileStart)
    assert Path(job.start.path) == reference_checkpoint("exp_pe5__general_beta_idx-258_value_1.554_window_chpt.npz")


@pytest.mark.parametrize(
    "change, key",
    [
        (
            (
                'normalize_weights_str_att: "N**2*np.sqrt(M)"',
                "normalize_weights_str_att: \"__import__('os').getcwd()\"",
            ),
            "normalize_weights_str_att",
        ),
        (('normalize_weights_str_o: "N"', 'normalize_weights_str_o: "N*np.sqrt(M)"'), "normalize_weights_str_o"),
        (('gaussian_scale: "0.5"', 'gaussian_scale: "np.sqrt(2)"'), "gaussian_scale"),
        (("correlations_from_weights: 3", "correlations_from_weights: 5"), "correlations_from_weights"),
        (("pe_mode: 0", "pe_mode: 2"), "pe_mode"),
        (("inf_mode: True", "inf_mode: False"), "inf_mode"),
        (("bifurcation_mode: out", "bifurcation_mode: betas"), "bifurcation_mode"),
        (("ini_token_from_w: 1", "ini_token_from_w: 2"), None),  # ignored: the file loads a checkpoint
        (("scaling_o: 1", "scaling_o: 1\nnot_a_reference_key: 3"), "not_a_reference_key"),
    ],
)
def test_unknown_or_unsupported_keys_are_named(tmp_path, change, key):
    text = BIF.replace(*change)
    assert text != BIF
    if key is None:
        build_job(BifurcationJob, {}, write(tmp_path, text))
        return
    with pytest.raises(InputError) as e:
        build_job(BifurcationJob, {}, write(tmp_path, text))
    assert f"{key}:" in str(e.value) and e.value.field == "--config"


def test_unknown_normalisation_is_refused_through_the_command_line(tmp_path):
    cfg = write(tmp_path, BIF.replace('"N**2*np.sqrt(M)"', '"N**3"'))
    res = runner.invoke(app, ["dmft", "bifurcation", "--config", str(cfg), "--out", str(tmp_path / "b.zarr")])
    assert res.exit_code == 2
    assert "normalize_weights_str_att" in res.output and "N**3" in res.output
    assert not (tmp_path / "b.zarr").exists()


def test_hand_set_weights_mode_maps_to_the_reference_kind_and_its_pattern_start(tmp_path):
    text = (
        BIF.replace("correlations_from_weights: 3", "correlations_from_weights: 4")
        .replace("semantic_embedding_size: 99", "semantic_embedding_size: 0")
        .replace("load_chpt: True", "load_chpt: False")
    )
    job = build_job(BifurcationJob, {}, write(tmp_path, text, "manual_pe5__inf_0.yaml"))
    cfg = job.configuration()
    assert (cfg.P, cfg.L, cfg.correlations.kind, cfg.correlations.mode) == (5, 32, "reference", 4)
    assert job.start == PatternStart(index=1)


NO_CONTEXT = "".join(line + "\n" for line in BIF.splitlines() if not line.startswith(("load_chpt", "chpt_path")))

RANGE_IGNORED = {
    # case: (file, refused for, β_o of the job)
    "from a context": (BIF, None, CONTEXT_TRAJECTORY_BETAS),
    "without a context": (NO_CONTEXT.replace("compute_lyapunov: True", "compute_lyapunov: False"), None, None),
    "without a context, exponents asked": (NO_CONTEXT, "compute_lyapunov", None),
}


@pytest.mark.parametrize("case", list(RANGE_IGNORED))
def test_the_trajectory_command_ignores_a_diagram_range_saying_so(tmp_path, case):
    """A trajectory runs at its --beta-o: the diagram's range of a bifurcation configuration is ignored, in
    one line naming the keys, whether or not the file starts from a context (with one it is the reference's
    trajectory-from-context input, tests/dmft/test_reference_context.py); what a trajectory cannot do
    (exponents) is still refused."""
    text, refused, beta_o = RANGE_IGNORED[case]
    assert ("chpt_path" in text) == (case == "from a context")
    note = "min_bifurcation_value and max_bifurcation_value ignored (the range of a bifurcation diagram"
    with pytest.warns(UserWarning, match=re.escape(note)) as caught:
        if refused:
            with pytest.raises(InputError) as e:
                build_job(TrajectoryJob, {}, write(tmp_path, text))
            assert refused in str(e.value) and "bifurcation_value" not in str(e.value)
        else:
            job = build_job(TrajectoryJob, {}, write(tmp_path, text))
            assert job.beta_o == beta_o and (job.steps, job.transient) == (175_000, 100_000)
    assert len([w for w in caught if "ignored" in str(w.message)]) == 1


def test_a_file_without_a_diagram_range_reads_without_a_note(tmp_path):
    text = "".join(line + "\n" for line in NO_CONTEXT.splitlines() if "bifurcation_value" not in line)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        build_job(TrajectoryJob, {}, write(tmp_path, text.replace("compute_lyapunov: True", "compute_lyapunov: False")))


def test_every_reference_key_is_documented_in_the_table():
    for line in BIF.splitlines():
        assert line.split(":")[0] in REFERENCE_KEYS
    for key in ("num_transient_steps_pre", "max_sim_steps_pre", "continuation_diagram", "min_bifurcation_value_beta"):
        assert key in REFERENCE_KEYS


def test_own_options_files_are_read_as_they_are(tmp_path):
    p = tmp_path / "opts.yaml"
    p.write_text("steps: 1234\ntransient: 34\nbeta_o: 1.3\n")
    job = build_job(TrajectoryJob, {}, p)
    assert (job.steps, job.transient, job.beta_o) == (1234, 34, (1.3,))


# -- checkpoints -----------------------------------------------------------------------------------------


def beta3_npz(path: Path) -> Path:
    """The published β = 3 window in the reference's .npz checkpoint format."""
    data = json.loads(paper_checkpoint_path().read_text())
    np.savez(
        path,
        att_window=np.asarray(data["att_window"], np.float64),
        pe_window=np.asarray(data["pe_window"], np.float64),
        beta=np.asarray(3.0),
    )
    return path


def test_beta3_npz_checkpoint_gives_bit_for_bit_the_checkpoint_trajectory(tmp_path):
    npz = beta3_npz(tmp_path / "seed-1-transient_steps-100000-max_sim_steps-175000.npz")
    outs = {}
    for name, start in (("ck", "checkpoint"), ("npz", npz)):
        outs[name] = tmp_path / f"{name}.zarr"
        res = runner.invoke(
            app,
            [
                "dmft",
                "trajectory",
                "--beta-o",
                "1.27",
                "--steps",
                "1500",
                "--start",
                str(start),
                "--out",
                str(outs[name]),
            ],
        )
        assert res.exit_code == 0, res.output
    a, b = load(outs["ck"]), load(outs["npz"])
    for name in ("att", "mo", "mo_se", "mv", "mq", "mk", "final_A"):
        assert np.array_equal(a[name].values, b[name].values), name


@pytest.mark.parametrize("name", sorted(REFERENCE_CHECKPOINTS))
def test_shipped_checkpoints_load_with_their_shapes(name):
    c = REFERENCE_CHECKPOINTS[name]
    cfg = preset(c.preset)
    win = from_file(cfg, c.path)
    assert np.asarray(win.A).shape == (cfg.L, 3) and np.asarray(win.pe).shape == (cfg.L, cfg.P)
    assert int(win.n) == cfg.L
    with np.load(c.path) as z:
        assert float(z["beta"]) == c.beta_o


def test_p5_checkpoint_is_refused_by_a_p2_configuration(tmp_path):
    # (a P = 5 run from the authors' checkpoints: tests/reproduce, the continuation test)
    ck = reference_checkpoint("exp_pe5__zoom1_beta_idx-300_value_1.43_window_chpt.npz")
    res = runner.invoke(
        app,
        [
            "dmft",
            "trajectory",
            "--preset",
            "paper",
            "--steps",
            "5",
            "--start",
            str(ck),
            "--out",
            str(tmp_path / "p2.zarr"),
        ],
    )
    assert res.exit_code == 2 and "(L, M) = (4, 3)" in res.output


@pytest.mark.skipif(not SHARED.is_dir(), reason="the authors' files are not on this machine")
@pytest.mark.parametrize("name", sorted(REFERENCE_CHECKPOINTS))
def test_shipped_checkpoints_are_the_authors_files(name):
    digest = hashlib.sha256((SHARED / "checkpoints" / name).read_bytes()).hexdigest()
    assert hashlib.sha256(reference_checkpoint(name).read_bytes()).hexdigest() == digest


def test_shipped_checkpoints_are_package_data():
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["attnphys"]
    for name in REFERENCE_CHECKPOINTS:
        rel = f"data/reference/{name}"
        assert any(fnmatch(rel, pat) for pat in patterns), f"{rel} is not matched by package-data {patterns}"


# -- hand-set weights ----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.long
def test_weights_file_reproduces_the_segment_network_bit_for_bit(tmp_path, data_dir):
    w = json.loads((data_dir / "dmft-paper-seed1-weights.json").read_text())
    f = tmp_path / "w.npz"
    np.savez(f, **{k: np.asarray(w[k]) for k in ("Wo", "Wv", "Wq", "Wk")})
    outs = []
    for extra in ([], ["--weights", str(f)]):
        out = tmp_path / f"t{len(outs)}.zarr"
        res = runner.invoke(
            app,
            ["dmft", "trajectory", "--beta-o", "1.26", "--steps", "400", "--start", "token", "--out", str(out), *extra],
        )
        assert res.exit_code == 0, res.output
        outs.append(load(out))
    assert json.loads(outs[1].attrs["config"])["correlations"]["kind"] == "weights"
    assert np.array_equal(outs[0].mo_se.values, outs[1].mo_se.values)


@pytest.mark.parametrize("mode, message", [(1, None), (0, "a random token"), (3, "row 0 of W^q"), (7, "unknown mode")])
def test_token_starts(tmp_path, mode, message):
    text = BIF.replace("load_chpt: True", "load_chpt: False").replace(
        "ini_token_from_w: 1", f"ini_token_from_w: {mode}"
    )
    if message is None:
        assert build_job(BifurcationJob, {}, write(tmp_path, text)).start == TokenStart()
        return
    with pytest.raises(InputError, match=re.escape(message)):
        build_job(BifurcationJob, {}, write(tmp_path, text))


@pytest.mark.parametrize("suffix", [".npz", ".json"])
def test_a_saved_window_reads_back_exactly_into_a_new_folder_and_leaves_no_partial(tmp_path, suffix):
    from attnphys.dmft.initial import paper_checkpoint, save_window

    cfg = preset("paper")
    win = paper_checkpoint(cfg)
    path = save_window(win, tmp_path / "new" / "sub" / f"w{suffix}", beta_o=1.26)
    back = from_file(cfg, path)
    np.testing.assert_array_equal(np.asarray(back.A), np.asarray(win.A))
    np.testing.assert_array_equal(np.asarray(back.pe), np.asarray(win.pe))
    assert int(back.n) == int(win.n)
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no hidden partial beside it


def test_a_seed_with_a_weights_file_is_refused_not_dropped(tmp_path, data_dir):
    w = json.loads((data_dir / "dmft-paper-seed1-weights.json").read_text())
    f = tmp_path / "w.npz"
    np.savez(f, **{k: np.asarray(w[k]) for k in ("Wo", "Wv", "Wq", "Wk")})
    res = runner.invoke(
        app,
        [
            "dmft",
            "trajectory",
            "--steps",
            "5",
            "--weights",
            str(f),
            "--corr-seed",
            "3",
            "--out",
            str(tmp_path / "t.zarr"),
        ],
    )
    assert res.exit_code == 2, res.output
    assert "--corr-seed: the weights correlation kind has no seed" in " ".join(res.output.split())
    assert not (tmp_path / "t.zarr").exists()


def test_a_census_samples_its_own_starts_from_a_reference_configuration(tmp_path):
    """The reference's start window (its checkpoint) is kept only for the perturb sampler: the other samplers
    draw their own starts, so it would be an option with no effect."""
    from attnphys.dmft._commands.attractors import BasinsJob

    path = write(tmp_path, BIF.replace("compute_lyapunov: True", "compute_lyapunov: False"))
    job = build_job(BasinsJob, {}, path)
    assert "start" not in job.given_options()
    job.check_applicable()
    job = build_job(BasinsJob, {"sampler": "perturb"}, path)
    assert isinstance(job.start, CheckpointStart) and "start" in job.given_options()
    job.check_applicable()


def test_command_line_weights_replace_the_correlations_of_a_reference_configuration(tmp_path):
    import numpy as np

    signs = np.where(np.random.default_rng(0).random((4, 3, 101)) < 0.5, -1.0, 1.0)
    np.savez(tmp_path / "w.npz", **dict(zip(("Wo", "Wv", "Wq", "Wk"), signs)))
    job = build_job(BifurcationJob, {"weights": tmp_path / "w.npz"}, write(tmp_path, BIF))
    job.check_applicable()
    assert job.configuration().correlations.kind == "weights"
