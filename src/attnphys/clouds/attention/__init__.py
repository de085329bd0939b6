"""Attention operators on a token cloud, one class per normalization of the kernel over
:class:`AbstractAttention` (theory: docs/theory/particles.md §2)."""

from __future__ import annotations

import jax.numpy as jnp

from attnphys._arguments import checked
from attnphys.clouds.attention._base import AbstractAttention
from attnphys.clouds.attention.sinkhorn import SinkhornAttention
from attnphys.clouds.attention.softmax import SoftmaxAttention
from attnphys.clouds.attention.unnormalised import UnnormalisedAttention
from attnphys.clouds.registries import ATTENTIONS

ATTENTIONS = ATTENTIONS
"""The registry of attention classes by name (:class:`attnphys.registry.Registry`; its names:
``ATTENTIONS.names()``)."""


@checked
def bilinear_attention(kind: str = "sa", beta=1.0, W=None, Wv=None, causal: bool = False, heads: int = 1):
    """Attention with score s_ij = β x_iᵀ W_h x_j and value W_v,h x_j per head (theory:
    docs/theory/clouds.md §2): Q_h = W_hᵀ, K = I, V_h = W_v,h, O = I.

    Args:
        kind: a name of :data:`ATTENTIONS` (or an attention class). W: (D, D), (H, D, D) or None (identity).
        Wv: (D, D) (shared by the heads), (H, D, D) or None (identity).
    """
    cls = ATTENTIONS.lookup(kind)
    Q = V = None
    if W is not None:
        W = jnp.asarray(W)
        W = W[None] if W.ndim == 2 else W
        Q = jnp.swapaxes(W, 1, 2)
    if Wv is not None:
        Wv = jnp.asarray(Wv)
        H = Q.shape[0] if Q is not None else (Wv.shape[0] if Wv.ndim == 3 else heads)
        V = jnp.broadcast_to(Wv, (H,) + Wv.shape[-2:]) if Wv.ndim == 2 else Wv
    return cls(beta=beta, Q=Q, V=V, causal=causal, heads=heads)


__all__ = [
    "AbstractAttention",
    "SoftmaxAttention",
    "UnnormalisedAttention",
    "SinkhornAttention",
    "ATTENTIONS",
    "bilinear_attention",
]
