"""Modern Hopfield networks (Ramsauer et al. 2020) and their relation to ∇ log Z (spec
``probabilistic-attention.md`` §4).

Energy E(ξ) = −β⁻¹ log Σ_j e^{β y_jᵀξ} + ½ ξᵀξ + β⁻¹ log N + ½ M², M = max_j ‖y_j‖;
update ξ ← Y softmax(β Yᵀξ) — the CCCP step of E, which never increases it. The update is exactly
the mean map ∇_η log Z / β of the discrete base measure on the stored patterns
(:class:`attnphys.expfam.Discrete` with points y_j and η = ξ): the patterns are fixed, whereas in
attention + residual the support is the moving cloud itself; the ½ ξᵀξ term plays the role of the
residual connection.

Arrays: patterns Y (N, D) (rows are patterns), state ξ (D,).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.nn import logsumexp, softmax


def energy(xi, patterns, beta=1.0):
    """E(ξ) = −β⁻¹ lse(β Y ξ) + ½ ξᵀξ + β⁻¹ log N + ½ max_j ‖y_j‖²."""
    N = patterns.shape[0]
    M2 = jnp.max(jnp.sum(patterns**2, axis=1))
    return -logsumexp(beta * patterns @ xi) / beta + 0.5 * xi @ xi + jnp.log(N) / beta + 0.5 * M2


def update(xi, patterns, beta=1.0):
    """ξ' = Yᵀ softmax(β Y ξ)."""
    return softmax(beta * patterns @ xi) @ patterns


class Retrieval(NamedTuple):
    state: jax.Array
    steps: jax.Array
    converged: jax.Array


def retrieve(xi0, patterns, beta=1.0, tol: float = 1e-10, max_steps: int = 1000) -> Retrieval:
    """Iterate the update until ‖ξ' − ξ‖ ≤ tol or ``max_steps``."""

    def cond(c):
        _, delta, t = c
        return (delta > tol) & (t < max_steps)

    def body(c):
        xi, _, t = c
        new = update(xi, patterns, beta)
        return new, jnp.max(jnp.abs(new - xi)), t + 1

    xi, delta, t = jax.lax.while_loop(cond, body, (jnp.asarray(xi0), jnp.asarray(jnp.inf, xi0.dtype), 0))
    return Retrieval(xi, t, delta <= tol)


__all__ = ["energy", "update", "retrieve", "Retrieval"]
