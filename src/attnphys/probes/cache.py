"""A named activation cache: every intermediate of every layer of a real transformer on a text, as
labelled arrays (theory: docs/theory/probes.md §1, §2, §3.6).

:func:`activation_cache` returns one Dataset. Per token (stacked over sentences, dimension ``token``):

* ``resid`` (layer, stage, token, d_model) — the residual-stream stages of docs/theory/probes.md §1
  (``input``, ``attn_norm``, ``attn_out``, ``attn_add``, ``mlp_norm``, ``mlp_out``, ``mlp_add`` or the
  post-norm order), captured by hooks on the model;
* ``q``, ``k``, ``v`` (layer, head, token, d_head) — per query head (keys and values of its key/value head)
  before the rotary rotation; ``q_rot``, ``k_rot`` after it (equal to ``q``, ``k`` without rotary positions);
* ``z`` (layer, head, token, d_head) — Σ_j P_ij v_j, the head's attention-weighted values;
* ``head_out`` (layer, head, token, d_model) — W_o,h z_h, the head's share of the attention output
  (Σ_h head_out + b_o = the ``attn_out`` stage);
* ``mlp_hidden`` (layer, token, d_mlp) — φ(W₁x + b₁), or φ(W_g x) ⊙ W_u x for a gated MLP;

and per sentence, padded to the longest (NaN where there is no token, −∞ where the query does not see
the key): ``scores`` (layer, head, sentence, query, key) s_ij = (R_i q_i)·(R_j k_j)/√d_h and
``pattern`` (same dims) the model's own attention weights. ``token_id``, ``token_sentence``,
``token_position``, ``token_special``, ``token_sink`` label the tokens. Float32.
"""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

from attnphys.probes.capture import MAX_LENGTH, capture
from attnphys.probes.metrics import project, scores_of


def _mlp_hidden(mlp, X: np.ndarray) -> np.ndarray:
    import jax.numpy as jnp

    from attnphys.clouds.mlp import ACTIVATIONS, GatedMLP

    act = ACTIVATIONS[mlp.activation]
    if isinstance(mlp, GatedMLP):
        Wg, Wu = np.asarray(mlp.Wg), np.asarray(mlp.Wu)
        return np.asarray(act(jnp.asarray(X @ Wg.T))) * (X @ Wu.T)
    Z = X @ np.asarray(mlp.W1).T
    if mlp.b1 is not None:
        Z = Z + np.asarray(mlp.b1)
    return np.asarray(act(jnp.asarray(Z)))


def activation_cache(
    model,
    sentences: list[str],
    *,
    tokenizer=None,
    max_length: int = MAX_LENGTH,
    log=None,
) -> xr.Dataset:
    """Every intermediate of every layer of ``model`` on ``sentences``, named and labelled (see the module
    doc for the variables and their dimensions; theory: docs/theory/probes.md §1, §2.3, §3.6).

    Args:
        model: a short name, a local model folder, a hub name or a loaded transformers model, base or with
            a head (then ``tokenizer`` is needed). sentences: the text, one sentence per item. max_length:
            tokens kept per sentence, at most the model's positions (longer sentences are cut, with a
            :class:`~attnphys.probes._warnings.TruncationWarning`, and a line through ``log`` when given). A
            model loaded with an attention kernel that returns no weights (``sdpa``) is captured with the
            eager attention (:func:`~attnphys.probes.capture.capture`; attributes ``attn_implementation``,
            ``attn_captured``).

    Raises:
        InputError: ``max_length`` below 2 or beyond the model's positions.
    """
    from attnphys.metadata import base_attrs
    from attnphys.probes.run import resolve_model

    name, model, tokenizer = resolve_model(model, tokenizer, log or (lambda *a: None), False)
    cap = capture(model, tokenizer, list(sentences), max_length=max_length, log=log)
    ad = cap.adapter
    layers = ad.layers(model)
    rot = ad.rotary(model)
    heads = [ad.heads(model, layer) for layer in layers]
    H, dh = heads[0].n_heads, heads[0].head_dim
    L, T = cap.n_layers, cap.sentence.size
    spans = cap.sentences()
    n_max = int(cap.lengths.max())
    S = len(spans)
    f32 = np.float32
    out = {k: np.empty((L, H, T, dh), f32) for k in ("q", "k", "v", "q_rot", "k_rot", "z")}
    head_out = np.empty((L, H, T, heads[0].Wo.shape[1]), f32)
    scores = np.full((L, H, S, n_max, n_max), np.nan, f32)
    pattern = np.full_like(scores, np.nan)
    hidden = []
    mlp_in = "mlp_norm" if ad.pre_ln else "attn_norm"
    for layer in range(L):
        hw = heads[layer]
        X = cap.get(layer, ad.attn_input_stage).astype(np.float64)
        Q, K, V = project(hw.Wq, hw.bq, X), project(hw.Wk, hw.bk, X), project(hw.Wv, hw.bv, X)
        Qr, Kr = (Q, K) if rot is None else (rot.apply(Q, cap.position), rot.apply(K, cap.position))
        Z = np.empty_like(V)
        for s, (a, b) in enumerate(spans):
            n = b - a
            P = cap.attentions[layer][s].astype(np.float64)
            scores[layer, :, s, :n, :n] = scores_of(Qr[:, a:b], Kr[:, a:b], hw.head_dim, ad.causal, cap.windows[layer])
            pattern[layer, :, s, :n, :n] = P
            Z[:, a:b] = np.matmul(P, V[:, a:b])
        for key, val in (("q", Q), ("k", K), ("v", V), ("q_rot", Qr), ("k_rot", Kr), ("z", Z)):
            out[key][layer] = val
        head_out[layer] = np.matmul(Z, hw.Wo.transpose(0, 2, 1))
        hidden.append(_mlp_hidden(ad.mlp(model, layers[layer]), cap.get(layer, mlp_in).astype(np.float64)))
    resid = np.stack([np.stack([cap.get(layer, st) for st in ad.stages]) for layer in range(L)])
    ds = xr.Dataset(
        {
            "resid": (("layer", "stage", "token", "d_model"), resid.astype(f32)),
            **{k: (("layer", "head", "token", "d_head"), v) for k, v in out.items()},
            "head_out": (("layer", "head", "token", "d_model"), head_out),
            "mlp_hidden": (("layer", "token", "d_mlp"), np.stack(hidden).astype(f32)),
            "scores": (("layer", "head", "sentence", "query", "key"), scores),
            "pattern": (("layer", "head", "sentence", "query", "key"), pattern),
            "token_id": (("token",), cap.token_ids if cap.token_ids is not None else np.full(T, -1)),
            "token_sentence": (("token",), cap.sentence),
            "token_position": (("token",), cap.position),
            "token_special": (("token",), cap.special.astype(np.int8)),
            "token_sink": (("token",), cap.sinks.astype(np.int8)),
        },
        coords={
            "layer": np.arange(L),
            "stage": list(ad.stages),
            "head": np.arange(H),
            "token": np.arange(T),
            "sentence": np.arange(S),
        },
    )
    ds["head"].attrs["kv_head"] = json.dumps(heads[0].kv_heads().tolist())
    ds.attrs.update(
        base_attrs(
            None,
            model=name,
            family=ad.family,
            causal=int(ad.causal),
            rotary=int(rot is not None),
            sliding_window=json.dumps(cap.windows),
            max_length=int(max_length),
            n_truncated=int(cap.truncated),
            attn_implementation=cap.attn_implementation or "unknown",
            attn_captured=cap.attn_captured or "unknown",
        )
    )
    return ds


__all__ = ["activation_cache"]
