"""Lyapunov exponents of discrete-time maps by the Benettin/QR method.

For tangent vectors Q ∈ R^{D×k} (orthonormal), every Δ steps

    Q ← J_{t+Δ-1} ⋯ J_t Q,     (Q, R) = qr(Q),     S ← S + log|diag R|,

and λ_i = S_i / T (natural log per step). The QR is a modified Gram–Schmidt with one
re-orthogonalisation pass ("twice is enough"), written out so that it vectorises over a batch.
Tangents come from ``jax.jvp`` (one primal, k tangents) or an analytic Jacobian.

Evidence returned with the exponents:

* ``roundoff``: per exponent, the fraction of QR steps in which |R_ii| < ε_mach·|R_00|, i.e. the
  direction was contracted below round-off relative to the leading one in that step; such
  exponents are limited by the arithmetic rather than the dynamics (spec ``dmft.md`` §5).
* ``zero_hits``: per exponent, how often a tangent vector was annihilated exactly (|R_ii| = 0); the
  vector is then replaced by a fresh orthogonal one and log|R_ii| counts as log of the smallest
  normal number.
* ``history``: optional running estimates S/t for judging convergence.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnphys.dynamics.maps import Map


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


def gram_schmidt(V: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """QR of V (D, k), k ≤ D, by modified Gram–Schmidt with re-orthogonalisation.

    Returns:
        (Q (D, k) orthonormal, r (k,) = |diag R| ≥ 0, hit (k,) bool: column was exactly 0 and was
        replaced by a unit vector orthogonal to the previous ones).
    """
    D, k = V.shape
    tiny = jnp.finfo(V.dtype).tiny
    cols, rs, hits = [], [], []
    eye = jnp.eye(D, dtype=V.dtype)
    for i in range(k):
        v = V[:, i]
        for _ in range(2):
            for q in cols:
                v = v - jnp.dot(q, v) * q
        r = jnp.sqrt(jnp.dot(v, v))
        hit = ~(r > tiny)
        # fallback direction for an annihilated vector: the basis vector least covered so far
        if cols:
            Qp = jnp.stack(cols, axis=1)
            cover = jnp.sum(Qp**2, axis=1)
            e = eye[jnp.argmin(cover)]
            for _ in range(2):
                for q in cols:
                    e = e - jnp.dot(q, e) * q
        else:
            e = eye[0]
        e = e / jnp.sqrt(jnp.dot(e, e))
        q = jnp.where(hit, e, v / jnp.where(hit, 1.0, r))
        cols.append(q)
        rs.append(jnp.where(hit, tiny, r))
        hits.append(hit)
    return jnp.stack(cols, axis=1), jnp.stack(rs), jnp.stack(hits)


def tangent_step(m: Map, x, aux, params, Q):
    """Advance the state one step and push the tangent vectors through the Jacobian: (x', aux', J Q)."""
    if m.jacobian is not None:
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
    S: jax.Array
    roundoff: jax.Array
    zero_hits: jax.Array


def zero_acc(k: int, dtype) -> _Acc:
    z = jnp.zeros(k, dtype)
    return _Acc(z, z, z)


def initial_vectors(D: int, k: int, init: str, dtype) -> jax.Array:
    """Initial tangent vectors: ``identity`` (the first k unit vectors, as the reference) or
    ``random`` (a fixed, seeded orthonormal set: generic, so exponents come out ordered)."""
    if init == "identity":
        return jnp.eye(D, k, dtype=dtype)
    if init == "random":
        q, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(D, D)))
        return jnp.asarray(q[:, :k], dtype=dtype)
    raise ValueError(f"init must be 'identity' or 'random', got {init!r}")


def evolve(m: Map, params, n: int, x, aux, Q=None, acc: _Acc | None = None, hook=None, hook_state=None):
    """Advance n steps; with tangent vectors Q, push them along and re-orthonormalise once at the end,
    adding log|diag R| to ``acc``. ``hook(state, x, aux)`` sees every pre-step state (for records).

    Returns:
        (x, aux, Q, acc, hook_state).
    """

    def body(_, c):
        x, aux, Q, hs = c
        if hook is not None:
            hs = hook(hs, x, aux)
        if Q is None:
            x, aux = m.step(x, aux, params)
        else:
            x, aux, Q = tangent_step(m, x, aux, params, Q)
        return x, aux, Q, hs

    if n > 0:
        x, aux, Q, hook_state = jax.lax.fori_loop(0, n, body, (x, aux, Q, hook_state))
    if Q is not None and n > 0:
        Q, r, hit = gram_schmidt(Q)
        eps = jnp.finfo(r.dtype).eps
        acc = _Acc(acc.S + jnp.log(r), acc.roundoff + (r < eps * r[0]), acc.zero_hits + hit)
    return x, aux, Q, acc, hook_state


def evolve_blocks(m: Map, params, steps: int, every: int, x, aux, Q=None, acc=None, hook=None, hook_state=None):
    """``steps`` steps in blocks of ``every`` (re-orthonormalising after each block when Q is given)."""
    n_blocks, rem = divmod(steps, every)

    def block(_, c):
        return evolve(m, params, every, *c[:2], c[2], c[3], hook, c[4])

    c = (x, aux, Q, acc, hook_state)
    if n_blocks:
        c = jax.lax.fori_loop(0, n_blocks, block, c)
    if rem:
        c = evolve(m, params, rem, *c[:2], c[2], c[3], hook, c[4])
    return c


def n_reorthonormalisations(steps: int, every: int) -> int:
    return -(-steps // every)


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
        x, aux, Q, _, _ = evolve_blocks(m, params, align, d, x, aux, Q, acc0)
    if history_every:
        n_out, tail = divmod(steps, history_every)

        def outer(c, i):
            c = evolve_blocks(m, params, history_every, d, *c)
            return c, c[3].S / ((i + 1) * history_every)

        c, hist = jax.lax.scan(outer, (x, aux, Q, acc0, None), jnp.arange(n_out))
        x, aux, Q, acc, _ = evolve_blocks(m, params, tail, d, *c)
    else:
        x, aux, Q, acc, _ = evolve_blocks(m, params, steps, d, x, aux, Q, acc0)
        hist = jnp.zeros((0, k), x0.dtype)
    return LyapunovResult(
        exponents=acc.S / steps,
        roundoff=acc.roundoff / n_reorthonormalisations(steps, d),
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
