"""Sinkhorn (doubly stochastic) attention (theory: docs/theory/particles.md §2.5)."""

from __future__ import annotations

from typing import ClassVar

import equinox as eqx
import jax
from jax.scipy.special import logsumexp

from attnphys.clouds.attention._base import AbstractAttention


class SinkhornAttention(AbstractAttention):
    """P = diag(u) e^{S} diag(v) with u, v such that rows and columns of P sum to 1, by ``iterations``
    alternating row and column normalisations of log P, the last one over rows
    (theory: docs/theory/particles.md §2.5). A causal mask is refused: the only lower-triangular
    doubly stochastic matrix is the identity.

    Attributes:
        iterations: Sinkhorn iterations (row + column normalisation each).
    """

    iterations: int = eqx.field(default=30, static=True)
    name: ClassVar[str] = "sinkhorn"
    rows_sum_to_one: ClassVar[bool] = True
    columns_sum_to_one: ClassVar[bool] = True
    takes_causal_mask: ClassVar[bool] = False

    def __check_init__(self):
        if self.causal:
            raise ValueError(
                "Sinkhorn attention with a causal mask is degenerate (the only lower-triangular "
                "doubly stochastic matrix is the identity); use sa or usa with causal masking"
            )

    def normalize(self, S, mask):
        def body(_, L):
            L = L - logsumexp(L, axis=-1, keepdims=True)
            return L - logsumexp(L, axis=-2, keepdims=True)

        L = jax.lax.fori_loop(0, self.iterations, body, S)
        return jax.nn.softmax(L, axis=-1)
