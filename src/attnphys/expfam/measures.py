"""Base measures of the exponential family p(x | η) = h(x) exp(β xᵀη) / Z_β(η) (spec
``probabilistic-attention.md`` §1).

Every measure has one interface, with the scale (inverse temperature) β a first-class argument:

* ``log_normalizer(eta, beta)`` — G(η) = log Z_β(η) = log ∫ h(x) e^{β xᵀη} dx;
* ``mean(eta, beta)`` — E[x] = β⁻¹ ∇_η G (Prop. 1: attention averaging is this gradient);
* ``fisher(eta, beta)`` — Cov[x] = β⁻² ∇²_η G. (The paper writes the uncentred second moment; the
  Hessian of log Z is the covariance, which is what is implemented and tested.)
* ``sample_base(key, n)`` — x ~ h (normalised), for Monte-Carlo Z = E_h[e^{β xᵀη}];
* ``sample(key, eta, n, beta)`` — x ~ p(· | η);
* ``log_density_ratio``-free KL: see :mod:`attnphys.expfam.duality`.

All log-sum-exps are max-shifted (``jax.nn.logsumexp``). Arrays: η (D,), support/means (N, D),
covariances (D, D) or (N, D, D), weights (N,) summing to 1.
"""

from __future__ import annotations

from typing import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.nn import logsumexp, softmax


class BaseMeasure(eqx.Module):
    """Interface; subclasses implement ``log_normalizer``, ``mean``, ``fisher``, ``sample_base``, ``sample``."""

    def log_normalizer(self, eta, beta=1.0):
        raise NotImplementedError

    def mean(self, eta, beta=1.0):
        raise NotImplementedError

    def fisher(self, eta, beta=1.0):
        raise NotImplementedError

    def sample_base(self, key, n: int):
        raise NotImplementedError

    def sample(self, key, eta, n: int, beta=1.0):
        raise NotImplementedError


class Discrete(BaseMeasure):
    """h = Σ_n π_n δ_{x_n} (uniform π: softmax attention over keys x_n; Prop. 1(a)).

    G(η) = log Σ_n π_n e^{β x_nᵀη};  E[x] = Σ_n softmax(β x·η + log π)_n x_n.
    """

    points: jax.Array  # (N, D)
    log_weights: jax.Array  # (N,)

    def __init__(self, points, weights=None):
        self.points = jnp.asarray(points)
        n = self.points.shape[0]
        w = jnp.full(n, 1.0 / n, self.points.dtype) if weights is None else jnp.asarray(weights, self.points.dtype)
        self.log_weights = jnp.log(w)

    def probs(self, eta, beta=1.0):
        """p(x_n | η) = softmax(β x_nᵀη + log π_n): the attention weights."""
        return softmax(beta * self.points @ eta + self.log_weights)

    def log_normalizer(self, eta, beta=1.0):
        return logsumexp(beta * self.points @ eta + self.log_weights)

    def mean(self, eta, beta=1.0):
        return self.probs(eta, beta) @ self.points

    def fisher(self, eta, beta=1.0):
        p = self.probs(eta, beta)
        m = p @ self.points
        return (self.points * p[:, None]).T @ self.points - jnp.outer(m, m)

    def sample_base(self, key, n):
        return self.points[jax.random.categorical(key, self.log_weights, shape=(n,))]

    def sample(self, key, eta, n, beta=1.0):
        logits = beta * self.points @ eta + self.log_weights
        return self.points[jax.random.categorical(key, logits, shape=(n,))]


class Gaussian(BaseMeasure):
    """h = N(μ, Σ) (Cor. 1): G(η) = β μᵀη + ½ β² ηᵀΣη;  p(·|η) = N(μ + βΣη, Σ)."""

    mu: jax.Array
    cov: jax.Array

    def __init__(self, mu, cov):
        self.mu, self.cov = jnp.asarray(mu), jnp.asarray(cov)

    def log_normalizer(self, eta, beta=1.0):
        return beta * self.mu @ eta + 0.5 * beta**2 * eta @ self.cov @ eta

    def mean(self, eta, beta=1.0):
        return self.mu + beta * self.cov @ eta

    def fisher(self, eta, beta=1.0):
        return self.cov

    def sample_base(self, key, n):
        return jax.random.multivariate_normal(key, self.mu, self.cov, shape=(n,))

    def sample(self, key, eta, n, beta=1.0):
        return jax.random.multivariate_normal(key, self.mean(eta, beta), self.cov, shape=(n,))


