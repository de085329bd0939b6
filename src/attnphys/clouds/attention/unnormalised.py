"""USA: unnormalised self-attention (theory: docs/theory/particles.md §2.2)."""

from __future__ import annotations

from typing import ClassVar

import jax.numpy as jnp

from attnphys.clouds.attention._base import AbstractAttention


class UnnormalisedAttention(AbstractAttention):
    """P_ij = e^{s_ij} / N (theory: docs/theory/particles.md §2.2): the kernel divided by the number
    of tokens instead of by the row sums. With Q = K = V = I on the unit sphere the flow of these
    weights is the gradient ascent of the interaction energy (theory: docs/theory/particles.md §3)."""

    name: ClassVar[str] = "usa"
    rows_sum_to_one: ClassVar[bool] = False

    def normalize(self, S, mask):
        P = jnp.exp(S) / S.shape[-1]
        return P if mask is None else jnp.where(mask, P, 0.0)
