"""The reference's correlation modes 0–4 with its own random draws, checked record by record against short
runs of the authors' code (tests/data/reference_modes.npz, written by scripts/reference_vectors.py)."""

import json
from pathlib import Path

import numpy as np
import pytest

from attnphys.dmft import DMFTConfig, trajectories
from attnphys.dmft.correlations import (
    ReferenceCorrelations,
    paper_segment_weights,
    reference_correlations,
    sign_matrix,
)
from attnphys.dmft.initial import start_window, token_positions
from attnphys.dmft.starts import PatternStart, TokenStart, WindowStart

VECTORS = np.load(Path(__file__).resolve().parents[1] / "data" / "reference_modes.npz")
RUNS = sorted({k.split("/")[0] for k in VECTORS.files if "/" in k})
STATS = ("att", "mo", "mo_se", "mv", "mq", "mk")


def _params(name: str) -> dict:
    return json.loads(str(VECTORS[f"{name}/params"]))


def _config(p: dict) -> DMFTConfig:
    corr = dict(kind="reference", mode=p["mode"], seed=1, pe_mode=p["pe_mode"], scale=p.get("scale", 0.5))
    return DMFTConfig(
        M=p["M"], L=p["L"], P=p["P"], n_se=max(p["n_se"], 1), epsilon=0.02, beta_o=p["beta_o"], beta_att=2.2,
        scaling_att=100.0, correlations=corr, mo_se_convention="paper", era="head",
    )  # fmt: skip


def test_the_vectors_hold_every_mode_and_both_positional_modes():
    modes = {(_params(n)["mode"], _params(n)["pe_mode"]) for n in RUNS}
    assert {m for m, _ in modes} == {0, 1, 2, 3, 4} and {pe for _, pe in modes} == {0, 1}


@pytest.mark.parametrize("name", RUNS)
def test_each_mode_reproduces_the_reference_record_by_record(name):
    """From the reference's first window (its start), every recorded step agrees to rounding (max 2.5e-14
    measured; 1e-12 allowed), the transient included (recorded from step 0)."""
    p = _params(name)
    A = np.zeros((p["L"], p["M"]))
    A[0] = VECTORS[f"{name}/att0"]
    start = WindowStart(
        att_window=tuple(map(tuple, A)), pe_window=tuple(map(tuple, token_positions(p["L"], p["P"]))), n=1
    )
    ds = trajectories(_config(p), start=start, steps=int(VECTORS["steps"]))
    for s in STATS:
        ref = VECTORS[f"{name}/{s}"]
        assert ds[s].shape == ref.shape
        np.testing.assert_allclose(ds[s].values, ref, rtol=0, atol=1e-12, err_msg=f"{name} {s}")
    assert np.ptp(VECTORS[f"{name}/att"][-10:], axis=0).max() > 1e-3 or name == "mode1_pe1"  # a run that moves


def test_mode_3_is_the_paper_segment_network_draw_for_draw():
    a = reference_correlations(3, 1, 3, 99, 2)
    assert a.weights is not None
    np.testing.assert_array_equal(a.weights, paper_segment_weights(1, 3, 99, 2, 3)["W"])


def test_positional_mode_1_copies_columns_and_draws_nothing_more():
    """pe_mode 1 copies the last P semantic columns instead of drawing them: the semantic draws are those of
    pe_mode 0 with segments, and the following draws (mode 2's means) shift by the 4·M·P skipped bits."""
    c0 = reference_correlations(1, 5, 3, 20, 3, pe_mode=0)
    c1 = reference_correlations(1, 5, 3, 20, 3, pe_mode=1)
    assert c0.weights is not None and c1.weights is not None
    np.testing.assert_array_equal(c0.weights[:, :, :20], c1.weights[:, :, :20])
    np.testing.assert_array_equal(c1.weights[:, :, 20:], c1.weights[:, :, 17:20])
    assert not np.array_equal(c0.weights[:, :, 20:], c1.weights[:, :, 20:])


def test_hand_set_mode_is_the_permutation_of_the_patterns():
    c = reference_correlations(4, 0, 3, 1, 5)
    np.testing.assert_array_equal(c.W_pe, 0)
    np.testing.assert_array_equal(c.C[0, :3], np.eye(3))
    np.testing.assert_array_equal(c.C[1, :3], np.roll(np.eye(3), 1, axis=0))  # C^v_{b,a} = 1 iff b = a + 1 mod 3
    np.testing.assert_array_equal(c.C[:, 3], 0)  # no moment beyond the pairs
    # K = Σ C: each sign vector's row of K^o is the sign of the pattern itself
    np.testing.assert_array_equal(c.K[0], sign_matrix(3)[:, :3])


