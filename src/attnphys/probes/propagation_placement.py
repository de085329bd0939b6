"""A real transformer placed on the signal-propagation diagram of random deep transformers (theory:
docs/theory/propagation_placement.md; the diagram: docs/theory/signal_propagation.md, after arXiv 2505.24333).

:func:`propagation_placement` measures, layer by layer and sentence by sentence, the parameters that the
random-energy-model (REM) layer map of :mod:`attnphys.clouds.propagation` takes — the input cosine ρ, each
head's β in the REM's units, the residual scales α_A and α_M, the normalization placement — and sets the
map's prediction of the cosine leaving the layer beside the measured one: from the measured input (one
layer) and composed from layer 0. The same for the random and shuffled control models
(:func:`attnphys.probes.controls.control_model`). :func:`propagation_section` writes the markdown section of
a report, :func:`plot_propagation_placement` draws the comparison (matplotlib's object API only).

The theory's block is :func:`attnphys.clouds.propagation.block_moments`, the one ``propagation_theory`` steps,
here with the REM statistics of several heads averaged (:func:`layer_prediction`; a test holds it to
``propagation_theory``'s first block); the REM participation is ``rem_statistics``' exact quadrature, the overlap of two rows is sampled
over seeded draws as there, batched here.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import xarray as xr

from attnphys.clouds.propagation import attention_branch_moments, block_moments, mlp_branch_square
from attnphys.errors import InputError
from attnphys.probes.capture import MAX_LENGTH, Capture

SIGMA_DEFAULTS = dict(sigma_w2=0.2, sigma_v2=0.2, sigma_b2=4e-4)
"""The theory's weight and bias variances used for a trained model (the encoder of arXiv 2505.24333): only
the biases' share σ_b²/σ_v², σ_b²/σ_w² enters the prediction, the scales being set by the measured
branch-to-residual ratios (docs/theory/propagation_placement.md §2.3)."""

TOLERANCE = 0.05
"""The agreement claim's tolerance on the mean cosine leaving a layer, fixed before any measurement."""

BOOTSTRAP = 1000
"""Bootstrap resamples of the sentences behind every interval."""

MIN_TOKENS = 4
"""Fewest kept tokens of a sentence for its cloud (:data:`attnphys.probes._collapse.MIN_CLOUD_TOKENS`)."""

EXACT_BELOW = 97
"""REM participations asked at one T are computed by exact quadrature one by one below this many, and
interpolated on a table of this many nodes above (as ``propagation_theory`` tabulates them)."""

MODELS = ("trained", "random", "shuffled")
TOKEN_SETS = ("all", "no_sinks")

LONG_NAMES = {
    "model": "the model measured: the trained one or a control (docs/theory/probes.md §4.2)",
    "tokens": "token set: all tokens, or without the sink positions",
    "sentence": "sentence index",
    "layer": "layer index",
    "head": "attention head",
    "row_tokens": "keys per attention row, T (mean over the sentence's queries)",
    "cosine_in": "measured mean pairwise cosine of the tokens entering the layer",
    "cosine_out": "measured mean pairwise cosine of the tokens leaving the layer",
    "sigma_head": "measured score spread of a head: within-query standard deviation of the scores",
    "beta_head": "head's beta in the REM's units, sigma / sqrt((1 - rho_in) log T)",
    "beta": "layer's beta in the REM's units, RMS over heads of the score spread / sqrt((1 - rho_in) log T)",
    "beta_c": "condensation point of the layer map at the input cosine, sqrt(2/(1 - rho_in))",
    "collapse_distance": "log(beta / beta_c): < 0 on the rank-collapse side of the line, > 0 condensed",
    "residual_attention": "measured ratio of the attention branch's norm to the residual stream's",
    "residual_mlp": "measured ratio of the MLP branch's norm to the residual stream's",
    "alpha_attention": "theory's alpha_A reproducing the measured attention ratio",
    "alpha_mlp": "theory's alpha_MLP reproducing the measured MLP ratio",
    "collapse_multiplier": "lambda_1 = d(1 - rho')/d(1 - rho) at rho = 1 of the Post-LN block (NaN: Pre-LN)",
    "predicted": "theory's cosine leaving the layer from the measured input (one layer)",
    "predicted_composed": "theory's cosine leaving the layer composed from the measured input of layer 0",
    "predicted_no_mlp": "negative control: one-layer theory with the MLP kernel left out",
    "predicted_other_placement": "one-layer theory with the other normalization placement (the same prediction: "
    "the measured ratios absorb the norms)",
}
"""CF ``long_name`` of the per-sentence variables of :func:`propagation_placement`."""

_SUMMARISED = (
    "cosine_in",
    "cosine_out",
    "predicted",
    "predicted_composed",
    "predicted_no_mlp",
    "predicted_other_placement",
    "beta",
    "collapse_distance",
    "residual_attention",
    "residual_mlp",
    "collapse_multiplier",
)


# -- the REM statistics of many rows at once --------------------------------------------------------------
def _exact_participation(sigma: np.ndarray, T: int) -> np.ndarray:
    """Y_T(σ) by the exact quadrature of :func:`attnphys.clouds.propagation.rem_statistics` (σ = β √(log T)
    at ρ = 0; signal_propagation.md §2.2), for the (K,) array ``sigma``."""
    from attnphys.clouds.propagation import rem_statistics

    beta = np.maximum(np.asarray(sigma, float), 1e-12) / math.sqrt(math.log(T))
    uniq, inv = np.unique(beta, return_inverse=True)
    st = rem_statistics(uniq, [0.0], tokens=int(T), rows=2, seed=0)
    return st.participation.values[:, 0][inv]


