"""Periodic orbits exactly: Newton refinement of F^p(x) = x and Floquet multipliers by the periodic QR
iteration (theory: docs/theory/dynamics.md §5).

* :func:`refine` solves G(x) = F^p(x) − x = 0 by Newton's method, x ← x − (M − I)⁻¹ G(x) with the
  monodromy matrix M = ∂F^p/∂x from ``jax.jacfwd`` through the p steps (§5.1). With an auxiliary state,
  aux must return to itself after p steps; if it does not, the period is raised to the smallest multiple
  (up to ``max_multiple``) at which it does, and ``aux_closed`` reports the outcome.
* :func:`floquet` computes the eigenvalues μ_i of M = J_{p−1} ⋯ J_0 without forming the product (§5.2):
  orthogonal iteration over whole cycles, J_j Q_j = Q_{j+1} R_j (QR), Q_0 ← Q_p, until T = Q_0ᵀ Q_p is
  block diagonal with 1×1 and 2×2 blocks. Then Q_0ᵀ M Q_0 = T R_{p−1} ⋯ R_0 is block upper triangular:
  a 1×1 block gives log|μ_i| = Σ_j log|R_j,ii| (sign from the signs of T_ii and R_j,ii), a 2×2 block
  (a complex pair, or two real multipliers of nearly equal modulus) the eigenvalues of T_bb ∏_j R_j,bb,
  the product formed with a normalisation per factor whose logarithm is accumulated. Nothing overflows
  or underflows for any period; exponents are log|μ_i|/p (§5.3).

Everything is jitted over arrays of a static length P ≥ p (:func:`stored_length`: one length for every
period up to :data:`STORED_LENGTH`) with loops that run for each orbit's own p steps, so orbits of
different periods share one compilation and vectorise with ``vmap``.
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnphys.dynamics._linalg import householder_qr
from attnphys.dynamics._lyapunov import initial_vectors
from attnphys.dynamics.checks import warn_if_single_precision
from attnphys.dynamics.maps import AbstractMap
from attnphys.runtime import take_rows


class PeriodicOrbit(NamedTuple):
    """A refined periodic orbit, leading batch axes when batched (theory: docs/theory/dynamics.md §5.1).

    x: (D,) the refined point x_0. aux: its auxiliary state. period: p (after the aux check).
    points: (P, D) x_0 … x_{p−1} (NaN beyond p). aux_points: aux pytree stacked along P.
    residual: ‖F^p(x) − x‖_∞ / max(1, ‖x‖_∞). converged: Newton reached ``tol``. aux_closed: aux_p = aux_0.
    iterations: Newton steps taken.
    """

    x: Any
    aux: Any
    period: Any
    points: Any
    aux_points: Any
    residual: Any
    converged: Any
    aux_closed: Any
    iterations: Any


class Floquet(NamedTuple):
    """Floquet multipliers of a periodic orbit, sorted by modulus, descending; leading batch axes when
    batched (theory: docs/theory/dynamics.md §5.2).

    multipliers: (D,) complex μ_i (±∞/0 when exp(log|μ|) leaves the floating-point range; use log_abs).
    log_abs: (D,) log|μ_i|. angle: (D,) arg μ_i. exponents: (D,) log|μ_i| / p.
    converged: the periodic QR reached block form. cycles: cycles iterated.
    resolved: () int, how many of the leading multipliers are certified (theory: docs/theory/dynamics.md
    §5.2, "Which multipliers are resolved"); only those are to be read.
    """

    multipliers: Any
    log_abs: Any
    angle: Any
    exponents: Any
    converged: Any
    cycles: Any
    resolved: Any


def compose_steps(m: AbstractMap, x, aux, params, p):
    """F^p(x): (x_p, aux_p). p may be traced (a loop of p steps, batched under ``vmap`` as a loop to the
    longest with the finished lanes held) (theory: docs/theory/dynamics.md §5.1)."""
    return jax.lax.fori_loop(0, p, lambda j, c: m.step(c[0], c[1], params), (x, aux))


def trace_steps(m: AbstractMap, P: int, x, aux, params, p, steps):
    """x_0 … x_{P−1} (P, D) and their aux stacked along P: the orbit for j < p, NaN and aux_0 beyond.
    ``steps`` ≥ p: the loop's length; see :func:`_jacobians` (theory: docs/theory/dynamics.md §5.2)."""

    def body(j, c):
        x, aux, xs, auxs = c
        on = j < p
        xs = xs.at[j].set(jnp.where(on, x, jnp.nan))
        auxs = jax.tree_util.tree_map(lambda b, a: b.at[j].set(jnp.where(on, a, b[j])), auxs, aux)
        x, aux = m.step(x, aux, params)
        return x, aux, xs, auxs

    xs = jnp.full((P,) + x.shape, jnp.nan, x.dtype)
    auxs = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (P,) + jnp.shape(a)), aux)
    return jax.lax.fori_loop(0, steps, body, (x, aux, xs, auxs))[2:]


def _aux_equal(a, b) -> jax.Array:
    def eq(u, v):
        u, v = jnp.asarray(u), jnp.asarray(v)
        if jnp.issubdtype(u.dtype, jnp.inexact):
            return jnp.all(jnp.abs(u - v) <= 1e-12 * jnp.maximum(1.0, jnp.abs(u)))
        return jnp.all(u == v)

    leaves = jax.tree_util.tree_leaves(jax.tree_util.tree_map(eq, a, b))
    return jnp.all(jnp.stack(leaves)) if leaves else jnp.asarray(True)


