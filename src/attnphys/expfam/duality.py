"""Duality of the log-normalizer: Bregman divergence, KL, convex conjugate, entropy (spec
``probabilistic-attention.md`` §2).

Argument order (the paper is loose; this is the correct one):

    B_G(η₁, η₂) = G(η₁) − G(η₂) − ∇G(η₂)ᵀ(η₁ − η₂) = KL(p(·|η₂) ‖ p(·|η₁)),

with G = log Z_β and ∇G = β E[x]. The conjugate G*(μ) = sup_η (ηᵀμ − G(η)) is attained at μ = ∇G(η);
for the discrete (attention) measure it is Σ p log(p/π), the negative entropy of the attention
distribution relative to the base weights; for the Gaussian it is ½ (μ/β − m)ᵀ Σ⁻¹ (μ/β − m).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize

from attnphys.expfam.measures import BaseMeasure, Discrete, Gaussian


def grad_log_normalizer(m: BaseMeasure, eta, beta=1.0):
    """∇_η G(η) = β E[x]."""
    return beta * m.mean(eta, beta)


def bregman(m: BaseMeasure, eta1, eta2, beta=1.0):
    """B_G(η₁, η₂) = G(η₁) − G(η₂) − ∇G(η₂)ᵀ(η₁ − η₂)  (= KL(p_{η₂} ‖ p_{η₁}))."""
    return (m.log_normalizer(eta1, beta) - m.log_normalizer(eta2, beta)
            - grad_log_normalizer(m, eta2, beta) @ (eta1 - eta2))


def kl_discrete(m: Discrete, eta_p, eta_q, beta=1.0):
    """KL(p(·|η_p) ‖ p(·|η_q)) computed directly from the two attention distributions."""
    lp = jax.nn.log_softmax(beta * m.points @ eta_p + m.log_weights)
    lq = jax.nn.log_softmax(beta * m.points @ eta_q + m.log_weights)
    return jnp.sum(jnp.exp(lp) * (lp - lq))


def kl_gaussian(m: Gaussian, eta_p, eta_q, beta=1.0):
    """KL between the tilted Gaussians N(μ + βΣη_p, Σ) and N(μ + βΣη_q, Σ) (closed form)."""
    d = m.mean(eta_p, beta) - m.mean(eta_q, beta)
    return 0.5 * d @ jnp.linalg.solve(m.cov, d)


def kl_monte_carlo(m: BaseMeasure, eta_p, eta_q, key, n: int = 200_000, beta=1.0):
    """KL(p_p ‖ p_q) = E_{p_p}[log p_p(x) − log p_q(x)] = β (η_p − η_q)ᵀ E_{p_p}[x] − G(η_p) + G(η_q),
    with E_{p_p}[x] estimated from samples of the tilted distribution (h cancels)."""
    x = m.sample(key, eta_p, n, beta)
    return beta * (eta_p - eta_q) @ jnp.mean(x, axis=0) - m.log_normalizer(eta_p, beta) + m.log_normalizer(eta_q, beta)


def conjugate_numeric(m: BaseMeasure, mu, beta=1.0, eta0=None) -> tuple[float, np.ndarray]:
    """G*(μ) = sup_η (ηᵀμ − G(η)) by L-BFGS on the concave objective (gradient by autodiff).

    Returns (value, maximiser η*)."""
    mu = jnp.asarray(mu)
    f = jax.jit(jax.value_and_grad(lambda e: m.log_normalizer(e, beta) - e @ mu))

    def obj(e):
        v, g = f(jnp.asarray(e, mu.dtype))
        return float(v), np.asarray(g, dtype=np.float64)

    x0 = np.zeros(mu.shape[0]) if eta0 is None else np.asarray(eta0)
    res = scipy.optimize.minimize(obj, x0, jac=True, method="L-BFGS-B", options={"gtol": 1e-12, "ftol": 1e-15,
                                                                                  "maxiter": 10_000})
    return -float(res.fun), res.x


def conjugate_discrete(m: Discrete, eta, beta=1.0):
    """Closed form at μ = ∇G(η): G*(μ) = Σ_n p_n log(p_n / π_n) (negative entropy relative to π)."""
    lp = jax.nn.log_softmax(beta * m.points @ eta + m.log_weights)
    return jnp.sum(jnp.exp(lp) * (lp - m.log_weights))


def conjugate_gaussian(m: Gaussian, mu, beta=1.0):
    """Closed form: G*(μ) = ½ (μ/β − m)ᵀ Σ⁻¹ (μ/β − m), m the base mean (μ = ∇G = β E[x])."""
    d = mu / beta - m.mu
    return 0.5 * d @ jnp.linalg.solve(m.cov, d)


def entropy_discrete(m: Discrete, eta, beta=1.0):
    """Shannon entropy of the attention distribution, −Σ p log p."""
    lp = jax.nn.log_softmax(beta * m.points @ eta + m.log_weights)
    return -jnp.sum(jnp.exp(lp) * lp)


def entropy_gaussian(m: Gaussian, eta=None, beta=1.0):
    """Differential entropy of the tilted Gaussian: ½ log det(2πe Σ) (independent of η)."""
    D = m.cov.shape[0]
    return 0.5 * (D * jnp.log(2 * jnp.pi * jnp.e) + jnp.linalg.slogdet(m.cov)[1])


def log_normalizer_monte_carlo(m: BaseMeasure, eta, key, n: int = 400_000, beta=1.0):
    """log Z = log E_{x~h}[e^{β xᵀη}] from base samples (max-shifted)."""
    x = m.sample_base(key, n)
    return jax.nn.logsumexp(beta * x @ eta) - jnp.log(n)
