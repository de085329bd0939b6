"""A cheap fingerprint of the full state: a fixed random projection of x to a few numbers
(theory: docs/theory/dynamics.md §4.1).

Exact periods are detected on the fingerprint as well as on the observable: a map whose observable is
constant while the state cycles (the DMFT map at β_o = 0) is then not called a fixed point. For D ≤ n
the fingerprint is the state itself.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

FINGERPRINT_SEED = 12345


def fingerprint_matrix(D: int, n: int, dtype=jnp.float64) -> np.ndarray:
    """(G, D) projection, G = min(n, D), a numpy constant inside jit (theory: docs/theory/dynamics.md §4.1):
    the identity for D ≤ n, else a fixed seeded Gaussian matrix with entries N(0, 1/D), so that a
    fingerprint has the size of a state entry."""
    if D <= n:
        return np.eye(D, dtype=dtype)
    P = np.random.default_rng(FINGERPRINT_SEED).normal(size=(n, D)) / np.sqrt(D)
    return np.asarray(P, dtype=dtype)


def fingerprint(x: jax.Array, n: int = 4) -> jax.Array:
    """f(x) = P x with P = :func:`fingerprint_matrix` (D, n): (..., D) → (..., G); numpy in, numpy out
    (theory: docs/theory/dynamics.md §4.1)."""
    if isinstance(x, np.ndarray):
        P = np.asarray(fingerprint_matrix(x.shape[-1], n, x.dtype))
        return x @ P.T
    x = jnp.asarray(x)
    P = fingerprint_matrix(x.shape[-1], n, x.dtype)
    return x @ P.T
