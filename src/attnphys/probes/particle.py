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
from attnphys.probes.metrics import project, scores_of

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


def head_temperatures(cap: Capture, heads: list, rotary=None) -> dict[str, np.ndarray]:
    """β, alignment and spreads per (layer, head) (theory: docs/theory/probes.md §5.1).

    For head h of a layer, with attention input x̃_i (the normalised hidden states, the norm's affine
    included), directions u_i = x̃_i/‖x̃_i‖ and cosines c_ij = u_i·u_j, the head's scores s_ij (rotary
    rotations at the tokens' positions; :func:`~attnphys.probes.metrics.head_scores`) over the pairs that
    attention compares — j ≤ i in causal models, every j otherwise, within a sentence, for every query
    with at least two keys — are centred within each query (softmax ignores a shift). Then

        β_h = √(Σ (s_ij − s̄_i)² / Σ (c_ij − c̄_i)²),   alignment_h = Σ (s − s̄)(c − c̄) / √(Σ (s − s̄)² Σ (c − c̄)²),

    so that scores of the particle form s_ij = β c_ij give exactly β and alignment 1.

    Returns:
        dict: ``beta``, ``alignment``, ``logit_std`` (L, H) (the pooled within-query standard deviation of
        the scores), ``cos_std`` (L,) (the same of the cosines), ``pairs`` (the number of centred pairs).
    """
    L, H = cap.n_layers, heads[0].n_heads
    ss, sc, cc = np.zeros((L, H)), np.zeros((L, H)), np.zeros(L)
    pairs = 0
    causal = cap.adapter.causal
    for layer in range(L):
        hw = heads[layer]
        X_all = cap.get(layer, cap.adapter.attn_input_stage).astype(np.float64)
        Q_all, K_all = project(hw.Wq, hw.bq, X_all), project(hw.Wk, hw.bk, X_all)
        if rotary is not None:
            Q_all, K_all = rotary.apply(Q_all, cap.position), rotary.apply(K_all, cap.position)
        U_all = X_all / np.linalg.norm(X_all, axis=1, keepdims=True)
        for a, b in cap.sentences():
            n = b - a
            if n < 2:
                continue
            S = scores_of(Q_all[:, a:b], K_all[:, a:b], hw.head_dim, causal)
            C = U_all[a:b] @ U_all[a:b].T
            keep = np.tril(np.ones((n, n), bool)) if causal else np.ones((n, n), bool)
            m = keep.sum(1, keepdims=True)
            rows = m[:, 0] > 1
            keep &= rows[:, None]
            Sm = np.where(keep, S, 0.0)
            Cm = np.where(keep, C, 0.0)
            mm = np.maximum(m, 1)
            Sc = np.where(keep, Sm - Sm.sum(-1, keepdims=True) / mm, 0.0)
            Cc = np.where(keep, Cm - Cm.sum(-1, keepdims=True) / mm, 0.0)
            ss[layer] += np.sum(Sc * Sc, axis=(1, 2))
            sc[layer] += np.sum(Sc * Cc[None], axis=(1, 2))
            cc[layer] += np.sum(Cc * Cc)
            if layer == 0:
                pairs += int(keep.sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        beta = np.sqrt(ss / cc[:, None])
        align = sc / np.sqrt(ss * cc[:, None])
        return dict(
            beta=beta,
            alignment=align,
            logit_std=np.sqrt(ss / max(pairs, 1)),
            cos_std=np.sqrt(cc / max(pairs, 1)),
            pairs=np.asarray(pairs),
        )


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


def head_regimes(cap: Capture, beta: np.ndarray, horizon: float | None = None) -> dict[str, np.ndarray]:
    """Per (layer, head): the particle flow at β_h from the layer's own token clouds (:func:`flow_clouds`),
    run to ``horizon`` (default: the number of layers, one unit of time per layer); the median cluster
    count at the horizon and the regime, ``one cluster`` when at least half the clouds have collapsed to
    one cluster, ``metastable`` when several clusters remain (theory: docs/theory/probes.md §5.2,
    docs/theory/particles.md §4, §5).

    Returns:
        dict: ``clusters`` (L, H) median cluster count at the horizon, ``one_cluster`` (L, H) bool,
        ``horizon``, ``tokens`` (the cloud size).
    """
    L, H = beta.shape
    T = float(L if horizon is None else horizon)
    clusters = np.full((L, H), np.nan)
    for layer in range(L):
        X0 = flow_clouds(cap, layer)
        b = np.where(np.isfinite(beta[layer]), beta[layer], 0.0)
        ends = _flows(b, X0, T, cap.adapter.causal)
        _, k = cloud_observables(np.nan_to_num(ends, nan=1.0))
        k[np.isnan(ends).any(axis=(-1, -2))] = np.nan
        clusters[layer] = np.nanmedian(k, axis=1)
    return dict(clusters=clusters, one_cluster=clusters <= 1, horizon=np.asarray(T), tokens=np.asarray(X0.shape[1]))


def clustering_beside_flow(cap: Capture, beta_layer: np.ndarray) -> dict[str, np.ndarray]:
    """The model's clouds at the attention input of every layer and a particle flow from the first of
    them, at β = ``beta_layer[ℓ]`` between the times ℓ and ℓ + 1 (one unit of time per layer): mean cosine
    and cluster count per layer, each averaged over the clouds (theory: docs/theory/probes.md §5.3).

    Returns:
        dict: ``model_mean_cosine``, ``model_clusters``, ``flow_mean_cosine``, ``flow_clusters`` (L,).
    """
    L = cap.n_layers
    out = {k: np.full(L, np.nan) for k in ("model_mean_cosine", "model_clusters", "flow_mean_cosine", "flow_clusters")}
    X = flow_clouds(cap, 0)
    for layer in range(L):
        mc, k = cloud_observables(flow_clouds(cap, layer))
        out["model_mean_cosine"][layer], out["model_clusters"][layer] = mc.mean(), k.mean()
        mc, k = cloud_observables(X)
        out["flow_mean_cosine"][layer], out["flow_clusters"][layer] = mc.mean(), k.mean()
        if layer < L - 1:
            b = float(beta_layer[layer]) if np.isfinite(beta_layer[layer]) else 0.0
            X = _flows(np.array([b]), X, 1.0, cap.adapter.causal)[0]
            if np.isnan(X).any():
                break
    return out


TEMPERATURE_LONG_NAMES = {
    "beta": "effective inverse temperature of the head: within-query spread of its scores per unit spread of the token cosines",
    "alignment": "within-query correlation of the head's scores with the token cosines",
    "logit_std": "pooled within-query standard deviation of the head's scores",
    "cos_std": "pooled within-query standard deviation of the cosines of the attention input's directions",
    "head_flow_clusters": "median cluster count of the particle flow at the head's beta at the horizon",
    "one_cluster": "1 if the particle flow at the head's beta ends in one cluster by the horizon",
    "beta_layer": "median over the heads of the layer's beta (the particle flow's beta at this layer)",
    "model_mean_cosine": "mean cosine between distinct tokens of the model's clouds at the attention input",
    "model_clusters": "cluster count of the model's clouds (cos > 1 - delta), mean over the clouds",
    "flow_mean_cosine": "mean cosine between distinct tokens along the particle flow at the layers' beta",
    "flow_clusters": "cluster count along the particle flow at the layers' beta, mean over the clouds",
}


def temperature_variables(cap: Capture, heads: list, rotary=None, log=None) -> tuple[dict, dict]:
    """The temperature section of a probe as (data variables, attributes): per (layer, attn_head) β,
    alignment, spreads and regimes; per layer the clustering of the model beside the flow."""
    t0 = time.perf_counter()
    log = log or (lambda *a: None)
    th = head_temperatures(cap, heads, rotary)
    reg = head_regimes(cap, th["beta"])
    beta_layer = np.nanmedian(th["beta"], axis=1)
    cl = clustering_beside_flow(cap, beta_layer)
    log(f"temperatures and particle flows ({time.perf_counter() - t0:.1f} s)")
    lh, ly = ("layer", "attn_head"), ("layer",)
    v: dict[str, Any] = {
        "beta": (lh, th["beta"]),
        "beta_alignment": (lh, th["alignment"]),
        "beta_logit_std": (lh, th["logit_std"]),
        "beta_cos_std": (ly, th["cos_std"]),
        "beta_flow_clusters": (lh, reg["clusters"]),
        "beta_one_cluster": (lh, reg["one_cluster"].astype(np.int8)),
        "beta_layer": (ly, beta_layer),
        "cluster_model_mean_cosine": (ly, cl["model_mean_cosine"]),
        "cluster_model_count": (ly, cl["model_clusters"]),
        "cluster_flow_mean_cosine": (ly, cl["flow_mean_cosine"]),
        "cluster_flow_count": (ly, cl["flow_clusters"]),
    }
    names = {
        "beta": "beta",
        "beta_alignment": "alignment",
        "beta_logit_std": "logit_std",
        "beta_cos_std": "cos_std",
        "beta_flow_clusters": "head_flow_clusters",
        "beta_one_cluster": "one_cluster",
        "beta_layer": "beta_layer",
        "cluster_model_mean_cosine": "model_mean_cosine",
        "cluster_model_count": "model_clusters",
        "cluster_flow_mean_cosine": "flow_mean_cosine",
        "cluster_flow_count": "flow_clusters",
    }
    attrs = dict(
        beta_pairs=int(th["pairs"]),
        flow_horizon=float(reg["horizon"]),
        flow_tokens=int(reg["tokens"]),
        flow_clouds=FLOW_SENTENCES,
        flow_rtol=FLOW_RTOL,
        flow_atol=FLOW_ATOL,
        cluster_delta=CLUSTER_DELTA,
    )
    return {k: (*v[k], {"long_name": TEMPERATURE_LONG_NAMES[names[k]]}) for k in v}, attrs


__all__ = [
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