class _REM:
    """Y_T(σ) (exact quadrature one by one, or interpolated on :data:`EXACT_BELOW` nodes in [0, σ_max] when
    many are asked at one T: the curvature of Y over one step keeps the error below 10⁻⁴) and O_T(σ, r)
    sampled over ``rows`` pairs of rows, G, U ~ N(0, I_T) drawn once per T from ``seed`` (the draws of
    :func:`attnphys.clouds.propagation.rem_statistics`), the same at every (σ, r) of one T (common random
    numbers), batched over the elements (theory: docs/theory/signal_propagation.md §2.2, §2.3)."""

    def __init__(self, rows: int, seed: int, sigma_max: float):
        self.rows, self.seed, self.sigma_max = rows, seed, sigma_max
        self.tables: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.draws: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def _draws(self, T: int):
        if T not in self.draws:
            rng = np.random.default_rng(self.seed)
            self.draws[T] = (rng.standard_normal((self.rows, T)), rng.standard_normal((self.rows, T)))
        return self.draws[T]

    def participation(self, sigma: np.ndarray, T: np.ndarray) -> np.ndarray:
        s, t = np.broadcast_arrays(np.asarray(sigma, float), np.asarray(T, int))
        out = np.full(s.shape, np.nan)
        for T_ in np.unique(t[np.isfinite(s)]):
            at = (t == T_) & np.isfinite(s)
            T_ = int(T_)
            if at.sum() < EXACT_BELOW and T_ not in self.tables:
                out[at] = _exact_participation(s[at], T_)
                continue
            if T_ not in self.tables:
                grid = np.linspace(0.0, self.sigma_max * 1.0001, EXACT_BELOW)
                self.tables[T_] = (grid, _exact_participation(grid, T_))
            grid, Y = self.tables[T_]
            out[at] = np.interp(np.clip(s[at], 0.0, grid[-1]), grid, Y)
        return out

    def overlap(self, sigma: np.ndarray, r: np.ndarray, T: np.ndarray, chunk: int = 64) -> np.ndarray:
        s, c, t = np.broadcast_arrays(np.asarray(sigma, float), np.asarray(r, float), np.asarray(T, int))
        out = np.full(s.size, np.nan)
        good = (np.isfinite(s) & np.isfinite(c)).ravel()
        for T_ in np.unique(t.ravel()[good]):
            at = np.flatnonzero((t.ravel() == T_) & good)
            G, U = self._draws(int(T_))
            flat_s, flat_c = s.ravel()[at], np.clip(c.ravel()[at], -1.0, 1.0)
            for lo in range(0, at.size, chunk):
                sg = flat_s[lo : lo + chunk, None, None]
                cc = flat_c[lo : lo + chunk, None, None]
                a = sg * G[None]
                b = sg * (cc * G[None] + np.sqrt(np.maximum(0.0, 1.0 - cc * cc)) * U[None])
                wa = np.exp(a - a.max(-1, keepdims=True))
                wa /= wa.sum(-1, keepdims=True)
                wb = np.exp(b - b.max(-1, keepdims=True))
                wb /= wb.sum(-1, keepdims=True)
                out[at[lo : lo + chunk]] = (wa * wb).sum(-1).mean(-1)
        return out.reshape(s.shape)


# -- the theory's block at measured parameters --------------------------------------------------------------
def residual_alphas(Y, rho, residual_attention, residual_mlp, placement: str, sigma_w2, sigma_v2, sigma_b2):
    """(α_A, α_M) of the theory's block that reproduce the measured branch-to-residual norm ratios r_A, r_M of a
    layer whose stream enters with q = 1 and cosine ρ and whose heads have participation Y (theory:
    docs/theory/propagation_placement.md §2.3):

        α_A² = (σ_v² (ρ + (1 − ρ) Y) + σ_b²) / r_A²,     α_M² = q_m / (r_M² q_0),

    q_m = σ_w²(σ_w² + σ_b²)/2 + σ_b² the MLP branch's squared norm, q_0 the stream's squared norm entering
    the MLP (1 for Post-LN; σ_v² q_a + σ_b² + α_A² for Pre-LN). Arrays broadcast."""
    qa, _ = attention_branch_moments(rho, Y, 0.0, sigma_v2, sigma_b2)
    rA2 = np.maximum(np.asarray(residual_attention, float) ** 2, 1e-300)
    rM2 = np.maximum(np.asarray(residual_mlp, float) ** 2, 1e-300)
    aA2 = qa / rA2
    q0 = np.ones_like(aA2) if placement == "post" else qa + aA2
    aM2 = mlp_branch_square(sigma_w2, sigma_b2) / (rM2 * q0)
    return np.sqrt(aA2), np.sqrt(aM2)