def _refine_one(m: AbstractMap, P: int, max_iter: int, tol: float, x0, aux0, params, p, steps):
    x0 = jnp.asarray(x0)
    eps = jnp.finfo(x0.dtype).eps
    D = x0.shape[0]

    def G(x):
        return compose_steps(m, x, aux0, params, p)[0] - x

    def cond(c):
        x, it, done, _ = c
        return (it < max_iter) & ~done

    def body(c):
        x, it, _, prev = c
        g, Jg = G(x), jax.jacfwd(G)(x)
        dx = jnp.linalg.solve(Jg, -g)
        ok = jnp.all(jnp.isfinite(dx))
        x2 = jnp.where(ok, x + dx, x)
        size, scale = jnp.max(jnp.abs(dx)), jnp.maximum(1.0, jnp.max(jnp.abs(x2)))
        small = size <= 4 * eps * scale
        # at round-off level a step that no longer halves is noise: (M - I) amplifies the rounding errors of G
        stalled = (size <= jnp.sqrt(eps) * scale) & (size > 0.5 * prev)
        return x2, it + 1, small | stalled | ~ok, size

    x, it, _, _ = jax.lax.while_loop(
        cond, body, (x0, jnp.asarray(0), jnp.asarray(False), jnp.asarray(jnp.inf, x0.dtype))
    )
    xp, auxp = compose_steps(m, x, aux0, params, p)
    res = jnp.max(jnp.abs(xp - x)) / jnp.maximum(1.0, jnp.max(jnp.abs(x)))
    pts, aux_pts = trace_steps(m, P, x, aux0, params, p, steps)
    del D
    return PeriodicOrbit(
        x=x,
        aux=aux0,
        period=p,
        points=pts,
        aux_points=aux_pts,
        residual=res,
        converged=jnp.all(jnp.isfinite(x)) & jnp.all(jnp.isfinite(xp)) & (res <= tol),
        aux_closed=_aux_equal(auxp, aux0),
        iterations=it,
    )


def _with_shared(shared, p):
    return p if shared is None else (shared, p)


@partial(jax.jit, static_argnames=("m", "P", "max_iter", "tol"))
def _refine_many(m, P, max_iter, tol, x0, aux0, params, p, shared=None):
    steps = jnp.max(p)  # one loop length for the batch: a length per lane would select the whole stored orbit per step
    return jax.vmap(lambda x, a, q, pp: _refine_one(m, P, max_iter, tol, x, a, _with_shared(shared, q), pp, steps))(
        x0, aux0, params, p
    )


def padded_length(p: int) -> int:
    """The next power of two ≥ p (theory: docs/theory/dynamics.md §5.1)."""
    return 1 << max(0, int(p) - 1).bit_length()


STORED_LENGTH = 256
"""Orbits of period up to this are stored and iterated in arrays of this length (:func:`stored_length`), the
classifier's longest period: one compiled program for all of them, where a length per power of two compiled
(and traced, lowered and loaded from the compilation cache) six or seven programs per kernel in a paper
diagram. The loops run each orbit's own p steps, so the length costs memory, not work."""


def stored_length(p: int) -> int:
    """Static length P ≥ p of the arrays an orbit of period p is stored and iterated in:
    :data:`STORED_LENGTH`, or the next power of two above it (theory: docs/theory/dynamics.md §5.1)."""
    return max(STORED_LENGTH, padded_length(p))


def by_padded_length(periods) -> list[np.ndarray]:
    """Indices of ``periods`` grouped by :func:`padded_length`, shortest first: orbits are refined and
    iterated in chunks of similar periods, so that no loop runs far beyond an orbit's own period while a
    longer one in its chunk finishes (theory: docs/theory/dynamics.md §5.1)."""
    lengths = np.asarray([padded_length(int(p)) for p in np.asarray(periods).reshape(-1)])
    return [np.flatnonzero(lengths == n) for n in np.unique(lengths)]


def _batch1(tree):
    return jax.tree_util.tree_map(lambda a: jnp.asarray(a)[None], tree)


def _unbatch(tree):
    return jax.tree_util.tree_map(lambda a: a[0], tree)


def _aux_period(m: AbstractMap, x, aux, params, p: int, max_multiple: int) -> int:
    """Smallest multiple q·p (q ≤ max_multiple) after which aux returns to itself; 0 if none."""
    xs, a = jnp.asarray(x), aux
    for q in range(1, max_multiple + 1):
        for _ in range(p):
            xs, a = m.step(xs, a, params)
        if bool(_aux_equal(a, aux)):
            return q * p
    return 0


