"""A real transformer layer on the phase diagram of the DMFT network (theory: docs/theory/dmft_placement.md).

The mean-field network of :mod:`attnphys.dmft` is one attention head whose four ±1 weight matrices
W^o, W^v, W^q, W^k (M × (N_se + P)) enter only through their correlations, with three numbers: the output
gain β_o, the attention gain γ and the positional weight ε (docs/theory/dmft.md §1, §3). A trained layer is
read in the same terms: its query–key and value–output circuits restricted to M features, each feature
binarised, the magnitudes that binarisation drops collected into (β_o, γ, ε).

* :func:`paper_head` — the network of docs/theory/dmft.md §1 written as a transformer head (the synthetic
  layer with known parameters that the reading must give back);
* :func:`read_layer` — the reading of one layer's weights: (β_o, γ, ε) per head or for the layer's average
  head, the binarised weights and how much of each circuit they keep;
* :func:`place_layers` — the reading of every layer placed on the diagram along β_o: the regime the map
  has at the read parameters (the library's classifier: exact period, Lyapunov exponents, 0–1 test) and
  the distance to the nearest regime boundary;
* :func:`dmft_placement` — every layer of a real model and of its control models, with the claim;
* :func:`dmft_claim`, :func:`dmft_section`, :func:`plot_dmft_placement` — the test, the report's section
  and the figure.
"""

from __future__ import annotations

import hashlib
import json
import math
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import xarray as xr

from attnphys.errors import InputError
from attnphys.probes.adapters import HeadWeights

PATTERNS = ("svd", "head", "embeddings")
"""How the M features of a head are chosen (docs/theory/dmft_placement.md §3): the top singular directions of
its circuits, its first M head coordinates, or the top principal directions of the token embeddings."""

HEADS = ("layer", "each")
SCALARS = ("beta_o", "gamma", "epsilon", "qk_share", "ov_share", "sign_cosine")
"""What is placed: the layer's average head (one network per layer) or every head."""

PHASES = ("ordered", "periodic", "chaotic", "undetermined")
"""Coarse phases of the diagram (docs/theory/dmft_placement.md §4): ordered = a fixed point or an orbit
locked to the positional clock (period dividing L); periodic = any other periodic or quasi-periodic orbit;
chaotic = chaotic or hyperchaotic; undetermined = divergent or undecided (skipped when boundaries are
located)."""

CLAIM = "trained layers sit nearer a regime boundary of the DMFT diagram (along beta_o) than the controls' layers"
"""The claim :func:`dmft_claim` tests."""

P_PAPER, L_PAPER, M_PAPER = 2, 4, 3
"""The paper's positional bits, context and features (docs/theory/dmft.md §8)."""

LONG_NAMES = {
    "beta_o": "output gain read from the value-output circuit (mean over features)",
    "gamma": "attention gain read from the query-key circuit (mean over features), coefficient of m_q.m_k",
    "epsilon": "positional weight read from the query, key and value features (mean)",
    "beta_o_feature": "output gain of each feature, c_v * mean|r_o|",
    "gamma_feature": "attention gain of each feature, c_q * c_k",
    "qk_share": "share of the query-key form's squared Frobenius norm in its M features",
    "ov_share": "share of the value-output form's squared Frobenius norm in its M features",
    "sign_cosine": "mean cosine between a feature vector and its sign (1: already binary)",
    "regime": "the library's regime at the read parameters (attnphys.dynamics.classify codes)",
    "phase": "coarse phase at the read parameters (codes of PHASES)",
    "period": "exact period at the read parameters (0: none)",
    "lambda1": "largest Lyapunov exponent at the read parameters",
    "boundary_distance": "distance |ln(b / beta_o)| to the nearest boundary b between phases along beta_o (e-folds)",
    "boundary_beta_o": "the beta_o of that boundary (geometric midpoint of the grid values; NaN: none on the grid)",
    "censored": "1 where no boundary lies on the grid: boundary_distance is then the lower bound ln(span)",
    "edge_distance": "signed distance |ln(e / beta_o)| to the edge e of the chaotic phase (> 0 outside chaos; e-folds)",
    "grid_beta_o": "the beta_o grid of the placement",
    "grid_phase": "coarse phase at each grid value",
    "weights": "the binarised weights W^o, W^v, W^q, W^k of the reading (semantic bits, then positional)",
    "reason": "why the placement is NaN (empty: finite)",
}


# -- checks ----------------------------------------------------------------------------------------------


def _check_int(value, field: str, lo: int, hi: int | None = None) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer))
        or value < lo
        or (hi is not None and value > hi)
    ):
        span = f"in [{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise InputError(f"must be an integer {span}, got {value!r}", field)
    return int(value)


