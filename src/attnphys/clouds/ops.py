"""Operators on token clouds X ∈ R^{N×D}, the N tokens seen as an empirical distribution (spec
``probabilistic-attention.md`` §3). Every operator is a pure function X → X (jit/vmap-able).

* :func:`attention_step` — h_i ← h_i + α Σ_heads W_v Σ_j softmax_j(β h_iᵀ W h_j) h_j: a gradient-ascent
  step on log Σ_j e^{β h_iᵀ W h_j} with the moving cloud itself as the support (Prop. 1a with
  "changing patterns"); W = I and W_v = I by default.
* :func:`layernorm` (centre and scale each token over its features; optional affine), :func:`rmsnorm`,
  :func:`renormalize` (RN_{η₀,Λ₀}: η ↦ η₀ + Λ₀^{1/2} Σ̄^{-1/2} (η − η̄) with the cloud's own mean and
  covariance, Theorem 1), :func:`sphere` (projection on the sphere of radius r), :func:`identity`.
"""

from __future__ import annotations

from functools import partial
from typing import Callable, Sequence

import jax
import jax.numpy as jnp


def attention_step(X, beta=1.0, W=None, Wv=None, alpha=1.0):
    """One residual attention update of the whole cloud.

    Args:
        X: (N, D) tokens. W: (D, D) = W_qᵀW_k, or (H, D, D) for H heads, or None (identity).
        Wv: (D, D) or (H, D, D) value maps (None: identity). alpha: step size α.
    """
    if W is None or W.ndim == 2:
        W = None if W is None else W[None]
        Wv = None if Wv is None else (Wv[None] if Wv.ndim == 2 else Wv)
    H = 1 if W is None else W.shape[0]
    upd = jnp.zeros_like(X)
    for h in range(H):
        K = X if W is None else X @ W[h].T  # row j: (W h_j)ᵀ, scores h_iᵀ W h_j
        P = jax.nn.softmax(beta * X @ K.T, axis=-1)
        V = X if Wv is None else X @ Wv[min(h, Wv.shape[0] - 1)].T
        upd = upd + P @ V
    return X + alpha * upd


def layernorm(X, gamma=None, bias=None, eps=1e-5):
    """(x − mean(x)) / sqrt(var(x) + eps) per token, then γ ⊙ · + b if given."""
    mu = jnp.mean(X, axis=-1, keepdims=True)
    var = jnp.var(X, axis=-1, keepdims=True)
    Y = (X - mu) / jnp.sqrt(var + eps)
    if gamma is not None:
        Y = Y * gamma
    if bias is not None:
        Y = Y + bias
    return Y


def rmsnorm(X, gamma=None, eps=1e-6):
    """x / sqrt(mean(x²) + eps) per token (γ ⊙ · if given)."""
    Y = X / jnp.sqrt(jnp.mean(X**2, axis=-1, keepdims=True) + eps)
    return Y if gamma is None else Y * gamma


def _sym_power(S, p, floor=1e-12):
    w, V = jnp.linalg.eigh(S)
    w = jnp.maximum(w, floor * jnp.max(w))
    return (V * w**p) @ V.T


def renormalize(X, eta0=None, Lambda0=None, floor=1e-12):
    """RN_{η₀,Λ₀}(x) = η₀ + Λ₀^{1/2} Σ̄^{-1/2} (x − x̄), x̄ and Σ̄ the cloud's mean and covariance
    (eigenvalues floored at ``floor``·max for a rank-deficient cloud). Defaults: η₀ = 0, Λ₀ = I."""
    D = X.shape[1]
    xbar = jnp.mean(X, axis=0)
    Sig = jnp.cov(X, rowvar=False, bias=True)
    L_half = jnp.eye(D, dtype=X.dtype) if Lambda0 is None else _sym_power(jnp.asarray(Lambda0), 0.5)
    T = L_half @ _sym_power(Sig, -0.5, floor)
    out = (X - xbar) @ T.T
    return out if eta0 is None else out + eta0


def sphere(X, radius=1.0):
    """x ↦ r x / ‖x‖."""
    return radius * X / jnp.linalg.norm(X, axis=-1, keepdims=True)


def identity(X):
    return X


NORMS: dict[str, Callable] = {
    "layernorm": layernorm,
    "rmsnorm": rmsnorm,
    "rn": renormalize,
    "sphere": sphere,
    "none": identity,
}
"""Normalizations by name (``layernorm`` without affine; pass γ, b to :func:`layernorm` for it)."""


def compose(*ops: Callable) -> Callable:
    """One layer: apply ``ops`` left to right."""

    def layer(X):
        for op in ops:
            X = op(X)
        return X

    return layer


def standard_layer(norm: str = "layernorm", beta=1.0, alpha=1.0, W=None, Wv=None) -> Callable:
    """Residual attention followed by a normalization (post-norm), the paper's block without the MLP."""
    if norm not in NORMS:
        raise ValueError(f"unknown norm {norm!r}; choose from {sorted(NORMS)}")
    return compose(partial(attention_step, beta=beta, W=W, Wv=Wv, alpha=alpha), NORMS[norm])


def theorem1_affine(mu, Sigma):
    """Cor. 1 / Theorem 1: with the Gaussian base measure x = Ση, attention + residual is the affine map
    η' = μ + (I + Σ) η. Returns (A, b) with η' = A η + b."""
    D = Sigma.shape[0]
    return jnp.eye(D, dtype=Sigma.dtype) + Sigma, jnp.asarray(mu)


def push_gaussian(mean, cov, A, b):
    """Pushforward of N(mean, cov) through η ↦ Aη + b: N(A mean + b, A cov Aᵀ)."""
    return A @ mean + b, A @ cov @ A.T


def renormalize_population(mean, cov, eta0, Lambda0):
    """RN with the population statistics as an affine map: returns (T, c), η ↦ T η + c."""
    T = _sym_power(Lambda0, 0.5) @ _sym_power(cov, -0.5)
    return T, eta0 - T @ mean


__all__: Sequence[str] = ["attention_step", "layernorm", "rmsnorm", "renormalize", "sphere", "identity", "NORMS",
                          "compose", "standard_layer", "theorem1_affine", "push_gaussian", "renormalize_population"]
