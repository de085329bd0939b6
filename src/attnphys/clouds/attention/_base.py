"""The attention interface: scores, a normalization of the kernel, and values
(theory: docs/theory/clouds.md §2, docs/theory/particles.md §2)."""

from __future__ import annotations

import abc
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp


class AbstractAttention(eqx.Module):
    """Several heads of attention of a cloud on itself, without the residual.

    For tokens x_i (rows of X ∈ R^{N×D}) and head h, the scores are
    s^h_ij = β (Q_h x_i + b^q_h)·(K_h x_j + b^k_h), the weights P^h = normalize(s^h) (a variant per
    subclass: softmax rows, unnormalised exponential, Sinkhorn), and the output is
    A(X)_i = Σ_h O_h Σ_j P^h_ij (V_h x_j + b^v_h) + b^o (theory: docs/theory/particles.md §2.6).
    Any of Q, K, V, O left as None is the identity (then the head dimension is D), a missing bias is 0;
    with Q = K = V = O = I and one head, A(X)_i = Σ_j P_ij x_j, the attention of the papers
    (theory: docs/theory/clouds.md §2).

    Attributes:
        beta: inverse temperature β (e.g. 1/√d_h for a trained model's heads).
        Q, K: (H, d_k, D) query and key maps. V: (H, d_v, D) value maps. O: (H, D, d_v) output maps.
        bq, bk: (H, d_k) biases. bv: (H, d_v). bo: (D,).
        causal: token i attends to tokens j ≤ i only (theory: docs/theory/particles.md §2.4).
        heads: number of heads when every map is the identity (identical heads add up).

    Class attributes (the contract of the weights, read by the tests of every registered attention):
        name: the name in the registry (:data:`attnphys.clouds.registries.ATTENTIONS`).
        rows_sum_to_one: every row of P^h sums to 1 (each output a weighted mean of the values).
        columns_sum_to_one: every column of P^h sums to 1 too (doubly stochastic), up to the iterations.
        takes_causal_mask: a causal mask is accepted (masked weights are exactly 0); otherwise refused
            when the operator is built.

    Shapes: ``scores`` and ``weights`` (H, N, N), non-negative weights; ``__call__`` (N, D) → (N, D) of
    the same dtype.
    """

    beta: float | jax.Array = 1.0
    Q: jax.Array | None = None
    K: jax.Array | None = None
    V: jax.Array | None = None
    O: jax.Array | None = None
    bq: jax.Array | None = None
    bk: jax.Array | None = None
    bv: jax.Array | None = None
    bo: jax.Array | None = None
    causal: bool = eqx.field(default=False, static=True)
    heads: int = eqx.field(default=1, static=True)
    name: ClassVar[str]
    rows_sum_to_one: ClassVar[bool]
    columns_sum_to_one: ClassVar[bool] = False
    takes_causal_mask: ClassVar[bool] = True

    @abc.abstractmethod
    def normalize(self, S: jax.Array, mask: jax.Array | None) -> jax.Array:
        """Attention weights from scores.

        Args:
            S: (H, N, N) scores s_ij (β included). mask: (N, N) bool, True where j may be attended
                by i, or None (all).

        Returns:
            (H, N, N) weights P_ij.
        """

    @property
    def n_heads(self) -> int:
        for M in (self.Q, self.K, self.V, self.O):
            if M is not None:
                return M.shape[0]
        return self.heads

    def _maps(self, M, b, X):
        Y = X[None] if M is None else jnp.einsum("hkd,nd->hnk", M, X)
        return Y if b is None else Y + b[:, None, :]

    def mask(self, n: int) -> jax.Array | None:
        """(N, N) causal mask (j ≤ i) or None."""
        return jnp.tril(jnp.ones((n, n), bool)) if self.causal else None

    def scores(self, X: jax.Array) -> jax.Array:
        """(H, N, N) scores s^h_ij = β (Q_h x_i + b^q_h)·(K_h x_j + b^k_h) of the cloud X (N, D)."""
        from attnphys.clouds.norms._base import check_cloud

        D = self.Q.shape[-1] if self.Q is not None else self.K.shape[-1] if self.K is not None else None
        check_cloud(X, "X", D)
        q, k = self._maps(self.Q, self.bq, X), self._maps(self.K, self.bk, X)
        S = self.beta * jnp.einsum("hik,hjk->hij", q, k)
        H = self.n_heads
        return jnp.broadcast_to(S, (H,) + S.shape[1:]) if S.shape[0] != H else S

    def weights(self, X: jax.Array) -> jax.Array:
        """(H, N, N) attention weights P^h of the cloud X (N, D)."""
        return self.normalize(self.scores(X), self.mask(X.shape[0]))

    def __call__(self, X: jax.Array) -> jax.Array:
        """A(X): (N, D) output of the heads for the cloud X (N, D), without the residual."""
        P = self.weights(X)
        v = self._maps(self.V, self.bv, X)
        v = jnp.broadcast_to(v, (P.shape[0],) + v.shape[1:])
        ctx = jnp.einsum("hij,hjc->hic", P, v)
        out = jnp.sum(ctx, 0) if self.O is None else jnp.einsum("hdc,hnc->nd", self.O, ctx)
        return out if self.bo is None else out + self.bo