def layer_prediction(rho, Y, O, alpha_attention, alpha_mlp, placement: str, mlp: bool, sigma_w2, sigma_v2, sigma_b2):
    """The theory's mean cosine after one block, from a stream of cosine ρ and squared norm q = 1, with the
    attention rows' participation Y and overlap O (the mean over the layer's heads of each head's REM
    statistics: heads of equal scale add their second moments), residual scales α_A, α_M, the MLP's arc-cosine
    kernel κ (left out with ``mlp=False``) and LayerNorm at ``placement`` (theory:
    docs/theory/signal_propagation.md §4, docs/theory/propagation_placement.md §2.4): the block of
    :func:`attnphys.clouds.propagation.propagation_theory` with the statistics given instead of one β's,

        attention:  q_0 = σ_v² q_a + σ_b² + α_A²,  p_0 = σ_v² p_a + σ_b² + α_A² ρ   (Post-LN: then ρ_0 = p_0/q_0, q_0 = 1),
        MLP:        c = p_0/q_0,  q_m = σ_w² q_1/2 + σ_b²,  p_m = σ_w² q_1 κ(p_1/q_1)/2 + σ_b²,
                    q_1 = σ_w² + σ_b²,  p_1 = σ_w² c + σ_b²,  then ρ' = (p_m + α_M² p_0)/(q_m + α_M² q_0)
                    (Post-LN: with q_0 = 1, p_0 = c).

    Arrays broadcast; returns ρ'."""
    rho = np.asarray(rho, float)
    aA, aM = np.asarray(alpha_attention, float), np.asarray(alpha_mlp, float)
    q1, p1 = block_moments(1.0, rho, rho, np.asarray(Y, float), np.asarray(O, float), placement=placement, mlp=mlp,
                           alpha_attention=aA, alpha_mlp=aM, sigma_w2=sigma_w2, sigma_v2=sigma_v2, sigma_b2=sigma_b2)  # fmt: skip
    return np.clip(p1 / q1, -1.0, 1.0)


def _sigma_of(beta, rho, T):
    return np.asarray(beta, float) * np.sqrt(np.clip(1.0 - np.asarray(rho, float), 0.0, None) * np.log(T))


def _rem_means(rem: _REM, beta_head, rho, T):
    """(Y, O) averaged over heads (last axis of ``beta_head``) at cosine ρ (broadcast without the head axis)."""
    r = np.asarray(rho, float)[..., None]
    s = _sigma_of(beta_head, r, np.asarray(T)[..., None])
    Tb = np.broadcast_to(np.asarray(T)[..., None], s.shape)
    return rem.participation(s, Tb).mean(-1), rem.overlap(s, np.broadcast_to(r, s.shape), Tb).mean(-1)


# -- measuring one model --------------------------------------------------------------------------------
def _cloud_cosine(X: np.ndarray) -> float:
    U = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-300)
    m = U.shape[0]
    return (float(np.sum(U.sum(0) ** 2)) - m) / (m * (m - 1))


def _measure(cap: Capture, heads: list, rotary, keep: np.ndarray) -> dict[str, np.ndarray]:
    """Per (sentence, layer): the cosines in and out, the branch ratios, the row length T; per (sentence,
    layer, head): the score spread σ (docs/theory/propagation_placement.md §2)."""
    from attnphys.probes._collapse import cosine_profile
    from attnphys.probes.metrics import attended, project, scores_of

    ad = cap.adapter
    L, H = cap.n_layers, heads[0].n_heads
    spans = cap.sentences()
    S = len(spans)
    prof = cosine_profile(cap, keep)
    sigma = np.full((S, L, H), np.nan)
    T = np.full((S,), np.nan)
    rA = np.full((S, L), np.nan)
    rM = np.full((S, L), np.nan)
    mlp_res = "attn_add" if ad.pre_ln else "attn_norm"
    windows = cap.windows or [None] * L
    for layer in range(L):
        hw = heads[layer]
        X = cap.get(layer, ad.attn_input_stage).astype(np.float64)
        Q, K = project(hw.Wq, hw.bq, X), project(hw.Wk, hw.bk, X)
        if rotary is not None:
            Q, K = rotary.apply(Q, cap.position), rotary.apply(K, cap.position)
        sq = {
            st: np.sum(cap.get(layer, st).astype(np.float64) ** 2, 1)
            for st in ("input", "attn_out", mlp_res, "mlp_out")
        }
        for s, (a, b) in enumerate(spans):
            k = keep[a:b]
            m = int(k.sum())
            if m < MIN_TOKENS:
                continue
            pair = attended(b - a, ad.causal, windows[layer]) & k[None, :] & k[:, None]
            n_keys = pair.sum(1)
            rows = n_keys >= 2
            Sc = scores_of(Q[:, a:b], K[:, a:b], hw.head_dim, False)
            Sm = np.where(pair, Sc, 0.0)
            mean = Sm.sum(-1, keepdims=True) / np.maximum(n_keys, 1)[:, None]
            var = np.where(pair, (Sc - mean) ** 2, 0.0).sum(-1) / np.maximum(n_keys - 1, 1)  # (H, n), ddof 1
            sigma[s, layer] = np.sqrt(var[:, rows].mean(-1))
            if layer == 0:
                T[s] = float(n_keys[rows].mean())
            rA[s, layer] = math.sqrt(sq["attn_out"][a:b][k].sum() / max(sq["input"][a:b][k].sum(), 1e-300))
            rM[s, layer] = math.sqrt(sq["mlp_out"][a:b][k].sum() / max(sq[mlp_res][a:b][k].sum(), 1e-300))
    ok = np.isfinite(prof).all(1)
    return dict(
        cosine_in=prof[:, :L],
        cosine_out=prof[:, 1:],
        sigma_head=sigma,
        row_tokens=np.where(ok, np.maximum(np.round(T), 2), np.nan),
        residual_attention=rA,
        residual_mlp=rM,
    )


