"""The particle picture's parameters read from a real model (theory: docs/theory/probes.md §5,
docs/theory/particles.md).

* :func:`head_temperatures` — per layer and head, the effective inverse temperature β of the attention:
  the spread of the head's scores within a query, per unit spread of the cosines of the same tokens'
  directions (exactly β for the particle model's scores β⟨x_i, x_j⟩), and how much of the scores that
  form explains (``alignment``);
* :func:`head_regimes` — where each β falls in the particle picture: the particle flow at that β started
  from the layer's own token directions, run for as long as the model is deep, ends in one cluster or
  stays on a plateau of several;
* :func:`clustering_beside_flow` — the clustering of the model's own token clouds layer by layer, and a
  particle flow from the same first cloud at each layer's measured β.

Sentences are the clouds: attention mixes the tokens of one sentence only. The particle flows are
:func:`attnphys.clouds.flow.solve_many` with softmax attention (causal for causal models), Q = K = V = I,
on the unit sphere, with the residual.
"""

from __future__ import annotations

import time
from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from attnphys.clouds.attention import SoftmaxAttention
from attnphys.clouds.flow import solve_many
from attnphys.probes.capture import Capture
from attnphys.probes.metrics import attended, project, scores_of

FLOW_TOKENS = 16
"""Tokens per particle cloud: the first ones of each sentence that has at least as many."""

FLOW_SENTENCES = 8
"""Particle clouds (sentences) per flow."""

FLOW_RTOL, FLOW_ATOL = 1e-5, 1e-7
"""Tolerances of the particle flows, which run in single precision (looser than
:mod:`attnphys.clouds.flow`'s float64 defaults: cluster counts at δ = 10⁻³ in the cosine do not need more,
and single precision runs about three times faster)."""

CLUSTER_DELTA = 1e-3
"""Two token directions are in one cluster when cos > 1 − δ (docs/theory/particles.md §4.3)."""


ALIGNMENT_MIN = 0.3
"""A head is read as a particle head (its regime computed) when the within-query correlation of its scores
with the token cosines is at least this (clearly positive); below, its scores do not follow the cosines
and the particle flow at its β says nothing about it."""

TEMPERATURE_FOLDS = 4
"""Sentence folds over which the spread of β over texts is measured."""


