"""The particle picture's depth and length laws measured on a real model, each a probe claim (theory:
docs/theory/probes.md §7; the laws: docs/theory/particles.md §9, §11).

* :func:`cosine_profile` — the mean pairwise cosine ρ_ℓ of every sentence's token cloud, layer by layer
  (the residual stream entering each layer, and leaving the last);
* :func:`decay_law_fit` — the exponential law log(1 − ρ) = a − k t and the power law
  log(1 − ρ) = a − k log t fitted to each sentence's profile (t = ℓ + 1), their residuals and rates;
* :func:`length_betas` — per head, the effective β (the slope of its logits on the cosines) of the
  queries of each context length n (keys seen), the logits read from the attention weights;
* :func:`length_slopes` — each head's least-squares slope of β on log n.

The two claims built on them, registered in :data:`attnphys.probes.claims.CLAIMS`:

* ``collapse_shape`` — the cosine collapse through the layers follows the decay law of the model's
  normalization placement (Post-LN: exponential in depth; Pre-LN: a power law);
* ``beta_grows_with_length`` — a layer's heads sharpen with the context: β_eff grows with log n.
"""

from __future__ import annotations

import math

import numpy as np

from attnphys.probes.capture import Capture
from attnphys.probes.claims import Claim, Evidence, Outcome, register_claim
from attnphys.probes.metrics import attended
from attnphys.probes.significance import t_test

MIN_CLOUD_TOKENS = 4
"""Fewest tokens (of the Evidence's token set) a sentence needs for its cosine profile."""

MIN_DEPTH_POINTS = 4
"""Fewest points (layers + 1) of a depth profile for the shape test: each law has two parameters, so
four points leave each fit two residual degrees of freedom."""

MIN_ROWS = 8
"""Fewest queries of one context-length bin for its β."""

BINS_PER_OCTAVE = 4
"""Context-length bins per doubling of n: [2^(b/4), 2^((b+1)/4)) (a corpus of 8- to 30-token sentences
still spreads over several bins in a model that sees the whole sentence)."""

MIN_LENGTH_BINS = 3
"""Fewest context-length bins of a head for its slope on log n (a line through two points has no error)."""


def _profile_stages(cap: Capture) -> list[tuple[int, str]]:
    """(layer, stage) of the residual stream entering every layer, then leaving the last one."""
    last = "mlp_add" if cap.adapter.pre_ln else "mlp_norm"
    return [(layer, "input") for layer in range(cap.n_layers)] + [(cap.n_layers - 1, last)]


def cosine_profile(cap: Capture, keep: np.ndarray | None = None) -> np.ndarray:
    """(S, L + 1) mean pairwise cosine ρ_{s,ℓ} between the tokens of sentence s among ``keep``
    (T,) bool, in the residual stream entering layer ℓ (ℓ < L) and leaving the last layer (ℓ = L)
    (theory: docs/theory/probes.md §7.1):

        ρ_{s,ℓ} = (‖Σ_i u_i‖² − m) / (m(m − 1)),   u_i = x_i/‖x_i‖, m tokens of the sentence.

    A sentence with fewer than :data:`MIN_CLOUD_TOKENS` kept tokens has NaN in its row.
    """
    keep = np.ones(cap.sentence.size, bool) if keep is None else np.asarray(keep, bool)
    spans = cap.sentences()
    out = np.full((len(spans), cap.n_layers + 1), np.nan)
    for k, (layer, stage) in enumerate(_profile_stages(cap)):
        X = cap.get(layer, stage).astype(np.float64)
        U = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-300)
        for s, (a, b) in enumerate(spans):
            u = U[a:b][keep[a:b]]
            m = u.shape[0]
            if m >= MIN_CLOUD_TOKENS:
                out[s, k] = (float(np.sum(u.sum(0) ** 2)) - m) / (m * (m - 1))
    return out


