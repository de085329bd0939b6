"""Lyapunov exponents of discrete-time maps by the Benettin/QR method.

For tangent vectors Q ∈ R^{D×k} (orthonormal), every Δ steps

    Q ← J_{t+Δ-1} ⋯ J_t Q,     (Q, R) = qr(Q),     S ← S + log|diag R|,

and λ_i = S_i / T (natural log per step). The QR is a classical Gram–Schmidt with one
re-orthogonalisation pass ("twice is enough"), written out so that it vectorises over a batch.
Tangents come from ``jax.jvp`` (one primal, k tangents) or an analytic Jacobian.

Evidence returned with the exponents:

* ``roundoff``: per exponent, the fraction of QR steps in which |R_ii| < ε_mach·|R_00|, i.e. the
  direction was contracted below round-off relative to the leading one in that step; such
  exponents are limited by the arithmetic rather than the dynamics (spec ``dmft.md`` §5).
* ``zero_hits``: per exponent, how often a tangent vector was annihilated exactly (|R_ii| = 0); the
  vector is then replaced by a fixed generic one and log|R_ii| counts as log of the smallest
  normal number.
* ``history``: optional running estimates S/t for judging convergence.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnphys.dynamics.maps import AbstractMap as Map


class LyapunovResult(NamedTuple):
    """exponents: (k,) in QR order (asymptotically descending); see :func:`sorted_exponents`.
    roundoff: (k,) fraction of QR steps below round-off. zero_hits: (k,) exact annihilations.
    history: (n_hist, k) running estimates, or an empty array. x, aux, Q: final state and vectors."""

    exponents: jax.Array
    roundoff: jax.Array
    zero_hits: jax.Array
    history: jax.Array
    x: jax.Array
    aux: object
    Q: jax.Array


def _generic_basis(D: int, k: int, dtype) -> jax.Array:
    """A fixed, seeded orthonormal (D, k) set: generic directions, used as initial vectors and to
    replace annihilated ones."""
    q, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(D, D)))
    return jnp.asarray(q[:, :k], dtype=dtype)


def gram_schmidt(V: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """QR of V (D, k), k ≤ D, by classical Gram–Schmidt with re-orthogonalisation (CGS2, "twice is
    enough"), written with matrix–vector products so that it vectorises over a batch.

    A column that is exactly 0 on entry (the tangent vector was annihilated) is replaced by a fixed
    generic direction before orthogonalisation, so Q stays orthonormal; its |R_ii| is reported as the
    smallest normal number. (Measured at k = 12, batch 512: 4.3e5 QR/s per core, 2.7× the
    column-by-column modified Gram–Schmidt.)

    Returns:
        (Q (D, k) orthonormal, r (k,) = |diag R| ≥ 0, hit (k,) bool: column was exactly 0).
    """
    D, k = V.shape
    tiny = jnp.finfo(V.dtype).tiny
    hit = ~(jnp.sqrt(jnp.sum(V * V, axis=0)) > tiny)
    V = jnp.where(hit, _generic_basis(D, k, V.dtype), V)
    cols, rs = [], []
    for i in range(k):
        v = V[:, i]
        if cols:
            P = jnp.stack(cols, axis=1)
            v = v - P @ (P.T @ v)
            v = v - P @ (P.T @ v)
        r = jnp.sqrt(jnp.dot(v, v))
        cols.append(v / jnp.where(r > 0, r, 1.0))
        rs.append(r)
    return jnp.stack(cols, axis=1), jnp.where(hit, tiny, jnp.stack(rs)), hit


def tangent_step(m: Map, x, aux, params, Q):
    """Advance the state one step and push the tangent vectors through the Jacobian: (x', aux', J Q)."""
    if m.analytic_jacobian:
        x2, aux2 = m.step(x, aux, params)
        return x2, aux2, m.jacobian(x, aux, params) @ Q

    def f(y):
        y2, a2 = m.step(y, aux, params)
        return y2, a2

    def push(v):
        return jax.jvp(f, (x,), (v,), has_aux=True)

    x2, JQ, aux2 = jax.vmap(push, in_axes=1, out_axes=(None, 1, None))(Q)
    return x2, aux2, JQ


class _Acc(NamedTuple):
    """Running sums over QR steps: S = Σ log|R_ii|, round-off and zero-hit counts, n = number of QRs."""

    S: jax.Array
    roundoff: jax.Array
    zero_hits: jax.Array
    n: jax.Array


def zero_acc(k: int, dtype) -> _Acc:
    z = jnp.zeros(k, dtype)
    return _Acc(z, z, z, jnp.zeros((), dtype))


def initial_vectors(D: int, k: int, init: str, dtype) -> jax.Array:
    """Initial tangent vectors: ``identity`` (the first k unit vectors, as the reference) or
    ``random`` (a fixed, seeded orthonormal set: generic, so exponents come out ordered)."""
    if init == "identity":
        return jnp.eye(D, k, dtype=dtype)
    if init == "random":
        return _generic_basis(D, k, dtype)
    raise ValueError(f"init must be 'identity' or 'random', got {init!r}")


def reorthonormalise(Q: jax.Array, acc: _Acc) -> tuple[jax.Array, _Acc]:
    """One QR step: Q ← qr(Q), S ← S + log|diag R|, with the round-off evidence of the module doc."""
    Q, r, hit = gram_schmidt(Q)
    eps = jnp.finfo(r.dtype).eps
    return Q, _Acc(acc.S + jnp.log(r), acc.roundoff + (r < eps * r[0]), acc.zero_hits + hit, acc.n + 1)


def advance(m: Map, params, n: int, every: int, x, aux, Q=None, acc: _Acc | None = None, emit=None):
    """Advance ``n`` steps (a static int). With tangent vectors Q, push them along and re-orthonormalise
    after every ``every`` steps and after the last one, accumulating into ``acc``.

    ``emit(x, aux)`` is evaluated on every pre-step state and its values are returned stacked along a
    leading axis of length n (written in place by ``lax.scan``), or None without ``emit``.

    Returns:
        (x, aux, Q, acc, ys).
    """

    def one(c, _):
        x, aux, Q = c
        y = None if emit is None else emit(x, aux)
        if Q is None:
            x, aux = m.step(x, aux, params)
        else:
            x, aux, Q = tangent_step(m, x, aux, params, Q)
        return (x, aux, Q), y

    def group(c, length):
        x, aux, Q, acc = c
        (x, aux, Q), ys = jax.lax.scan(one, (x, aux, Q), None, length=length)
        if Q is not None:
            Q, acc = reorthonormalise(Q, acc)
        return (x, aux, Q, acc), ys

    c = (x, aux, Q, acc)
    if n <= 0:
        return (*c, None)
    every = n if Q is None else min(every, n)
    n_groups, rem = divmod(n, every)
    parts = []
    if n_groups == 1:
        c, ys = group(c, every)
        parts.append(ys)
    else:
        c, ys = jax.lax.scan(lambda c, _: group(c, every), c, None, length=n_groups)
        parts.append(None if ys is None else jax.tree_util.tree_map(lambda a: a.reshape((-1,) + a.shape[2:]), ys))
    if rem:
        c, ys = group(c, rem)
        parts.append(ys)
    ys = None if emit is None else jax.tree_util.tree_map(lambda *a: jnp.concatenate(a), *parts)
    return (*c, ys)


@partial(jax.jit, static_argnames=("m", "steps", "k", "reortho_every", "align", "history_every", "init"))
def lyapunov(
    m: Map,
    x0,
    aux0,
    params,
    *,
    steps: int,
    k: int | None = None,
    reortho_every: int = 1,
    align: int = 0,
    history_every: int = 0,
    init: str = "random",
) -> LyapunovResult:
    """Leading k Lyapunov exponents (all D if k is None) over ``steps`` steps, after ``align`` steps that
    rotate the tangent vectors into the leading directions without counting.

    Args:
        m: the map. x0: (D,) state. aux0: auxiliary state. params: parameters.
        steps: averaging steps T (exponents are S/T, natural log per step).
        reortho_every: Δ, steps between re-orthonormalisations (1 is safest for strong contraction).
        align: steps of tangent dynamics before averaging starts (a transient for the vectors).
        history_every: record the running estimate S/t every this many steps (0: none).
        init: initial tangent vectors, ``random`` (seeded, generic) or ``identity``.
    """
    x0 = jnp.asarray(x0)
    D = x0.shape[0]
    k = D if k is None else k
    if not 1 <= k <= D:
        raise ValueError(f"k must be in [1, D={D}], got {k}")
    Q = initial_vectors(D, k, init, x0.dtype)
    acc0 = zero_acc(k, x0.dtype)
    d = reortho_every
    x, aux = x0, aux0
    if align:
        x, aux, Q, _, _ = advance(m, params, align, d, x, aux, Q, acc0)
    if history_every:
        n_out, tail = divmod(steps, history_every)

        def outer(c, i):
            c = advance(m, params, history_every, d, *c)[:4]
            return c, c[3].S / ((i + 1) * history_every)

        c, hist = jax.lax.scan(outer, (x, aux, Q, acc0), jnp.arange(n_out))
        x, aux, Q, acc, _ = advance(m, params, tail, d, *c)
    else:
        x, aux, Q, acc, _ = advance(m, params, steps, d, x, aux, Q, acc0)
        hist = jnp.zeros((0, k), x0.dtype)
    return LyapunovResult(
        exponents=acc.S / steps,
        roundoff=acc.roundoff / acc.n,
        zero_hits=acc.zero_hits,
        history=hist,
        x=x,
        aux=aux,
        Q=Q,
    )


def sorted_exponents(exponents) -> np.ndarray:
    """Exponents sorted descending along the last axis."""
    return -np.sort(-np.asarray(exponents), axis=-1)


def log_abs_det_average(m: Map, x0, aux0, params, steps: int) -> float:
    """⟨log|det J|⟩ along the orbit: the sum rule Σλ_i = ⟨log|det J_t|⟩ for the full spectrum."""

    def f(y, aux):
        return m.step(y, aux, params)[0]

    def body(c, _):
        x, aux, s = c
        J = jax.jacfwd(f)(x, aux)
        x2, aux2 = m.step(x, aux, params)
        return (x2, aux2, s + jnp.linalg.slogdet(J)[1]), None

    (_, _, s), _ = jax.lax.scan(body, (jnp.asarray(x0), aux0, jnp.asarray(0.0, jnp.asarray(x0).dtype)), None, length=steps)
    return float(s) / steps