def refine_batch(
    m: AbstractMap,
    x0,
    aux0,
    params,
    periods,
    *,
    tol: float = 1e-11,
    max_iter: int = 30,
    max_multiple: int = 8,
    P: int | None = None,
    shared=None,
) -> PeriodicOrbit:
    """Newton refinement of a batch of periodic orbits (theory: docs/theory/dynamics.md §5.1).

    Solves F^p(x) = x for every lane, x ← x − (M − I)⁻¹ (F^p(x) − x), M = ∂F^p/∂x by ``jax.jacfwd``.

    Args:
        x0: (B, D) starts near the orbits; aux0, params: pytrees with a leading axis B; periods: (B,) ints.
        tol: convergence, ‖F^p(x) − x‖_∞ ≤ tol · max(1, ‖x‖_∞). P: static length of the stored orbit
            (default: :func:`stored_length` of the longest period of each chunk, raised for aux multiples;
            chunks of similar periods, :func:`by_padded_length`).
        max_multiple: a lane whose aux does not return after p steps is re-refined at the smallest
            multiple q·p, q ≤ max_multiple, at which it does (``aux_closed`` False if none).
        shared: unbatched parameters; the map then receives ``(shared, params_i)``.

    Returns:
        :class:`PeriodicOrbit` with a leading axis B (``points`` (B, P, D)).
    """
    from attnphys._checks import check_array

    B = check_array(x0, "x0", ndim=2, what="a batch of states (B, D)")[0]
    check_array(periods, "periods", ndim=(0, 1))
    warn_if_single_precision(x0)
    x0 = np.asarray(x0)  # host arrays go to the jitted kernels as they are (no per-shape copy program)
    if np.asarray(periods).dtype.kind not in "iu" and not np.all(np.mod(np.asarray(periods, dtype=float), 1) == 0):
        raise ValueError(f"periods must be integers, got {np.asarray(periods).ravel()[:5].tolist()}")
    periods = np.asarray(periods, dtype=np.int64).reshape(-1)
    if periods.size != B:
        raise ValueError(f"periods must hold one period per state of x0 ({B}), got {periods.size}")
    if periods.size and periods.min() < 1:
        raise ValueError(f"periods must be >= 1, got {periods.min()}")
    if P is None:
        # each group at its own padded length, in chunks of a few fixed sizes, merged into one batch
        parts = []
        for group in by_padded_length(periods):
            for idx, sel, rows in _row_chunks(group):
                part = refine_batch(
                    m,
                    rows(x0),
                    rows(aux0),
                    rows(params),
                    periods[sel],
                    tol=tol,
                    max_iter=max_iter,
                    max_multiple=max_multiple,
                    P=stored_length(int(periods[idx].max())),
                    shared=shared,
                )
                parts.append((idx, part))
        return _merge_orbits(parts, periods.size)
    out = _refine_many(m, P, max_iter, tol, x0, aux0, params, periods, shared)
    open_ = np.flatnonzero(~np.asarray(out.aux_closed, dtype=bool))
    if open_.size:
        # the auxiliary state has a longer period: raise p to the smallest multiple that closes it
        new_p = periods.copy()
        for i in open_:
            aux_i = jax.tree_util.tree_map(lambda a, i=i: jnp.asarray(a)[i], aux0)
            par_i = jax.tree_util.tree_map(lambda a, i=i: jnp.asarray(a)[i], params)
            q = _aux_period(m, out.x[i], aux_i, _with_shared(shared, par_i), int(periods[i]), max_multiple)
            new_p[i] = q if q else periods[i]
        if not np.array_equal(new_p, periods):
            P2 = max(P, stored_length(int(new_p.max())))
            out2 = _refine_many(m, P2, max_iter, tol, x0, aux0, params, new_p, shared)
            if P2 > P:
                out = out2
            else:
                changed = np.asarray(new_p != periods)

                def pick(a, b):
                    return np.where(changed.reshape((-1,) + (1,) * (np.ndim(a) - 1)), b, a)

                out = jax.tree_util.tree_map(pick, out, out2)
    return minimal_period(out)


def _pad_length(a, P: int, fill=None):
    """``a`` (n, L, …) extended along axis 1 to P ≥ L entries: ``fill``, or copies of the last (None)."""
    extra = P - a.shape[1]
    if extra <= 0:
        return a
    more = (
        np.repeat(a[:, -1:], extra, axis=1)
        if fill is None
        else np.full((a.shape[0], extra) + a.shape[2:], fill, a.dtype)
    )
    return np.concatenate([a, more], axis=1)


def _merge_orbits(parts, n: int):
    """One batch of ``n`` refined orbits from (indices, orbits) parts of different stored lengths: the
    points are NaN-padded to the longest (they are NaN beyond the period anyway), the auxiliary points
    edge-padded."""
    P = max(int(np.shape(o.points)[1]) for _, o in parts)

    return _scatter(
        [
            (
                idx,
                o._replace(
                    points=_pad_length(np.asarray(o.points), P, np.nan),
                    aux_points=jax.tree_util.tree_map(lambda a: _pad_length(np.asarray(a), P), o.aux_points),
                ),
            )
            for idx, o in parts
        ],
        n,
    )


FIRST_CYCLES = 8
"""Cycles of the periodic QR iteration in the first pass over a group of orbits: orbits that have not
reached block form by then are iterated again, from the start, up to ``max_cycles``, in smaller batches.
A vectorised iteration runs until its slowest orbit is done, so one slow orbit no longer holds up a
batch of hundreds; an orbit done in the first pass is frozen there, as in a single pass (bitwise the
same result)."""

ROW_SIZES = (16,)
"""Batch sizes at which orbits are refined and iterated: a group of orbits is cut into chunks of at most
the largest size, each padded to the smallest size that holds it, so that at most ``len(ROW_SIZES)``
shapes are compiled per stored length (:func:`stored_length`), whatever the number of orbits. One small
size: a compilation costs more than the per-call overhead of small chunks, a chunk runs only until its own
slowest orbit, and no chunk carries more than 15 copies (the adaptive paper bifurcation diagram, when each
power of two compiled its own programs: 119 s, against 132 s with sizes (8, 64) and 150 s with
(8, 64, 512); ``benchmarks/paper_bifurcation.py``)."""