def decay_law_fit(gap: np.ndarray) -> dict[str, np.ndarray]:
    """Both decay laws fitted by least squares to each row of ``gap`` (S, P), the gaps 1 − ρ at depths
    t = 1 … P (theory: docs/theory/probes.md §7.1, docs/theory/particles.md §11.2):

        exponential: log g_t = a − k_exp t,     power law: log g_t = a − k_pow log t.

    Each law has two parameters, so their residual sums of squares compare directly.

    Returns:
        dict of (S,) arrays: ``rss_exp``, ``rss_pow``, ``rate_exp`` (k_exp), ``rate_pow`` (k_pow) and
        ``log_ratio`` = log(rss_pow/rss_exp) (> 0: the exponential fits better); NaN for a row with a
        non-positive or non-finite gap.
    """
    g = np.asarray(gap, float)
    S, P = g.shape
    t = np.arange(1, P + 1, dtype=float)
    ok = np.all(np.isfinite(g) & (g > 0), axis=1)
    y = np.log(np.where(ok[:, None], g, 1.0))
    out = {}
    for name, x in (("exp", t), ("pow", np.log(t))):
        A = np.stack([np.ones(P), x], 1)
        coef, *_ = np.linalg.lstsq(A, y.T, rcond=None)
        res = y - (A @ coef).T
        out[f"rss_{name}"] = np.where(ok, np.sum(res**2, 1), np.nan)
        out[f"rate_{name}"] = np.where(ok, -coef[1], np.nan)
    tiny = 1e-300
    out["log_ratio"] = np.log(np.maximum(out["rss_pow"], tiny)) - np.log(np.maximum(out["rss_exp"], tiny))
    return out


WEIGHT_FLOOR = 1e-38
"""Attention weights below this (float32 underflow) are read as this before their logarithm."""


