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
from attnphys.dmft.starts import PatternStart, WindowStart

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
    """From the reference's first window (its start), every recorded step agrees to rounding (max 1e-14
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
