"""RMSNorm (theory: docs/theory/clouds.md §3.2)."""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp

from attnphys.clouds.norms._base import AbstractNorm, check_cloud


class RMSNorm(AbstractNorm):
    """y = γ ⊙ x / √(mean_d x_d² + ε) per token (theory: docs/theory/clouds.md §3.2).

    Attributes:
        gamma: (D,) scale γ or None. eps: ε.
    """

    gamma: jax.Array | None = None
    eps: float = 1e-6
    name: ClassVar[str] = "rmsnorm"
    tokenwise: ClassVar[bool] = True

    def __call__(self, X):
        check_cloud(X)
        Y = X / jnp.sqrt(jnp.mean(X**2, axis=-1, keepdims=True) + self.eps)
        return Y if self.gamma is None else Y * self.gamma
