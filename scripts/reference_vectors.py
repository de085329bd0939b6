"""Write tests/data/reference_modes.npz: short runs of the authors' reference implementation, one per
correlation mode, for the record-by-record test of :mod:`attnphys.dmft.correlations.reference`.

How the file was made::

    git -C <mirror of muxitox/Dynamical-MF-Self-Attention> archive HEAD models utils.py | tar x -C /tmp/refrun
    PYTHONPATH=src .venv/bin/python scripts/reference_vectors.py /tmp/refrun tests/data/reference_modes.npz

``reference_vectors.py --compare FILE`` prints the largest difference of each run from the library's.
A third argument sets the number of steps (default 40; the 1000-step agreement stated in
docs/theory/dmft.md §4.5 was measured on a file written outside the repository). The reference is imported from that folder and never copied. Its model imports ``autograd`` only for the
Lyapunov Jacobian; when autograd is not installed, a stand-in that forwards ``autograd.numpy`` to numpy is
put on the path (these runs compute no Jacobian). Each run seeds numpy's global generator with 1 as the
reference's scripts do, builds the mean-field model, starts as the reference does (modes 0–3: the first
token x₀ = row 0 of W^o with positional bits −1; mode 4: the pattern index 1) and records every step from
step 0 (``min_saved_step`` 0: the transient recorded). Stored per run ``<name>/<stat>`` (steps, M) and
``<name>/att0`` (the first attention row, the start of the window), ``<name>/params``.

``reference_vectors.py --context REFDIR tests/data/reference_context.npz`` writes the vectors of the
reference's context-start script (``simulate_mf_trajectory_inf_from_context.py``; its
``simulate_mf_trajectory_inf_paper_3pats.py`` is the same file): the paper's network (mode 3, N_se = 99,
M = 3, P = 2, L = 4) started from the context window saved at β_o = 3 (``results_betas_ft/beta3.0/…npz``,
extracted with ``git archive HEAD models utils.py results_betas_ft``), at each β_o of the script's list,
plus one run from a partial context (the newest two rows of that window: the reference's
``simulate(context_att, context_pe)`` with fewer rows than L). ``--compare-context FILE`` prints the
differences. ``--context-statistics REFDIR [BETA …]`` runs the script's full schedule (175,000 steps,
100,000 transient) and prints the differences of the long-run statistics, from the checkpoint and from the
reference's own window at the end of the transient (docs/theory/dmft.md §8).

``--context-lyapunov REFDIR tests/data/reference_context_lyapunov.npz [STEPS TRANSIENT]`` writes the
reference's Lyapunov exponents of the same seven context runs: the script's own code path,
``simulate(..., compute_lyapunov=True)``, with autograd's Jacobian of the full L(M+P) = 20-dimensional
state, identity tangent vectors, numpy's QR every step and S = Σ log|diag R| / (STEPS − TRANSIENT) in QR
order; stored per run ``<name>/S`` (20,) and ``<name>/S_i_sum`` (STEPS − TRANSIENT, 20), the running sums
after every step. Default schedule 40 steps, 2 of them transient (the reference's Jacobian needs a full
window, which a 2-row context reaches after 2 steps; fewer fails inside its ``matmul``), the span over
which the records agree to 3.3e-11. It needs the real autograd, so it runs in an environment of its own,
never the project's::

    python3 -m venv /tmp/refvenv
    /tmp/refvenv/bin/pip install autograd==1.7.0 numpy==1.26.1 PyYAML==6.0.1   # the reference's pins
    cd /tmp && /tmp/refvenv/bin/python <repo>/scripts/reference_vectors.py --context-lyapunov /tmp/refctx \
        <repo>/tests/data/reference_context_lyapunov.npz

(about 2 s; regenerating gives the committed file array for array). ``--compare-context-lyapunov FILE``
(in the project's environment) prints, per run, the largest difference from the library's full-state
spectrum on the same schedule from the same window, QR column by QR column, in the groups of
:data:`CONTEXT_LYAPUNOV_GROUPS`, and that of the leading running sums at every step. The 900-step figures of
docs/theory/dmft.md §8 come from a file written outside the repository with ``STEPS TRANSIENT`` = ``1000 100``
(about a minute). Names of runs after ``STEPS TRANSIENT`` limit the runs (the script's own schedule,
``175000 100000``, takes 6–8 minutes per run with autograd; the figures at β_o = 1.255 and 1.4 in
docs/theory/dmft.md §8 come from ``beta1.255 beta1.4`` at that schedule).
"""

