"""The Gaussian mixture with per-component covariances, and its Jensen bound
(theory: docs/theory/expfam.md §2.4)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.nn import logsumexp, softmax

from attnphys._checks import check_array, check_spd, is_concrete
from attnphys.expfam._measure.base import AbstractBaseMeasure, as_log_weights, check_eta, check_weights, random_spd


class GaussianMixtureFull(AbstractBaseMeasure):
    """h = Σ_n π_n N(m_n, Σ_n), Σ_n π_n = 1 (theory: docs/theory/expfam.md §2.4; Prop. 3 of the paper).

    Exact: G(η) = log Σ_n π_n e^{β m_nᵀη + ½ β² ηᵀΣ_nη}; p(· | η) = Σ_n r_n N(m_n + βΣ_nη, Σ_n) with
    r = softmax of the exponents. Jensen lower bound: G_LB(η) = Σ_n π_n (β m_nᵀη + ½ β² ηᵀΣ_nη) ≤ G(η),
    see :meth:`lower_bound`.

    Args:
        means: (N, D) component means m_n.
        covs: (N, D, D) component covariances Σ_n.
        weights: (N,) mixture weights π summing to 1 (default uniform).
    """

    means: jax.Array  # (N, D)
    covs: jax.Array  # (N, D, D)
    log_weights: jax.Array  # (N,)

    def __init__(self, means, covs, weights=None):
        N, D = check_array(means, "means", ndim=2, what="N component means × D")
        check_array(covs, "covs", (N, D, D), what="one D × D covariance per component")
        if is_concrete(covs):
            for i in range(N):
                check_spd(jnp.asarray(covs)[i], f"covs[{i}]")
        check_weights(weights, N)
        self.means, self.covs = jnp.asarray(means), jnp.asarray(covs)
        self.log_weights = as_log_weights(weights, self.means.shape[0], self.means.dtype)

    @classmethod
    def example(cls, key, dim, n: int = 4):
        """n standard-normal means, n :func:`random_spd` covariances, random weights softmax(z), z standard
        normal (theory: docs/theory/expfam.md §5)."""
        k1, k2, k3 = jax.random.split(key, 3)
        covs = jax.vmap(lambda k: random_spd(k, dim))(jax.random.split(k2, n))
        return cls(jax.random.normal(k1, (n, dim)), covs, jax.nn.softmax(jax.random.normal(k3, (n,))))

    def _exponents(self, eta, beta):
        check_eta(eta, self.means.shape[1], beta)
        quad = jnp.einsum("d,nde,e->n", eta, self.covs, eta)
        return beta * self.means @ eta + 0.5 * beta**2 * quad

    def responsibilities(self, eta, beta=1.0):
        """(N,) r_n = softmax(log π_n + β m_nᵀη + ½ β² ηᵀΣ_nη) (theory: docs/theory/expfam.md §2.4)."""
        return softmax(self.log_weights + self._exponents(eta, beta))

    def component_means(self, eta, beta=1.0):
        """(N, D) the tilted components' means m_n + βΣ_nη (theory: docs/theory/expfam.md §2.4)."""
        return self.means + beta * jnp.einsum("nde,e->nd", self.covs, eta)

    def log_normalizer(self, eta, beta=1.0):
        """G(η) = log Σ_n π_n e^{β m_nᵀη + ½ β² ηᵀΣ_nη}, max-shifted (theory: docs/theory/expfam.md §2.4)."""
        return logsumexp(self.log_weights + self._exponents(eta, beta))

    def mean(self, eta, beta=1.0):
        """E[x] = Σ_n r_n (m_n + βΣ_nη) (theory: docs/theory/expfam.md §2.4)."""
        return self.responsibilities(eta, beta) @ self.component_means(eta, beta)

    def fisher(self, eta, beta=1.0):
        """Cov[x] = Σ_n r_n Σ_n + Σ_n r_n (m'_n − m̄)(m'_n − m̄)ᵀ with m'_n = m_n + βΣ_nη, m̄ = Σ r_n m'_n
        by the law of total covariance (theory: docs/theory/expfam.md §2.4)."""
        r = self.responsibilities(eta, beta)
        c = self.component_means(eta, beta)
        c = c - r @ c
        return jnp.einsum("n,nde->de", r, self.covs) + (c * r[:, None]).T @ c

    def lower_bound(self, eta, beta=1.0):
        """Jensen: G_LB(η) = Σ_n π_n (β m_nᵀη + ½ β² ηᵀΣ_nη) ≤ G(η) (theory: docs/theory/expfam.md §2.4).

        Returns:
            () the bound.
        """
        return jnp.exp(self.log_weights) @ self._exponents(eta, beta)

    def lower_bound_grad(self, eta, beta=1.0):
        """∇G_LB(η) = Σ_n π_n (β m_n + β² Σ_nη), at β = 1 the paper's Prop. 3 Σ_n π_n (m_n + Σ_nη)
        (theory: docs/theory/expfam.md §2.4).

        Returns:
            (D,) the gradient.
        """
        w = jnp.exp(self.log_weights)
        return w @ (beta * self.means + beta**2 * jnp.einsum("nde,e->nd", self.covs, eta))

    def _sample_mixture(self, key, logits, means, n):
        k1, k2 = jax.random.split(key)
        comp = jax.random.categorical(k1, logits, shape=(n,))
        chol = jnp.linalg.cholesky(self.covs)
        z = jax.random.normal(k2, (n, self.means.shape[1]), self.means.dtype)
        return means[comp] + jnp.einsum("nde,ne->nd", chol[comp], z)

    def sample_base(self, key, n):
        """(n, D) draws from h (theory: docs/theory/expfam.md §5)."""
        return self._sample_mixture(key, self.log_weights, self.means, n)

    def sample(self, key, eta, n, beta=1.0):
        """(n, D) draws: a component n ~ r, then N(m_n + βΣ_nη, Σ_n) (theory: docs/theory/expfam.md §5)."""
        return self._sample_mixture(
            key, self.log_weights + self._exponents(eta, beta), self.component_means(eta, beta), n
        )
