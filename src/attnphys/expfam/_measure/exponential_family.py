"""A base measure that is itself an exponential family (theory: docs/theory/expfam.md §2.5)."""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp

from attnphys.expfam._measure.base import AbstractBaseMeasure, random_spd


class ExpFamilyBase(AbstractBaseMeasure):
    """h = p₀(x | η₁, η₂) ∝ h₀(x) e^{η₁ᵀx + η₂ᵀu₂(x)}, a member of an exponential family whose first
    sufficient statistic is u₁(x) = x (theory: docs/theory/expfam.md §2.5; Prop. 1(b) of the paper).

    Tilting only shifts η₁:  G(η) = log Z₀(η₁ + βη, η₂) − log Z₀(η₁, η₂),  p(· | η) = p₀(· | η₁ + βη, η₂),
    so E[x] = ∇_{η₁} log Z₀(η₁ + βη, η₂) and Cov[x] = ∇²_{η₁} log Z₀, both by autodiff of ``log_partition``.

    Args:
        log_partition: ``(eta1 (D,), eta2) -> ()`` the family's log Z₀ (differentiable in ``eta1``).
        eta1: (D,) natural parameter paired with x.
        eta2: the remaining natural parameters (any pytree ``log_partition`` accepts).
        sampler: optional ``(key, eta1, eta2, n) -> (n, D)`` drawing from p₀(· | η₁, η₂).
    """

    log_partition: Callable = eqx.field(static=True)
    eta1: jax.Array
    eta2: jax.Array
    sampler: Callable | None = eqx.field(static=True, default=None)

    @classmethod
    def example(cls, key, dim):
        """The Gaussian family N(m, Σ) in natural parameters (:func:`gaussian_natural`), random m and Σ
        (theory: docs/theory/expfam.md §5)."""
        k1, k2 = jax.random.split(key)
        return gaussian_natural(jax.random.normal(k1, (dim,)), random_spd(k2, dim))

    def log_normalizer(self, eta, beta=1.0):
        """G(η) = log Z₀(η₁ + βη, η₂) − log Z₀(η₁, η₂) (theory: docs/theory/expfam.md §2.5)."""
        return self.log_partition(self.eta1 + beta * eta, self.eta2) - self.log_partition(self.eta1, self.eta2)

    def mean(self, eta, beta=1.0):
        """E[x] = ∇_{η₁} log Z₀(η₁ + βη, η₂), by autodiff (theory: docs/theory/expfam.md §2.5)."""
        return jax.grad(self.log_partition)(self.eta1 + beta * eta, self.eta2)

    def fisher(self, eta, beta=1.0):
        """Cov[x] = ∇²_{η₁} log Z₀(η₁ + βη, η₂), by autodiff (theory: docs/theory/expfam.md §2.5)."""
        return jax.hessian(self.log_partition)(self.eta1 + beta * eta, self.eta2)

    def _sampler(self):
        if self.sampler is None:
            raise NotImplementedError("this ExpFamilyBase has no sampler: pass sampler=(key, eta1, eta2, n) -> (n, D)")
        return self.sampler

    def sample_base(self, key, n):
        """(n, D) draws from p₀(· | η₁, η₂) (theory: docs/theory/expfam.md §5)."""
        return self._sampler()(key, self.eta1, self.eta2, n)

    def sample(self, key, eta, n, beta=1.0):
        """(n, D) draws from p₀(· | η₁ + βη, η₂) (theory: docs/theory/expfam.md §5)."""
        return self._sampler()(key, self.eta1 + beta * eta, self.eta2, n)


def gaussian_log_partition(eta1, precision):
    """log Z₀(η₁, Λ) = ½ η₁ᵀΛ⁻¹η₁ − ½ log det Λ + (D/2) log 2π, the Gaussian family N(Λ⁻¹η₁, Λ⁻¹) with
    η₁ = Λm paired with x and the precision Λ standing for the second natural parameter −½Λ
    (theory: docs/theory/expfam.md §2.5).

    Args:
        eta1: (D,) natural parameter Λm.
        precision: (D, D) precision matrix Λ.

    Returns:
        () log Z₀.
    """
    D = eta1.shape[0]
    return (
        0.5 * eta1 @ jnp.linalg.solve(precision, eta1)
        - 0.5 * jnp.linalg.slogdet(precision)[1]
        + 0.5 * D * jnp.log(2 * jnp.pi)
    )


def gaussian_natural_sampler(key, eta1, precision, n):
    """(n, D) draws from N(Λ⁻¹η₁, Λ⁻¹) (theory: docs/theory/expfam.md §2.5)."""
    cov = jnp.linalg.inv(precision)
    return jax.random.multivariate_normal(key, cov @ eta1, cov, shape=(n,))


def gaussian_natural(mu, cov) -> ExpFamilyBase:
    """The Gaussian N(m, Σ) as an exponential-family base measure, η₁ = Σ⁻¹m, η₂ = Λ = Σ⁻¹: Prop. 1(b)
    reproduces :class:`Gaussian` (Cor. 1) through autodiff of log Z₀ (theory: docs/theory/expfam.md §2.5).

    Args:
        mu: (D,) mean m.
        cov: (D, D) covariance Σ.
    """
    precision = jnp.linalg.inv(jnp.asarray(cov))
    return ExpFamilyBase(gaussian_log_partition, precision @ jnp.asarray(mu), precision, gaussian_natural_sampler)