class GaussianMixture(BaseMeasure):
    """h = Σ_n π_n N(μ_n, Σ) with a shared covariance (Prop. 2):

    G(η) = ½ β² ηᵀΣη + log Σ_n π_n e^{β μ_nᵀη};  E[x] = βΣη + Σ_n softmax(β μ·η + log π)_n μ_n.
    """

    means: jax.Array  # (N, D)
    cov: jax.Array  # (D, D)
    log_weights: jax.Array

    def __init__(self, means, cov, weights=None):
        self.means, self.cov = jnp.asarray(means), jnp.asarray(cov)
        n = self.means.shape[0]
        w = jnp.full(n, 1.0 / n) if weights is None else jnp.asarray(weights)
        self.log_weights = jnp.log(w).astype(self.means.dtype)

    def responsibilities(self, eta, beta=1.0):
        return softmax(beta * self.means @ eta + self.log_weights)

    def log_normalizer(self, eta, beta=1.0):
        return 0.5 * beta**2 * eta @ self.cov @ eta + logsumexp(beta * self.means @ eta + self.log_weights)

    def mean(self, eta, beta=1.0):
        return beta * self.cov @ eta + self.responsibilities(eta, beta) @ self.means

    def fisher(self, eta, beta=1.0):
        r = self.responsibilities(eta, beta)
        m = r @ self.means
        return self.cov + (self.means * r[:, None]).T @ self.means - jnp.outer(m, m)

    def sample_base(self, key, n):
        return self.sample(key, jnp.zeros(self.cov.shape[0], self.cov.dtype), n)  # η = 0 is the base measure

    def sample(self, key, eta, n, beta=1.0):
        k1, k2 = jax.random.split(key)
        comp = jax.random.categorical(k1, beta * self.means @ eta + self.log_weights, shape=(n,))
        z = jax.random.multivariate_normal(k2, jnp.zeros(self.cov.shape[0], self.cov.dtype), self.cov, shape=(n,))
        return self.means[comp] + beta * self.cov @ eta + z


class GaussianMixtureFull(BaseMeasure):
    """h = Σ_n π_n N(μ_n, Σ_n), Σ π_n = 1 (Prop. 3). Exact
    G(η) = log Σ_n π_n e^{β μ_nᵀη + ½β² ηᵀΣ_nη}; the tilted distribution is the mixture of
    N(μ_n + βΣ_nη, Σ_n) with weights r_n ∝ π_n e^{β μ_nᵀη + ½β² ηᵀΣ_nη}.
    Jensen lower bound G_LB(η) = Σ_n π_n (β μ_nᵀη + ½β² ηᵀΣ_nη) ≤ G(η)."""

    means: jax.Array  # (N, D)
    covs: jax.Array  # (N, D, D)
    log_weights: jax.Array

    def __init__(self, means, covs, weights=None):
        self.means, self.covs = jnp.asarray(means), jnp.asarray(covs)
        n = self.means.shape[0]
        w = jnp.full(n, 1.0 / n) if weights is None else jnp.asarray(weights)
        self.log_weights = jnp.log(w).astype(self.means.dtype)

    def _logits(self, eta, beta):
        quad = jnp.einsum("d,nde,e->n", eta, self.covs, eta)
        return self.log_weights + beta * self.means @ eta + 0.5 * beta**2 * quad

    def responsibilities(self, eta, beta=1.0):
        return softmax(self._logits(eta, beta))

    def component_means(self, eta, beta=1.0):
        return self.means + beta * jnp.einsum("nde,e->nd", self.covs, eta)

    def log_normalizer(self, eta, beta=1.0):
        return logsumexp(self._logits(eta, beta))

    def mean(self, eta, beta=1.0):
        return self.responsibilities(eta, beta) @ self.component_means(eta, beta)

    def fisher(self, eta, beta=1.0):
        r = self.responsibilities(eta, beta)
        mn = self.component_means(eta, beta)
        m = r @ mn
        return jnp.einsum("n,nde->de", r, self.covs) + (mn * r[:, None]).T @ mn - jnp.outer(m, m)

    def lower_bound(self, eta, beta=1.0):
        """Jensen: G_LB = Σ π_n (β μ_nᵀη + ½ β² ηᵀΣ_nη) ≤ G."""
        w = jnp.exp(self.log_weights)
        quad = jnp.einsum("d,nde,e->n", eta, self.covs, eta)
        return w @ (beta * self.means @ eta + 0.5 * beta**2 * quad)

    def lower_bound_grad(self, eta, beta=1.0):
        """∇G_LB = Σ π_n (β μ_n + β² Σ_n η)  (Prop. 3 at β = 1: Σ π_n (μ_n + Σ_n η))."""
        w = jnp.exp(self.log_weights)
        return w @ (beta * self.means + beta**2 * jnp.einsum("nde,e->nd", self.covs, eta))

    def _sample_mixture(self, key, logits, means, n):
        k1, k2 = jax.random.split(key)
        comp = jax.random.categorical(k1, logits, shape=(n,))
        chol = jnp.linalg.cholesky(self.covs)
        z = jax.random.normal(k2, (n, self.means.shape[1]), self.means.dtype)
        return means[comp] + jnp.einsum("nde,ne->nd", chol[comp], z)

    def sample_base(self, key, n):
        return self._sample_mixture(key, self.log_weights, self.means, n)

    def sample(self, key, eta, n, beta=1.0):
        return self._sample_mixture(key, self._logits(eta, beta), self.component_means(eta, beta), n)


