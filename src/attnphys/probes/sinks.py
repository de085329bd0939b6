"""Attention sinks and repeated states: the tokens that would decide a cloud statistic by themselves
(theory: docs/theory/probes.md §3.7).

* :func:`find_sinks` — the sink positions by two criteria: massive norm (tokens whose residual-stream norm
  exceeds :data:`SINK_NORM_RATIO` times the median norm of their layer, in some layer) and attention share
  (tokens that receive more than :data:`SINK_ATTENTION_RATIO` times their uniform share of their sentence's
  attention, and at least :data:`SINK_ATTENTION_MIN_SHARE` of it, in some layer); for each set, what it carries
  (its share of the covariance trace of the residual stream and of the attention input) and the attention
  it receives.
* :func:`distinct` — one token of every group of identical states (a causal model gives the same states
  to the same prefix, e.g. every sentence starting with "The"): the k-NN entropy of a cloud with more than
  k coincident points is undefined.

Pure numpy over a :class:`~attnphys.probes.capture.Capture`; no torch.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np


class Capture(Protocol):
    """What these functions read of a :class:`attnphys.probes.capture.Capture` (named here so that the
    capture, which finds its sinks with :func:`find_sinks`, and this module do not import each other)."""

    adapter: Any
    attentions: list
    n_layers: int
    sentence: np.ndarray
    token_ids: np.ndarray | None

    def get(self, layer: int, stage: str, drop_special: bool = False) -> np.ndarray: ...

    def sentences(self) -> Any: ...


SINK_NORM_RATIO = 10.0
"""A token is a sink in a layer when its residual-stream norm exceeds this many times the layer's median
token norm."""


SINK_ATTENTION_RATIO = 3.0
"""A token is an attention sink in a layer when it receives more than this many times the share of its
sentence's attention that uniform attention (over the keys each query sees) would give it …"""

SINK_ATTENTION_MIN_SHARE = 0.1
"""… and at least this share of it (so that the last token of a causal sentence, seen only by itself, or a
token of a three-token sentence is not a sink by a small excess)."""


def attention_received(cap: Capture) -> tuple[np.ndarray, np.ndarray]:
    """(L, T) share a_j of its sentence's attention that token j receives, a_j = (1/(H n)) Σ_h Σ_i P_hij over
    the n queries and H heads of the sentence, and (L, T) the same share u_j = (1/n) Σ_i [i sees j]/|keys of
    i| under uniform attention over the keys each query sees (theory: docs/theory/probes.md §3.7).
    NaN without attention weights."""
    T = cap.sentence.size
    a, u = np.full((cap.n_layers, T), np.nan), np.full((cap.n_layers, T), np.nan)
    if not cap.attentions:
        return a, u
    for layer in range(cap.n_layers):
        for P, (lo, hi) in zip(cap.attentions[layer], cap.sentences()):
            P = np.asarray(P, np.float64)
            H, n = P.shape[0], P.shape[1]
            a[layer, lo:hi] = P.sum((0, 1)) / (H * n)
            seen = P[0] > 0  # the keys each query sees (causal or window masks give zero weights)
            u[layer, lo:hi] = (seen / np.maximum(seen.sum(1, keepdims=True), 1)).sum(0) / n
    return a, u


def _shares(cap: Capture, sink: np.ndarray, stage: str) -> np.ndarray:
    """(L,) Σ_{i∈sinks} ‖x_i − x̄‖² / Σ_i ‖x_i − x̄‖² of the stage ``stage`` in every layer (0 without sinks)."""
    out = np.zeros(cap.n_layers)
    if not sink.any():
        return out
    for layer in range(cap.n_layers):
        X = cap.get(layer, stage).astype(np.float64)
        d = np.sum((X - X.mean(0)) ** 2, axis=1)
        out[layer] = d[sink].sum() / max(d.sum(), 1e-300)
    return out