from __future__ import annotations

import json
import sys
import tempfile
import types
from pathlib import Path

import numpy as np

RUNS: dict[str, dict] = {
    "mode0": dict(mode=0, pe_mode=0, M=3, n_se=30, P=2, beta_o=1.3, scale=0.5),
    "mode1": dict(mode=1, pe_mode=0, M=3, n_se=30, P=2, beta_o=1.3),
    "mode2": dict(mode=2, pe_mode=0, M=3, n_se=30, P=2, beta_o=1.3),
    "mode3": dict(mode=3, pe_mode=0, M=3, n_se=99, P=2, beta_o=1.26),
    "mode3_pe1": dict(mode=3, pe_mode=1, M=3, n_se=30, P=4, beta_o=1.26),
    "mode1_pe1": dict(mode=1, pe_mode=1, M=2, n_se=30, P=2, beta_o=1.3),
    "manual_pe5": dict(mode=4, pe_mode=0, M=3, n_se=0, P=5, beta_o=10.0),
}
STEPS = 40
STATS = ("att", "mo", "mo_se", "mv", "mq", "mk")


def _stub_autograd() -> None:
    try:
        import autograd  # noqa: F401
    except ImportError:
        mod = types.ModuleType("autograd")
        mod.numpy = np  # type: ignore[attr-defined]
        mod.jacobian = None  # type: ignore[attr-defined]
        sys.modules["autograd"] = mod
        sys.modules["autograd.numpy"] = np


def run_one(p: dict, steps: int = STEPS) -> dict[str, np.ndarray]:
    from models.Embedding import Embedding
    from models.HopfieldSelfAttentionNNMFInfNPE import HopfieldSelfAttentionNNMFInfNPE

    L = 2 ** p["P"] if p["mode"] == 4 else 4
    vocab = Embedding(p["n_se"], p["P"])
    vocab.initialize_pos_encoder()
    np.random.seed(1)  # noqa: NPY002  (the reference draws from the global generator)
    HT = HopfieldSelfAttentionNNMFInfNPE(
        p["beta_o"], 2.2, num_feat_patterns=p["M"], positional_embedding_bitsize=p["P"], vocab=vocab,
        context_size=L, max_sim_steps=steps, min_saved_step=0, correlations_from_weights=p["mode"],
        semantic_embedding_bitsize=p["n_se"], epsilon_pe=0.02, pe_mode=p["pe_mode"],
        gaussian_scale_str=str(p.get("scale", 0.5)), compute_inf_normalization=True, scaling_o=1, scaling_att=100,
    )  # fmt: skip
    HT.reset_data()
    HT.t = 0
    if p["mode"] == 4:
        mv, _, _ = HT.create_mf_window_from_correlation_idxs(1)
        att0 = mv[0].copy()
        HT.simulate_from_correlations(1, max_steps=steps, compute_lyapunov=False)
    else:
        x0 = HT.Wo[0].copy()
        x0[-p["P"] :] = -1
        mv, _, _ = HT.create_mf_window_from_means(x0)
        att0 = mv[0].copy()
        HT.reset_data()
        HT.simulate_from_token(x0, max_steps=steps, compute_lyapunov=False)
    out = {s: np.asarray(HT.mf_statistics[s], dtype=np.float64) for s in STATS}
    out["att0"] = np.asarray(att0, dtype=np.float64)
    return out