def _theory(meas: dict, rem: _REM, placement: str, mlp: bool, sw2, sv2, sb2) -> dict[str, np.ndarray]:
    """The measured parameters in the theory's units and its predictions (one layer, composed, and the two
    negative controls), per (sentence, layer)."""
    from attnphys.clouds.propagation import collapse_multiplier, critical_beta_closed_form

    rho_in = meas["cosine_in"]
    S, L = rho_in.shape
    T = np.where(np.isfinite(meas["row_tokens"]), meas["row_tokens"], 2).astype(int)[:, None] * np.ones((1, L), int)
    ok = np.isfinite(meas["row_tokens"])[:, None] & np.isfinite(rho_in)
    norm = np.sqrt(np.clip(1.0 - rho_in, 1e-300, None) * np.log(T))
    beta_head = meas["sigma_head"] / norm[..., None]
    beta = np.sqrt(np.nanmean(meas["sigma_head"] ** 2, -1)) / norm
    beta_c = critical_beta_closed_form(np.clip(rho_in, 0.0, 1.0 - 1e-15))
    rho_safe = np.where(ok, np.clip(rho_in, 0.0, 1.0 - 1e-12), 0.0)
    Y, O = _rem_means(rem, np.where(ok[..., None], beta_head, np.nan), rho_safe, T)
    other = "pre" if placement == "post" else "post"
    a_A, a_M = residual_alphas(Y, rho_safe, meas["residual_attention"], meas["residual_mlp"], placement, sw2, sv2, sb2)
    o_A, o_M = residual_alphas(Y, rho_safe, meas["residual_attention"], meas["residual_mlp"], other, sw2, sv2, sb2)
    one = layer_prediction(rho_safe, Y, O, a_A, a_M, placement, mlp, sw2, sv2, sb2)
    no_mlp = layer_prediction(rho_safe, Y, O, a_A, a_M, placement, False, sw2, sv2, sb2)
    swapped = layer_prediction(rho_safe, Y, O, o_A, o_M, other, mlp, sw2, sv2, sb2)
    composed = np.full((S, L), np.nan)
    r = rho_safe[:, 0].copy()
    for layer in range(L):
        rr = np.clip(r, 0.0, 1.0 - 1e-12)
        y, o = _rem_means(rem, np.where(ok[:, layer, None], beta_head[:, layer], np.nan), rr, T[:, layer])
        r = layer_prediction(rr, y, o, a_A[:, layer], a_M[:, layer], placement, mlp, sw2, sv2, sb2)
        composed[:, layer] = r
    lam = collapse_multiplier(a_A, a_M, sw2, sv2, sb2, mlp) if placement == "post" else np.full(a_A.shape, np.nan)
    nan = np.where(ok, 1.0, np.nan)
    return dict(
        beta_head=beta_head * nan[..., None],
        beta=beta * nan,
        beta_c=beta_c * nan,
        collapse_distance=np.log(np.maximum(beta, 1e-300) / beta_c) * nan,
        alpha_attention=a_A * nan,
        alpha_mlp=a_M * nan,
        collapse_multiplier=lam * nan,
        predicted=one * nan,
        predicted_composed=composed * nan,
        predicted_no_mlp=no_mlp * nan,
        predicted_other_placement=swapped * nan,
    )


# -- intervals and claims --------------------------------------------------------------------------------
def _bootstrap_index(S: int, draws: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, S, (draws, S))


