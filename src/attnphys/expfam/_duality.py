"""Duality of the log-normalizer: Bregman divergence, KL, convex conjugate, entropy
(theory: docs/theory/expfam.md §4).

Argument order (the paper is loose here; this is the correct one):

    B_G(η₁, η₂) = G(η₁) − G(η₂) − ∇G(η₂)ᵀ(η₁ − η₂) = KL(p(·|η₂) ‖ p(·|η₁)),

with G = log Z_β and ∇G = β E[x]. The conjugate G*(μ) = sup_η (ηᵀμ − G(η)) is attained at μ = ∇G(η),
where it equals KL(p(·|η) ‖ h).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize

from attnphys.expfam._measure.base import AbstractBaseMeasure
from attnphys.expfam._measure.discrete import Discrete
from attnphys.expfam._measure.gaussian import Gaussian


def grad_log_normalizer(m: AbstractBaseMeasure, eta, beta=1.0):
    """∇_η G(η) = β E_{p(·|η)}[x] (theory: docs/theory/expfam.md §3).

    Args:
        m: base measure.
        eta: (D,) natural parameter.
        beta: scale.

    Returns:
        (D,) the gradient.
    """
    return m.grad_log_normalizer(eta, beta)


def bregman(m: AbstractBaseMeasure, eta1, eta2, beta=1.0):
    """B_G(η₁, η₂) = G(η₁) − G(η₂) − ∇G(η₂)ᵀ(η₁ − η₂) = KL(p(·|η₂) ‖ p(·|η₁)): the distribution at the
    expansion point η₂ comes first in the KL (theory: docs/theory/expfam.md §4.1).

    Args:
        m: base measure.
        eta1: (D,) natural parameter of the second distribution of the KL.
        eta2: (D,) the linearisation point, natural parameter of the first distribution of the KL.
        beta: scale.

    Returns:
        () the divergence (≥ 0).
    """
    return (
        m.log_normalizer(eta1, beta) - m.log_normalizer(eta2, beta) - m.grad_log_normalizer(eta2, beta) @ (eta1 - eta2)
    )


def kl_discrete(m: Discrete, eta_p, eta_q, beta=1.0):
    """KL(p(·|η_p) ‖ p(·|η_q)) = Σ_n p_n log(p_n / q_n), directly from the two attention distributions
    (theory: docs/theory/expfam.md §4.1).

    Returns:
        () the divergence.
    """
    lp = jax.nn.log_softmax(m.logits(eta_p, beta))
    lq = jax.nn.log_softmax(m.logits(eta_q, beta))
    return jnp.sum(jnp.exp(lp) * (lp - lq))


def kl_gaussian(m: Gaussian, eta_p, eta_q, beta=1.0):
    """KL(N(m_p, Σ) ‖ N(m_q, Σ)) = ½ (m_p − m_q)ᵀΣ⁻¹(m_p − m_q) between the tilted Gaussians,
    m_· = m + βΣη_· (theory: docs/theory/expfam.md §4.1). Symmetric in its arguments, unlike the
    general case.

    Returns:
        () the divergence.
    """
    d = m.mean(eta_p, beta) - m.mean(eta_q, beta)
    return 0.5 * d @ jnp.linalg.solve(m.cov, d)


def conjugate_numeric(m: AbstractBaseMeasure, mu, beta=1.0, eta0=None) -> tuple[float, np.ndarray]:
    """G*(μ) = sup_η (ηᵀμ − G(η)), by L-BFGS on the concave objective with autodiff gradients of G
    (theory: docs/theory/expfam.md §4.2).

    Args:
        m: base measure.
        mu: (D,) dual point.
        beta: scale.
        eta0: (D,) starting point of the optimiser (default 0).

    Returns:
        (value, maximiser η* (D,)). The supremum is infinite when μ/β lies outside the closure of the
        convex hull of h's support (e.g. for :class:`Discrete`); the optimiser then stops at a large value.
    """
    mu = jnp.asarray(mu)
    f = jax.jit(jax.value_and_grad(lambda e: m.log_normalizer(e, beta) - e @ mu))

    def obj(e):
        v, g = f(jnp.asarray(e, mu.dtype))
        return float(v), np.asarray(g, dtype=np.float64)

    x0 = np.zeros(mu.shape[0]) if eta0 is None else np.asarray(eta0)
    res = scipy.optimize.minimize(
        obj, x0, jac=True, method="L-BFGS-B", options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10_000}
    )
    return -float(res.fun), res.x


def conjugate_discrete(m: Discrete, eta, beta=1.0):
    """Closed form at μ = ∇G(η): G*(μ) = Σ_n p_n log(p_n / π_n), the entropy of the attention weights
    relative to the base weights (theory: docs/theory/expfam.md §4.2). Same as ``m.conjugate_at``.

    Returns:
        () the conjugate.
    """
    return m.conjugate_at(eta, beta)


def conjugate_gaussian(m: Gaussian, mu, beta=1.0):
    """Closed form for any μ: G*(μ) = ½ (μ/β − m)ᵀΣ⁻¹(μ/β − m), m the base mean
    (theory: docs/theory/expfam.md §4.2).

    Returns:
        () the conjugate.
    """
    d = mu / beta - m.mu
    return 0.5 * d @ jnp.linalg.solve(m.cov, d)


def entropy_discrete(m: Discrete, eta, beta=1.0):
    """Shannon entropy of the attention distribution, H = −Σ_n p_n log p_n
    (theory: docs/theory/expfam.md §4.3).

    Returns:
        () the entropy (nats).
    """
    lp = jax.nn.log_softmax(m.logits(eta, beta))
    return -jnp.sum(jnp.exp(lp) * lp)


def entropy_gaussian(m: Gaussian, eta=None, beta=1.0):
    """Differential entropy of the tilted Gaussian, H = ½ log det(2πe Σ), independent of η
    (theory: docs/theory/expfam.md §4.3).

    Returns:
        () the entropy (nats).
    """
    D = m.cov.shape[0]
    return 0.5 * (D * jnp.log(2 * jnp.pi * jnp.e) + jnp.linalg.slogdet(m.cov)[1])