CONTEXT_CHECKPOINT = "results_betas_ft/beta3.0/seed-1-transient_steps-100000-max_sim_steps-175000.npz"
CONTEXT_BETAS = (1.255, 1.26451, 1.266, 1.27, 1.28, 1.4)
"""β_o of the reference's context-start script."""
CONTEXT_RUNS: dict[str, dict] = {
    **{f"beta{b}": dict(beta_o=b, rows=4) for b in CONTEXT_BETAS},
    "partial2": dict(beta_o=1.27, rows=2),
}


def run_context(
    reference_dir: Path, p: dict, steps: int = STEPS, transient: int = 0, lyapunov: bool = False
) -> dict[str, np.ndarray]:
    from models.Embedding import Embedding
    from models.HopfieldSelfAttentionNNMFInfNPE import HopfieldSelfAttentionNNMFInfNPE
    from utils import load_context

    att_window, pe_window = load_context(str(reference_dir / CONTEXT_CHECKPOINT))
    att_window = att_window[: p["rows"]]
    vocab = Embedding(99, 2)
    vocab.initialize_pos_encoder()
    np.random.seed(1)  # noqa: NPY002  (the reference draws from the global generator)
    HT = HopfieldSelfAttentionNNMFInfNPE(
        p["beta_o"], 2.2, num_feat_patterns=3, positional_embedding_bitsize=2, vocab=vocab, context_size=4,
        max_sim_steps=steps, min_saved_step=transient, normalize_weights_str_att="N**2*np.sqrt(M)",
        normalize_weights_str_o="N", correlations_from_weights=3, semantic_embedding_bitsize=99,
        epsilon_pe=0.02, pe_mode=0, compute_inf_normalization=True, scaling_o=1, scaling_att=100,
    )  # fmt: skip
    HT.reset_data()
    HT.simulate(att_window, pe_window, max_steps=steps, compute_lyapunov=lyapunov)
    out = {s: np.asarray(HT.mf_statistics[s], dtype=np.float64) for s in STATS}
    if lyapunov:
        out["S"] = np.asarray(HT.S, dtype=np.float64)
        out["S_i_sum"] = np.asarray(HT.S_i_sum, dtype=np.float64)
    out["att_window"] = np.asarray(att_window, dtype=np.float64)
    out["pe_window"] = np.asarray(pe_window, dtype=np.float64)
    return out


def main_context(reference_dir: str, out: str, steps: int = STEPS) -> None:
    _stub_autograd()
    sys.path.insert(0, str(Path(reference_dir).resolve()))
    arrays: dict[str, np.ndarray] = {}
    for name, p in CONTEXT_RUNS.items():
        for k, v in run_context(Path(reference_dir), p, steps).items():
            arrays[f"{name}/{k}"] = v
        arrays[f"{name}/params"] = np.asarray(json.dumps(p))
    arrays["steps"] = np.asarray(steps)
    _write(arrays, out)
    print(f"wrote {out}: {len(CONTEXT_RUNS)} runs of {steps} steps")


def compare_context(path: str) -> None:
    """Print, per run of a file written by ``--context``, the largest difference between the reference's
    records and the library's, run from the same context (a file start) through ``dmft.trajectories``."""
    import attnphys
    from attnphys.dmft import trajectories
    from attnphys.dmft.config import preset
    from attnphys.dmft.starts import WindowStart

    attnphys.configure()
    d = np.load(path)
    for name in CONTEXT_RUNS:
        p = json.loads(str(d[f"{name}/params"]))
        cfg = preset("paper", beta_o=p["beta_o"])
        A = d[f"{name}/att_window"]
        start = WindowStart(att_window=tuple(map(tuple, A)), pe_window=tuple(map(tuple, d[f"{name}/pe_window"])))
        ds = trajectories(cfg, start=start, steps=int(d["steps"]))
        diff = max(float(np.abs(ds[s].values - d[f"{name}/{s}"]).max()) for s in STATS)
        print(f"{name:12s} {int(d['steps'])} steps: max |library - reference| = {diff:.3g}")