def _row_chunks(idx: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, Any]]:
    """(indices, rows, take) per chunk of ``idx``: the chunk's indices, the same padded to a size of
    :data:`ROW_SIZES` with copies of the last, and a function taking those rows from every leaf of a
    pytree (on the host: indexing device arrays would compile for every shape)."""
    out = []
    for start in range(0, idx.size, ROW_SIZES[-1]):
        part = idx[start : start + ROW_SIZES[-1]]
        sel = np.r_[part, np.full(next(s for s in ROW_SIZES if s >= part.size) - part.size, part[-1])]
        out.append((part, sel, partial(take_rows, idx=sel)))
    return out


def _chunk_orbits(rows, sel, Pg: int, points, aux_points, params, periods):
    """The orbits of one chunk of :func:`_row_chunks` (``rows``, ``sel``) over the stored length Pg: points
    (n, Pg, D), aux points, params and periods, as the batched Floquet kernels take them (shorter inputs
    padded: the entries beyond the period are not read)."""

    def fit(a):
        return _pad_length(a[:, :Pg], Pg)

    return (
        fit(rows(points)),
        jax.tree_util.tree_map(fit, rows(aux_points)),
        rows(params),
        periods[sel],
    )


def _scatter(parts, n: int):
    """One batch of ``n`` (numpy) from a non-empty list of (indices, batch) parts with equal trailing
    shapes: the first len(indices) rows of each part placed at its indices (the rest is padding)."""
    out = jax.tree_util.tree_map(lambda a: np.zeros((n,) + np.shape(a)[1:], np.asarray(a).dtype), parts[0][1])
    for idx, part in parts:
        for f, v in zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(part)):
            f[idx] = np.asarray(v)[: idx.size]
    return out


def minimal_period(orbit: PeriodicOrbit, tol: float = 1e-9) -> PeriodicOrbit:
    """Reduce the period of refined orbits to the smallest divisor d of p with x_d = x_0 (within
    tol·max(1, max|x|)) and aux_d = aux_0 (theory: docs/theory/dynamics.md §5.1): a cycle detected at a
    multiple of its period (e.g. lag 2p when the approach alternates in sign) is one orbit of period p.
    Points beyond the new period are set to NaN. Numpy in and out (leading batch axis B)."""
    o = jax.tree_util.tree_map(np.asarray, orbit)
    pts = np.array(o.points)
    period = np.array(o.period).reshape(-1)
    scale = np.maximum(1.0, np.nanmax(np.abs(pts), axis=(1, 2)))
    aux_leaves = jax.tree_util.tree_leaves(o.aux_points)
    for i in range(period.size):
        p = int(period[i])
        if not bool(np.asarray(o.converged).reshape(-1)[i]):
            continue
        for d in range(1, p):
            if p % d or np.max(np.abs(pts[i, d] - pts[i, 0])) > tol * scale[i]:
                continue
            if all(
                np.array_equal(a[i, d], a[i, 0]) or np.allclose(a[i, d], a[i, 0], rtol=1e-12, atol=1e-12)
                for a in aux_leaves
            ):
                period[i] = d
                pts[i, d:] = np.nan
                break
    return o._replace(points=pts, period=period.reshape(np.shape(o.period)))


def refine(m: AbstractMap, x0, aux0, params, period: int, **kw) -> PeriodicOrbit:
    """Newton refinement of one periodic orbit of period p, F^p(x) = x, to machine precision
    (theory: docs/theory/dynamics.md §5.1); see :func:`refine_batch` for the options.

    Returns:
        :class:`PeriodicOrbit` (``points`` (P, D), NaN beyond p).
    """
    from attnphys._checks import check_array, check_count

    check_array(x0, "x0", ndim=1, what="one state (D,); refine_batch takes a batch")
    check_count(period, "period")
    out = refine_batch(m, _batch1(x0), _batch1(aux0), _batch1(params), [period], **kw)
    return _unbatch(out)


def _jacobians(m: AbstractMap, xs, auxs, params, p, steps):
    """(P, D, D) Jacobians along the orbit xs (P, D), for j < p; the identity beyond.

    ``steps`` ≥ p is the loop's length: under ``vmap`` it is the batch's longest period, passed
    unbatched, so that the loop is one for the batch and each step writes one entry; a loop of each lane's
    own p steps would be batched with its whole carry (P, D, D) selected lane by lane at every step."""
    P, D = xs.shape
    eye = jnp.eye(D, dtype=xs.dtype)

    def body(j, Js):
        on = j < p
        aux = jax.tree_util.tree_map(lambda a: a[j], auxs)
        return Js.at[j].set(jnp.where(on, m.jacobian(jnp.where(on, xs[j], 0.0), aux, params), eye))

    return jax.lax.fori_loop(0, steps, body, jnp.broadcast_to(eye, (P, D, D)))


def _pairing(sub, tol):
    """Greedy 2×2 blocks from the subdiagonal of T: first[i] ⇔ (i, i+1) is a block."""

    def body(prev, s):
        f = (s > tol) & ~prev
        return f, f

    _, first = jax.lax.scan(body, jnp.asarray(False), sub)
    return first


def _block_columns(first):
    """(D,) masks from ``first`` (D−1,), block i = columns (i, i+1): (column is the first of a 2×2 block,
    column is the second)."""
    z = jnp.zeros(1, bool)
    return jnp.concatenate([first, z]), jnp.concatenate([z, first])


