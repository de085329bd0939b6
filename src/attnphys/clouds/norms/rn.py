"""The renormalization RN of Theorem 1 (theory: docs/theory/clouds.md §3.3)."""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp

from attnphys.clouds.norms._base import AbstractNorm, check_cloud


def sym_power(S: jax.Array, p: float, floor: float = 1e-12) -> jax.Array:
    """S^p of a symmetric positive semi-definite (D, D) matrix, eigenvalues floored at ``floor``·λ_max
    (theory: docs/theory/clouds.md §3.3)."""
    w, V = jnp.linalg.eigh(S)
    w = jnp.maximum(w, floor * jnp.max(w))
    return (V * w**p) @ V.T


class RN(AbstractNorm):
    """RN_{η₀,Λ₀}(x) = η₀ + Λ₀^{1/2} Σ̄^{-1/2} (x − x̄), with x̄ and Σ̄ the cloud's own mean and
    (biased) covariance (theory: docs/theory/clouds.md §3.3). The output cloud has mean η₀ and
    covariance Λ₀ exactly when Σ̄ has full rank; eigenvalues of Σ̄ below ``floor``·λ_max are floored.

    Attributes:
        eta0: (D,) target mean η₀ or None (0). Lambda0: (D, D) target covariance Λ₀ or None (I).
        floor: relative eigenvalue floor of Σ̄.
    """

    eta0: jax.Array | None = None
    Lambda0: jax.Array | None = None
    floor: float = 1e-12
    name: ClassVar[str] = "rn"
    standardizes: ClassVar[bool] = True
    tokenwise: ClassVar[bool] = False

    def __call__(self, X):
        check_cloud(X)
        D = X.shape[1]
        xbar = jnp.mean(X, axis=0)
        Sig = jnp.cov(X, rowvar=False, bias=True).reshape(D, D)
        L_half = jnp.eye(D, dtype=X.dtype) if self.Lambda0 is None else sym_power(jnp.asarray(self.Lambda0), 0.5)
        T = L_half @ sym_power(Sig, -0.5, self.floor)
        out = (X - xbar) @ T.T
        return out if self.eta0 is None else out + self.eta0