def context_statistics(reference_dir: str, betas=CONTEXT_BETAS, steps: int = 175_000, transient: int = 100_000) -> None:
    """Print, for each β_o of the context script at its own schedule (175,000 steps, 100,000 transient), the
    long-run statistics of ``mo_se`` of the reference and of the library (whose records separate from the
    reference's within the transient where round-off is amplified): the largest differences of the per-feature
    mean, standard deviation, minimum and maximum over the recorded steps, and the number of distinct values
    of ``mo_se[0]`` (rounded to 1e-6: a cycle's period, or many for an irregular orbit). The library also runs
    from the reference's own window at the end of the transient (its last L attention records, newest first;
    the position rows rolled by the transient), which says whether a difference is another attractor reached
    by round-off or a difference of the map. Minutes: the reference runs about 3,000 steps per second."""
    import attnphys
    from attnphys.dmft import trajectories
    from attnphys.dmft.config import preset
    from attnphys.dmft.initial import paper_checkpoint
    from attnphys.dmft.starts import WindowStart

    _stub_autograd()
    sys.path.insert(0, str(Path(reference_dir).resolve()))
    attnphys.configure()
    L = 4
    pe0 = np.asarray(paper_checkpoint(preset("paper")).pe)
    ds = trajectories(
        preset("paper", beta_o=0.0), sweep={"beta_o": list(betas)}, start="checkpoint", steps=steps,
        transient=transient, record=["mo_se"],
    )  # fmt: skip

    def distinct(a: np.ndarray) -> int:
        return len(np.unique(np.round(a[:, 0], 6)))

    def diffs(a: np.ndarray, b: np.ndarray) -> str:
        d = {
            f: float(np.abs(getattr(np, f)(a, axis=0) - getattr(np, f)(b, axis=0)).max())
            for f in ("mean", "std", "min", "max")
        }
        return "  ".join(f"|d {k}| = {v:.2g}" for k, v in d.items())

    for i, b in enumerate(betas):
        rec = run_context(Path(reference_dir), dict(beta_o=b, rows=4), steps, transient - L)
        ref, window = rec["mo_se"][L:], rec["att"][L - 1 :: -1]
        lib = ds["mo_se"].isel(beta_o=i).values
        start = WindowStart(
            att_window=tuple(map(tuple, window)), pe_window=tuple(map(tuple, np.roll(pe0, transient, axis=0)))
        )
        cont = trajectories(preset("paper", beta_o=b), start=start, steps=steps - transient, record=["mo_se"])
        cont = cont["mo_se"].values
        print(
            f"beta_o {b:<8} from the checkpoint: {diffs(lib, ref)}  (spread of the reference {ref.std(axis=0).max():.3g})"
        )
        print(f"{'':16}from the reference's window: {diffs(cont, ref)}")
        print(
            f"{'':16}distinct mo_se[0]: reference {distinct(ref)}, library {distinct(lib)}, library from its window {distinct(cont)}"
        )


CONTEXT_LYAPUNOV_STEPS = 40
CONTEXT_LYAPUNOV_TRANSIENT = 2
"""The schedule of the context-Lyapunov vectors: 40 loop steps, the first 2 without tangent vectors (the
reference's Jacobian needs a full window: a 2-row context fills it in 2 steps), exponents over 38 steps."""