def length_betas(cap: Capture, layer: int, keep: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Per head of ``layer`` and context-length bin n ∈ [2^(b/4), 2^((b+1)/4)) (n: the keys among ``keep`` that
    the query sees), the effective β of docs/theory/probes.md §5.1 measured on the queries of that bin
    alone, with the head's own logits recovered from its weights (theory: docs/theory/probes.md §7.2):

        s_ij − s̄_i = log w_ij − mean_j log w_ij   (softmax: log w_ij = s_ij − log Z_i),
        β_b = Σ_(i in bin b) Σ_j (s_ij − s̄_i)(c_ij − c̄_i) / Σ_(i in bin b) Σ_j (c_ij − c̄_i)²,

    c_ij the cosines of the attention input's directions, means over the query's kept keys. This is exact
    for any head (rotary positions, biases, masks included) and needs no weights of the model. Bins with
    fewer than :data:`MIN_ROWS` queries are left out.

    Returns:
        dict: ``beta`` (H, B), ``log_n`` (B,) the bins' mean log n, ``rows`` (B,) queries per bin.
    """
    keep = np.ones(cap.sentence.size, bool) if keep is None else np.asarray(keep, bool)
    causal = cap.adapter.causal
    window = (cap.windows or [None] * cap.n_layers)[layer]
    X = cap.get(layer, cap.adapter.attn_input_stage).astype(np.float64)
    U = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-300)
    H = cap.attentions[layer][0].shape[0] if cap.attentions and cap.attentions[layer] else 0
    sc: dict[int, np.ndarray] = {}
    cc: dict[int, float] = {}
    rows: dict[int, int] = {}
    logn: dict[int, float] = {}
    for s, (a, b) in enumerate(cap.sentences()):
        n = b - a
        k = keep[a:b]
        mask = attended(n, causal, window) & k[None, :] & k[:, None]
        m = mask.sum(1)
        A = np.asarray(cap.attentions[layer][s], float)  # (H, n, n)
        lw = np.log(np.maximum(A, WEIGHT_FLOOR))
        C = U[a:b] @ U[a:b].T
        mm = np.maximum(m, 1)[:, None]
        Sc = np.where(mask, lw - np.where(mask, lw, 0.0).sum(-1, keepdims=True) / mm, 0.0)
        Cc = np.where(mask, C - np.where(mask, C, 0.0).sum(-1, keepdims=True) / mm, 0.0)
        for i in np.flatnonzero(m >= 2):
            bin_ = int(np.floor(BINS_PER_OCTAVE * np.log2(m[i])))
            sc[bin_] = sc.get(bin_, np.zeros(H)) + Sc[:, i] @ Cc[i]
            cc[bin_] = cc.get(bin_, 0.0) + float(Cc[i] @ Cc[i])
            rows[bin_] = rows.get(bin_, 0) + 1
            logn[bin_] = logn.get(bin_, 0.0) + math.log(m[i])
    used = [b for b in sorted(rows) if rows[b] >= MIN_ROWS and cc[b] > 0]
    beta = np.array([sc[b] / cc[b] for b in used]).T.reshape(H, len(used))
    return {
        "beta": beta,
        "log_n": np.array([logn[b] / rows[b] for b in used]),
        "rows": np.array([rows[b] for b in used], int),
    }


def length_slopes(beta: np.ndarray, log_n: np.ndarray) -> np.ndarray:
    """(H,) least-squares slope dβ/d log n of every row of ``beta`` (H, B) on ``log_n`` (B,) (theory:
    docs/theory/probes.md §7.2); NaN with fewer than :data:`MIN_LENGTH_BINS` bins."""
    beta = np.asarray(beta, float)
    x = np.asarray(log_n, float)
    if x.size < MIN_LENGTH_BINS:
        return np.full(beta.shape[0], np.nan)
    xc = x - x.mean()
    return (beta - beta.mean(1, keepdims=True)) @ xc / float(xc @ xc)


# --- the claims ---------------------------------------------------------------------------------------


def predicted_law(cap: Capture) -> str:
    """``power`` for a Pre-LN model (the residual stream is not normalised: 1 − ρ ∝ t^(−k)), else
    ``exponential`` (Post-LN: tokens on the sphere, 1 − ρ ∝ e^(−kt)); docs/theory/particles.md §11.2."""
    return "power" if cap.adapter.pre_ln else "exponential"


def _collapse_fit(ev: Evidence) -> dict:
    key = ("collapse_shape", ev.tokens)
    if key not in ev.extra:
        rho = cosine_profile(ev.cap, ev.keep)
        fit = decay_law_fit(1.0 - rho)
        ev.extra[key] = {"rho": rho, **fit}
    return ev.extra[key]


def _collapse_shape(ev: Evidence, layer: int) -> Outcome:
    L = ev.cap.n_layers
    if layer != L - 1:
        return Outcome(math.nan, reason="one test over the whole depth profile, stated at the last layer")
    if L + 1 < MIN_DEPTH_POINTS:
        return Outcome(
            math.nan, reason=f"{L + 1} depth points, fewer than the {MIN_DEPTH_POINTS} two two-parameter laws need"
        )
    fit = _collapse_fit(ev)
    ok = np.isfinite(fit["log_ratio"])
    law = predicted_law(ev.cap)
    sign = 1.0 if law == "exponential" else -1.0
    d = sign * fit["log_ratio"][ok]
    rate = fit["rate_exp" if law == "exponential" else "rate_pow"][ok]
    if d.size < 2:
        return Outcome(math.nan, df=max(d.size - 1, 0), reason="fewer than two sentences with a cosine profile")
    t, p_shape = t_test(d, 0.0, greater=True)
    _, p_decay = t_test(rate, 0.0, greater=True)
    if not np.isfinite(t):
        return Outcome(float(d.mean()), df=d.size - 1, reason="the residual ratios have no spread")
    p = float(max(p_shape, p_decay)) if np.isfinite(p_decay) else float(p_shape)
    eligible, reason = True, ""
    if not float(np.mean(rate)) > 0:
        eligible, reason = False, f"no collapse: 1 − ρ does not fall with depth (mean {law} rate {np.mean(rate):.3g})"
    return Outcome(float(d.mean()), t, p, d.size - 1, reason, eligible)


def _beta_grows(ev: Evidence, layer: int) -> Outcome:
    if not ev.cap.attentions:
        return Outcome(math.nan, reason="no attention weights captured")
    res = length_betas(ev.cap, layer, ev.keep)
    slope = length_slopes(res["beta"], res["log_n"])
    ok = np.isfinite(slope)
    if ok.sum() < 2:
        return Outcome(
            math.nan,
            reason=f"{res['log_n'].size} context-length bins with {MIN_ROWS}+ queries; a slope needs {MIN_LENGTH_BINS}",
        )
    s = slope[ok]
    t, p = t_test(s, 0.0, greater=True)
    if not np.isfinite(t):  # every head's slope the same: no spread to test against
        return Outcome(float(s.mean()), 0.0, 1.0, s.size - 1, "every head's slope is the same", False)
    return Outcome(float(s.mean()), t, p, s.size - 1)


def _profile_lines(ds) -> list[str]:
    if "stat" not in ds or "tokens" not in ds.coords:
        return []
    tokens = "no_sinks" if "no_sinks" in ds.tokens.values else "all"
    g = ds.stat.sel(stage="input", tokens=tokens, statistic="angular_spread").values
    law = "a power law in depth (Pre-LN)" if int(ds.attrs.get("pre_ln", 0)) else "exponential in depth (Post-LN)"
    return [
        f"- predicted: 1 − ρ {law}; 1 − mean cosine of each layer's input cloud (pooled over sentences): "
        + ", ".join(f"{x:.3g}" for x in np.asarray(g, float))
        + "."
    ]


COLLAPSE_SHAPE = register_claim(
    "collapse_shape",
    Claim(
        "the cosine collapse through the layers has the shape its normalization placement predicts",
        "mean over sentences of ±log(RSS of the power law / RSS of the exponential law) fitted to "
        "log(1 − ρ_ℓ) against depth, signed so that > 0 favours the predicted law (Post-LN: exponential; "
        "Pre-LN: power law); ρ_ℓ the sentence's mean pairwise cosine entering layer ℓ and leaving the last",
        "the two laws fit equally well (or the other better), or 1 − ρ does not fall with depth",
        "one-sided t-test over sentences of the signed log ratio, intersected with a one-sided t-test that "
        "the predicted law's rate is positive (p: the larger of the two); df: sentences − 1; one test, at "
        "the last layer",
        False,
        _collapse_shape,
        report=_profile_lines,
    ),
)

BETA_GROWS_WITH_LENGTH = register_claim(
    "beta_grows_with_length",
    Claim(
        "each head's effective β grows with log n, the context length",
        "mean over the layer's heads of the slope dβ_eff/d log n, β_eff the slope of the head's logits "
        "(log weights, centred per query) on the cosines, over the queries of each context-length bin "
        "[2^(b/4), 2^((b+1)/4)) keys",
        "β_eff does not grow with the context (mean slope ≤ 0)",
        "one-sided t-test over the layer's heads of their least-squares slopes on the bins' mean log n; "
        "df: heads − 1 (the heads share the sentences: an approximation)",
        True,
        _beta_grows,
    ),
)


__all__ = [
    "WEIGHT_FLOOR",
    "MIN_CLOUD_TOKENS",
    "MIN_DEPTH_POINTS",
    "BINS_PER_OCTAVE",
    "MIN_LENGTH_BINS",
    "MIN_ROWS",
    "COLLAPSE_SHAPE",
    "BETA_GROWS_WITH_LENGTH",
    "cosine_profile",
    "decay_law_fit",
    "length_betas",
    "length_slopes",
    "predicted_law",
]
