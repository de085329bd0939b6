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


def radius_bound(M, max_power: int = 64) -> tuple[float, int]:
    """An upper bound on the spectral radius ρ(M) of a square matrix M (D, D) that holds under round-off
    (theory: docs/theory/dynamics.md §5.4): Gelfand's ρ(M) ≤ ‖Mⁿ‖₂^{1/n} for every n, with Mⁿ formed by
    repeated squaring of A = M/‖M‖₂ (n = 1, 2, 4, …, ``max_power``) and its round-off bounded by
    n·D·ε·‖|A|‖₂ⁿ (the error of a product of n matrices of order D, any parenthesisation):

        ln ρ(M) ≤ ln ‖M‖₂ + ln(‖fl(Aⁿ)‖₂ + n·D·ε·‖|A|‖₂ⁿ) / n.

    A nilpotent or strongly contracting monodromy whose norm exceeds one (a superstable orbit whose
    Jacobians map one direction into another before annihilating it) gets a bound far below one at n = 2.

    Returns:
        (the smallest logarithmic bound found, the power n that gave it); (+inf, 0) for a matrix that is not
        finite.
    """
    import numpy as np

    M = np.asarray(M, np.float64)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"radius_bound needs a square matrix, got shape {M.shape}")
    if not np.all(np.isfinite(M)):
        return float("inf"), 0
    s = float(np.linalg.norm(M, 2))
    if s == 0.0:
        return float("-inf"), 1
    A = M / s
    absA = float(np.linalg.norm(np.abs(A), 2))
    eps, D = float(np.finfo(np.float64).eps), M.shape[0]
    best, at, P, n = 0.0, 1, A, 1  # ln ‖A‖₂ = 0 at n = 1
    while 2 * n <= max_power and best > -np.inf:
        P, n = P @ P, 2 * n
        err = n * D * eps * absA**n
        with np.errstate(divide="ignore"):
            b = float(np.log(np.linalg.norm(P, 2) + err)) / n
        if b < best:
            best, at = b, n
    return float(np.log(s)) + best, at