def main_context_lyapunov(
    reference_dir: str,
    out: str,
    steps: int = CONTEXT_LYAPUNOV_STEPS,
    transient: int = CONTEXT_LYAPUNOV_TRANSIENT,
    runs: tuple[str, ...] = (),
) -> None:
    """Write the reference's Lyapunov exponents of the context runs: its own ``simulate(...,
    compute_lyapunov=True)`` (autograd's Jacobian of the full L(M+P) state, identity tangent vectors at step
    ``transient``, numpy's QR every step, S = Σ log|diag R| / (steps − transient) in QR order). Stored per run
    ``<name>/S`` (L(M+P),) and ``<name>/S_i_sum`` (steps − transient, L(M+P)): the running sums after every
    step, with the starting windows and params; ``runs`` (names of :data:`CONTEXT_RUNS`) limits the runs.
    Needs the real ``autograd`` (a separate environment)."""
    try:
        from autograd import jacobian
    except ImportError:
        jacobian = None
    if jacobian is None:  # absent, or the stand-in of the other modes
        raise SystemExit("--context-lyapunov needs the real autograd package (pip install autograd==1.7.0)")
    sys.path.insert(0, str(Path(reference_dir).resolve()))
    arrays: dict[str, np.ndarray] = {}
    unknown = set(runs) - set(CONTEXT_RUNS)
    if unknown:
        raise SystemExit(f"unknown runs {sorted(unknown)}; the runs are {list(CONTEXT_RUNS)}")
    for name, p in CONTEXT_RUNS.items():
        if runs and name not in runs:
            continue
        rec = run_context(Path(reference_dir), p, steps, transient, lyapunov=True)
        for k in ("S", "S_i_sum", "att_window", "pe_window"):
            arrays[f"{name}/{k}"] = rec[k]
        arrays[f"{name}/params"] = np.asarray(json.dumps(p))
    arrays["steps"] = np.asarray(steps)
    arrays["transient"] = np.asarray(transient)
    _write(arrays, out)
    print(
        f"wrote {out}: {len(runs or CONTEXT_RUNS)} runs of {steps} steps, exponents over the last {steps - transient}"
    )


def library_context_lyapunov(att_window, pe_window, beta_o: float, steps: int, transient: int) -> np.ndarray:
    """The library's full-state running sums Σ log|R_ii| of a context run (steps − transient, L(M+P)), in QR
    order, computed as the reference does: identity tangent vectors after ``transient`` steps, a QR every
    step (:func:`attnphys.dmft.lyapunov_spectrum` with ``full_state``, ``init="identity"``, a running
    estimate after every step)."""
    from attnphys.dmft import lyapunov_spectrum
    from attnphys.dmft.config import preset
    from attnphys.dmft.starts import WindowStart

    start = WindowStart(att_window=tuple(map(tuple, att_window)), pe_window=tuple(map(tuple, pe_window)))
    ds = lyapunov_spectrum(
        preset("paper", beta_o=beta_o), start=start, steps=steps, transient=transient, full_state=True,
        init="identity", history_every=1, progress=False,
    )  # fmt: skip
    hist = ds["history"].values
    return hist * np.arange(1, hist.shape[0] + 1)[:, None]


CONTEXT_LYAPUNOV_GROUPS = {
    "leading": slice(0, 3),
    "middle": slice(3, 6),
    "lowest": slice(6, 12),
    "positional": slice(12, 20),
}
"""The QR columns of the context runs' spectrum (M = 3, L = 4, P = 2), compared group by group: the three
leading attention exponents; the next three, whose columns contract to 1e-11–1e-14 in single steps; the
lowest six, contracted to 1e-14 and below (round-off in both codes); the L·P positional exponents (0)."""


def compare_context_lyapunov(path: str) -> None:
    """Print, per run of a file written by ``--context-lyapunov``, the largest difference between the
    reference's exponents and the library's full-state spectrum from the same context, QR column by QR
    column (both codes use the same state order, so the same identity tangent vectors), per group of
    :data:`CONTEXT_LYAPUNOV_GROUPS`; for the leading group also the largest difference of the running sums
    after every step; and the smallest single-step |R_ii| of each group in the reference."""
    import attnphys

    attnphys.configure()
    d = np.load(path)
    steps, transient = int(d["steps"]), int(d["transient"])
    for name in (n for n in CONTEXT_RUNS if f"{n}/S" in d.files):
        p = json.loads(str(d[f"{name}/params"]))
        A = d[f"{name}/att_window"]  # a context of fewer than L rows is a start of that fill count
        sums = library_context_lyapunov(A, d[f"{name}/pe_window"], p["beta_o"], steps, transient)
        ref = d[f"{name}/S_i_sum"]
        lam, lam_ref = sums[-1] / (steps - transient), d[f"{name}/S"]
        inc = np.diff(ref, axis=0, prepend=0.0)
        parts = []
        for g, cols in CONTEXT_LYAPUNOV_GROUPS.items():
            diff = float(np.abs(lam[cols] - lam_ref[cols]).max())
            parts.append(f"{g} {diff:.2g} (min |R_ii| {np.exp(inc[:, cols].min()):.1g})")
        lead = float(np.abs(sums - ref)[:, CONTEXT_LYAPUNOV_GROUPS["leading"]].max())
        print(f"{name:12s} {steps - transient} steps, max |library - reference| exponents: " + ", ".join(parts))
        print(f"{'':12s} leading running sums at every step: {lead:.2g}; leading exponents {np.round(lam[:3], 6)}")


