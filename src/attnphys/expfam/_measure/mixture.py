"""The Gaussian mixture with a shared covariance (theory: docs/theory/expfam.md §2.3)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.nn import logsumexp, softmax

from attnphys._checks import check_array, check_spd
from attnphys.expfam._measure.base import AbstractBaseMeasure, as_log_weights, check_eta, check_weights, random_spd


class GaussianMixture(AbstractBaseMeasure):
    """h = Σ_n π_n N(m_n, Σ) with one covariance Σ shared by the N components
    (theory: docs/theory/expfam.md §2.3; Prop. 2 of the paper).

    G(η) = ½ β² ηᵀΣη + log Σ_n π_n e^{β m_nᵀη};  p(· | η) = Σ_n r_n N(m_n + βΣη, Σ) with
    responsibilities r = softmax(β Mη + log π), so E[x] = βΣη + Σ_n r_n m_n: a Gaussian part and an
    attention part over the component means.

    Args:
        means: (N, D) component means m_n.
        cov: (D, D) shared covariance Σ.
        weights: (N,) mixture weights π summing to 1 (default uniform).
    """

    means: jax.Array  # (N, D)
    cov: jax.Array  # (D, D)
    log_weights: jax.Array  # (N,)

    def __init__(self, means, cov, weights=None):
        N, D = check_array(means, "means", ndim=2, what="N component means × D")
        check_array(cov, "cov", (D, D), what="the shared covariance Σ, D × D")
        check_spd(cov, "cov")
        check_weights(weights, N)
        self.means, self.cov = jnp.asarray(means), jnp.asarray(cov)
        self.log_weights = as_log_weights(weights, self.means.shape[0], self.means.dtype)

    @classmethod
    def example(cls, key, dim, n: int = 4):
        """n standard-normal means, a :func:`random_spd` covariance, random weights softmax(z), z standard
        normal (theory: docs/theory/expfam.md §5)."""
        k1, k2, k3 = jax.random.split(key, 3)
        return cls(jax.random.normal(k1, (n, dim)), random_spd(k2, dim), jax.nn.softmax(jax.random.normal(k3, (n,))))

    def responsibilities(self, eta, beta=1.0):
        """(N,) r_n = softmax(β m_nᵀη + log π_n), the components' weights in p(· | η)
        (theory: docs/theory/expfam.md §2.3)."""
        check_eta(eta, self.cov.shape[0], beta)
        return softmax(beta * self.means @ eta + self.log_weights)

    def log_normalizer(self, eta, beta=1.0):
        """G(η) = ½ β² ηᵀΣη + log Σ_n π_n e^{β m_nᵀη} (theory: docs/theory/expfam.md §2.3)."""
        check_eta(eta, self.cov.shape[0], beta)
        return 0.5 * beta**2 * eta @ self.cov @ eta + logsumexp(beta * self.means @ eta + self.log_weights)

    def mean(self, eta, beta=1.0):
        """E[x] = βΣη + Σ_n r_n m_n (theory: docs/theory/expfam.md §2.3)."""
        return beta * self.cov @ eta + self.responsibilities(eta, beta) @ self.means

    def fisher(self, eta, beta=1.0):
        """Cov[x] = Σ + Σ_n r_n (m_n − m̄)(m_n − m̄)ᵀ, m̄ = Σ_n r_n m_n (theory: docs/theory/expfam.md §2.3)."""
        r = self.responsibilities(eta, beta)
        c = self.means - r @ self.means
        return self.cov + (c * r[:, None]).T @ c

    def sample_base(self, key, n):
        """(n, D) draws from h, i.e. from p(· | 0) (theory: docs/theory/expfam.md §5)."""
        return self.sample(key, jnp.zeros(self.cov.shape[0], self.cov.dtype), n)

    def sample(self, key, eta, n, beta=1.0):
        """(n, D) draws: a component n ~ r, then N(m_n + βΣη, Σ) (theory: docs/theory/expfam.md §5)."""
        k1, k2 = jax.random.split(key)
        comp = jax.random.categorical(k1, beta * self.means @ eta + self.log_weights, shape=(n,))
        z = jax.random.multivariate_normal(k2, jnp.zeros(self.cov.shape[0], self.cov.dtype), self.cov, shape=(n,))
        return self.means[comp] + beta * self.cov @ eta + z
