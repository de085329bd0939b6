"""LayerNorm (theory: docs/theory/clouds.md §3.1)."""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp

from attnphys.clouds.norms._base import AbstractNorm, check_cloud


class LayerNorm(AbstractNorm):
    """y = γ ⊙ (x − m(x)) / √(v(x) + ε) + b per token, m and v the mean and variance over the D
    features (theory: docs/theory/clouds.md §3.1).

    Attributes:
        gamma: (D,) scale γ or None (no affine). bias: (D,) shift b or None. eps: ε.
    """

    gamma: jax.Array | None = None
    bias: jax.Array | None = None
    eps: float = 1e-5
    name: ClassVar[str] = "layernorm"
    tokenwise: ClassVar[bool] = True

    def __call__(self, X):
        check_cloud(X)
        mu = jnp.mean(X, axis=-1, keepdims=True)
        var = jnp.var(X, axis=-1, keepdims=True)
        Y = (X - mu) / jnp.sqrt(var + self.eps)
        if self.gamma is not None:
            Y = Y * self.gamma
        if self.bias is not None:
            Y = Y + self.bias
        return Y