def test_gaussian_mode_draws_pairs_in_the_references_order_and_multiplies_the_triple():
    c = reference_correlations(0, 7, 3, 10, 2, scale=0.3)
    rs = np.random.RandomState(7)
    rs.randint(2, size=(3, 10))
    for _ in range(4):
        rs.randint(2, size=(3, 10))
    for _ in range(4):
        rs.randint(2, size=(3, 2))
    oo, ov, ok, oq = (rs.normal(0, 0.3, (3, 3)) for _ in range(4))
    np.fill_diagonal(oo, 1)
    for x, m in enumerate((oo, ov, oq, ok)):
        np.testing.assert_array_equal(c.C[x, :3], np.clip(m, -1, 1))
        np.testing.assert_allclose(c.C[x, 3], np.prod(np.clip(m, -1, 1), axis=0), rtol=1e-15)


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(mode=1, M=4, n_se=10, P=2), "1, 2 or 3 features"),
        (dict(mode=2, M=3, n_se=10, P=0), "1 <= P <= n_se"),
        (dict(mode=0, M=3, n_se=2, P=3), "1 <= P <= n_se"),
    ],
)
def test_sizes_the_reference_cannot_serve_are_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        ReferenceCorrelations(mode=kw["mode"]).check(kw["M"], kw["n_se"], kw["P"])
    with pytest.raises(ValueError, match=match):
        DMFTConfig(
            M=kw["M"], n_se=kw["n_se"], P=kw["P"], L=1, epsilon=0.02 if kw["P"] else 0.0,
            correlations=dict(kind="reference", mode=kw["mode"]),
        )  # fmt: skip


@pytest.mark.parametrize("name", [n for n in RUNS if _params(n)["mode"] != 4])
def test_the_token_start_is_the_references_first_window(name):
    """The first token is row 0 of the drawn W^o (modes 0 and 2 included, whose moments are drawn apart from
    the weights): its window is the reference's, to rounding."""
    p = _params(name)
    cfg = _config(p)
    np.testing.assert_allclose(start_window(cfg, "token").A[0], VECTORS[f"{name}/att0"], rtol=0, atol=1e-15)


def test_the_manual_pe5_run_from_its_pattern_start_is_the_references():
    """The reference's newest experiment (hand-set correlations, P = 5, L = 32, β_o = 10, started from pattern
    1): the pattern start gives its first window exactly and every recorded step to rounding."""
    p = _params("manual_pe5")
    cfg = _config(p)
    np.testing.assert_array_equal(start_window(cfg, "pattern:1").A[0], VECTORS["manual_pe5/att0"])
    ds = trajectories(cfg, start=PatternStart(index=1), steps=int(VECTORS["steps"]))
    for s in STATS:
        np.testing.assert_allclose(ds[s].values, VECTORS[f"manual_pe5/{s}"], rtol=0, atol=1e-12, err_msg=s)


def test_a_pattern_index_beyond_the_patterns_is_refused():
    cfg = _config(_params("manual_pe5"))
    with pytest.raises(ValueError, match=r"pattern index must be in \[0, 2\], got 3"):
        start_window(cfg, PatternStart(index=3))
    with pytest.raises(ValueError, match="pattern:<index>"):
        start_window(cfg, "pattern:x")


# -- the reference's configurations --------------------------------------------------------------------

MANUAL_PE5 = """\
semantic_embedding_size: 0
beta_o: -1
beta_att: 2.2
min_bifurcation_value: 0.0
max_bifurcation_value: 3.0
epsilon_pe: 0.02
num_transient_steps: 0
max_sim_steps: 1000
num_transient_steps_pre: 0
max_sim_steps_pre: 0
ini_token_from_w: 1
reorder_weights: False
normalize_weights_str_o: "N"
normalize_weights_str_att: "N**2*np.sqrt(M)"
scaling_o: 1
scaling_att: 100
filtering_range: 0.001
compute_inf_normalization: True
correlations_from_weights: 4
gaussian_scale: "0.5"
pe_mode: 0
num_segments_corrs: 3
save_non_transient: False
save_not_plot: True
bifurcation_mode: out
inf_mode: True
load_chpt: False
chpt_path: ""
compute_lyapunov: False
continuation_diagram: False
"""
"""The keys and values of the authors' cfgs/manual_pe5/inf_0.yaml."""


NO_RANGE = MANUAL_PE5.replace("min_bifurcation_value: 0.0\n", "").replace("max_bifurcation_value: 3.0\n", "")
"""The same without the diagram's range, which only the hand-set mode's script ignores."""


def _manual(tmp_path, text=MANUAL_PE5):
    folder = tmp_path / "manual_pe5"
    folder.mkdir(exist_ok=True)
    (folder / "inf_0.yaml").write_text(text)
    return folder / "inf_0.yaml"


