"""SA: softmax-normalised self-attention (theory: docs/theory/particles.md §2.1)."""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp

from attnphys.clouds.attention._base import AbstractAttention


class SoftmaxAttention(AbstractAttention):
    """P_ij = e^{s_ij} / Σ_k e^{s_ik} over the attended k (theory: docs/theory/particles.md §2.1):
    each row of P is a probability, so A(X)_i is an average of values."""

    name: ClassVar[str] = "sa"
    rows_sum_to_one: ClassVar[bool] = True

    def normalize(self, S, mask):
        if mask is not None:
            S = jnp.where(mask, S, -jnp.inf)
        return jax.nn.softmax(S, axis=-1)