class ExpFamilyBase(BaseMeasure):
    """Base measure that is itself an exponential family p₀(x | η₁, η₂) with u₁(x) = x (Prop. 1(b)):

    G(η) = log Z₀(η₁ + βη, η₂) − log Z₀(η₁, η₂);  E[x] = E_{p₀(·|η₁+βη, η₂)}[x] = ∇_{η₁} log Z₀.

    ``log_partition(eta1, eta2)`` is the family's log Z₀; mean and Fisher follow by autodiff. An
    optional ``sampler(key, eta1, eta2, n)`` draws from p₀. :func:`gaussian_natural` builds the Gaussian
    family in natural parameters (η₁ = Λμ, η₂ = Λ).
    """

    log_partition: Callable = eqx.field(static=True)
    eta1: jax.Array
    eta2: jax.Array
    sampler: Callable | None = eqx.field(static=True, default=None)

    def log_normalizer(self, eta, beta=1.0):
        return self.log_partition(self.eta1 + beta * eta, self.eta2) - self.log_partition(self.eta1, self.eta2)

    def mean(self, eta, beta=1.0):
        return jax.grad(self.log_partition)(self.eta1 + beta * eta, self.eta2)

    def fisher(self, eta, beta=1.0):
        return jax.hessian(self.log_partition)(self.eta1 + beta * eta, self.eta2)

    def sample_base(self, key, n):
        return self.sampler(key, self.eta1, self.eta2, n)

    def sample(self, key, eta, n, beta=1.0):
        return self.sampler(key, self.eta1 + beta * eta, self.eta2, n)


def gaussian_log_partition(eta1, precision):
    """log Z₀ of N in natural parameters (η₁ = Λμ, Λ): ½ η₁ᵀΛ⁻¹η₁ − ½ log det Λ + (D/2) log 2π."""
    D = eta1.shape[0]
    return 0.5 * eta1 @ jnp.linalg.solve(precision, eta1) - 0.5 * jnp.linalg.slogdet(precision)[1] + 0.5 * D * jnp.log(2 * jnp.pi)


def gaussian_natural_sampler(key, eta1, precision, n):
    cov = jnp.linalg.inv(precision)
    return jax.random.multivariate_normal(key, cov @ eta1, cov, shape=(n,))


def gaussian_natural(mu, cov) -> ExpFamilyBase:
    """The Gaussian N(μ, Σ) as an exponential-family base measure (Prop. 1(b) ≡ Cor. 1)."""
    precision = jnp.linalg.inv(jnp.asarray(cov))
    return ExpFamilyBase(gaussian_log_partition, precision @ jnp.asarray(mu), precision, gaussian_natural_sampler)