def _write(arrays: dict[str, np.ndarray], out: str) -> None:
    with tempfile.NamedTemporaryFile(dir=Path(out).parent, suffix=".npz", delete=False) as f:
        np.savez_compressed(f, **arrays)
    Path(f.name).replace(out)


def main(reference_dir: str, out: str, steps: int = STEPS) -> None:
    _stub_autograd()
    sys.path.insert(0, str(Path(reference_dir).resolve()))
    arrays: dict[str, np.ndarray] = {}
    for name, p in RUNS.items():
        rec = run_one(p, steps)
        for k, v in rec.items():
            arrays[f"{name}/{k}"] = v
        arrays[f"{name}/params"] = np.asarray(json.dumps({**p, "L": 2 ** p["P"] if p["mode"] == 4 else 4}))
    arrays["steps"] = np.asarray(steps)
    _write(arrays, out)
    print(f"wrote {out}: {len(RUNS)} runs of {steps} steps")


def compare(path: str) -> None:
    """Print, per run of a file this script wrote, the largest difference between the reference's records
    and the library's, run from the library's own starts (token; pattern 1 for mode 4)."""
    import attnphys
    from attnphys.dmft import DMFTConfig, trajectories

    attnphys.configure()
    d = np.load(path)
    for name in RUNS:
        p = json.loads(str(d[f"{name}/params"]))
        corr = dict(kind="reference", mode=p["mode"], seed=1, pe_mode=p["pe_mode"], scale=p.get("scale", 0.5))
        cfg = DMFTConfig(
            M=p["M"], L=p["L"], P=p["P"], n_se=max(p["n_se"], 1), epsilon=0.02, beta_o=p["beta_o"], beta_att=2.2,
            scaling_att=100.0, correlations=corr, mo_se_convention="paper", era="head",
        )  # fmt: skip
        ds = trajectories(cfg, start="pattern:1" if p["mode"] == 4 else "token", steps=int(d["steps"]))
        diff = max(float(np.abs(ds[s].values - d[f"{name}/{s}"]).max()) for s in STATS)
        print(f"{name:12s} {int(d['steps'])} steps: max |library - reference| = {diff:.3g}")


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        compare(sys.argv[2])
    elif sys.argv[1] == "--compare-context":
        compare_context(sys.argv[2])
    elif sys.argv[1] == "--context-statistics":
        context_statistics(sys.argv[2], tuple(float(b) for b in sys.argv[3:]) or CONTEXT_BETAS)
    elif sys.argv[1] == "--context-lyapunov":
        main_context_lyapunov(sys.argv[2], sys.argv[3], *(int(a) for a in sys.argv[4:6]), runs=tuple(sys.argv[6:]))
    elif sys.argv[1] == "--compare-context-lyapunov":
        compare_context_lyapunov(sys.argv[2])
    elif sys.argv[1] == "--context":
        main_context(sys.argv[2], sys.argv[3], *(int(a) for a in sys.argv[4:5]))
    else:
        main(sys.argv[1], sys.argv[2], *(int(a) for a in sys.argv[3:4]))