def _check_choice(value, field: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise InputError(f"unknown value {value!r}; choose from {', '.join(choices)}", field)
    return str(value)


def _check_number(value, field: str, lo: float = 0.0, strict: bool = True) -> float:
    ok = isinstance(value, (int, float, np.number)) and not isinstance(value, bool)
    if not ok or not math.isfinite(float(value)) or (float(value) <= lo if strict else float(value) < lo):
        raise InputError(f"must be a finite number {'>' if strict else '>='} {lo}, got {value!r}", field)
    return float(value)


def _check_heads(hw) -> HeadWeights:
    if not isinstance(hw, HeadWeights):
        raise InputError(f"must be HeadWeights (attnphys.probes.adapters), got {type(hw).__name__}", "heads")
    for name in ("Wq", "Wk", "Wv", "Wo"):
        a = np.asarray(getattr(hw, name), float)
        if a.ndim != 3 or not np.isfinite(a).all():
            raise InputError(f"{name} must be a finite (H, ·, ·) array, got shape {a.shape}", "heads")
    return hw


# -- the paper's network as a head -------------------------------------------------------------------------


def _weighting(n_se: int, P: int, epsilon: float) -> np.ndarray:
    """The diagonal D of the ε-weighted overlap m = W D x: (1 − ε)/N_se on semantic bits, ε/P on positional."""
    return np.r_[np.full(n_se, (1 - epsilon) / n_se), np.full(P, epsilon / P if P else 0.0)]


def paper_head(weights, *, beta_o: float, gamma: float, epsilon: float, P: int = P_PAPER) -> HeadWeights:
    """The DMFT network of docs/theory/dmft.md §1 written as one transformer head of head dimension M on
    tokens of D = N_se + P coordinates (theory: docs/theory/dmft_placement.md §2):

        W_q = γ^{1/2} M^{1/4} W^q D_ε,   W_k = γ^{1/2} M^{1/4} W^k D_ε,   W_v = W^v D_ε,   W_o = β_o (W^o)ᵀ,

    with D_ε = diag((1 − ε)/N_se, …, ε/P, …), so that the head's score (W_q x)·(W_k y)/√M is γ m^q(x)·m^k(y)
    and its output W_o W_v x is β_o (W^o)ᵀ m^v(x), the field h of the network's next token.

    Args:
        weights: (4, M, N_se + P) ±1 matrices in the family order o, v, q, k (semantic bits first).
        beta_o, gamma: positive gains; epsilon: the positional weight in (0, 1); P: positional bits.

    Returns:
        :class:`~attnphys.probes.adapters.HeadWeights` with one head (zero biases).

    Raises:
        InputError: weights that are not (4, M, N) ±1 (field ``weights``), a non-positive gain, ε outside
            (0, 1) or P outside [1, N − 1] (named).
    """
    W = np.asarray(weights, float)
    if W.ndim != 3 or W.shape[0] != 4 or not np.all(np.abs(W) == 1):
        raise InputError(f"must be (4, M, N) ±1 matrices (o, v, q, k), got shape {W.shape}", "weights")
    M, N = W.shape[1:]
    P = _check_int(P, "P", 1, N - 1)
    beta_o, gamma = _check_number(beta_o, "beta_o"), _check_number(gamma, "gamma")
    epsilon = _check_number(epsilon, "epsilon")
    if epsilon >= 1:
        raise InputError(f"must lie in (0, 1), got {epsilon}", "epsilon")
    D = _weighting(N - P, P, epsilon)
    s = math.sqrt(gamma) * M**0.25
    Wo, Wv, Wq, Wk = W
    z = np.zeros((1, M))
    return HeadWeights(
        Wq=(s * Wq * D)[None], bq=z, Wk=(s * Wk * D)[None], bk=z, Wv=(Wv * D)[None], bv=z, Wo=(beta_o * Wo.T)[None]
    )


# -- the reading ---------------------------------------------------------------------------------------------


def _gauge(a: np.ndarray, b: np.ndarray, ref: np.ndarray):
    """Flip feature pairs (a, b) together so that each row of ``ref`` sums to ≥ 0 (the reading's sign gauge:
    the map is the same under a joint flip)."""
    s = np.where(ref.sum(-1) < 0, -1.0, 1.0)[:, None]
    return a * s, b * s


def _features(Wq, Wk, Wv, Wo, M: int, patterns: str, xi: np.ndarray | None):
    """(f_q, f_k, f_v, r_o), each (M, D): score(x, y) ≈ Σ_a (f_q,a·x)(f_k,a·y), output(x) ≈ Σ_a (f_v,a·x) r_o,a.

    ``Wq``… are one head's (d_h, D), (D, d_h) matrices, or for ``patterns`` other than ``head`` the forms
    B (D, D) = W_qᵀW_k/√d_h in ``Wq`` and O (D, D) = W_o W_v in ``Wv`` (``Wk``, ``Wo`` None)."""
    if patterns == "head":
        s = Wq.shape[0] ** -0.25
        return Wq[:M] * s, Wk[:M] * s, Wv[:M], Wo[:, :M].T, 1.0, 1.0
    B, O = Wq, Wv
    sb = np.linalg.svd(B, compute_uv=False)
    so = np.linalg.svd(O, compute_uv=False)
    if patterns == "svd":
        U, S, Vt = np.linalg.svd(B)
        fq, fk = np.sqrt(S[:M])[:, None] * U[:, :M].T, np.sqrt(S[:M])[:, None] * Vt[:M]
        fq, fk = _gauge(fq, fk, fk)
        U2, S2, V2t = np.linalg.svd(O)
        fv, ro = S2[:M, None] * V2t[:M], U2[:, :M].T
        fv, ro = _gauge(fv, ro, ro)
        qk, ov = (sb[:M] ** 2).sum() / max((sb**2).sum(), 1e-300), (so[:M] ** 2).sum() / max((so**2).sum(), 1e-300)
        return fq, fk, fv, ro, qk, ov
    assert xi is not None
    fq, fk = xi @ B.T, xi
    fv, ro = xi @ O, xi
    qk = float(np.linalg.norm(B @ xi.T @ xi) ** 2 / max(np.linalg.norm(B) ** 2, 1e-300))
    ov = float(np.linalg.norm(xi.T @ xi @ O) ** 2 / max(np.linalg.norm(O) ** 2, 1e-300))
    return fq, fk, fv, ro, qk, ov


def _to_paper(f: np.ndarray, positional, P: int):
    """Feature vectors (M, D) in the paper's coordinates: (semantic part (M, N_se), positional part (M, P))."""
    if positional is None:
        return f, np.zeros((f.shape[0], P))
    pos = np.asarray(positional)
    if pos.ndim == 1:  # coordinate indices
        se = np.setdiff1d(np.arange(f.shape[1]), pos)
        return f[:, se], f[:, pos]
    g_pe = f @ pos
    return f - g_pe @ pos.T, g_pe


def _sign(a: np.ndarray) -> np.ndarray:
    return np.where(a < 0, -1, 1).astype(np.int8)


def _read_one(feats, positional, P: int):
    fq, fk, fv, ro, qk, ov = feats
    parts = {k: _to_paper(f, positional, P) for k, f in zip("qkvo", (fq, fk, fv, ro))}
    c = {k: (np.abs(se).sum(-1), np.abs(pe).sum(-1)) for k, (se, pe) in parts.items()}
    n_se = parts["o"][0].shape[1]
    tot = {k: c[k][0] + c[k][1] for k in "qkv"}
    with np.errstate(divide="ignore", invalid="ignore"):
        eps_f = np.stack([c[k][1] / tot[k] for k in "qkv"])
        gamma_f = tot["q"] * tot["k"]
        beta_f = tot["v"] * c["o"][0] / n_se
        cos = [np.abs(f).sum(-1) / (np.sqrt(f.shape[1]) * np.linalg.norm(f, axis=-1)) for f in (fq, fk, fv, ro)]
    W = np.stack([np.concatenate([_sign(parts[k][0]), _sign(parts[k][1])], -1) for k in "ovqk"])
    eps = float(np.nanmean(eps_f)) if positional is not None else 0.0
    return dict(weights=W, beta_o=float(np.mean(beta_f)), gamma=float(np.mean(gamma_f)), epsilon=eps,
                beta_o_feature=beta_f, gamma_feature=gamma_f, qk_share=float(qk), ov_share=float(ov),
                sign_cosine=float(np.nanmean(np.concatenate(cos))), n_se=n_se)  # fmt: skip


def read_layer(
    heads: HeadWeights,
    *,
    M: int = M_PAPER,
    patterns: str = "svd",
    per_head: bool = False,
    positional=None,
    P: int = P_PAPER,
    gain=None,
    embeddings=None,
) -> xr.Dataset:
    """The effective (β_o, γ, ε) and ±1 weights of one attention layer, read by the paper's construction
    (theory: docs/theory/dmft_placement.md §2, §3).

    With M features per circuit — score(x, y) ≈ Σ_a (f_q,a·x)(f_k,a·y) and output(x) ≈ Σ_a (f_v,a·x) r_o,a —
    each feature vector g (in the paper's coordinates: semantic part g_se, positional part g_pe) is
    binarised, W_a = sign(g), and its magnitude kept: g_se ≈ (‖g_se‖₁/N_se) sign(g_se), so that
    g·x ≈ c [(1 − ε_g) m_se(x) + ε_g m_pe(x)] with c = ‖g_se‖₁ + ‖g_pe‖₁ and ε_g = ‖g_pe‖₁ / c. Then

        γ = mean_a c_q,a c_k,a,    β_o = mean_a c_v,a ‖r_o,a,se‖₁ / N_se,    ε = mean of ε_g over q, k, v,

    which the network of :func:`paper_head` gives back exactly (``patterns="head"``).

    Args:
        heads: the layer's :class:`~attnphys.probes.adapters.HeadWeights` (H heads).
        M: features (1…12). patterns: ``svd`` (top singular directions of W_qᵀW_k/√d_h and of W_o W_v),
            ``head`` (the first M head coordinates as they are), ``embeddings`` (the top M principal
            directions of ``embeddings``, (V, D), as key and output patterns).
        per_head: read every head; otherwise the layer's average head (the mean score form over heads and
            the summed output form; not with ``head`` patterns).
        positional: None (no additive position code: ε = 0), (P,) coordinate indices of the positional bits,
            or a (D, P) orthonormal basis of the positional subspace. P: positional bits of the network.
        gain: (D,) gain of the normalisation that feeds the attention, folded into W_q, W_k, W_v (None: 1).

    Returns:
        Dataset over (head[, feature, family, bit]): ``beta_o``, ``gamma``, ``epsilon``, ``beta_o_feature``,
        ``gamma_feature``, ``qk_share``, ``ov_share``, ``sign_cosine``, ``weights`` (int8 ±1, family order
        o, v, q, k); head −1 is the layer's average head. Attributes: the settings, n_se and the version.

    Raises:
        InputError: naming ``heads``, ``M``, ``patterns``, ``positional``, ``P``, ``gain`` or ``embeddings``.
    """
    from attnphys.metadata import base_attrs

    hw = _check_heads(heads)
    patterns = _check_choice(patterns, "patterns", PATTERNS)
    H, dh, D = hw.Wq.shape
    M = _check_int(M, "M", 1, min(12, D if patterns != "head" else dh))
    P = _check_int(P, "P", 1, 30)
    if patterns == "head" and not per_head and H > 1:
        raise InputError("head patterns read every head's own coordinates: use per_head=True", "patterns")
    g = np.ones(D) if gain is None else np.asarray(gain, float)
    if g.shape != (D,) or not np.isfinite(g).all():
        raise InputError(f"must be a finite (D,) = ({D},) vector, got shape {g.shape}", "gain")
    if positional is not None:
        pos = np.asarray(positional)
        if pos.ndim == 1 and (pos.dtype.kind not in "iu" or pos.size != P or len(set(pos.tolist())) != P
                              or pos.min() < 0 or pos.max() >= D):  # fmt: skip
            raise InputError(f"must be {P} distinct coordinate indices in [0, {D}) or a (D, P) basis", "positional")
        if pos.ndim == 2 and (pos.shape != (D, P) or not np.allclose(pos.T @ pos, np.eye(P), atol=1e-8)):
            raise InputError(f"must be a (D, P) = ({D}, {P}) orthonormal basis, got shape {pos.shape}", "positional")
        if pos.ndim not in (1, 2):
            raise InputError("must be coordinate indices (P,) or a basis (D, P)", "positional")
    xi = None
    if patterns == "embeddings":
        E = None if embeddings is None else np.asarray(embeddings, float)
        if E is None or E.ndim != 2 or E.shape[1] != D or E.shape[0] <= M or not np.isfinite(E).all():
            raise InputError(f"embedding patterns need a finite (V, {D}) table with V > M", "embeddings")
        xi = np.linalg.svd(E - E.mean(0), full_matrices=False)[2][:M]
        xi = xi * np.where(xi.sum(-1) < 0, -1.0, 1.0)[:, None]
    Wq, Wk, Wv = (np.asarray(getattr(hw, n), float) * g for n in ("Wq", "Wk", "Wv"))
    Wo = np.asarray(hw.Wo, float)
    if patterns == "head":
        feats = [_features(Wq[h], Wk[h], Wv[h], Wo[h], M, patterns, None) for h in range(H)]
    else:
        B = np.einsum("hcd,hce->hde", Wq, Wk) / np.sqrt(dh)
        O = np.einsum("hdc,hce->hde", Wo, Wv)
        pairs = [(B[h], O[h]) for h in range(H)] if per_head else [(B.mean(0), O.sum(0))]
        feats = [_features(b, None, o, None, M, patterns, xi) for b, o in pairs]
    reads = [_read_one(f, positional, P) for f in feats]
    n_se = int(reads[0]["n_se"])
    head_ids = np.arange(H) if per_head else np.array([-1])
    ds = xr.Dataset(
        {
            **{k: ("head", np.array([r[k] for r in reads])) for k in SCALARS},
            "beta_o_feature": (("head", "feature"), np.stack([r["beta_o_feature"] for r in reads])),
            "gamma_feature": (("head", "feature"), np.stack([r["gamma_feature"] for r in reads])),
            "weights": (("head", "family", "feature", "bit"), np.stack([r["weights"] for r in reads])),
        },
        coords={"head": head_ids, "feature": np.arange(M), "family": ["o", "v", "q", "k"], "bit": np.arange(n_se + P)},
    )
    for v in ds.data_vars:
        ds[v].attrs["long_name"] = LONG_NAMES[str(v)]
    where = "none" if positional is None else ("indices" if np.asarray(positional).ndim == 1 else "basis")
    settings = dict(M=M, P=P, n_se=n_se, patterns=patterns, heads="each" if per_head else "layer", positional=where,
                    gain_folded=int(gain is not None))  # fmt: skip
    ds.attrs.update(base_attrs(None, **settings, config=json.dumps(settings, sort_keys=True)))
    return ds


# -- the placement -------------------------------------------------------------------------------------------


def _phase(regime: np.ndarray, period: np.ndarray, L: int) -> np.ndarray:
    from attnphys.dynamics.classify import REGIME_CODE as R

    out = np.full(regime.shape, PHASES.index("undetermined"), np.int8)
    locked = (regime == R["fixed_point"]) | ((regime == R["periodic"]) & (period > 0) & (L % np.maximum(period, 1) == 0))  # fmt: skip
    out[(regime == R["periodic"]) | (regime == R["quasi_periodic"])] = PHASES.index("periodic")
    out[locked] = PHASES.index("ordered")
    out[(regime == R["chaotic"]) | (regime == R["hyperchaotic"])] = PHASES.index("chaotic")
    return out


def _distances(betas: np.ndarray, phase: np.ndarray, b0: float, span: float):
    """(boundary distance, its β_o, censored, signed chaos-edge distance) in e-folds of β_o along a geometric
    grid (undetermined points skipped; boundaries at the geometric midpoints)."""
    keep = phase != PHASES.index("undetermined")
    b, ph = betas[keep], phase[keep]
    p0 = phase[int(np.argmin(np.abs(betas - b0)))]
    mids = np.array([math.sqrt(b[i] * b[i + 1]) for i in range(len(b) - 1) if ph[i] != ph[i + 1]])
    if mids.size:
        j = int(np.argmin(np.abs(np.log(mids / b0))))
        dist, where, cens = float(abs(math.log(mids[j] / b0))), float(mids[j]), 0
    else:
        dist, where, cens = float(math.log(span)), np.nan, 1
    chaos = PHASES.index("chaotic")
    edges = np.array([math.sqrt(b[i] * b[i + 1]) for i in range(len(b) - 1) if (ph[i] == chaos) != (ph[i + 1] == chaos)])  # fmt: skip
    edge = float(np.min(np.abs(np.log(edges / b0)))) if edges.size else np.nan
    return dist, where, cens, (-edge if p0 == chaos else edge)


def _place_one(W, reading: dict, *, L: int, grid, span: float, steps: int, transient: int, exponents: int, folder):
    """One reading on the diagram: the regime at its β_o and the grid's phases. Returns a dict (NaN with a
    reason when the DMFT configuration refuses the read parameters)."""
    import jax

    import attnphys.dmft as dmft

    M, N = W.shape[1:]
    P = int(reading["P"])
    b0, gam, eps = reading["beta_o"], reading["gamma"], reading["epsilon"]
    nan = dict(regime=-1, phase=PHASES.index("undetermined"), period=0, lambda1=np.nan, boundary_distance=np.nan,
               boundary_beta_o=np.nan, censored=0, edge_distance=np.nan, grid_beta_o=np.full(grid.size, np.nan),
               grid_phase=np.full(grid.size, -1, np.int8))  # fmt: skip
    if not (np.isfinite([b0, gam, eps]).all() and b0 > 0 and gam >= 0 and 0 <= eps < 1):
        return {**nan, "reason": f"read parameters outside the network's range (beta_o={b0:.3g}, gamma={gam:.3g}, "
                                 f"epsilon={eps:.3g})"}  # fmt: skip
    path = Path(folder) / f"w{hashlib.sha1(W.tobytes()).hexdigest()[:16]}.npz"
    np.savez(path, Wo=W[0], Wv=W[1], Wq=W[2], Wk=W[3])
    betas = b0 * grid
    betas[int(np.argmin(np.abs(np.log(grid))))] = b0  # the read value itself is a grid point
    try:
        cfg = dmft.DMFTConfig(M=M, L=L, P=P, n_se=N - P, epsilon=eps, beta_o=b0, beta_att=gam * math.sqrt(M),
                              scaling_att=1.0, correlations=dmft.ExplicitWeights(path=str(path)),
                              mo_se_convention="paper", era="head")  # fmt: skip
    except (ValueError, InputError) as e:
        return {**nan, "reason": f"the DMFT network refuses the read parameters: {e}"}
    with jax.enable_x64(True):  # a context: the global flag is left as it is
        ds = dmft.bifurcation(cfg, {"beta_o": betas}, steps=steps, transient=transient, exponents=exponents,
                              n_orbit=max(20, min(200, steps - transient)), progress=False)  # fmt: skip
    regime, period = ds.regime.values.astype(int), ds.period.values.astype(int)
    phase = _phase(regime, period, L)
    i0 = int(np.argmin(np.abs(betas - b0)))
    dist, where, cens, edge = _distances(betas, phase, b0, span)
    return dict(regime=int(regime[i0]), phase=int(phase[i0]), period=int(period[i0]),
                lambda1=float(ds.lambda1.values[i0]), boundary_distance=dist, boundary_beta_o=where, censored=cens,
                edge_distance=edge, grid_beta_o=betas, grid_phase=phase, reason="")  # fmt: skip


def place_layers(
    layers: Sequence[HeadWeights],
    *,
    M: int = M_PAPER,
    patterns: str = "svd",
    heads: str = "layer",
    positional=None,
    P: int = P_PAPER,
    gains: Sequence | None = None,
    embeddings=None,
    L: int = L_PAPER,
    span: float = 30.0,
    n_beta: int = 41,
    steps: int = 600,
    transient: int = 400,
    exponents: int = 2,
) -> xr.Dataset:
    """Each layer's reading (:func:`read_layer`) placed on the DMFT diagram along β_o (theory:
    docs/theory/dmft_placement.md §4).

    For the read (β_o, γ, ε) and the correlations of the read ±1 weights, the mean-field map of
    docs/theory/dmft.md §3 runs from the token start at every β_o of the geometric grid
    β_o · geomspace(1/span, span, n_beta) (the read value one of its points), ``steps`` steps of which
    ``transient`` are discarded, and the library's classifier (:func:`attnphys.dmft.bifurcation`: exact period,
    Lyapunov exponents, 0–1 test) labels each value. With b_j the geometric midpoints between neighbouring grid
    values of different coarse phase (:data:`PHASES`) and e_j those where the chaotic phase begins or ends,

        boundary_distance = min_j |ln(b_j / β_o)|,    edge_distance = ± min_j |ln(e_j / β_o)|

    (e-folds of β_o: the gains of real layers span orders of magnitude; + outside chaos, − inside). Without a
    boundary on the grid the distance is the lower bound ln(span) (``censored`` = 1). Resolution: one grid step,
    2 ln(span)/(n_beta − 1).

    Args:
        layers: one :class:`~attnphys.probes.adapters.HeadWeights` per layer. gains: one (D,) normalisation
            gain per layer (or None). L: context of the network (L ≤ 2^P). The rest: :func:`read_layer` and
            the schedule of the map.

    Returns:
        Dataset over (layer, head[, feature, family, bit, grid]): the reading's variables and ``regime``,
        ``phase``, ``period``, ``lambda1``, ``boundary_distance``, ``boundary_beta_o``, ``censored``, ``edge_distance``,
        ``grid_beta_o``, ``grid_phase``, ``reason``. Attributes: the settings and the version.

    Raises:
        InputError: naming the argument refused (``layers``, ``heads``, ``L``, ``span``, ``n_beta``,
            ``steps``, ``transient``, ``exponents`` or one of :func:`read_layer`'s).
    """
    from attnphys.metadata import base_attrs

    layers = list(layers) if isinstance(layers, (list, tuple)) else layers
    if not isinstance(layers, list) or not layers:
        raise InputError("must be a non-empty list of HeadWeights, one per layer", "layers")
    heads = _check_choice(heads, "heads", HEADS)
    P = _check_int(P, "P", 1, 30)
    L = _check_int(L, "L", 1, 2**P)
    span = _check_number(span, "span", 1.0)
    n_beta = _check_int(n_beta, "n_beta", 3, 4096)
    steps = _check_int(steps, "steps", 2)
    transient = _check_int(transient, "transient", L)
    if transient >= steps:
        raise InputError(f"must be smaller than steps ({steps}): at least one step is recorded", "transient")
    exponents = _check_int(exponents, "exponents", 1, 12)
    if gains is not None and len(gains) != len(layers):
        raise InputError(f"needs one gain per layer ({len(layers)}), got {len(gains)}", "gains")
    grid = np.geomspace(1.0 / span, span, n_beta)
    reads = [
        read_layer(hw, M=M, patterns=patterns, per_head=heads == "each", positional=positional, P=P,
                   gain=None if gains is None else gains[i], embeddings=embeddings)
        for i, hw in enumerate(layers)
    ]  # fmt: skip
    rd = xr.concat(reads, dim="layer", combine_attrs="drop_conflicts").assign_coords(layer=np.arange(len(layers)))
    keys = ("regime", "phase", "period", "lambda1", "boundary_distance", "boundary_beta_o", "censored",
            "edge_distance", "reason")  # fmt: skip
    out: dict[str, list] = {k: [] for k in (*keys, "grid_beta_o", "grid_phase")}
    with tempfile.TemporaryDirectory(prefix="attnphys-placement-") as folder:
        for i in range(rd.sizes["layer"]):
            res = [
                _place_one(r.weights.values, dict(beta_o=float(r.beta_o), gamma=float(r.gamma), epsilon=float(r.epsilon),
                           P=P), L=L, grid=grid, span=span, steps=steps, transient=transient, exponents=exponents,
                           folder=folder)
                for r in (rd.isel(layer=i, head=h) for h in range(rd.sizes["head"]))
            ]  # fmt: skip
            for k in out:
                out[k].append([x[k] for x in res])
    dims = ("layer", "head")
    ds = rd.copy()
    for k in keys:
        ds[k] = (dims, np.asarray(out[k], dtype=object if k == "reason" else None))
    ds["reason"] = ds["reason"].astype(str)
    ds["grid_beta_o"] = ((*dims, "grid"), np.asarray(out["grid_beta_o"], float))
    ds["grid_phase"] = ((*dims, "grid"), np.asarray(out["grid_phase"], np.int8))
    for v in ds.data_vars:
        ds[v].attrs["long_name"] = LONG_NAMES[str(v)]
    for v in ("phase", "grid_phase"):
        ds[v].attrs.update(flag_values=np.arange(len(PHASES), dtype=np.int8), flag_meanings=" ".join(PHASES))
    settings = dict(M=M, P=P, L=L, patterns=patterns, heads=heads, span=span, n_beta=n_beta, steps=steps,
                    transient=transient, exponents=exponents, start="token",
                    dmft="paper network, ExplicitWeights of the read weights, mo_se 'paper', era 'head', "
                         "scaling_att = 1 (beta_att = gamma sqrt(M))")  # fmt: skip
    ds.attrs = base_attrs(None, **settings, n_se=int(rd.attrs.get("n_se", -1)), positional=rd.attrs.get("positional"))
    ds.attrs["config"] = json.dumps(settings, sort_keys=True)
    return ds


# -- a real model and its controls ---------------------------------------------------------------------------


def _positional_basis(model, P: int, n_max: int = 512):
    """(D, P) the top principal directions of the model's learned position table (None: no additive table)."""
    from attnphys.probes.adapters._base import base_model, to_numpy

    body = base_model(model)
    table = None
    if hasattr(body, "embeddings") and hasattr(body.embeddings, "position_embeddings"):
        table = body.embeddings.position_embeddings.weight
    elif hasattr(body, "wpe"):
        table = body.wpe.weight
    if table is None:
        return None
    T = to_numpy(table)[:n_max]
    return np.linalg.svd(T - T.mean(0), full_matrices=False)[2][:P].T


def _norm_gain(norm) -> np.ndarray | None:
    g = getattr(norm, "gamma", None) if norm is not None else None
    return None if g is None else np.asarray(g, float)


def _model_layers(model, P: int):
    """(heads per layer, the attention input's gain per layer, positional basis, token embeddings)."""
    from attnphys.probes.adapters import adapter_for

    ad = adapter_for(model)
    layers = ad.layers(model)
    heads = [ad.heads(model, layer) for layer in layers]
    if ad.pre_ln:
        gains = [_norm_gain(ad.layer_norms(layer)[0]) for layer in layers]
    else:  # post-LN: the attention reads the previous layer's output norm (the embeddings' norm first)
        gains = [_norm_gain(ad.embedding_norm(model))] + [_norm_gain(ad.layer_norms(x)[1]) for x in layers[:-1]]
    D = heads[0].Wq.shape[2]
    gains = [np.ones(D) if g is None else g for g in gains]
    return heads, gains, _positional_basis(model, P), ad.embeddings(model), ad.family


def dmft_placement(
    model="minilm",
    *,
    tokenizer=None,
    control: str | list[str] | tuple[str, ...] | None = ("random", "shuffled"),
    M: int = M_PAPER,
    patterns: str = "svd",
    heads: str = "layer",
    P: int = P_PAPER,
    L: int = L_PAPER,
    span: float = 30.0,
    n_beta: int = 41,
    steps: int = 600,
    transient: int = 400,
    exponents: int = 2,
    seed: int = 0,
    progress: bool = False,
    log=None,
) -> xr.Dataset:
    """Every layer of a real model, and of its control models, read as the DMFT network and placed on its
    diagram along β_o (theory: docs/theory/dmft_placement.md §2–§5).

    Per layer (:func:`place_layers`): the heads' weights from the family's adapter, the gain of the norm that
    feeds the attention folded in, the positional subspace spanned by the top P principal directions of the
    learned position table (a rotary model has none: ε = 0), the M features chosen by ``patterns``; the
    regime of the map at the read (β_o, γ, ε) and the distance to the nearest regime boundary along β_o.
    The controls (:func:`~attnphys.probes.controls.control_model`) are read and placed the same way, and the
    claim of :func:`dmft_claim` is stored as ``claim_*`` variables.

    Args:
        model: a short name (``minilm``, ``smollm2``), a local folder, a hub name or a loaded model (then
            ``tokenizer`` too; it is not used: the reading needs weights only). control: control kinds (a
            list, ``"random,shuffled"`` or None). seed: seed of the control weights. progress, log: reporting.
            The rest: :func:`place_layers`.

    Returns:
        Dataset over (model, layer, head[, …]) — ``model`` is ``trained`` then the controls — with the
        variables of :func:`place_layers`; over ``control``: ``claim_*``. Attributes: the configuration
        (JSON), the model, its family and the version.

    Raises:
        InputError: an unknown control (field ``control``) or any argument of :func:`place_layers` (named).
    """
    from attnphys.probes.controls import control_model
    from attnphys.probes.run import control_kinds, resolve_model
    from attnphys.probes.significance import attach_claim
    from attnphys.progress import progress_bar

    kinds = control_kinds(control)
    seed = _check_int(seed, "seed", 0)
    P = _check_int(P, "P", 1, 30)
    t0 = time.perf_counter()
    log = log or (print if progress else (lambda *a: None))
    if not isinstance(model, str) and tokenizer is None:
        tokenizer = "unused"  # weights only
    name, model, _ = resolve_model(model, tokenizer, log, progress)
    parts = []
    family = ""
    with progress_bar(1 + len(kinds), "models", enabled=progress) as advance:
        for kind in ("trained", *kinds):
            log(f"{kind}: reading and placing every layer")
            m = model if kind == "trained" else control_model(model, kind, seed)
            layers, gains, basis, emb, family = _model_layers(m, P)
            parts.append(
                place_layers(
                    layers,
                    M=M,
                    patterns=patterns,
                    heads=heads,
                    positional=basis,
                    P=P,
                    gains=gains,
                    embeddings=emb,
                    L=L,
                    span=span,
                    n_beta=n_beta,
                    steps=steps,
                    transient=transient,
                    exponents=exponents,
                )  # fmt: skip
            )
            parts[-1].attrs["positional"] = "none" if basis is None else "basis"
            advance()
    ds = xr.concat(parts, dim="model", combine_attrs="override", join="outer", fill_value={"reason": ""})
    ds = ds.assign_coords(model=["trained", *kinds])
    config = dict(json.loads(parts[0].attrs["config"]), model=name, controls=list(kinds), seed=seed)
    ds.attrs.update(model=name, family=family, controls=json.dumps(list(kinds)), seed=seed,
                    config=json.dumps(config, sort_keys=True), wall_time_s=round(time.perf_counter() - t0, 2))  # fmt: skip
    if kinds:
        attach_claim(ds, dmft_claim(ds))
    return ds


# -- the claim, the section, the figure ----------------------------------------------------------------------


def dmft_claim(ds: xr.Dataset, alpha: float = 0.05) -> xr.Dataset:
    """The test of "trained layers sit nearer a regime boundary than the controls' layers" against each
    control (theory: docs/theory/dmft_placement.md §5).

    Units: the placed networks (layers, or heads with ``heads="each"``). With d = |ln(b/β_o)| the boundary
    distance, trained d_T (m units) against a control's d_C (m'), H₀: d_T is not stochastically smaller.

    * No censored distance in either model: Welch's t = (d̄_C − d̄_T) / √(s_T²/m + s_C²/m') with the
      Welch–Satterthwaite ν, one-sided p = P(t_ν ≥ t); beside it the one-sided Mann–Whitney p.
    * Some censored (no boundary on the grid: d ≥ ln span only): the Mann–Whitney test with every censored
      distance tied above every observed one (the ordering that censoring leaves known); ν is not defined.
    * All censored in both models: nothing is known of the order; not tested.

    ``p_holm`` is the deciding p (Welch or the rank test) Holm-corrected over the controls; ``supported`` is 1
    where p_holm ≤ ``alpha``, the trained median is smaller and (Welch) ν ≥ 3. Every verdict is reported.

    Returns:
        Dataset over ``control``: ``statistic`` (d̄_C − d̄_T on the lower bounds), ``median_trained``,
        ``median_control``, ``t``, ``df``, ``p``, ``p_mann_whitney``, ``p_holm``, ``units_trained``,
        ``units_control``, ``censored_trained``, ``censored_control``, ``test``, ``supported``, ``reason``.

    Raises:
        InputError: not a placement dataset with the trained model and a control (field ``ds``).
    """
    from scipy import stats

    from attnphys.probes.significance import MIN_DF, holm, welch_test

    if not isinstance(ds, xr.Dataset) or "boundary_distance" not in ds or "model" not in ds.coords:
        raise InputError("must be a dataset of dmft_placement (with 'boundary_distance' over 'model')", "ds")
    ctl = [str(m) for m in ds.model.values if str(m) != "trained"]
    if "trained" not in ds.model.values or not ctl:
        raise InputError("needs the trained model and at least one control (control=...)", "ds")
    names = ("statistic", "median_trained", "median_control", "t", "df", "p", "p_mann_whitney", "units_trained",
             "units_control", "censored_trained", "censored_control")  # fmt: skip
    out = {v: np.full(len(ctl), np.nan) for v in names}
    deciding = np.full(len(ctl), np.nan)
    test = np.full(len(ctl), "none", dtype=object)
    reason = np.full(len(ctl), "", dtype=object)
    nearer = np.zeros(len(ctl), bool)

    def dist(m):
        d = ds.boundary_distance.sel(model=m).values.ravel().astype(float)
        c = ds.censored.sel(model=m).values.ravel().astype(bool)
        ok = np.isfinite(d)
        return d[ok], c[ok]

    dT, cT = dist("trained")
    for i, c in enumerate(ctl):
        dC, cC = dist(c)
        out["units_trained"][i], out["units_control"][i] = dT.size, dC.size
        out["censored_trained"][i], out["censored_control"][i] = cT.sum(), cC.sum()
        if dT.size < 2 or dC.size < 2:
            reason[i] = "fewer than two placed units in a model"
            continue
        out["statistic"][i] = dC.mean() - dT.mean()
        out["median_trained"][i], out["median_control"][i] = np.median(dT), np.median(dC)
        if cT.all() and cC.all():
            reason[i] = "every distance is censored (no boundary on either model's grids): not tested"
            continue
        rT, rC = np.where(cT, np.inf, dT), np.where(cC, np.inf, dC)
        nearer[i] = np.median(rT) < np.median(rC)
        out["p_mann_whitney"][i] = stats.mannwhitneyu(rT, rC, alternative="less").pvalue
        if cT.any() or cC.any():
            test[i], deciding[i] = "mann_whitney_censored", out["p_mann_whitney"][i]
            continue
        t, df, p = welch_test(dT, dC)
        if not np.isfinite(t):
            reason[i] = "no spread of the distances in either model"
            continue
        out["t"][i], out["df"][i], out["p"][i] = t, df, p
        test[i], deciding[i] = "welch", out["p"][i]
    p_holm = holm(deciding)[0]
    df_ok = np.where(test == "welch", out["df"] >= MIN_DF, True)
    sup = (p_holm <= alpha) & nearer & df_ok & (test != "none")
    for i in range(len(ctl)):
        if reason[i] or sup[i]:
            continue
        if not nearer[i]:
            reason[i] = "the trained units are not nearer a boundary (median, censored ones above all)"
        elif not df_ok[i]:
            reason[i] = f"fewer than {MIN_DF} degrees of freedom"
        else:
            reason[i] = f"not significant at {alpha} after Holm over the controls"
        if test[i] == "mann_whitney_censored":
            nT, nC = int(out["censored_trained"][i]), int(out["censored_control"][i])
            reason[i] += f"; rank test: {nT} trained and {nC} control distances censored"
    res = xr.Dataset(
        {v: ("control", a) for v, a in out.items()}
        | {"p_holm": ("control", p_holm), "test": ("control", test.astype(str)),
           "supported": ("control", sup.astype(np.int8)), "reason": ("control", reason.astype(str))},
        coords={"control": ctl},
    )  # fmt: skip
    res["statistic"].attrs["long_name"] = "mean boundary distance of the control's units minus the trained model's"
    res["df"].attrs["long_name"] = "Welch-Satterthwaite degrees of freedom (units: placed layers or heads)"
    res["p"].attrs["long_name"] = "one-sided Welch p-value (H0: trained units are not nearer a boundary)"
    res["p_holm"].attrs["long_name"] = "the deciding p-value (see test), Holm-corrected over the controls"
    res["supported"].attrs["long_name"] = f"1 where Holm-corrected p <= {alpha}, the trained median is smaller"
    res.attrs.update(claim=CLAIM, units="placed networks (layers or heads); censored distances tied above all",
                     alpha=alpha)  # fmt: skip
    return res


def _fmt(x: float) -> str:
    return "NaN" if not np.isfinite(x) else f"{x:.3g}"


def _check_placement(ds) -> xr.Dataset:
    if not isinstance(ds, xr.Dataset) or "boundary_distance" not in ds or "grid_phase" not in ds:
        raise InputError("must be a dataset of dmft_placement or place_layers", "ds")
    if "model" not in ds.dims:
        ds = ds.expand_dims(model=["trained"])
    return ds


def dmft_section(ds: xr.Dataset) -> str:
    """The report's markdown section: per layer and model the read (β_o, γ, ε), the phase there and the
    boundary distance (medians over heads when every head is placed), then the claim's verdicts (theory:
    docs/theory/dmft_placement.md §5, §6).

    Raises:
        InputError: a dataset that is not a placement (field ``ds``).
    """
    ds = _check_placement(ds)
    models = [str(m) for m in ds.model.values]
    lines = [
        "## Layers on the DMFT phase diagram",
        "",
        f"Each layer read as the mean-field network (M = {ds.attrs.get('M', '?')}, patterns "
        f"`{ds.attrs.get('patterns', '?')}`, heads `{ds.attrs.get('heads', '?')}`) and placed along β_o "
        f"({ds.attrs.get('steps', '?')} steps, {ds.attrs.get('transient', '?')} transient). "
        "Cells: β_o, γ, ε → phase (distance |ln(b/β_o)| to the nearest boundary b along β_o; ≥: none on the "
        "grid).",
        "",
        "| layer | " + " | ".join(models) + " |",
        "|---|" + "---|" * len(models),
    ]
    for layer in ds.layer.values:
        cells = []
        for m in models:
            r = ds.sel(model=m, layer=layer)
            ph = np.asarray(r.phase.values).ravel()
            ph = ph[ph >= 0]
            mode = PHASES[int(np.bincount(ph, minlength=len(PHASES)).argmax())] if ph.size else "—"
            cens = "≥" if bool(np.any(r.censored.values)) else ""
            cells.append(
                f"{_fmt(float(np.nanmedian(r.beta_o)))}, {_fmt(float(np.nanmedian(r.gamma)))}, "
                f"{_fmt(float(np.nanmedian(r.epsilon)))} → {mode} ({cens}{_fmt(float(np.nanmedian(r.boundary_distance)))})"
            )
        lines.append(f"| {int(layer)} | " + " | ".join(cells) + " |")
    if "claim_p" in ds:
        lines += ["", f"Claim: {ds.attrs.get('claim', CLAIM)} (units: {ds.attrs.get('claim_units', 'layers')}).", ""]
        for c in ds.claim_p.control.values:
            s = ds.sel(control=c)
            verdict = "supported" if int(s.claim_supported) else "not supported"
            why = str(s.claim_reason.values)
            units = f"{int(s.claim_units_trained)} vs {int(s.claim_units_control)} units"
            if str(s.claim_test.values) == "welch":
                how = (f"Welch t = {_fmt(float(s.claim_t))}, df = {_fmt(float(s.claim_df))}, "
                       f"p = {_fmt(float(s.claim_p))}; Mann–Whitney p = {_fmt(float(s.claim_p_mann_whitney))}")  # fmt: skip
            else:
                how = (f"rank test with {int(s.claim_censored_trained)} + {int(s.claim_censored_control)} censored "
                       f"tied above, Mann–Whitney p = {_fmt(float(s.claim_p_mann_whitney))}")  # fmt: skip
            lines.append(
                f"- vs {c}: {verdict}; median distance {_fmt(float(s.claim_median_trained))} (trained) against "
                f"{_fmt(float(s.claim_median_control))} e-folds, {units}, {how}, Holm p = {_fmt(float(s.claim_p_holm))}"
                + (f" — {why}" if why else "")
            )
    return "\n".join(lines) + "\n"


PHASE_COLOURS = {"ordered": "#4c72b0", "periodic": "#55a868", "chaotic": "#c44e52", "undetermined": "#bbbbbb"}


def plot_dmft_placement(ds: xr.Dataset, ax=None):
    """The regime map along β_o of every placed layer (one strip per layer and model, coloured by phase) with
    the read β_o marked on it (theory: docs/theory/dmft_placement.md §4). Returns the axes.

    Raises:
        InputError: a dataset that is not a placement (field ``ds``).
    """
    ds = _check_placement(ds)
    if ax is None:
        from matplotlib.figure import Figure

        ax = Figure(figsize=(6.5, 0.5 + 0.35 * ds.sizes["layer"] * ds.sizes["model"])).subplots()
    from matplotlib.patches import Patch

    models = [str(m) for m in ds.model.values]
    nm, nh = len(models), ds.sizes["head"]
    markers = "o^sDv"
    for i, m in enumerate(models):
        for layer in ds.layer.values:
            for h in range(nh):
                r = ds.sel(model=m, layer=layer).isel(head=h)
                y = float(layer) + (i - (nm - 1) / 2) * 0.8 / nm + (h - (nh - 1) / 2) * 0.8 / (nm * max(nh, 1))
                b, ph = r.grid_beta_o.values, r.grid_phase.values
                ok = np.isfinite(b)
                if ok.sum() >= 2:
                    b, ph = b[ok], ph[ok]
                    edges = np.r_[b[0], (b[1:] + b[:-1]) / 2, b[-1]]
                    cols = [PHASE_COLOURS[PHASES[int(p)]] if p >= 0 else "#ffffff" for p in ph]
                    ax.barh(np.full(b.size, y), np.diff(edges), left=edges[:-1], height=0.7 / (nm * nh),
                            color=cols, linewidth=0)  # fmt: skip
                if np.isfinite(float(r.beta_o)):
                    ax.plot([float(r.beta_o)], [y], markers[i % len(markers)], color="k", ms=4,
                            label=m if (layer == ds.layer.values[0] and h == 0) else None)  # fmt: skip
    handles = [Patch(color=c, label=p) for p, c in PHASE_COLOURS.items()]
    leg = ax.legend(handles=handles + ax.get_legend_handles_labels()[0], fontsize="small", loc="upper right")
    ax.add_artist(leg)
    ax.set_xlabel("β_o")
    ax.set_ylabel("layer")
    ax.set_yticks(list(map(int, ds.layer.values)))
    return ax


__all__ = [
    "PATTERNS",
    "HEADS",
    "PHASES",
    "CLAIM",
    "paper_head",
    "read_layer",
    "place_layers",
    "dmft_placement",
    "dmft_claim",
    "dmft_section",
    "plot_dmft_placement",
]