def _summarise(v: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean over sentences (axis −2 of ``v`` (..., S, L)) and its 95 % percentile bootstrap interval."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN layer stays NaN
        mean = np.nanmean(v, -2)
        reps = np.nanmean(np.take(v, idx, axis=-2), -2)  # (..., B, L)
        lo, hi = np.nanpercentile(reps, [2.5, 97.5], axis=-2)
    return mean, lo, hi


def _agreement(diff: np.ndarray, idx: np.ndarray, tolerance: float) -> dict[str, np.ndarray]:
    """Per (model, tokens): the largest |mean over sentences of Δ| over the layers, its bootstrap 97.5 %
    bound, and the bootstrap p-value of the null 'max |Δ| ≥ tolerance' (the share of resamples at or above it)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        stat = np.nanmax(np.abs(np.nanmean(diff, -2)), -1)
        reps = np.nanmax(np.abs(np.nanmean(np.take(diff, idx, axis=-2), -2)), -1)  # (..., B)
        high = np.nanpercentile(reps, 97.5, axis=-1)
    p = np.mean(reps >= tolerance, -1)
    p = np.where(np.isfinite(stat), np.maximum(p, 1.0 / (idx.shape[0] + 1)), np.nan)
    return dict(stat=stat, high=high, p=p)


def _nearer(dist: np.ndarray) -> dict[str, np.ndarray]:
    """Per (control, tokens): the paired one-sided t-test over sentences that the trained layers' mean
    |log β/β_c| is below the control's (statistic: mean difference trained − control)."""
    from attnphys.probes.significance import t_test

    C, K = dist.shape[0] - 1, dist.shape[1]
    out = {k: np.full((C, K), np.nan) for k in ("stat", "t", "p", "df")}
    a = np.abs(dist)
    for c in range(C):
        for k in range(K):
            d = np.nanmean(a[0, k], -1) - np.nanmean(a[c + 1, k], -1)
            d = d[np.isfinite(d)]
            if d.size < 2:
                continue
            t, p = t_test(d, 0.0, greater=False)
            out["stat"][c, k], out["t"][c, k], out["p"][c, k], out["df"][c, k] = d.mean(), t, p, d.size - 1
    return out


# -- the public functions -----------------------------------------------------------------------------------
def _integer(value, name: str, least: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < least:
        raise InputError(f"must be an integer of at least {least}, got {value!r}", name)
    return int(value)


def _real(value, name: str, low: float, *, low_open: bool = False, high: float | None = None) -> float:
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
    if ok:
        v = float(value)
        ok = math.isfinite(v) and (v > low if low_open else v >= low) and (high is None or v <= high)
    if not ok:
        span = f"{'above' if low_open else 'at least'} {low:g}" + ("" if high is None else f" and at most {high:g}")
        raise InputError(f"must be a finite number {span}, got {value!r}", name)
    return float(value)


def _check(sentences, max_sentences, max_length, control, seed, rows, bootstrap, placement, tolerance, mlp, sig):
    """Every argument of :func:`propagation_placement` checked before a model is read; the control kinds."""
    from attnphys.clouds.propagation import PROPAGATION_PLACEMENTS, check_architecture
    from attnphys.probes.capture import MIN_SENTENCES
    from attnphys.probes.run import control_kinds

    if sentences is not None:
        if isinstance(sentences, str) or not all(isinstance(s, str) for s in sentences):
            raise InputError("must be a list of strings, one sentence per item", "sentences")
        if len(sentences) < MIN_SENTENCES:
            raise InputError(
                f"{len(sentences)} sentences given; the placement needs at least {MIN_SENTENCES}", "sentences"
            )
    if max_sentences is not None:
        _integer(max_sentences, "max_sentences", MIN_SENTENCES)
    _integer(max_length, "max_length", 2)
    _integer(seed, "seed", 0)
    if seed >= 2**32:
        raise InputError(f"must be below 2^32, got {seed}", "seed")
    _integer(rows, "rows", 2)
    _integer(bootstrap, "bootstrap", 10)
    _real(tolerance, "tolerance", 0.0, low_open=True, high=1.0)
    if not isinstance(mlp, (bool, np.bool_)):
        raise InputError(f"must be True or False, got {mlp!r}", "mlp")
    if placement is not None and placement not in PROPAGATION_PLACEMENTS:
        raise InputError(f"must be one of {', '.join(PROPAGATION_PLACEMENTS)} or None, got {placement!r}", "placement")
    for name, v in sig.items():
        _real(v, name, 0.0, low_open=name != "sigma_b2")
    check_architecture("post", True, 1.0, 1.0, sig["sigma_w2"], sig["sigma_v2"], sig["sigma_b2"])
    return control_kinds(control)


def propagation_placement(
    model="minilm",
    sentences: list[str] | None = None,
    *,
    tokenizer=None,
    max_sentences: int | None = None,
    max_length: int = MAX_LENGTH,
    control: str | list[str] | tuple[str, ...] | None = ("random", "shuffled"),
    seed: int = 0,
    sigma_w2: float = SIGMA_DEFAULTS["sigma_w2"],
    sigma_v2: float = SIGMA_DEFAULTS["sigma_v2"],
    sigma_b2: float = SIGMA_DEFAULTS["sigma_b2"],
    mlp: bool = True,
    placement: str | None = None,
    rows: int = 256,
    bootstrap: int = BOOTSTRAP,
    tolerance: float = TOLERANCE,
    progress: bool = False,
    log=None,
) -> xr.Dataset:
    """A real model's layers placed on the signal-propagation diagram: per layer the measured mean cosine of
    the tokens entering (ρ_ℓ) and leaving (ρ_ℓ') it, the measured parameters of the REM layer map, and the
    map's prediction ρ̂_ℓ' = F(ρ_ℓ; β_ℓ, α_A,ℓ, α_M,ℓ, placement) beside ρ_ℓ' (theory:
    docs/theory/propagation_placement.md §2–3; the map F: docs/theory/signal_propagation.md §4):

    * β of head h in the REM's units: β_h = σ_h / √((1 − ρ_ℓ) log T), σ_h² the within-query variance of the
      head's scores over the keys (ddof 1), averaged over the queries, T the keys a row sees; the layer's
      β = √(mean_h σ_h²) / √((1 − ρ_ℓ) log T);
    * the residual scales: r_A = ‖attn_out‖/‖x‖ and r_M = ‖mlp_out‖/‖mlp residual‖ (sums of squares over
      the sentence's tokens), turned into the theory's α_A, α_M by :func:`residual_alphas`;
    * the placement: Post-LN (``post``) for the BERT family, Pre-LN (``pre``) for GPT-2 and Llama, from
      the adapter (``placement`` overrides it);
    * predictions: one layer from the measured ρ_ℓ (:func:`layer_prediction`, the heads' REM statistics
      averaged), composed from ρ_0 through every layer's measured β_h and α, the negative control with the MLP
      kernel left out, and the other placement (the same prediction in one layer once the α reproduce the
      measured ratios: a check of the mapping, not a control);
    * the side of the collapse line: log(β/β_c(ρ_ℓ)), β_c = √(2/(1 − ρ)) the layer map's condensation point
      (< 0: rank-collapse side), and the Post-LN collapse multiplier λ₁ at the layer's α.

    Everything is computed per sentence (one cloud each) for the trained model and each ``control``
    (:func:`attnphys.probes.controls.control_model`), with all tokens and without the sink positions; the
    means over sentences carry 95 % bootstrap intervals (``bootstrap`` resamples from ``seed``, the same
    resamples for every model, so that differences are paired).

    Args:
        model, sentences, tokenizer, max_sentences, max_length, progress, log: as
            :func:`attnphys.probes.run.temperatures`. control: None, a kind of
            :data:`attnphys.probes.controls.CONTROLS` or several (default both). seed: the controls, the
            REM's sampled rows and the bootstrap. sigma_w2, sigma_v2, sigma_b2: the theory's variances (their
            bias shares matter; the scales are measured). mlp: the theory's MLP kernel (False: left out).
            rows: sampled pairs of REM rows for the overlap. tolerance: of the agreement claim.

    Returns:
        Dataset over (model, tokens, sentence, layer) of the variables in :data:`LONG_NAMES` (``beta_head``,
        ``sigma_head`` also over head), their means over sentences ``<name>_mean`` with ``<name>_low`` and
        ``<name>_high`` (model, tokens, layer); the claims: ``agreement_statistic`` (largest |mean Δ| over
        the layers, one layer), ``agreement_high``, ``agreement_p``, ``agreement_within`` and the same for
        the composed prediction and the controls of the theory (``agreement_composed_*``,
        ``agreement_no_mlp_*``, ``agreement_other_placement_*``) over (model, tokens); ``nearer_statistic``,
        ``nearer_t``, ``nearer_p``, ``nearer_df`` over (control, tokens). Attributes: the configuration, the
        model's family and placement, the version.

    Raises:
        InputError: naming the field (``sentences``, ``max_sentences``, ``max_length``, ``control``, ``seed``,
            ``rows``, ``bootstrap``, ``tolerance``, ``mlp``, ``placement``, ``sigma_*``).
    """
    from attnphys.metadata import base_attrs
    from attnphys.probes.capture import builtin_corpus, capture
    from attnphys.probes.controls import control_model
    from attnphys.probes.run import resolve_model
    from attnphys.progress import progress_bar

    sig = dict(sigma_w2=sigma_w2, sigma_v2=sigma_v2, sigma_b2=sigma_b2)
    kinds = _check(sentences, max_sentences, max_length, control, seed, rows, bootstrap, placement, tolerance, mlp, sig)
    t0 = time.perf_counter()
    log = log or (print if progress else (lambda *a: None))
    name, model, tokenizer = resolve_model(model, tokenizer, log, progress)
    texts = builtin_corpus() if sentences is None else list(sentences)
    texts = texts[:max_sentences] if max_sentences else texts
    names = ("trained", *kinds)
    measured: dict[str, dict[str, dict]] = {}
    family = pre_ln = n_sinks = causal = None
    sink_counts = []
    with progress_bar(2 * len(names), "steps", enabled=progress) as advance:
        for kind in names:
            m = model if kind == "trained" else control_model(model, kind, seed)
            cap = capture(m, tokenizer, texts, max_length=max_length, log=log)
            heads = [cap.adapter.heads(m, layer) for layer in cap.adapter.layers(m)]
            rot = cap.adapter.rotary(m)
            if kind == "trained":
                family, pre_ln, causal = cap.adapter.family, cap.adapter.pre_ln, cap.adapter.causal
                n_sinks = int(cap.sinks.sum())
            all_ = _measure(cap, heads, rot, np.ones(cap.sentence.size, bool))
            no = all_ if not cap.sinks.any() else _measure(cap, heads, rot, ~cap.sinks)
            measured[kind] = {"all": all_, "no_sinks": no}
            sink_counts.append(int(cap.sinks.sum()))
            advance()
        used = placement or ("pre" if pre_ln else "post")
        sigma_max = max(
            float(np.nanmax(np.where(np.isfinite(d["sigma_head"]), d["sigma_head"], 0.0)))
            for per in measured.values()
            for d in per.values()
        )
        rem = _REM(rows, seed, max(sigma_max, 1e-3))
        theory: dict[str, dict[str, dict]] = {}
        for kind in names:
            theory[kind] = {}
            for tokens in TOKEN_SETS:
                same = tokens == "no_sinks" and measured[kind]["no_sinks"] is measured[kind]["all"]
                theory[kind][tokens] = (
                    theory[kind]["all"]
                    if same
                    else _theory(measured[kind][tokens], rem, used, mlp, sigma_w2, sigma_v2, sigma_b2)
                )
            advance()
    ds = _assemble(names, measured, theory, bootstrap, seed, tolerance)
    ds.attrs.update(
        base_attrs(
            None,
            model=name,
            family=str(family),
            placement=used,
            placement_from_adapter="pre" if pre_ln else "post",
            causal=int(bool(causal)),
            controls=list(kinds),
            n_sentences=len(texts),
            n_sinks=int(n_sinks or 0),
            n_sinks_controls=sink_counts[1:],
            max_length=int(max_length),
            seed=int(seed),
            mlp=int(mlp),
            rows=int(rows),
            bootstrap=int(bootstrap),
            tolerance=float(tolerance),
            wall_time_s=round(time.perf_counter() - t0, 2),
            **{k: float(v) for k, v in sig.items()},
        )
    )
    return ds


def _assemble(names, measured, theory, bootstrap, seed, tolerance) -> xr.Dataset:
    first = measured[names[0]]["all"]
    S, L = first["cosine_in"].shape
    H = first["sigma_head"].shape[-1]

    def stack(key, src):
        return np.stack([np.stack([src[k][t][key] for t in TOKEN_SETS]) for k in names])

    data: dict[str, Any] = {}
    for key in ("cosine_in", "cosine_out", "residual_attention", "residual_mlp"):
        data[key] = (("model", "tokens", "sentence", "layer"), stack(key, measured))
    data["sigma_head"] = (("model", "tokens", "sentence", "layer", "head"), stack("sigma_head", measured))
    data["row_tokens"] = (("model", "tokens", "sentence"), stack("row_tokens", measured))
    for key in theory[names[0]]["all"]:
        dims = ("model", "tokens", "sentence", "layer") + (("head",) if key == "beta_head" else ())
        data[key] = (dims, stack(key, theory))
    ds = xr.Dataset(
        data,
        coords={
            "model": list(names), "tokens": list(TOKEN_SETS), "sentence": np.arange(S), "layer": np.arange(L),
            "head": np.arange(H), "control": list(names[1:]),
        },
    )  # fmt: skip
    idx = _bootstrap_index(S, bootstrap, seed)
    for key in _SUMMARISED:
        mean, lo, hi = _summarise(ds[key].values, idx)
        for suffix, v in (("mean", mean), ("low", lo), ("high", hi)):
            ds[f"{key}_{suffix}"] = (("model", "tokens", "layer"), v)
            ds[f"{key}_{suffix}"].attrs["long_name"] = f"{LONG_NAMES[key]}: {suffix} over sentences" + (
                "" if suffix == "mean" else " (95 % bootstrap interval)"
            )
    meas = ds.cosine_out.values
    for tag, key in (
        ("", "predicted"),
        ("_composed", "predicted_composed"),
        ("_no_mlp", "predicted_no_mlp"),
        ("_other_placement", "predicted_other_placement"),
    ):
        ag = _agreement(ds[key].values - meas, idx, tolerance)
        ds[f"agreement{tag}_statistic"] = (("model", "tokens"), ag["stat"])
        ds[f"agreement{tag}_high"] = (("model", "tokens"), ag["high"])
        ds[f"agreement{tag}_p"] = (("model", "tokens"), ag["p"])
        ds[f"agreement{tag}_within"] = (("model", "tokens"), (ag["high"] < tolerance).astype(np.int8))
        what = key.replace("_", " ")
        ds[f"agreement{tag}_statistic"].attrs["long_name"] = f"largest |mean (measured - {what})| over the layers"
        ds[f"agreement{tag}_high"].attrs["long_name"] = "its 97.5 % bootstrap bound"
        ds[f"agreement{tag}_p"].attrs["long_name"] = (
            "bootstrap p-value of the null: largest |mean difference| >= tolerance"
        )
        ds[f"agreement{tag}_within"].attrs["long_name"] = "1 where the bound is below the tolerance"
    near = _nearer(ds.collapse_distance.values)
    for k in ("statistic", "t", "p", "df"):
        ds[f"nearer_{k}"] = (("control", "tokens"), near["stat" if k == "statistic" else k])
    ds["nearer_statistic"].attrs["long_name"] = (
        "mean over sentences of (trained - control) mean |log beta/beta_c| over the layers (< 0: trained nearer)"
    )
    ds["nearer_t"].attrs["long_name"] = "paired t over sentences"
    ds["nearer_p"].attrs["long_name"] = "one-sided p-value of the null: trained no nearer the collapse line"
    ds["nearer_df"].attrs["long_name"] = "degrees of freedom (sentences - 1)"
    for k, text in LONG_NAMES.items():
        if k in ds.variables:
            ds[k].attrs["long_name"] = text
    ds["control"].attrs["long_name"] = "control model set against the trained one"
    reasons = []
    for k in names:
        for t in TOKEN_SETS:
            bad = int(np.sum(~np.isfinite(measured[k][t]["row_tokens"])))
            if bad:
                reasons.append(f"{k}/{t}: {bad} sentences with fewer than {MIN_TOKENS} kept tokens are NaN")
    ds.attrs["nan_reason"] = "; ".join(reasons) or "none"
    return ds


def _headline_tokens(ds: xr.Dataset) -> str:
    return "no_sinks" if int(ds.attrs.get("n_sinks", 0)) else "all"


def propagation_section(ds: xr.Dataset) -> str:
    """A markdown section of a report: per layer of the trained model the measured and predicted (one layer;
    composed) mean cosine leaving it with their 95 % intervals, the layer's β/β_c and side of the collapse
    line, the controls' measured and predicted cosines, and the verdicts of the two claims with their nulls,
    tests and degrees of freedom (theory: docs/theory/propagation_placement.md §4). ``ds``: the result of
    :func:`propagation_placement`."""
    tok = _headline_tokens(ds)
    tol = float(ds.attrs.get("tolerance", TOLERANCE))
    S = int(np.isfinite(ds.row_tokens.sel(model="trained", tokens=tok).values).sum())

    def v(key, model, layer):
        return float(ds[f"{key}_mean"].sel(model=model, tokens=tok, layer=layer))

    def ci(key, model, layer):
        lo = float(ds[f"{key}_low"].sel(model=model, tokens=tok, layer=layer))
        hi = float(ds[f"{key}_high"].sel(model=model, tokens=tok, layer=layer))
        return f"{v(key, model, layer):.3f} [{lo:.3f}, {hi:.3f}]"

    controls = [str(c) for c in ds.control.values]
    lines = [
        "## Signal propagation: the layers on the collapse diagram",
        "",
        f"Model `{ds.attrs.get('model', '?')}` ({ds.attrs.get('family', '?')}, "
        f"{'Pre-LN' if ds.attrs.get('placement') == 'pre' else 'Post-LN'}), {S} sentences, tokens: {tok}. "
        "ρ: mean cosine of the tokens leaving the layer (mean over sentences, 95 % bootstrap interval); predicted: "
        "the REM layer map at the layer's measured β, residual scales and input cosine "
        "(docs/theory/propagation_placement.md).",
        "",
        "| layer | ρ in | ρ out measured | predicted (one layer) | predicted (composed) | β/β_c | side |"
        + "".join(f" {c}: ρ out / predicted |" for c in controls),
        "|---|---|---|---|---|---|---|" + "---|" * len(controls),
    ]
    for layer in ds.layer.values:
        d = v("collapse_distance", "trained", layer)
        side = "condensed" if d > 0 else "rank-collapse"
        row = (
            f"| {int(layer)} | {v('cosine_in', 'trained', layer):.3f} | {ci('cosine_out', 'trained', layer)} | "
            f"{ci('predicted', 'trained', layer)} | {ci('predicted_composed', 'trained', layer)} | "
            f"{math.exp(d):.2f} | {side} |"
        )
        for c in controls:
            row += f" {v('cosine_out', c, layer):.3f} / {v('predicted', c, layer):.3f} |"
        lines.append(row)
    lines.append("")
    for model in ["trained", *controls]:
        a = ds.sel(model=model, tokens=tok)
        verdict = "within" if int(a.agreement_within) else "not within"
        lines.append(
            f"- {model}: the theory at measured parameters predicts the per-layer cosine {verdict} {tol:g} "
            f"(largest |mean Δ| over the layers {float(a.agreement_statistic):.3f}, 97.5 % bound "
            f"{float(a.agreement_high):.3f}, p = {float(a.agreement_p):.3g} against the null max |Δ| ≥ {tol:g}; "
            f"composed from layer 0: {float(a.agreement_composed_statistic):.3f}; controls of the theory: MLP "
            f"kernel left out {float(a.agreement_no_mlp_statistic):.3f}, other placement "
            f"{float(a.agreement_other_placement_statistic):.3f}; bootstrap over {S} sentences, df {S - 1})."
        )
    for c in controls:
        n = ds.sel(control=c, tokens=tok)
        p = float(n.nearer_p)
        verdict = "nearer" if p < 0.05 else "not shown nearer"
        p_text = "< 1e-300" if p == 0.0 else f"= {p:.3g}"
        lines.append(
            f"- trained layers sit {verdict} the collapse line than the {c} control's: mean difference of "
            f"|log β/β_c| {float(n.nearer_statistic):+.3f} (null: ≥ 0; paired one-sided t = {float(n.nearer_t):.2f}, "
            f"df {int(n.nearer_df) if np.isfinite(float(n.nearer_df)) else 'n/a'}, p {p_text})."
        )
    return "\n".join(lines) + "\n"


def plot_propagation_placement(ds: xr.Dataset, ax=None):
    """The measured mean cosine leaving each layer against the theory's one-layer prediction, for the trained
    model and its controls, with 95 % bootstrap intervals and the line of equality (theory:
    docs/theory/propagation_placement.md §4). Matplotlib's object API only: ``ax`` an Axes to draw into, or
    None for a new :class:`matplotlib.figure.Figure` (no pyplot state, the backend left as it is). Returns the
    Axes."""
    if ax is None:
        from matplotlib.figure import Figure

        ax = Figure(figsize=(4.8, 4.2), layout="constrained").add_subplot()
    tok = _headline_tokens(ds)
    markers = {"trained": "o", "random": "s", "shuffled": "^"}
    for model in ds.model.values:
        a = ds.sel(model=model, tokens=tok)
        x, y = a.predicted_mean.values, a.cosine_out_mean.values
        yerr = np.abs(np.stack([y - a.cosine_out_low.values, a.cosine_out_high.values - y]))
        xerr = np.abs(np.stack([x - a.predicted_low.values, a.predicted_high.values - x]))
        ax.errorbar(x, y, yerr=yerr, xerr=xerr, fmt=markers.get(str(model), "d"), ms=4, capsize=2, label=str(model))
        for layer, xi, yi in zip(a.layer.values, x, y):
            if np.isfinite(xi) and np.isfinite(yi):
                ax.annotate(str(int(layer)), (xi, yi), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.plot([0, 1], [0, 1], color="0.5", lw=0.8, ls="--")
    ax.set_xlabel("predicted mean cosine leaving the layer")
    ax.set_ylabel("measured mean cosine leaving the layer")
    ax.set_title(f"{ds.attrs.get('model', '')}: layers on the propagation map", fontsize=9)
    ax.legend(fontsize=8)
    return ax


__all__ = [
    "BOOTSTRAP",
    "LONG_NAMES",
    "SIGMA_DEFAULTS",
    "TOLERANCE",
    "layer_prediction",
    "plot_propagation_placement",
    "propagation_placement",
    "propagation_section",
    "residual_alphas",
]
