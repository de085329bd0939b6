"""Monte-Carlo estimates that check the closed forms (theory: docs/theory/expfam.md §5)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from attnphys.expfam._measure.base import AbstractBaseMeasure


def log_normalizer_monte_carlo(m: AbstractBaseMeasure, eta, key, n: int = 400_000, beta=1.0):
    """log Z_β(η) = log E_{x~h}[e^{β xᵀη}] ≈ log((1/n) Σ_i e^{β x_iᵀη}) from n base samples, max-shifted
    (theory: docs/theory/expfam.md §5).

    Args:
        m: base measure (needs ``sample_base``).
        eta: (D,) natural parameter.
        key: PRNG key.
        n: number of base samples.
        beta: scale.

    Returns:
        () the estimate (biased low by about Var/(2n Z²), Jensen).
    """
    x = m.sample_base(key, n)
    return jax.nn.logsumexp(beta * x @ eta) - jnp.log(n)


def kl_monte_carlo(m: AbstractBaseMeasure, eta_p, eta_q, key, n: int = 200_000, beta=1.0):
    """KL(p_p ‖ p_q) = E_{p_p}[log p_p(x) − log p_q(x)] = β (η_p − η_q)ᵀ E_{p_p}[x] − G(η_p) + G(η_q), the
    expectation estimated from n samples of p(· | η_p), h cancelling (theory: docs/theory/expfam.md §5).

    Args:
        m: base measure (needs ``sample``).
        eta_p: (D,) natural parameter of the first distribution (the one sampled).
        eta_q: (D,) natural parameter of the second distribution.
        key: PRNG key.
        n: number of samples.
        beta: scale.

    Returns:
        () the estimate.
    """
    x = m.sample(key, eta_p, n, beta)
    return beta * (eta_p - eta_q) @ jnp.mean(x, axis=0) - m.log_normalizer(eta_p, beta) + m.log_normalizer(eta_q, beta)
