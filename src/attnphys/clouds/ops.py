"""Operators on token clouds X ∈ R^{N×D}, the N tokens seen as an empirical distribution, and layers
composed of them (theory: docs/theory/clouds.md §1, §2, §6). Every operator is a pure function X → X.

The building blocks live in :mod:`attnphys.clouds.norms` (normalizations),
:mod:`attnphys.clouds.attention` (attention operators), :mod:`attnphys.clouds.mlp` and
:mod:`attnphys.clouds.ensembles`; this module holds the functional shortcuts and the layers.
"""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax.numpy as jnp

from attnphys._arguments import checked
from attnphys.clouds.attention import AbstractAttention, bilinear_attention
from attnphys.clouds.norms import NORMS, RN, AbstractNorm, Identity, LayerNorm, RMSNorm, Sphere, make_norm, sym_power


@checked
def attention_step(X, beta=1.0, W=None, Wv=None, alpha=1.0):
    """One residual attention update of the whole cloud: h_i ← h_i + α Σ_heads W_v Σ_j
    softmax_j(β h_iᵀ W h_j) h_j, a gradient-ascent step on log Σ_j e^{β h_iᵀ W h_j} with the moving
    cloud itself as the support (theory: docs/theory/clouds.md §2).

    Args:
        X: (N, D) tokens. W: (D, D) = W_qᵀW_k, or (H, D, D) for H heads, or None (identity).
        Wv: (D, D) or (H, D, D) value maps (None: identity). alpha: step size α.
    """
    return X + alpha * bilinear_attention("sa", beta, W, Wv)(X)


@checked
def attention_no_residual(X, beta=1.0, W=None, Wv=None):
    """h_i ← Σ_j softmax_j(β h_iᵀ W h_j) W_v h_j: every token replaced by a weighted mean of the
    (value-mapped) cloud; with W_v = I the cloud shrinks into its convex hull and collapses to a point
    when iterated (theory: docs/theory/clouds.md §6.1)."""
    return bilinear_attention("sa", beta, W, Wv)(X)


@checked
def layernorm(X, gamma=None, bias=None, eps=1e-5):
    """:class:`~attnphys.clouds.norms.LayerNorm` as a function (theory: docs/theory/clouds.md §3.1)."""
    return LayerNorm(gamma, bias, eps)(X)


@checked
def rmsnorm(X, gamma=None, eps=1e-6):
    """:class:`~attnphys.clouds.norms.RMSNorm` as a function (theory: docs/theory/clouds.md §3.2)."""
    return RMSNorm(gamma, eps)(X)


@checked
def renormalize(X, eta0=None, Lambda0=None, floor=1e-12):
    """:class:`~attnphys.clouds.norms.RN` as a function: RN_{η₀,Λ₀}(x) = η₀ + Λ₀^{1/2} Σ̄^{-1/2}(x − x̄)
    (theory: docs/theory/clouds.md §3.3)."""
    return RN(eta0, Lambda0, floor)(X)


@checked
def sphere(X, radius=1.0):
    """:class:`~attnphys.clouds.norms.Sphere` as a function: x ↦ r x/‖x‖ (theory: docs/theory/clouds.md §3.4)."""
    return Sphere(radius)(X)


@checked
def identity(X):
    """x ↦ x (theory: docs/theory/clouds.md §3)."""
    return X


@checked
def compose(*ops: Callable) -> Callable:
    """One layer: apply ``ops`` left to right (theory: docs/theory/clouds.md §1)."""

    def layer(X):
        for op in ops:
            X = op(X)
        return X

    return layer


class Layer(eqx.Module):
    """A post-norm block: X ← N(X + α A(X)) (or N(A(X)) without the residual), then, with an MLP,
    X ← N(X + M(X)) (theory: docs/theory/clouds.md §2, §6.1, §6.2).

    Attributes:
        attention: the attention operator A. norm: the normalization N. mlp: token-wise map M or None.
        alpha: step size α of the residual. residual: keep the residual of the attention sublayer.
    """

    attention: AbstractAttention
    norm: AbstractNorm
    mlp: Callable | None = None
    alpha: float = 1.0
    residual: bool = eqx.field(default=True, static=True)

    def __call__(self, X):
        A = self.attention(X)
        X = self.norm(X + self.alpha * A if self.residual else A)
        if self.mlp is not None:
            X = self.norm(X + self.mlp(X))
        return X


@checked
def standard_layer(
    norm: str | AbstractNorm = "layernorm",
    beta=1.0,
    alpha=1.0,
    W=None,
    Wv=None,
    *,
    attention: str = "sa",
    residual: bool = True,
    mlp=None,
    causal: bool = False,
) -> Callable:
    """Residual attention followed by a normalization (post-norm), the paper's block, optionally with
    an MLP sublayer (theory: docs/theory/clouds.md §2, §6).

    Args:
        norm: a normalization or its name in :data:`~attnphys.clouds.norms.NORMS`. W, Wv: score and value
            maps as in :func:`attention_step`. attention: a name of :data:`~attnphys.clouds.registries.ATTENTIONS`.
    """
    norm = make_norm(norm) if isinstance(norm, str) else norm
    block = Layer(bilinear_attention(attention, beta, W, Wv, causal=causal), norm, mlp, alpha, residual)

    def layer(X):
        return block(X)

    return layer


@checked
def untied_layers(
    norm: str | AbstractNorm, beta, Ws, Wvs=None, *, alpha=1.0, attention: str = "sa", residual: bool = True, mlp=None
) -> Callable:
    """Layer l uses its own weights Ws[l] (L, H, D, D) and Wvs[l] (theory: docs/theory/clouds.md §6.4).

    Returns:
        f(X, l) → X, marked ``indexed`` for :func:`~attnphys.clouds.run.run_cloud`.
    """
    norm = make_norm(norm) if isinstance(norm, str) else norm

    def layer(X, l):
        W = Ws[l]
        Wv = None if Wvs is None else Wvs[l]
        return Layer(bilinear_attention(attention, beta, W, Wv), norm, mlp, alpha, residual)(X)

    layer.indexed = True
    return layer


@checked
def theorem1_affine(mu, Sigma):
    """Cor. 1 / Theorem 1: with the Gaussian base measure x = Ση, attention + residual is the affine map
    η' = μ + (I + Σ) η. Returns (A, b) with η' = A η + b (theory: docs/theory/clouds.md §4)."""
    D = Sigma.shape[0]
    return jnp.eye(D, dtype=Sigma.dtype) + Sigma, jnp.asarray(mu)


@checked
def push_gaussian(mean, cov, A, b):
    """Pushforward of N(mean, cov) through η ↦ Aη + b: N(A mean + b, A cov Aᵀ) (theory: docs/theory/clouds.md §4)."""
    return A @ mean + b, A @ cov @ A.T


@checked
def renormalize_population(mean, cov, eta0, Lambda0):
    """RN with the population statistics as an affine map: returns (T, c), η ↦ T η + c with
    T = Λ₀^{1/2} Σ^{-1/2}, c = η₀ − T μ (theory: docs/theory/clouds.md §4)."""
    T = sym_power(Lambda0, 0.5) @ sym_power(cov, -0.5)
    return T, eta0 - T @ mean


__all__ = [
    "attention_step",
    "attention_no_residual",
    "layernorm",
    "rmsnorm",
    "renormalize",
    "sphere",
    "identity",
    "NORMS",
    "Identity",
    "compose",
    "Layer",
    "standard_layer",
    "untied_layers",
    "theorem1_affine",
    "push_gaussian",
    "renormalize_population",
]
