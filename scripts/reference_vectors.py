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
    with tempfile.NamedTemporaryFile(dir=Path(out).parent, suffix=".npz", delete=False) as f:
        np.savez_compressed(f, **arrays)
    Path(f.name).replace(out)
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
    else:
        main(sys.argv[1], sys.argv[2], *(int(a) for a in sys.argv[3:4]))
