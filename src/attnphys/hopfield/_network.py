"""The modern (continuous) Hopfield network of Ramsauer et al. (2020): energy, update, retrieval
(theory: docs/theory/hopfield.md §1, §2).

Arrays: stored patterns Y (N, D), one pattern per row; state ξ (D,).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.nn import logsumexp, softmax


def energy(xi, patterns, beta=1.0):
    """E(ξ) = −β⁻¹ log Σ_j e^{β y_jᵀξ} + ½ ξᵀξ + β⁻¹ log N + ½ M², M = max_j ‖y_j‖
    (theory: docs/theory/hopfield.md §1). The constants make E ≥ 0.

    Args:
        xi: (D,) state.
        patterns: (N, D) stored patterns, one per row.
        beta: inverse temperature (> 0).

    Returns:
        () the energy.
    """
    N = patterns.shape[0]
    M2 = jnp.max(jnp.sum(patterns**2, axis=1))
    return -logsumexp(beta * patterns @ xi) / beta + 0.5 * xi @ xi + jnp.log(N) / beta + 0.5 * M2


def update(xi, patterns, beta=1.0):
    """ξ' = Yᵀ softmax(β Y ξ), the CCCP step of :func:`energy`, which never increases it
    (theory: docs/theory/hopfield.md §2). It equals β⁻¹∇_ξ log Z_β(ξ) of the discrete base measure on
    the patterns (theory: docs/theory/hopfield.md §3).

    Args:
        xi: (D,) state.
        patterns: (N, D) stored patterns.
        beta: inverse temperature.

    Returns:
        (D,) the new state.
    """
    return softmax(beta * patterns @ xi) @ patterns


class Retrieval(NamedTuple):
    """Result of :func:`retrieve` (theory: docs/theory/hopfield.md §2).

    Attributes:
        state: (D,) the last state.
        steps: () number of updates made.
        converged: () whether the last update moved the state by at most ``tol`` (max norm).
    """

    state: jax.Array
    steps: jax.Array
    converged: jax.Array


def retrieve(xi0, patterns, beta=1.0, tol: float = 1e-10, max_steps: int = 1000) -> Retrieval:
    """Iterate ξ ← Yᵀ softmax(β Y ξ) from ξ₀ until ‖ξ' − ξ‖_∞ ≤ tol or ``max_steps`` updates
    (theory: docs/theory/hopfield.md §2).

    Args:
        xi0: (D,) initial (e.g. noisy) state.
        patterns: (N, D) stored patterns.
        beta: inverse temperature.
        tol: stopping threshold on the max-norm change.
        max_steps: bound on the number of updates.

    Returns:
        :class:`Retrieval` (state, steps, converged).
    """

    def cond(c):
        _, delta, t = c
        return (delta > tol) & (t < max_steps)

    def body(c):
        xi, _, t = c
        new = update(xi, patterns, beta)
        return new, jnp.max(jnp.abs(new - xi)), t + 1

    xi0 = jnp.asarray(xi0)
    xi, delta, t = jax.lax.while_loop(cond, body, (xi0, jnp.asarray(jnp.inf, xi0.dtype), 0))
    return Retrieval(xi, t, delta <= tol)  # pyright: ignore[reportArgumentType]  (t: the int carry, an array after the loop)
