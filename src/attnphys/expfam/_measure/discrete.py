"""The discrete base measure: softmax attention (theory: docs/theory/expfam.md §2.1)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.nn import log_softmax, logsumexp, softmax

from attnphys._checks import check_array
from attnphys.errors import InputError
from attnphys.expfam._measure.base import AbstractBaseMeasure, as_log_weights, check_eta, check_weights


class Discrete(AbstractBaseMeasure):
    """h = Σ_n π_n δ_{x_n} on N support points (keys) x_n (theory: docs/theory/expfam.md §2.1).

    G(η) = log Σ_n π_n e^{β x_nᵀη},  p(x_n | η) = softmax(β Xη + log π)_n,  E[x] = Σ_n p_n x_n.
    With uniform π and η = q a query, p(x_n | q) are the attention weights and E[x] = β⁻¹∇_q G(q) is
    the attention output over the keys (Prop. 1(a) of the paper).

    Args:
        points: (N, D) support points.
        weights: (N,) weights π summing to 1 (default uniform).
    """

    points: jax.Array  # (N, D)
    log_weights: jax.Array  # (N,)

    def __init__(self, points, weights=None):
        N = check_array(points, "points", ndim=2, what="N support points × D")[0]
        if N < 1:
            raise InputError("needs at least one support point", "points")
        check_weights(weights, N)
        self.points = jnp.asarray(points)
        self.log_weights = as_log_weights(weights, self.points.shape[0], self.points.dtype)

    @classmethod
    def example(cls, key, dim, n: int = 7):
        """n standard-normal points in ℝ^dim with random weights softmax(z), z standard normal
        (theory: docs/theory/expfam.md §5)."""
        k1, k2 = jax.random.split(key)
        return cls(jax.random.normal(k1, (n, dim)), jax.nn.softmax(jax.random.normal(k2, (n,))))

    def logits(self, eta, beta=1.0):
        """(N,) β x_nᵀη + log π_n, the attention scores (theory: docs/theory/expfam.md §2.1)."""
        check_eta(eta, self.points.shape[1], beta)
        return beta * self.points @ eta + self.log_weights

    def probs(self, eta, beta=1.0):
        """(N,) p(x_n | η) = softmax(β x_nᵀη + log π_n): the attention weights
        (theory: docs/theory/expfam.md §2.1)."""
        return softmax(self.logits(eta, beta))

    def log_normalizer(self, eta, beta=1.0):
        """G(η) = log Σ_n π_n e^{β x_nᵀη}, max-shifted (theory: docs/theory/expfam.md §2.1)."""
        return logsumexp(self.logits(eta, beta))

    def mean(self, eta, beta=1.0):
        """E[x] = Σ_n p_n x_n, the attention output (theory: docs/theory/expfam.md §2.1)."""
        return self.probs(eta, beta) @ self.points

    def fisher(self, eta, beta=1.0):
        """Σ_n p_n (x_n − m)(x_n − m)ᵀ, m = E[x] (theory: docs/theory/expfam.md §3)."""
        p = self.probs(eta, beta)
        c = self.points - p @ self.points
        return (c * p[:, None]).T @ c

    def sample_base(self, key, n):
        """(n, D) support points drawn with probabilities π (theory: docs/theory/expfam.md §5)."""
        return self.points[jax.random.categorical(key, self.log_weights, shape=(n,))]

    def sample(self, key, eta, n, beta=1.0):
        """(n, D) support points drawn with the attention weights p(x_n | η) (theory: docs/theory/expfam.md §5)."""
        return self.points[jax.random.categorical(key, self.logits(eta, beta), shape=(n,))]

    def conjugate_at(self, eta, beta=1.0):
        """G*(∇G(η)) = Σ_n p_n log(p_n / π_n): the relative entropy of the attention weights to the base
        weights, computed from the probabilities alone (theory: docs/theory/expfam.md §4.2)."""
        lp = log_softmax(self.logits(eta, beta))
        return jnp.sum(jnp.exp(lp) * (lp - self.log_weights))
