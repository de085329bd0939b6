"""The Gaussian base measure (theory: docs/theory/expfam.md §2.2)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from attnphys._checks import check_array, check_spd
from attnphys.expfam._measure.base import AbstractBaseMeasure, check_eta, random_spd


class Gaussian(AbstractBaseMeasure):
    """h = N(m, Σ) (theory: docs/theory/expfam.md §2.2; Cor. 1 of the paper).

    G(η) = β mᵀη + ½ β² ηᵀΣη;  p(· | η) = N(m + βΣη, Σ): tilting moves the mean and keeps the covariance.

    Args:
        mu: (D,) mean m of the base measure.
        cov: (D, D) covariance Σ (symmetric positive definite).
    """

    mu: jax.Array  # (D,)
    cov: jax.Array  # (D, D)

    def __init__(self, mu, cov):
        D = check_array(mu, "mu", ndim=1, what="the mean m")[0]
        check_array(cov, "cov", (D, D), what="the covariance Σ, D × D")
        check_spd(cov, "cov")
        self.mu, self.cov = jnp.asarray(mu), jnp.asarray(cov)

    @classmethod
    def example(cls, key, dim):
        """Standard-normal mean, covariance from :func:`random_spd` (theory: docs/theory/expfam.md §5)."""
        k1, k2 = jax.random.split(key)
        return cls(jax.random.normal(k1, (dim,)), random_spd(k2, dim))

    def log_normalizer(self, eta, beta=1.0):
        """G(η) = β mᵀη + ½ β² ηᵀΣη (theory: docs/theory/expfam.md §2.2)."""
        check_eta(eta, self.mu.shape[0], beta)
        return beta * self.mu @ eta + 0.5 * beta**2 * eta @ self.cov @ eta

    def mean(self, eta, beta=1.0):
        """E[x] = m + βΣη (theory: docs/theory/expfam.md §2.2)."""
        check_eta(eta, self.mu.shape[0], beta)
        return self.mu + beta * self.cov @ eta

    def fisher(self, eta, beta=1.0):
        """Cov[x] = Σ, whatever η (theory: docs/theory/expfam.md §2.2)."""
        return self.cov

    def sample_base(self, key, n):
        """(n, D) draws from N(m, Σ) (theory: docs/theory/expfam.md §5)."""
        return jax.random.multivariate_normal(key, self.mu, self.cov, shape=(n,))

    def sample(self, key, eta, n, beta=1.0):
        """(n, D) draws from N(m + βΣη, Σ) (theory: docs/theory/expfam.md §5)."""
        return jax.random.multivariate_normal(key, self.mean(eta, beta), self.cov, shape=(n,))

    def conjugate_at(self, eta, beta=1.0):
        """G*(∇G(η)) = ½ β² ηᵀΣη = KL(N(m + βΣη, Σ) ‖ N(m, Σ)) (theory: docs/theory/expfam.md §4.2);
        for an arbitrary μ see :func:`attnphys.expfam.conjugate_gaussian`."""
        check_eta(eta, self.mu.shape[0], beta)
        return 0.5 * beta**2 * eta @ self.cov @ eta