def test_the_manual_pe5_configuration_runs_the_references_experiment(tmp_path):
    """cfgs/manual_pe5/inf_0.yaml from the command line (its folder gives P = 5, L = 32; the placeholder β_o = −1
    becomes the script's 10, not a preset's value; 40 steps as a short form of the authors' script) reproduces the reference's records."""
    from typer.testing import CliRunner

    from attnphys.cli import app
    from attnphys.io import load

    out = tmp_path / "m.zarr"
    res = CliRunner().invoke(
        app,
        [
            "dmft",
            "trajectory",
            "--config",
            str(_manual(tmp_path)),
            "--steps",
            "40",
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    ds = load(out)
    cfg = json.loads(ds.attrs["config"])
    assert (cfg["P"], cfg["L"], cfg["correlations"]["mode"]) == (5, 32, 4)
    assert cfg["beta_o"] == 10.0
    for s in STATS:
        np.testing.assert_allclose(
            ds[s].values.reshape(40, 3), VECTORS[f"manual_pe5/{s}"], rtol=0, atol=1e-12, err_msg=s
        )


@pytest.mark.slow
def test_the_mode_4_experiment_without_a_transient_is_labelled_by_its_settled_period_3(tmp_path):
    """The hand-set experiment's diagram file (transient 0, 1,000 steps) at β_o = 3: the orbit settles on
    a period-3 cycle after about 60 steps, so its record holds an unsettled head; the label is the
    settled tail's (periodic, period 3, exact_period), not a 0-1 verdict on the whole record
    (docs/theory/dynamics.md §4.1)."""
    from typer.testing import CliRunner

    from attnphys.cli import app
    from attnphys.dynamics.classify import REGIME_REASONS, REGIMES, detect_period, settled_period
    from attnphys.io import load

    out = tmp_path / "b.zarr"
    res = CliRunner().invoke(app, ["dmft", "bifurcation", "--config", str(_manual(tmp_path)), "--start-value",
                                   "2.9", "--stop-value", "3", "--num", "2", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "regimes      │ periodic: 2" in res.output
    ds = load(out).sel(beta_o=3.0)
    assert ds.attrs["config"] and int(ds.period) == 3
    assert REGIMES[int(ds.regime)] == "periodic" and REGIME_REASONS[int(ds.regime_reason)] == "exact_period"
    orbit = ds.orbit.values
    assert int(detect_period(orbit)) == 0  # the whole record does not repeat: its head is unsettled
    period, start = settled_period(orbit)
    assert int(period) == 3 and 20 < int(start) < 200


@pytest.mark.parametrize(
    "change, spec",
    [
        (("correlations_from_weights: 4", "correlations_from_weights: 0"), dict(mode=0, pe_mode=0, scale=0.5)),
        (("correlations_from_weights: 4", "correlations_from_weights: 1"), dict(mode=1, pe_mode=0)),
        (("correlations_from_weights: 4", "correlations_from_weights: 2\npe_mode: 1"), dict(mode=2, pe_mode=1)),
        (("correlations_from_weights: 4", "correlations_from_weights: 3\npe_mode: 1"), dict(mode=3, pe_mode=1)),
    ],
)
def test_each_correlation_mode_of_a_configuration_becomes_the_reference_kind(tmp_path, change, spec):
    from attnphys.dmft._commands.trajectory import TrajectoryJob
    from attnphys.jobs import build_job

    text = (
        NO_RANGE.replace("pe_mode: 0\n", "")
        .replace(*change)
        .replace("semantic_embedding_size: 0", "semantic_embedding_size: 30")
    )
    job = build_job(TrajectoryJob, {}, _manual(tmp_path, text))
    corr = job.configuration().correlations.model_dump()
    assert corr == {"kind": "reference", "seed": 1, "n_segments": 3, "pe_mode": 0, "scale": 0.5, **spec}
    assert job.configuration().n_se == 30 and job.start == TokenStart()


def test_recording_the_transient_records_from_step_0(tmp_path):
    from attnphys.dmft._commands.trajectory import TrajectoryJob
    from attnphys.jobs import build_job

    text = MANUAL_PE5.replace("num_transient_steps: 0", "num_transient_steps: 300")
    assert build_job(TrajectoryJob, {}, _manual(tmp_path, text)).transient == 300
    text = text.replace("save_non_transient: False", "save_non_transient: True")
    assert build_job(TrajectoryJob, {}, _manual(tmp_path, text)).transient == 0


@pytest.mark.parametrize(
    "change, key, words",
    [
        (("pe_mode: 0", "pe_mode: 2"), "pe_mode", "0 (positional columns drawn"),
        (('gaussian_scale: "0.5"\n', ""), "correlations_from_weights", "needs gaussian_scale"),
        (('gaussian_scale: "0.5"', 'gaussian_scale: "np.sqrt(2)"'), "gaussian_scale", "never evaluated"),
    ],
)
def test_a_mode_the_reference_cannot_run_is_refused_naming_the_key(tmp_path, change, key, words):
    from attnphys.dmft._commands.trajectory import TrajectoryJob
    from attnphys.errors import InputError
    from attnphys.jobs import build_job

    text = (
        NO_RANGE.replace("correlations_from_weights: 4", "correlations_from_weights: 0")
        .replace("semantic_embedding_size: 0", "semantic_embedding_size: 30")
        .replace(*change)
    )
    with pytest.raises(InputError) as e:
        build_job(TrajectoryJob, {}, _manual(tmp_path, text))
    assert f"{key}:" in str(e.value) and words in str(e.value)


def test_lyapunov_exponents_from_a_pattern_start_need_a_full_window():
    from attnphys.dmft.tasks.lyapunov import check_token_transient

    cfg = _config(_params("manual_pe5"))
    with pytest.raises(ValueError, match=r"from a pattern start need --transient >= L - 1 = 31"):
        check_token_transient("pattern:1", cfg, 30)
    check_token_transient("pattern:1", cfg, 31)
