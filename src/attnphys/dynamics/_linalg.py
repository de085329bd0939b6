"""Linear algebra of the toolkit's tangent dynamics: a batched thin QR (theory: docs/theory/dynamics.md §5.2)."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def householder_qr(A: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Thin QR of A (D, k), k ≤ D, by Householder reflections (theory: docs/theory/dynamics.md §5.2,
    "The QR step"): H_{k−1} ⋯ H_0 A = [R; 0] with H_j = I − 2 v_j v_jᵀ mapping the column's part from row j
    on to (−sign(a_jj)·‖a_j‖, 0, …, 0), the convention of LAPACK's geqrf; Q = H_0 ⋯ H_{k−1} I[:, :k].
    Backward stable like LAPACK, and written with vector operations over fixed shapes, so that a batch
    under ``vmap`` is one vectorised loop instead of one LAPACK call per matrix (1.7× on the Floquet
    iteration of the paper preset's orbits, ``benchmarks/floquet.py``). A column that is zero from row j on
    gives R_jj = 0 exactly and no reflection. Norms are not scaled: meant for A = J Q with Q orthonormal.

    Returns:
        (Q (D, k) with orthonormal columns, R (k, k) upper triangular), A = Q R.
    """
    D, k = A.shape
    rows = jnp.arange(D)

    def reflect(j, c):
        A, V = c
        x = jnp.where(rows >= j, A[:, j], 0.0)
        alpha = -jnp.where(A[j, j] >= 0, 1.0, -1.0) * jnp.sqrt(x @ x)
        v = x - alpha * (rows == j)
        nv = jnp.sqrt(v @ v)
        v = jnp.where(nv > 0, v / jnp.where(nv > 0, nv, 1.0), 0.0)
        return A - 2.0 * jnp.outer(v, v @ A), V.at[j].set(v)

    A, V = jax.lax.fori_loop(0, k, reflect, (A, jnp.zeros((k, D), A.dtype)))

    def accumulate(i, Q):
        v = V[k - 1 - i]
        return Q - 2.0 * jnp.outer(v, v @ Q)

    Q = jax.lax.fori_loop(0, k, accumulate, jnp.eye(D, k, dtype=A.dtype))
    return Q, jnp.triu(A[:k])