def _at_column(x, second: bool):
    """A per-block value (D−1,) at the block's first column, or (``second``) at its second: (D,)."""
    z = jnp.zeros(1, x.dtype)
    return jnp.concatenate([z, x] if second else [x, z])


def _normalised_product(factors, eye, p, steps):
    """B_{p−1} ⋯ B_0 of the first p of (n, …, k, k) factors, normalised to unit Frobenius norm after every
    factor, and the accumulated logarithm of the norms (theory: docs/theory/dynamics.md §5.2): the product
    is e^{ln s} times the returned matrix, and nothing under- or overflows. ``eye``: (…, k, k) identities;
    ``steps`` ≥ p: the loop's length (:func:`_jacobians`)."""

    def body(j, c):
        Pm, lg = c
        Pn = factors[j] @ Pm
        n = jnp.sqrt(jnp.sum(Pn**2, axis=(-2, -1)))
        n = jnp.where(n > 0, n, 1.0)
        on = j < p
        return jnp.where(on, Pn / n[..., None, None], Pm), jnp.where(on, lg + jnp.log(n), lg)

    return jax.lax.fori_loop(0, steps, body, (eye, jnp.zeros(eye.shape[:-2], eye.dtype)))


RESOLVED_TOL = 1e-10
"""Leading columns of the periodic QR iteration certify their multipliers when the subspaces they span are
invariant to this (:func:`_resolved`): an error of about this much on each log|μ| of a well-conditioned
multiplier (an ill-conditioned one can move by more; docs/theory/dynamics.md §5.2). Rounding in a cycle
leaves T's off-diagonal entries at 1e-13 to 1e-11 in the paper preset's orbits, so the block-form
tolerance itself (1e-13) would refuse most of them."""


def _resolved(T, first, log_abs, tol: float, whole: bool):
    """How many leading multipliers the periodic QR iteration has certified (theory: docs/theory/dynamics.md
    §5.2, "Which multipliers are resolved"): the largest m such that, for m and every block boundary
    m' < m, the first m' columns span an invariant subspace of the cycle — max |T[m':, :m']| ≤ tol,
    T = Q_0ᵀ Q_p (r, r) — that splits no 2×2 block (``first`` (r−1,): (i, i+1) is a block) and whose
    multipliers dominate the other columns' (``log_abs`` (r,) in column order): the leading m columns are
    in block triangular form, in descending order. When the columns span the whole space (``whole``), the
    space itself is invariant and m = r counts as a boundary; 0 when none."""
    D = T.shape[0]
    if D == 1:
        return jnp.asarray(1 if whole else 0, jnp.int32)
    i = jnp.arange(D)
    n_b = D if whole else D - 1  # the whole space is invariant: after the last column is a boundary too
    m = jnp.arange(1, n_b + 1)
    first = jnp.concatenate([first, jnp.zeros(n_b - (D - 1), bool)])
    below = (i[None, :, None] >= m[:, None, None]) & (i[None, None, :] < m[:, None, None])  # (n_b, D, D)
    low = jnp.max(jnp.where(below, jnp.abs(T)[None], 0.0), axis=(1, 2))
    lead = i[None, :] < m[:, None]  # (n_b, D)
    dom = jnp.min(jnp.where(lead, log_abs[None], jnp.inf), axis=1) >= jnp.max(
        jnp.where(lead, -jnp.inf, log_abs[None]), axis=1
    )
    ok = (low <= tol) & ~first & dom & jnp.all(jnp.isfinite(T))
    # every block boundary up to m certified (the blocks inside the subspace separated too)
    upto = jnp.cumprod(ok | first) > 0
    return jnp.max(jnp.where(ok & upto, m, 0)).astype(jnp.int32)


