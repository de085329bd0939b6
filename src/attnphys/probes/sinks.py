"""Attention sinks and repeated states: the tokens that would decide a cloud statistic by themselves
(theory: docs/theory/probes.md §3.7).

* :func:`find_sinks` — massive-norm positions: tokens whose residual-stream norm exceeds
  :data:`SINK_NORM_RATIO` times the median norm of their layer, in some layer; what they carry (their
  share of the covariance trace) and the attention they receive.
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


def residual_norms(cap: Capture) -> np.ndarray:
    """(L, T) norm ‖x_i‖ of every token's residual stream entering each layer (stage ``input``)."""
    return np.stack(
        [np.linalg.norm(cap.get(layer, "input").astype(np.float64), axis=1) for layer in range(cap.n_layers)]
    )


def find_sinks(cap: Capture, ratio: float = SINK_NORM_RATIO) -> dict[str, Any]:
    """The massive-norm positions of the capture (theory: docs/theory/probes.md §3.7).

    Token i is massive in layer ℓ when ‖x_i^ℓ‖ > ``ratio`` · median_j ‖x_j^ℓ‖ (residual stream entering
    the layer); a sink when massive in at least one layer.

    Returns:
        dict: ``sink`` (T,) bool; ``massive`` (L, T) bool; ``norm_ratio`` (L,) median norm of the sinks over
        the median norm of the other tokens (NaN in a layer without massive tokens); ``trace_share`` (L,)
        the share of the covariance trace of the attention input carried by the sinks,
        Σ_{i∈sinks} ‖x_i − x̄‖² / Σ_i ‖x_i − x̄‖²; ``attention_share`` (L,) the mean over queries and heads of the
        attention weight on sink keys (NaN without attention weights); ``attention_uniform`` (L,) the same
        for uniform attention over the keys each query sees (what the share would be by chance).
    """
    N = residual_norms(cap)
    med = np.median(N, axis=1, keepdims=True)
    massive = N > ratio * med
    sink = np.asarray(massive.any(axis=0), bool)
    L = cap.n_layers
    norm_ratio = np.full(L, np.nan)
    trace_share = np.zeros(L)
    att, uni = np.full(L, np.nan), np.full(L, np.nan)
    for layer in range(L):
        if massive[layer].any() and (~massive[layer]).any():
            norm_ratio[layer] = np.median(N[layer, massive[layer]]) / np.median(N[layer, ~massive[layer]])
        if sink.any():
            X = cap.get(layer, cap.adapter.attn_input_stage).astype(np.float64)
            d = np.sum((X - X.mean(0)) ** 2, axis=1)
            trace_share[layer] = d[sink].sum() / max(d.sum(), 1e-300)
        if cap.attentions:
            got, chance, rows = 0.0, 0.0, 0
            for P, (a, b) in zip(cap.attentions[layer], cap.sentences()):
                s = sink[a:b]
                got += float(P[:, :, s].sum())
                seen = P[0] > 0  # the keys each query sees (causal or window masks give zero weights)
                chance += float(P.shape[0] * np.sum(seen[:, s].sum(1) / np.maximum(seen.sum(1), 1)))
                rows += P.shape[0] * P.shape[1]
            att[layer], uni[layer] = got / max(rows, 1), chance / max(rows, 1)
    return dict(
        sink=sink,
        massive=massive,
        norm_ratio=norm_ratio,
        trace_share=trace_share,
        attention_share=att,
        attention_uniform=uni,
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


__all__ = ["SINK_NORM_RATIO", "residual_norms", "find_sinks", "duplicates", "distinct"]
