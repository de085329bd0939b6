"""MLP blocks acting token-wise on a cloud (theory: docs/theory/clouds.md §6.2)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from attnphys._arguments import checked

ACTIVATIONS = {
    "gelu": lambda z: jax.nn.gelu(z, approximate=False),
    "gelu_tanh": lambda z: jax.nn.gelu(z, approximate=True),
    "relu": jax.nn.relu,
    "silu": jax.nn.silu,
}
"""Activation functions by name (``gelu``: exact erf form, BERT; ``gelu_tanh``: GPT-2's tanh form;
``silu``: Llama's gated MLP)."""


class MLP(eqx.Module):
    """y = W₂ φ(W₁ x + b₁) + b₂ per token, without the residual (theory: docs/theory/clouds.md §6.2).

    Attributes:
        W1: (F, D). b1: (F,) or None. W2: (D, F). b2: (D,) or None. activation: name in :data:`ACTIVATIONS`.
    """

    W1: jax.Array
    W2: jax.Array
    b1: jax.Array | None = None
    b2: jax.Array | None = None
    activation: str = eqx.field(default="gelu", static=True)

    def __call__(self, X):
        from attnphys.clouds.norms._base import check_cloud

        check_cloud(X, "X", self.W1.shape[-1])
        Z = X @ self.W1.T
        if self.b1 is not None:
            Z = Z + self.b1
        Y = ACTIVATIONS[self.activation](Z) @ self.W2.T
        return Y if self.b2 is None else Y + self.b2


class GatedMLP(eqx.Module):
    """y = W_d (φ(W_g x) ⊙ W_u x) per token (Llama family; φ = SiLU), without the residual
    (theory: docs/theory/clouds.md §6.2).

    Attributes:
        Wg, Wu: (F, D) gate and up projections. Wd: (D, F) down projection.
    """

    Wg: jax.Array
    Wu: jax.Array
    Wd: jax.Array
    activation: str = eqx.field(default="silu", static=True)

    def __call__(self, X):
        from attnphys.clouds.norms._base import check_cloud

        check_cloud(X, "X", self.Wg.shape[-1])
        return (ACTIVATIONS[self.activation](X @ self.Wg.T) * (X @ self.Wu.T)) @ self.Wd.T


@checked
def random_mlp(
    key, dim: int, hidden: int | None = None, std: float | None = None, activation: str = "gelu", dtype=None
) -> MLP:
    """An MLP with i.i.d. N(0, std²) weights and zero biases, hidden width 4D by default and std
    1/√D for W₁, 1/√F for W₂ by default (theory: docs/theory/clouds.md §6.2)."""
    hidden = hidden or 4 * dim
    dtype = dtype or jnp.result_type(float)
    k1, k2 = jax.random.split(key)
    s1 = std if std is not None else dim**-0.5
    s2 = std if std is not None else hidden**-0.5
    return MLP(
        s1 * jax.random.normal(k1, (hidden, dim), dtype),
        s2 * jax.random.normal(k2, (dim, hidden), dtype),
        activation=activation,
    )


__all__ = ["ACTIVATIONS", "MLP", "GatedMLP", "random_mlp"]