def _block_eigenvalues(Tb: jax.Array, Pm: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Eigenvalues of A = T_bb P for (n, 2, 2) blocks of T and upper triangular products P (theory:
    docs/theory/dynamics.md §5.2, "2×2 blocks"), without cancellation: det A = det T_bb · P_00 P_11 (no
    difference of products), the root of larger modulus ν₁ = tr/2 + sgn(Re tr)·√(tr²/4 − det) (no
    difference of nearly equal numbers) and the other from ν₁ν₂ = det. The textbook tr/2 ∓ √… loses the
    smaller of two real roots of very different moduli to cancellation: a relative error of
    ε·|ν₁/ν₂| (1e-5 at a ratio e²⁵, seen on the paper preset's long orbits).

    Returns:
        (ν₁, ν₂) complex (n,), |ν₁| ≥ |ν₂|.
    """
    A = Tb @ Pm
    tr = A[:, 0, 0] + A[:, 1, 1]
    det = (Tb[:, 0, 0] * Tb[:, 1, 1] - Tb[:, 0, 1] * Tb[:, 1, 0]) * Pm[:, 0, 0] * Pm[:, 1, 1]
    ctype = jnp.complex128 if A.dtype == jnp.float64 else jnp.complex64
    root = jnp.sqrt((tr**2 / 4 - det).astype(ctype))
    nu1 = tr / 2 + jnp.where(jnp.real(tr) >= 0, 1.0, -1.0) * root
    safe = jnp.where(nu1 == 0, 1.0, nu1)
    return nu1, jnp.where(nu1 == 0, 0.0, det / safe)


def floquet_one(
    m: AbstractMap,
    max_cycles,
    tol: float,
    xs,
    auxs,
    params,
    p,
    r: int | None = None,
    need: int | None = None,
    steps=None,
):
    """The periodic QR iteration of one orbit xs (P, D), period p ≤ P (theory: docs/theory/dynamics.md §5.2), on r columns (all D without r),
    until block form, the cap, or (with ``need``) until the leading ``need`` multipliers are resolved
    (:func:`_resolved`). ``steps`` ≥ p: the length of the loops over the orbit (:func:`_jacobians`)."""
    dtype = xs.dtype
    P = xs.shape[0]
    steps = p if steps is None else steps
    Js = _jacobians(m, xs, auxs, params, p, steps)
    D = xs.shape[-1] if r is None else r  # the columns iterated: all of R^D, or its leading r dimensions
    whole = D == xs.shape[-1]

    def cycle(Q, keep: bool):
        """One cycle from Q: Q_p, Σ_j log|R_j,ii| (r,) and (``keep``) the factors R_j (P, r, r), the identity
        beyond p. The iteration keeps no factors: carried from cycle to cycle under ``vmap``, (P, r, r) would
        be selected lane by lane at every cycle; the last cycle is run again for them."""

        def body(j, c):
            Q, logs, Rs = c
            Qn, R = householder_qr(Js[j] @ Q)
            on = j < p
            logs = jnp.where(on, logs + jnp.log(jnp.abs(jnp.diagonal(R))), logs)
            if keep:
                Rs = Rs.at[j].set(jnp.where(on, R, Rs[j]))
            return jnp.where(on, Qn, Q), logs, Rs

        Rs = jnp.broadcast_to(eye, (P, D, D)) if keep else None
        return jax.lax.fori_loop(0, steps, body, (Q, jnp.zeros(D, dtype), Rs))

    def structure(T):
        lower = jnp.tril(jnp.abs(T), -1)
        sub = jnp.diagonal(lower, -1)
        far = jnp.max(jnp.tril(lower, -2), initial=0.0)
        chain = jnp.any((sub[1:] > tol) & (sub[:-1] > tol)) if D > 2 else jnp.asarray(False)
        return sub, (far <= tol) & ~chain & jnp.all(jnp.isfinite(T))

    def cond(c):
        _, _, _, it, ok = c
        return (it < max_cycles) & ~ok

    def body(c):
        Q0, _, _, it, _ = c
        Qn, log1, _ = cycle(Q0, False)
        T = Q0.T @ Qn
        sub, ok = structure(T)
        if need is not None and D > 1:
            # log|μ| of the columns from this cycle: a 2×2 block's pair shares the mean of its two
            first = _pairing(sub, tol)
            is1, is2 = _block_columns(first)
            mean = (log1[:-1] + log1[1:]) / 2
            est = jnp.where(is1, _at_column(mean, False), jnp.where(is2, _at_column(mean, True), log1))
            ok = ok | (_resolved(T, first, est, RESOLVED_TOL, whole) >= need)
        return Qn, Q0, T, it + 1, ok

    eye = jnp.eye(D, dtype=dtype)
    Q0 = eye if D == xs.shape[-1] else initial_vectors(xs.shape[-1], D, "random", dtype)
    _, Q_last, T, cycles, _ = jax.lax.while_loop(cond, body, (Q0, Q0, eye, jnp.asarray(0), jnp.asarray(False)))
    _, log1, Rs = cycle(Q_last, True)  # the last cycle again, keeping its factors
    sub, block = structure(T)
    first = _pairing(sub, tol) if D > 1 else jnp.zeros(0, bool)

    sign1 = jnp.sign(jnp.diagonal(T)) * jnp.prod(jnp.sign(jnp.diagonal(Rs, axis1=-2, axis2=-1)), axis=0)

    if D > 1:
        ii = jnp.arange(D - 1)
        blk = jnp.stack(
            [
                jnp.stack([Rs[:, ii, ii], Rs[:, ii, ii + 1]], -1),
                jnp.stack([Rs[:, ii + 1, ii], Rs[:, ii + 1, ii + 1]], -1),
            ],
            -2,
        )  # (P, D-1, 2, 2)

        I2 = jnp.broadcast_to(jnp.eye(2, dtype=dtype), (D - 1, 2, 2))
        Pm, lg = _normalised_product(blk, I2, p, steps)
        Tb = jnp.stack(
            [jnp.stack([T[ii, ii], T[ii, ii + 1]], -1), jnp.stack([T[ii + 1, ii], T[ii + 1, ii + 1]], -1)], -2
        )
        nu1, nu2 = _block_eigenvalues(Tb, Pm)
        is1, is2 = _block_columns(first)
        nu = jnp.where(is1, _at_column(nu1, False), jnp.where(is2, _at_column(nu2, True), 1.0 + 0j))
        lg_blk = jnp.where(is1, _at_column(lg, False), _at_column(lg, True))
        in_blk = is1 | is2
        log_abs = jnp.where(in_blk, lg_blk + jnp.log(jnp.abs(nu)), log1)
        angle = jnp.where(in_blk, jnp.angle(nu), jnp.where(sign1 < 0, jnp.pi, 0.0))
        mult = jnp.where(in_blk, jnp.exp(lg_blk) * nu, sign1 * jnp.exp(log1))
    else:
        log_abs = log1
        angle = jnp.where(sign1 < 0, jnp.pi, 0.0)
        mult = (sign1 * jnp.exp(log1)).astype(jnp.complex128 if dtype == jnp.float64 else jnp.complex64)
    resolved = jnp.where(block & whole, D, _resolved(T, first, log_abs, RESOLVED_TOL, whole))
    order = jnp.lexsort((-angle, -log_abs))
    log_abs, angle, mult = log_abs[order], angle[order], mult[order]
    return Floquet(
        multipliers=mult,
        log_abs=log_abs,
        angle=angle,
        exponents=log_abs / p,
        converged=block,
        cycles=cycles,
        resolved=resolved,
    )


@partial(jax.jit, static_argnames=("m", "tol", "r", "need"))
def _floquet_many(m, max_cycles, tol, r, need, xs, auxs, params, p, shared=None):
    """``max_cycles`` (B,) int32 is traced, a cap per orbit: both passes of :func:`floquet_batch` share a
    compilation."""
    steps = jnp.max(p)  # one loop length for the batch (:func:`_jacobians`)
    return jax.vmap(
        lambda cap, x, a, q, pp: floquet_one(m, cap, tol, x, a, _with_shared(shared, q), pp, r, need, steps)
    )(max_cycles, xs, auxs, params, p)


def floquet_batch(
    m: AbstractMap,
    points,
    aux_points,
    params,
    periods,
    *,
    tol: float = 1e-13,
    max_cycles: int | Any = 500,
    shared=None,
    leading: int | None = None,
) -> Floquet:
    """Floquet multipliers of a batch of periodic orbits by the periodic QR iteration
    (theory: docs/theory/dynamics.md §5.2): the eigenvalues of M = J_{p−1} ⋯ J_0 without forming M.

    Args:
        points: (B, P, D) orbit points x_0 … x_{p−1} (entries beyond p are ignored); aux_points: their
            aux (leading axes B, P); params: leading axis B; periods: (B,) ints ≤ P.
        tol: block-form tolerance on the strictly lower part of T = Q_0ᵀ Q_p. max_cycles: cap on cycles,
            one for all or (B,) one per orbit (``converged`` False if reached). shared: unbatched parameters
            (the map gets ``(shared, params_i)``). leading: only the leading multipliers are wanted: the
            iteration runs on leading + 2 columns and stops once ``leading`` of them are resolved.

    Returns:
        :class:`Floquet` (numpy) with a leading axis B; multipliers sorted by modulus, descending; only the
        first ``resolved`` of each orbit are certified. Orbits are iterated in groups of equal padded length
        (:func:`by_padded_length`).
    """
    points = np.asarray(points)
    periods = np.asarray(periods, dtype=np.int64).reshape(-1)
    D = int(points.shape[2])
    if leading is not None and leading < 1:
        raise ValueError(f"leading must be >= 1, got {leading}")
    r = D if leading is None else min(D, leading + 2)
    need = None if leading is None else min(D, leading)
    if np.ndim(max_cycles) and np.shape(max_cycles) != periods.shape:
        raise ValueError(
            f"max_cycles must be one int or one per orbit {periods.shape}, got shape {np.shape(max_cycles)}"
        )
    caps = np.broadcast_to(np.asarray(max_cycles, np.int64), periods.shape)
    if caps.size and caps.min() < 1:
        raise ValueError(f"max_cycles must be >= 1, got {caps.min()}")
    parts = []
    for group in by_padded_length(periods):
        # chunks of similar periods, each iterated to its longest (stored at one length)
        Pg = stored_length(int(periods[group].max()))
        todo = group
        for cap in (np.minimum(caps, FIRST_CYCLES), caps):  # the first pass, then the slow orbits again
            if not todo.size:
                break
            done = []
            for idx, sel, rows in _row_chunks(todo):
                part = _floquet_many(
                    m,
                    np.asarray(cap[sel], np.int32),
                    tol,
                    r,
                    need,
                    *_chunk_orbits(rows, sel, Pg, points, aux_points, params, periods),
                    shared,
                )
                done.append((idx, part))
            parts += done  # a later part of the same orbit replaces an earlier one
            # read back only after every chunk of the pass is dispatched; only orbits with cycles left go on
            todo = np.concatenate(
                [
                    idx[
                        ~np.asarray(part.converged)[: idx.size]
                        & (np.asarray(part.resolved)[: idx.size] < (need or D))
                        & (caps[idx] > cap[idx])
                    ]
                    for idx, part in done
                ]
            )
    if not parts:
        raise ValueError("floquet_batch needs at least one orbit")
    return _scatter(parts, periods.size)


DIRECT_RTOL = 1e-10
"""Acceptance of :func:`floquet_direct`: every multiplier reported has a first-order error bound of at most this
times its modulus (about 1e-10 / p on its exponent)."""


@partial(jax.jit, static_argnames=("m",))
def _monodromy_many(m, xs, auxs, params, p, shared=None):
    """(B, D, D) monodromies M / s and (B,) ln s: the product of the Jacobians along each orbit, normalised at
    every factor (:func:`_normalised_product`)."""

    steps = jnp.max(p)  # one loop length for the batch (:func:`_jacobians`)

    def one(x, a, q, pp):
        return _normalised_product(
            _jacobians(m, x, a, _with_shared(shared, q), pp, steps), jnp.eye(x.shape[-1], dtype=x.dtype), pp, steps
        )

    return jax.vmap(one)(xs, auxs, params, p)


def _direct_eig(Mm: np.ndarray, lg: float, leading: int, rtol: float):
    """Multipliers of e^lg · Mm from LAPACK, sorted as :func:`floquet` sorts them, and whether they are
    resolved: the first-order bound ε‖M‖_F κ_i (κ_i = 1/|y_iᴴ x_i|, unit left and right eigenvectors) is at
    most ``rtol`` |μ_i| for the ``leading`` largest and ``rtol`` times the smallest of those for the others
    (so none of them can move above the leading ones)."""
    import scipy.linalg

    D = Mm.shape[0]
    if not np.all(np.isfinite(Mm)):
        return np.full(D, -np.inf), np.zeros(D), False
    w, vl, vr = scipy.linalg.eig(Mm, left=True, right=True)  # pyright: ignore[reportAssignmentType]
    with np.errstate(divide="ignore"):
        log_abs = lg + np.log(np.abs(w))
    angle = np.angle(w)
    order = np.lexsort((-angle, -log_abs))
    w, log_abs, angle = w[order], log_abs[order], angle[order]
    s = np.abs(np.sum(np.conj(vl[:, order]) * vr[:, order], axis=0))
    with np.errstate(divide="ignore"):  # a defective multiplier (s = 0) is not resolved
        bound = np.finfo(Mm.dtype).eps * np.linalg.norm(Mm) / s
    ref = np.abs(w)[np.minimum(np.arange(D), leading - 1)]
    ok = bool(np.all(np.isfinite(bound)) and np.all(bound <= rtol * ref) and np.all(ref > 0))
    return log_abs, angle, ok


def floquet_direct(
    m: AbstractMap,
    points,
    aux_points,
    params,
    periods,
    *,
    shared=None,
    leading: int | None = None,
    rtol: float = DIRECT_RTOL,
) -> Floquet:
    """Floquet multipliers of a batch of periodic orbits as the eigenvalues of their monodromy matrices
    (theory: docs/theory/dynamics.md §5.2, "Clustered multipliers"): M = J_{p−1} ⋯ J_0 formed with a
    normalisation at every factor, its eigenvalues and eigenvector condition numbers from LAPACK on the host.
    No cap on cycles: the answer for multipliers whose moduli are too close for the periodic QR iteration
    (:func:`floquet_batch`) to separate in its cycles, as long as their range fits in floating point — which
    ``converged`` reports (see :func:`_direct_eig`; a long or strongly contracting orbit is not resolved).

    Args and returns as :func:`floquet_batch` (``leading``: the multipliers that must be resolved, all D
    without it; ``cycles`` is 0).
    """
    points = np.asarray(points)
    periods = np.asarray(periods, dtype=np.int64).reshape(-1)
    D = int(points.shape[2])
    if leading is not None and leading < 1:
        raise ValueError(f"leading must be >= 1, got {leading}")
    leading = D if leading is None else min(D, leading)
    n = periods.size
    log_abs, angle = np.zeros((n, D)), np.zeros((n, D))
    ok = np.zeros(n, bool)
    for group in by_padded_length(periods):
        Pg = stored_length(int(periods[group].max()))
        for idx, sel, rows in _row_chunks(group):
            Mm, lg = _monodromy_many(
                m,
                *_chunk_orbits(rows, sel, Pg, points, aux_points, params, periods),
                shared,
            )
            Mm, lg = np.asarray(Mm), np.asarray(lg)
            for j, i in enumerate(idx):
                log_abs[i], angle[i], ok[i] = _direct_eig(Mm[j], float(lg[j]), leading, rtol)
    with np.errstate(over="ignore", invalid="ignore"):
        mult = np.exp(log_abs) * np.exp(1j * angle)
    return Floquet(
        multipliers=mult,
        log_abs=log_abs,
        angle=angle,
        exponents=log_abs / np.maximum(periods, 1)[:, None],
        converged=ok,
        cycles=np.zeros(n, np.int64),
        resolved=np.where(ok, leading, 0).astype(np.int32),
    )


def floquet(
    m: AbstractMap, orbit: PeriodicOrbit | Any, aux_points=None, params=None, period: int | None = None, **kw
) -> Floquet:
    """Floquet multipliers of one periodic orbit (theory: docs/theory/dynamics.md §5.2–5.3).

    Call as ``floquet(m, refined_orbit, params=params)`` with a :class:`PeriodicOrbit`, or
    ``floquet(m, points (p, D), aux_points, params, period)``. Exponents are log|μ_i| / p.
    """
    if isinstance(orbit, PeriodicOrbit):
        points, aux_points, period = orbit.points, orbit.aux_points, int(orbit.period)
    else:
        points = jnp.asarray(orbit)
        period = points.shape[0] if period is None else period
    return _unbatch(floquet_batch(m, _batch1(points), _batch1(aux_points), _batch1(params), [period], **kw))


def monodromy(m: AbstractMap, x, aux, params, period: int) -> jax.Array:
    """M = ∂F^p/∂x (D, D) formed directly by ``jax.jacfwd`` (theory: docs/theory/dynamics.md §5.1): for
    short periods and checks only — its entries under/overflow for long strongly contracting or
    expanding orbits, which :func:`floquet` avoids."""
    return _monodromy(m, int(period), jnp.asarray(x), aux, params)


@partial(jax.jit, static_argnames=("m", "p"))
def _monodromy(m, p, x, aux, params):
    return jax.jacfwd(lambda y: compose_steps(m, y, aux, params, p)[0])(x)