def _attention_on(cap: Capture, sink: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(L,) mean over queries and heads of the attention weight on the keys ``sink``, and the same under
    uniform attention over the keys each query sees (NaN without attention weights)."""
    L = cap.n_layers
    att, uni = np.full(L, np.nan), np.full(L, np.nan)
    if not cap.attentions:
        return att, uni
    for layer in range(L):
        got, chance, rows = 0.0, 0.0, 0
        for P, (a, b) in zip(cap.attentions[layer], cap.sentences()):
            s = sink[a:b]
            got += float(P[:, :, s].sum())
            seen = P[0] > 0
            chance += float(P.shape[0] * np.sum(seen[:, s].sum(1) / np.maximum(seen.sum(1), 1)))
            rows += P.shape[0] * P.shape[1]
        att[layer], uni[layer] = got / max(rows, 1), chance / max(rows, 1)
    return att, uni


def residual_norms(cap: Capture) -> np.ndarray:
    """(L, T) norm ‖x_i‖ of every token's residual stream entering each layer (stage ``input``)."""
    return np.stack(
        [np.linalg.norm(cap.get(layer, "input").astype(np.float64), axis=1) for layer in range(cap.n_layers)]
    )


def find_sinks(
    cap: Capture,
    ratio: float = SINK_NORM_RATIO,
    attention_ratio: float = SINK_ATTENTION_RATIO,
    attention_min_share: float = SINK_ATTENTION_MIN_SHARE,
) -> dict[str, Any]:
    """The sink positions of the capture by their norm and by the attention they receive (theory:
    docs/theory/probes.md §3.7).

    Token i is massive in layer ℓ when ‖x_i^ℓ‖ > ``ratio`` · median_j ‖x_j^ℓ‖ (residual stream entering
    the layer); a (massive-norm) sink when massive in at least one layer. Token j is an attention sink in
    layer ℓ when its share of its sentence's attention a_j (:func:`attention_received`) exceeds
    ``attention_ratio`` · u_j, u_j its share under uniform attention, and ``attention_min_share``; an attention
    sink when so in at least one layer. The massive-norm sinks are the positions the headline statistics
    leave out (they decide a covariance by themselves); the attention sinks are reported beside them.

    Returns:
        dict: ``sink`` (T,) bool; ``massive`` (L, T) bool; ``norm_ratio`` (L,) median norm of the sinks over
        the median norm of the other tokens (NaN in a layer without massive tokens, or where every token is);
        ``trace_share`` (L,) the share of the covariance trace of the attention input carried by the sinks,
        Σ_{i∈sinks} ‖x_i − x̄‖² / Σ_i ‖x_i − x̄‖², ``trace_share_residual`` (L,) the same of the residual
        stream entering the layer; ``attention_share`` (L,) the mean over queries and heads of the attention
        weight on sink keys (NaN without attention weights); ``attention_uniform`` (L,) the same for uniform
        attention over the keys each query sees (what the share would be by chance); ``attention_sink`` (T,)
        bool, ``attention_flag`` (L, T) bool, ``attention_ratio`` (L, T) a_j / u_j, and for the attention
        sinks ``attention_sink_share``, ``attention_sink_uniform``, ``attention_sink_trace_share``,
        ``attention_sink_trace_share_residual`` (L,) as above.
    """
    N = residual_norms(cap)
    med = np.median(N, axis=1, keepdims=True)
    massive = N > ratio * med
    sink = np.asarray(massive.any(axis=0), bool)
    L = cap.n_layers
    norm_ratio = np.full(L, np.nan)
    for layer in range(L):
        if massive[layer].any() and (~massive[layer]).any():
            norm_ratio[layer] = np.median(N[layer, massive[layer]]) / np.median(N[layer, ~massive[layer]])
    att, uni = _attention_on(cap, sink)
    a, u = attention_received(cap)
    with np.errstate(invalid="ignore", divide="ignore"):
        att_ratio = a / u
    flag = np.nan_to_num(a, nan=0.0) > np.maximum(attention_ratio * np.nan_to_num(u, nan=np.inf), attention_min_share)
    asink = np.asarray(flag.any(axis=0), bool)
    a_att, a_uni = _attention_on(cap, asink)
    stage = cap.adapter.attn_input_stage
    return dict(
        sink=sink,
        massive=massive,
        norm_ratio=norm_ratio,
        trace_share=_shares(cap, sink, stage),
        trace_share_residual=_shares(cap, sink, "input"),
        attention_share=att,
        attention_uniform=uni,
        attention_sink=asink,
        attention_flag=flag,
        attention_ratio=att_ratio,
        attention_sink_share=a_att,
        attention_sink_uniform=a_uni,
        attention_sink_trace_share=_shares(cap, asink, stage),
        attention_sink_trace_share_residual=_shares(cap, asink, "input"),
    )


def duplicates(cap: Capture, layer: int = 0) -> np.ndarray:
    """(T,) bool: tokens whose states are those of an earlier token at every stage of every layer, because
    the model reads the same thing there: in a causal model the same token ids up to and including the
    token (the same prefix), in a bidirectional one the same position in the same sentence. Decided on the
    token ids, so that the same state computed in another batch (equal only to rounding) counts too;
    without token ids, on exact equality of the states at every stage of ``layer``. States that coincide
    at some stages only (the token embeddings of a rotary model) are kept: there the cloud has repeated
    points, and a k-NN entropy of it is undefined."""
    if cap.token_ids is None:
        X = np.ascontiguousarray(np.concatenate([cap.get(layer, stage) for stage in cap.adapter.stages], axis=1))
        _, first = np.unique(X.view(np.dtype((np.void, X.dtype.itemsize * X.shape[1]))).ravel(), return_index=True)
        dup = np.ones(X.shape[0], bool)
        dup[first] = False
        return dup
    dup = np.zeros(cap.sentence.size, bool)
    seen: set = set()
    for a, b in cap.sentences():
        ids = tuple(cap.token_ids[a:b].tolist())
        for i in range(b - a):
            key = ids[: i + 1] if cap.adapter.causal else (ids, i)
            if key in seen:
                dup[a + i] = True
            else:
                seen.add(key)
    return dup


def distinct(cap: Capture, layer: int) -> np.ndarray:
    """(T,) bool: the first token of every group of tokens with identical states at every stage of
    ``layer``, and every other token (theory: docs/theory/probes.md §3.7)."""
    return ~duplicates(cap, layer)


__all__ = [
    "SINK_NORM_RATIO",
    "SINK_ATTENTION_RATIO",
    "SINK_ATTENTION_MIN_SHARE",
    "residual_norms",
    "attention_received",
    "find_sinks",
    "duplicates",
    "distinct",
]