def head_temperatures(cap: Capture, heads: list, rotary=None, keep: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Signed β, its spread over texts, alignment and spreads per (layer, head) (theory:
    docs/theory/probes.md §5.1).

    For head h of a layer, with attention input x̃_i (the normalised hidden states, the norm's affine
    included), directions u_i = x̃_i/‖x̃_i‖ and cosines c_ij = u_i·u_j, the head's scores s_ij (rotary
    rotations at the tokens' positions; :func:`~attnphys.probes.metrics.head_scores`) over the pairs that
    attention compares — j ≤ i in causal models, every j otherwise, within the sliding window if any,
    within a sentence, among the tokens ``keep`` (T,) bool (all by default), for every query with at least
    two keys — are centred within each query (softmax ignores a shift). Then

        β_h = Σ (s − s̄)(c − c̄) / Σ (c − c̄)²                    (the least-squares slope: signed),
        scale_h = √(Σ (s − s̄)² / Σ (c − c̄)²),   alignment_h = β_h / scale_h  (the correlation),

    so that scores of the particle form s_ij = β c_ij give exactly β and alignment 1, and scores that
    oppose the cosines give β < 0. ``beta_folds`` is β on each of :data:`TEMPERATURE_FOLDS` sentence folds
    (sentence k in fold k mod 4), ``beta_spread`` their standard deviation: the spread of β over texts.

    Returns:
        dict: ``beta``, ``beta_scale``, ``alignment``, ``beta_spread``, ``logit_std`` (L, H) (the pooled
        within-query standard deviation of the scores), ``beta_folds`` (fold, L, H), ``cos_std`` (L,) (the
        same of the cosines), ``pairs`` (the number of centred pairs).
    """
    L, H, F = cap.n_layers, heads[0].n_heads, TEMPERATURE_FOLDS
    ss, sc, cc = np.zeros((F, L, H)), np.zeros((F, L, H)), np.zeros((F, L))
    pairs = 0
    causal = cap.adapter.causal
    windows = cap.windows or [None] * L
    keep_all = np.ones(cap.sentence.size, bool) if keep is None else keep
    for layer in range(L):
        hw = heads[layer]
        X_all = cap.get(layer, cap.adapter.attn_input_stage).astype(np.float64)
        Q_all, K_all = project(hw.Wq, hw.bq, X_all), project(hw.Wk, hw.bk, X_all)
        if rotary is not None:
            Q_all, K_all = rotary.apply(Q_all, cap.position), rotary.apply(K_all, cap.position)
        U_all = X_all / np.linalg.norm(X_all, axis=1, keepdims=True)
        for s_idx, (a, b) in enumerate(cap.sentences()):
            n = b - a
            if n < 2:
                continue
            f = s_idx % F
            S = scores_of(Q_all[:, a:b], K_all[:, a:b], hw.head_dim, False)
            C = U_all[a:b] @ U_all[a:b].T
            k = keep_all[a:b]
            pair = attended(n, causal, windows[layer]) & k[:, None] & k[None, :]
            m = pair.sum(1, keepdims=True)
            rows = m[:, 0] > 1
            pair &= rows[:, None]
            Sm = np.where(pair, S, 0.0)
            Cm = np.where(pair, C, 0.0)
            mm = np.maximum(m, 1)
            Sc = np.where(pair, Sm - Sm.sum(-1, keepdims=True) / mm, 0.0)
            Cc = np.where(pair, Cm - Cm.sum(-1, keepdims=True) / mm, 0.0)
            ss[f, layer] += np.sum(Sc * Sc, axis=(1, 2))
            sc[f, layer] += np.sum(Sc * Cc[None], axis=(1, 2))
            cc[f, layer] += np.sum(Cc * Cc)
            if layer == 0:
                pairs += int(pair.sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        SS, SC, CC = ss.sum(0), sc.sum(0), cc.sum(0)[:, None]
        beta = SC / CC
        folds = sc / cc[..., None]
        used = (cc > 0).sum(0)
        spread = (
            np.where(used[:, None] > 1, np.nanstd(folds, axis=0, ddof=1), np.nan)
            if F > 1
            else np.full_like(beta, np.nan)
        )
        return dict(
            beta=beta,
            beta_scale=np.sqrt(SS / CC),
            alignment=SC / np.sqrt(SS * CC),
            beta_folds=folds,
            beta_spread=spread,
            folds_used=np.asarray(int(used.min()) if used.size else 0),
            logit_std=np.sqrt(SS / max(pairs, 1)),
            cos_std=np.sqrt(CC[:, 0] / max(pairs, 1)),
            pairs=np.asarray(pairs),
        )


def layer_times(cap: Capture, keep: np.ndarray | None = None) -> np.ndarray:
    """(L,) the particle flow's time for each layer: the median over tokens of the relative update size
    ‖attn_out_i‖ / ‖x_i‖ (x the residual stream entering the layer), on the tokens ``keep`` (all by
    default). The particle flow on the unit sphere moves its tokens at speeds of order one, so a layer that
    moves the residual stream by a fraction τ of its norm is a time τ of the flow (theory:
    docs/theory/probes.md §5.2)."""
    keep = np.ones(cap.sentence.size, bool) if keep is None else keep
    out = np.empty(cap.n_layers)
    for layer in range(cap.n_layers):
        a = np.linalg.norm(cap.get(layer, "attn_out")[keep].astype(np.float64), axis=1)
        x = np.linalg.norm(cap.get(layer, "input")[keep].astype(np.float64), axis=1)
        out[layer] = float(np.median(a / np.maximum(x, 1e-300)))
    return out


def flow_clouds(cap: Capture, layer: int, tokens: int = FLOW_TOKENS, sentences: int = FLOW_SENTENCES) -> np.ndarray:
    """(S, n, D) unit directions of the attention input of ``layer``: the first ``tokens`` tokens of the first
    ``sentences`` sentences holding at least that many (fewer tokens when no sentence is that long)."""
    spans = cap.sentences()
    n = min(tokens, int(cap.lengths.max()))
    chosen = [a for a, b in spans if b - a >= n][:sentences]
    X = cap.get(layer, cap.adapter.attn_input_stage).astype(np.float64)
    C = np.stack([X[a : a + n] for a in chosen])
    return C / np.linalg.norm(C, axis=-1, keepdims=True)


def cloud_observables(X: np.ndarray, delta: float = CLUSTER_DELTA) -> tuple[np.ndarray, np.ndarray]:
    """Per cloud of X (..., n, D): the mean cosine between distinct tokens and the cluster count (connected
    components of cos > 1 − δ; docs/theory/particles.md §4.3)."""
    from attnphys.clouds.stats import cluster_count

    U = X / np.linalg.norm(X, axis=-1, keepdims=True)
    C = np.einsum("...id,...jd->...ij", U, U)
    n = X.shape[-2]
    mean_cos = (C.sum((-1, -2)) - np.trace(C, axis1=-2, axis2=-1)) / (n * (n - 1))
    flat = C.reshape(-1, n, n)
    clusters = np.array([cluster_count(c, delta) for c in flat], float).reshape(C.shape[:-2])
    return mean_cos, clusters


@eqx.filter_jit
def _flow_ends(betas, X0s, ts, causal: bool):
    def one(beta):
        ys, _, ok = solve_many(SoftmaxAttention(beta=beta, causal=causal), X0s, ts, rtol=FLOW_RTOL, atol=FLOW_ATOL)
        return ys[:, -1], ok  # pyright: ignore[reportOptionalSubscript]  (saved states: not None)

    return eqx.filter_vmap(one)(betas)


def _flows(betas, X0s, t1: float, causal: bool):
    """End states (B, S, n, D) of the particle flow at every β of ``betas`` (B,) from the clouds X0s
    (S, n, D) after the time t1 (NaN where the solver failed); compiled once per shape."""
    X0s = jnp.asarray(X0s, jnp.float32)
    ys, ok = _flow_ends(jnp.asarray(betas, X0s.dtype), X0s, jnp.asarray([0.0, float(t1)], X0s.dtype), bool(causal))
    ys = np.array(ys, np.float64)
    ys[~np.asarray(ok)] = np.nan
    return ys


def head_regimes(
    cap: Capture, beta: np.ndarray, horizon: float | None = None, alignment: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """Per (layer, head) of a particle head (β > 0 and ``alignment`` ≥ :data:`ALIGNMENT_MIN`; every head
    with β > 0 when ``alignment`` is None): the particle flow at β_h from the layer's own token clouds
    (:func:`flow_clouds`), run to ``horizon`` (default: the model's whole depth in flow time, the sum of
    :func:`layer_times`); the median cluster count at the horizon and the regime, ``one cluster`` when at
    least half the clouds have collapsed to one cluster, ``metastable`` when several clusters remain
    (theory: docs/theory/probes.md §5.2, docs/theory/particles.md §4, §5). Other heads get no regime
    (NaN clusters, ``one_cluster`` False, ``particle`` False).

    Returns:
        dict: ``clusters`` (L, H) median cluster count at the horizon, ``one_cluster`` (L, H) bool,
        ``particle`` (L, H) bool, ``horizon``, ``tokens`` (the cloud size).
    """
    L, H = beta.shape
    T = float(np.sum(layer_times(cap, ~cap.sinks)) if horizon is None else horizon)
    particle = np.isfinite(beta) & (beta > 0)
    if alignment is not None:
        particle &= np.nan_to_num(alignment, nan=-1.0) >= ALIGNMENT_MIN
    clusters = np.full((L, H), np.nan)
    n_tok = 0
    for layer in range(L):
        X0 = flow_clouds(cap, layer)
        n_tok = X0.shape[1]
        if not particle[layer].any():
            continue
        # every head at once (one compiled shape); the others at β = 0 and then dropped
        ends = _flows(np.where(particle[layer], beta[layer], 0.0), X0, T, cap.adapter.causal)
        _, k = cloud_observables(np.nan_to_num(ends, nan=1.0))
        k[np.isnan(ends).any(axis=(-1, -2))] = np.nan
        with np.errstate(all="ignore"):
            clusters[layer] = np.where(particle[layer], np.nanmedian(k, axis=1), np.nan)
    return dict(
        clusters=clusters,
        one_cluster=clusters <= 1,
        particle=particle,
        horizon=np.asarray(T),
        tokens=np.asarray(n_tok),
    )


def clustering_beside_flow(
    cap: Capture, beta_layer: np.ndarray, times: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """The model's clouds at the attention input of every layer and a particle flow from the first of
    them, at β = ``beta_layer[ℓ]`` for the time ``times[ℓ]`` of layer ℓ (default: :func:`layer_times`
    without the sinks; a layer with β ≤ 0 or NaN is flowed at β = 0): mean cosine and cluster count per
    layer, each averaged over the clouds (theory: docs/theory/probes.md §5.3).

    Returns:
        dict: ``model_mean_cosine``, ``model_clusters``, ``flow_mean_cosine``, ``flow_clusters`` (L,).
    """
    L = cap.n_layers
    times = layer_times(cap, ~cap.sinks) if times is None else times
    out = {k: np.full(L, np.nan) for k in ("model_mean_cosine", "model_clusters", "flow_mean_cosine", "flow_clusters")}
    X = flow_clouds(cap, 0)
    for layer in range(L):
        mc, k = cloud_observables(flow_clouds(cap, layer))
        out["model_mean_cosine"][layer], out["model_clusters"][layer] = mc.mean(), k.mean()
        mc, k = cloud_observables(X)
        out["flow_mean_cosine"][layer], out["flow_clusters"][layer] = mc.mean(), k.mean()
        if layer < L - 1:
            b = float(beta_layer[layer]) if np.isfinite(beta_layer[layer]) and beta_layer[layer] > 0 else 0.0
            X = _flows(np.array([b]), X, float(times[layer]), cap.adapter.causal)[0]
            if np.isnan(X).any():
                break
    return out


TEMPERATURE_LONG_NAMES = {
    "beta": "signed effective inverse temperature of the head: least-squares slope of its within-query centred "
    "scores on the token cosines",
    "beta_scale": "unsigned scale of the head: within-query spread of its scores per unit spread of the token cosines",
    "beta_spread": "standard deviation of the head's beta over sentence folds (the spread of beta over texts)",
    "beta_folds": "the head's beta on each sentence fold",
    "alignment": "within-query correlation of the head's scores with the token cosines",
    "logit_std": "pooled within-query standard deviation of the head's scores",
    "cos_std": "pooled within-query standard deviation of the cosines of the attention input's directions",
    "particle": "1 for a particle head: beta > 0 and alignment clearly positive (its regime is computed)",
    "head_flow_clusters": "median cluster count of the particle flow at the head's beta at the horizon (particle heads)",
    "one_cluster": "1 if the particle flow at the head's beta ends in one cluster by the horizon (particle heads)",
    "beta_layer": "median beta of the layer's particle heads (the particle flow's beta at this layer; NaN: none)",
    "layer_time": "the particle flow's time of the layer: median relative update size |attn_out| / |x|",
    "model_mean_cosine": "mean cosine between distinct tokens of the model's clouds at the attention input",
    "model_clusters": "cluster count of the model's clouds (cos > 1 - delta), mean over the clouds",
    "flow_mean_cosine": "mean cosine between distinct tokens along the particle flow at the layers' beta",
    "flow_clusters": "cluster count along the particle flow at the layers' beta, mean over the clouds",
}


def temperature_variables(cap: Capture, heads: list, rotary=None, log=None) -> tuple[dict, dict]:
    """The temperature section of a probe as (data variables, attributes): per (layer, attn_head) the
    signed β, its spread over texts, alignment, spreads and regimes (particle heads only); per layer the
    flow time and the clustering of the model beside the flow; all without the sink positions."""
    t0 = time.perf_counter()
    log = log or (lambda *a: None)
    keep = ~cap.sinks
    th = head_temperatures(cap, heads, rotary, keep=keep)
    times = layer_times(cap, keep)
    reg = head_regimes(cap, th["beta"], float(times.sum()), th["alignment"])
    with np.errstate(all="ignore"):
        b = np.where(reg["particle"], th["beta"], np.nan)
        beta_layer = np.array([np.nanmedian(r) if np.isfinite(r).any() else np.nan for r in b])
    cl = clustering_beside_flow(cap, beta_layer, times)
    log(f"temperatures and particle flows ({time.perf_counter() - t0:.1f} s)")
    lh, ly = ("layer", "attn_head"), ("layer",)
    v: dict[str, Any] = {
        "beta": (lh, th["beta"], "beta"),
        "beta_scale": (lh, th["beta_scale"], "beta_scale"),
        "beta_spread": (lh, th["beta_spread"], "beta_spread"),
        "beta_folds": (("temperature_fold", "layer", "attn_head"), th["beta_folds"], "beta_folds"),
        "beta_alignment": (lh, th["alignment"], "alignment"),
        "beta_logit_std": (lh, th["logit_std"], "logit_std"),
        "beta_cos_std": (ly, th["cos_std"], "cos_std"),
        "beta_particle": (lh, reg["particle"].astype(np.int8), "particle"),
        "beta_flow_clusters": (lh, reg["clusters"], "head_flow_clusters"),
        "beta_one_cluster": (lh, reg["one_cluster"].astype(np.int8), "one_cluster"),
        "beta_layer": (ly, beta_layer, "beta_layer"),
        "layer_time": (ly, times, "layer_time"),
        "cluster_model_mean_cosine": (ly, cl["model_mean_cosine"], "model_mean_cosine"),
        "cluster_model_count": (ly, cl["model_clusters"], "model_clusters"),
        "cluster_flow_mean_cosine": (ly, cl["flow_mean_cosine"], "flow_mean_cosine"),
        "cluster_flow_count": (ly, cl["flow_clusters"], "flow_clusters"),
    }
    attrs = dict(
        beta_pairs=int(th["pairs"]),
        beta_spread_folds=int(th["folds_used"]),
        flow_horizon=float(reg["horizon"]),
        flow_tokens=int(reg["tokens"]),
        flow_clouds=FLOW_SENTENCES,
        flow_rtol=FLOW_RTOL,
        flow_atol=FLOW_ATOL,
        cluster_delta=CLUSTER_DELTA,
        alignment_min=ALIGNMENT_MIN,
    )
    return {k: (dims, val, {"long_name": TEMPERATURE_LONG_NAMES[name]}) for k, (dims, val, name) in v.items()}, attrs


__all__ = [
    "ALIGNMENT_MIN",
    "TEMPERATURE_FOLDS",
    "layer_times",
    "FLOW_TOKENS",
    "FLOW_SENTENCES",
    "CLUSTER_DELTA",
    "head_temperatures",
    "flow_clouds",
    "cloud_observables",
    "head_regimes",
    "clustering_beside_flow",
    "temperature_variables",
]
