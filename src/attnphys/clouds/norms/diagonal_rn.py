"""The diagonal renormalization: RN with the covariance replaced by its diagonal
(theory: docs/theory/clouds.md §3.5)."""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp

from attnphys.clouds.norms._base import AbstractNorm, check_cloud


class DiagonalRN(AbstractNorm):
    """y_d = η₀,d + λ₀,d^{1/2} (x_d − x̄_d) / max(s_d, floor), with x̄_d and s_d the mean and standard
    deviation of feature d over the cloud: a per-feature standardisation (batch normalization without
    running statistics) (theory: docs/theory/clouds.md §3.5). Unlike :class:`RN` it needs no D × D
    covariance, so it is defined for clouds of fewer tokens than features.

    Attributes:
        eta0: (D,) target means or None (0). lambda0: (D,) target variances or None (1).
        floor: smallest standard deviation divided by.
    """

    eta0: jax.Array | None = None
    lambda0: jax.Array | None = None
    floor: float = 1e-6
    name: ClassVar[str] = "diagonal_rn"
    standardizes: ClassVar[bool] = True
    tokenwise: ClassVar[bool] = False

    def __call__(self, X):
        check_cloud(X)
        Y = (X - jnp.mean(X, axis=0)) / jnp.maximum(jnp.std(X, axis=0), self.floor)
        if self.lambda0 is not None:
            Y = Y * jnp.sqrt(self.lambda0)
        return Y if self.eta0 is None else Y + self.eta0
