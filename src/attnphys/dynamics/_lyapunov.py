"""Lyapunov exponents of discrete-time maps by the Benettin/QR method (theory: docs/theory/dynamics.md §2).

For tangent vectors Q ∈ R^{D×k} (orthonormal), every Δ steps

    Q ← J_{t+Δ-1} ⋯ J_t Q,     (Q, R) = qr(Q),     S ← S + log|diag R|,

and λ_i = S_i / T (natural log per step, §2.1). The QR is a classical Gram–Schmidt with one
re-orthogonalisation pass ("twice is enough"), written out so that it vectorises over a batch; norms are
scaled by the largest entry before squaring, so nothing underflows above the smallest normal number (§2.2).
Between two QRs (Δ > 1) every column is rescaled after each step by a power of two (exact) and the
logarithm of the scale is accumulated, so a long interval can neither overflow nor underflow (§2.2).

Evidence returned with the exponents (§2.3):

* ``roundoff``: per exponent, the fraction of QR steps in which |R_ii| < ε_mach·|R_00|, i.e. the
  direction was contracted below round-off relative to the leading one in that step.
* ``zero_hits``: per exponent, how often a tangent vector was annihilated exactly: it was exactly 0 on
  entry (|R_ii| = 0; replaced by a fixed generic direction) or exactly dependent on the earlier columns
  (zero after projection). log|R_ii| = log 0 = −∞ is accumulated: such an exponent is reported as −∞.
* ``parallel`` / ``unreliable``: the fraction of QR steps in which column i kept less than
  2¹⁰·ε_mach of its norm after projection on the earlier columns (|R_ii| ≤ 2¹⁰ ε ‖v_i‖: R_ii then
  carries fewer than about ten correct bits — the column had become numerically parallel to the earlier
  ones, typically because Δ is too long for the gap λ_1 − λ_i); ``unreliable`` = parallel > 0.
* ``nonfinite``: the index of the last step of the re-orthonormalisation interval in which a tangent
  vector (or the state) first became NaN/±∞ (exact for Δ = 1), −1 if never. Inside ``jit`` it is only
  reported; :func:`lyapunov` called with concrete arrays raises :class:`attnphys.errors.NonFiniteError`.
* ``history``: optional running estimates S/t for judging convergence.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnphys.dynamics.checks import is_traced, raise_if_nonfinite, warn_if_single_precision
from attnphys.dynamics.maps import AbstractMap

PARALLEL_BITS = 10
"""A column is numerically parallel to the earlier ones when |R_ii| ≤ 2**PARALLEL_BITS · ε · ‖v_i‖."""


class LyapunovResult(NamedTuple):
    """Result of :func:`lyapunov` (theory: docs/theory/dynamics.md §2.1–2.3).

    exponents: (k,) in QR order (asymptotically descending; −∞ for an annihilated direction); see
    :func:`sorted_exponents`. roundoff: (k,) fraction of QR steps below round-off. zero_hits: (k,) exact
    annihilations. history: (n_hist, k) running estimates, or an empty array. x, aux, Q: final state and
    vectors. parallel: (k,) fraction of QR steps in which the column was numerically parallel to the
    earlier ones; unreliable: (k,) bool, parallel > 0. nonfinite: () first non-finite step (−1: none)."""

    exponents: jax.Array
    roundoff: jax.Array
    zero_hits: jax.Array
    history: jax.Array
    x: jax.Array
    aux: object
    Q: jax.Array
    # None only in a result built by hand with the fields above
    parallel: jax.Array = None  # pyright: ignore[reportAssignmentType]
    unreliable: jax.Array = None  # pyright: ignore[reportAssignmentType]
    nonfinite: jax.Array = None  # pyright: ignore[reportAssignmentType]


def _generic_basis(D: int, k: int, dtype) -> jax.Array:
    """A fixed, seeded orthonormal (D, k) set: generic directions, used as initial vectors and to
    replace annihilated ones."""
    q, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(D, D)))
    return jnp.asarray(q[:, :k], dtype=dtype)


@partial(jax.jit, static_argnames=("axis",))
def scaled_norm(v: jax.Array, axis: int = 0) -> jax.Array:
    """‖v‖₂ = s·sqrt(Σ (v_i/s)²) with s = max|v_i| (theory: docs/theory/dynamics.md §2.2): exact 0 for
    v = 0, no underflow for tiny v, NaN for any non-finite entry (also where a vectorised max drops NaNs)."""
    s = jnp.max(jnp.abs(v), axis=axis)
    safe = jnp.where(s > 0, s, 1.0)
    nrm = s * jnp.sqrt(jnp.sum((v / jnp.expand_dims(safe, axis)) ** 2, axis=axis))
    return jnp.where(jnp.all(v == 0, axis=axis), 0.0, jnp.where(s > 0, nrm, jnp.nan))


SMALL_D = 4
"""States of at most this dimension are re-orthonormalised entry by entry (:func:`_gram_schmidt_entries`)."""


def _scaled_norm_entries(v: list) -> jax.Array:
    """:func:`scaled_norm` of a vector given as a list of its entries (scalars, or arrays of one shape)."""
    s = _max_abs(v)
    safe = jnp.where(s > 0, s, 1.0)
    nrm = s * jnp.sqrt(_sum([(e / safe) ** 2 for e in v]))
    return jnp.where(s == 0, 0.0, jnp.where(s > 0, nrm, jnp.nan))  # s == 0 exactly when every entry is 0


def _max_abs(v: list) -> jax.Array:
    s = jnp.abs(v[0])
    for e in v[1:]:
        s = jnp.maximum(s, jnp.abs(e))  # propagates NaN
    return s


def _sum(terms: list) -> jax.Array:
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out


def _gram_schmidt_entries(V: jax.Array):
    """:func:`_gram_schmidt` for a small V (D, k), D ≤ :data:`SMALL_D`, written on its D·k entries, each a
    scalar (theory: docs/theory/dynamics.md §2.1–2.3): under ``jax.vmap`` every operation is then one
    elementwise operation over the batch, instead of reductions and matrix products over axes of length 2–4,
    which a compiler for CPUs runs element by element (on the Hénon map at batch 4096 the spectrum runs about
    twice as many point-steps per CPU-second). Same algorithm, same evidence; the results agree with the
    matrix form's to rounding."""
    D, k = V.shape
    tiny = jnp.finfo(V.dtype).tiny
    eps = jnp.finfo(V.dtype).eps
    G = _generic_basis(D, k, V.dtype)
    cols_in, entry = [], []
    for j in range(k):
        col = [V[i, j] for i in range(D)]
        ez = _max_abs(col) == 0  # every entry exactly 0 (a NaN column is not)
        entry.append(ez)
        cols_in.append([jnp.where(ez, G[i, j], e) for i, e in enumerate(col)])
    qs: list[list] = []
    rs, vnorms = [], []
    for j in range(k):
        v = cols_in[j]
        if qs:
            c1 = [_sum([q[i] * v[i] for i in range(D)]) for q in qs]
            v = [v[i] - _sum([q[i] * c for q, c in zip(qs, c1)]) for i in range(D)]
            c2 = [_sum([q[i] * v[i] for i in range(D)]) for q in qs]
            v = [v[i] - _sum([q[i] * c for q, c in zip(qs, c2)]) for i in range(D)]
            r = _scaled_norm_entries(v)
            vnorms.append(_scaled_norm_entries([a + b for a, b in zip(c1, c2)] + [r]))
        else:
            r = _scaled_norm_entries(v)
            vnorms.append(r)
        d = jnp.where(r > 0, r, 1.0)
        qs.append([e / d for e in v])
        rs.append(r)
    r = jnp.stack(rs)
    vnorm = jnp.stack(vnorms)
    entry_zero = jnp.stack(entry)
    dependent = (r == 0) & ~entry_zero
    parallel = (r > 0) & (r <= 2.0**PARALLEL_BITS * eps * vnorm)
    Q = jnp.stack([jnp.stack(q) for q in qs], axis=1)
    return Q, jnp.where(entry_zero, tiny, r), entry_zero, dependent, parallel


def _gram_schmidt(V: jax.Array):
    """CGS2 QR with scaled norms: (Q, r, hit_entry, hit_dependent, parallel). The norm of a column before
    projection (for ``parallel``) is taken by Pythagoras from its components along the earlier columns and r.
    A small state (D ≤ :data:`SMALL_D`) is handled entry by entry (:func:`_gram_schmidt_entries`)."""
    if V.shape[0] <= SMALL_D:
        return _gram_schmidt_entries(V)
    return _gram_schmidt_matrix(V)


def _gram_schmidt_matrix(V: jax.Array):
    """:func:`_gram_schmidt` with matrix–vector products (any D)."""
    D, k = V.shape
    tiny = jnp.finfo(V.dtype).tiny
    eps = jnp.finfo(V.dtype).eps
    entry_zero = jnp.all(V == 0, axis=0)  # exactly 0 (a NaN column is not)
    V = jnp.where(entry_zero, _generic_basis(D, k, V.dtype), V)
    cols, rs, vnorms = [], [], []
    for i in range(k):
        v = V[:, i]
        if cols:
            P = jnp.stack(cols, axis=1)
            c1 = P.T @ v
            v = v - P @ c1
            c2 = P.T @ v
            v = v - P @ c2
            r = scaled_norm(v)
            # ‖v_i‖ before the projection, by Pythagoras: its components along the earlier columns and r
            vnorms.append(scaled_norm(jnp.concatenate([c1 + c2, r[None]])))
        else:
            r = scaled_norm(v)
            vnorms.append(r)
        cols.append(v / jnp.where(r > 0, r, 1.0))
        rs.append(r)
    r = jnp.stack(rs)
    vnorm = jnp.stack(vnorms)
    dependent = (r == 0) & ~entry_zero
    parallel = (r > 0) & (r <= 2.0**PARALLEL_BITS * eps * vnorm)
    return jnp.stack(cols, axis=1), jnp.where(entry_zero, tiny, r), entry_zero, dependent, parallel


@jax.jit
def gram_schmidt(V: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """QR of V (D, k), k ≤ D, by classical Gram–Schmidt with re-orthogonalisation (CGS2, "twice is
    enough"), written with matrix–vector products so that it vectorises over a batch
    (theory: docs/theory/dynamics.md §2.1–2.3). Norms are scaled (:func:`scaled_norm`).

    A column that is exactly 0 on entry (the tangent vector was annihilated) is replaced by a fixed
    generic direction before orthogonalisation, so Q stays orthonormal; its |R_ii| is reported as the
    smallest normal number. A column that is exactly dependent on the earlier ones (zero after
    projection) gets r = 0 and a zero column in Q (it is replaced at the next QR, being zero on entry).
    A NaN column gives NaN in r and Q. (Measured at k = 12, batch 512: 4.3e5 QR/s per core.)

    Returns:
        (Q (D, k), r (k,) = |diag R| ≥ 0, hit (k,) bool: column was exactly 0 on entry or after projection).
    """
    Q, r, entry, dep, _ = _gram_schmidt(V)
    return Q, r, entry | dep


class _Acc(NamedTuple):
    """Running sums over QR steps: S = Σ log|R_ii|, round-off, zero-hit and parallel counts, n = number
    of QRs, t = steps pushed, nonfinite = first non-finite step (−1: none)."""

    S: jax.Array
    roundoff: jax.Array
    zero_hits: jax.Array
    n: jax.Array
    # None only in an accumulator built by hand with the four fields above (:func:`advance` fills them in)
    parallel: jax.Array = None  # pyright: ignore[reportAssignmentType]
    t: jax.Array = None  # pyright: ignore[reportAssignmentType]
    nonfinite: jax.Array = None  # pyright: ignore[reportAssignmentType]


def zero_acc(k: int, dtype) -> _Acc:
    """Empty accumulator for k exponents (theory: docs/theory/dynamics.md §2.1)."""
    z = jnp.zeros(k, dtype)
    return _Acc(z, z, z, jnp.zeros((), dtype), z, jnp.zeros((), jnp.int32), jnp.full((), -1, jnp.int32))


def initial_vectors(D: int, k: int, init: str, dtype) -> jax.Array:
    """Initial tangent vectors (theory: docs/theory/dynamics.md §2.1): ``random`` (the default
    everywhere: a fixed, seeded orthonormal set, generic, so exponents come out ordered) or
    ``identity`` (the first k unit vectors, as the DMFT reference; misses the leading direction when it
    is orthogonal to them)."""
    if init == "identity":
        return jnp.eye(D, k, dtype=dtype)
    if init == "random":
        return _generic_basis(D, k, dtype)
    raise ValueError(f"init must be 'identity' or 'random', got {init!r}")


def reorthonormalise(
    Q: jax.Array, acc: _Acc, log_scale: jax.Array | None = None, steps: int = 1, state_ok: jax.Array | bool = True
) -> tuple[jax.Array, _Acc]:
    """One QR step (theory: docs/theory/dynamics.md §2.1–2.3): Q ← qr(Q), S ← S + log|diag R| + log_scale,
    with the evidence of the module doc. ``log_scale`` (k,) is the log of the column scales removed
    since the last QR; ``steps`` the number of steps pushed since then; ``state_ok`` whether the state is
    still finite."""
    finite = jnp.all(jnp.isfinite(Q)) & state_ok
    Q, r, entry, dep, par = _gram_schmidt(Q)
    eps = jnp.finfo(r.dtype).eps
    hit = entry | dep
    logr = jnp.where(hit, -jnp.inf, jnp.log(jnp.where(hit, 1.0, r)))
    if log_scale is not None:
        logr = logr + log_scale
    t = acc.t + steps
    bad = jnp.where((acc.nonfinite < 0) & ~finite, t - 1, acc.nonfinite)
    return Q, _Acc(
        acc.S + logr, acc.roundoff + (r < eps * r[0]), acc.zero_hits + hit, acc.n + 1, acc.parallel + par, t, bad
    )


def _rescale(Q, L):
    """Divide every column of Q (D, k) by the power of two 2^e nearest its max-abs entry, accumulate e·ln 2
    in L (k,) (theory: docs/theory/dynamics.md §2.2). The division is a product with 2^{-e}, formed from
    the k exponents only: exact, the same bits as ``ldexp`` of every entry for a normal max-abs entry, at
    a fraction of its cost. e is clamped at −1021, its value at the smallest normal number, so that 2^{-e}
    stays finite where subnormals are kept; it is 0 for a non-finite column (left as it is, reported at
    the QR)."""
    mx = jnp.max(jnp.abs(Q), axis=0)
    e = jnp.where(jnp.isfinite(mx), jnp.maximum(jnp.frexp(mx)[1], -1021), 0)
    return Q * jnp.ldexp(jnp.ones_like(mx), -e)[None, :], L + e.astype(L.dtype) * math.log(2.0)


def advance(
    m: AbstractMap, params, n: int, every: int, x, aux, Q=None, acc: _Acc | None = None, emit=None, cached: bool = False
) -> tuple[Any, Any, Any, Any, Any]:
    """Advance ``n`` steps (a static int). With tangent vectors Q, push them along and re-orthonormalise
    after every ``every`` steps and after the last one, accumulating into ``acc``
    (theory: docs/theory/dynamics.md §2.1–2.2). For every > 1 the columns are rescaled by powers of two
    after each step (the logs are added at the QR), so no interval can overflow or underflow.

    ``emit(x, aux)`` is evaluated on every pre-step state and its values are returned stacked along a
    leading axis of length n (written in place by ``lax.scan``), or None without ``emit``.

    With ``cached``, ``aux`` is the map's cached auxiliary state (§1.1): of
    :meth:`~attnphys.dynamics.maps.AbstractMap.cache_aux` without Q (stepped by ``step_cached``), of
    :meth:`~attnphys.dynamics.maps.AbstractMap.tangent_aux` with Q (``tangent_cached``); ``emit`` then
    sees the cached form too.

    Returns:
        (x, aux, Q, acc, ys).
    """
    rescale = Q is not None and every > 1

    def one(c, _):
        x, aux, Q, L = c
        y = None if emit is None else emit(x, aux)
        if Q is None:
            x, aux = m.step_cached(x, aux, params) if cached else m.step(x, aux, params)
        else:
            x, aux, Q = m.tangent_cached(x, aux, params, Q) if cached else m.tangent(x, aux, params, Q)
            if rescale:
                Q, L = _rescale(Q, L)
        return (x, aux, Q, L), y

    def group(c, length):
        x, aux, Q, acc = c
        L = None if not rescale else jnp.zeros(Q.shape[1], Q.dtype)
        (x, aux, Q, L), ys = jax.lax.scan(one, (x, aux, Q, L), None, length=length)
        if Q is not None:
            Q, acc = reorthonormalise(Q, acc, L, length, jnp.all(jnp.isfinite(x)))
        return (x, aux, Q, acc), ys

    if acc is not None and acc.t is None:  # an accumulator built by hand with the four original fields
        acc = _Acc(
            acc.S,
            acc.roundoff,
            acc.zero_hits,
            acc.n,
            jnp.zeros_like(acc.S),
            jnp.zeros((), jnp.int32),
            jnp.full((), -1, jnp.int32),
        )
    c: tuple[Any, Any, Any, Any] = (x, aux, Q, acc)
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
def lyapunov_core(m, x0, aux0, params, *, steps, k, reortho_every, align, history_every, init):
    x0 = jnp.asarray(x0)
    D = x0.shape[0]
    Q = initial_vectors(D, k, init, x0.dtype)
    acc0 = zero_acc(k, x0.dtype)
    d = reortho_every
    # the tangent dynamics steps the map's cached form (theory: docs/theory/dynamics.md §1.1)
    x, aux = x0, m.tangent_aux(x0, m.cache_aux(x0, aux0, params), params)
    if align:
        x, aux, Q, acc_a, _ = advance(m, params, align, d, x, aux, Q, acc0, cached=True)
        # a non-finite value during the alignment is reported at its (negative) step
        acc0 = acc0._replace(nonfinite=jnp.where(acc_a.nonfinite >= 0, acc_a.nonfinite - align, -1))
    if history_every:
        n_out, tail = divmod(steps, history_every)

        def outer(c, i):
            c = advance(m, params, history_every, d, *c, cached=True)[:4]
            return c, c[3].S / ((i + 1) * history_every)

        c, hist = jax.lax.scan(outer, (x, aux, Q, acc0), jnp.arange(n_out))
        x, aux, Q, acc, _ = advance(m, params, tail, d, *c, cached=True)
    else:
        x, aux, Q, acc, _ = advance(m, params, steps, d, x, aux, Q, acc0, cached=True)
        hist = jnp.zeros((0, k), x0.dtype)
    aux = m.uncache_aux(aux)
    bad = jnp.where((acc.nonfinite < 0) & ~jnp.all(jnp.isfinite(x)), steps - 1, acc.nonfinite)
    return LyapunovResult(
        exponents=acc.S / steps,
        roundoff=acc.roundoff / acc.n,
        zero_hits=acc.zero_hits,
        history=hist,
        x=x,
        aux=aux,
        Q=Q,
        parallel=acc.parallel / acc.n,
        unreliable=acc.parallel > 0,
        nonfinite=bad,
    )


def lyapunov(
    m: AbstractMap,
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
    check: bool = True,
) -> LyapunovResult:
    """Leading k Lyapunov exponents (all D if k is None) over ``steps`` steps, after ``align`` steps that
    rotate the tangent vectors into the leading directions without counting
    (theory: docs/theory/dynamics.md §2.1): λ_i = (1/T) Σ_QR log|R_ii|.

    Args:
        m: the map. x0: (D,) state. aux0: auxiliary state. params: parameters.
        steps: averaging steps T (exponents are S/T, natural log per step).
        reortho_every: Δ, steps between re-orthonormalisations (§2.2: the columns are rescaled every
            step, and exponents whose column became numerically parallel are flagged ``unreliable``).
        align: steps of tangent dynamics before averaging starts (a transient for the vectors).
        history_every: record the running estimate S/t every this many steps (0: none).
        init: initial tangent vectors, ``random`` (seeded, generic) or ``identity``.
        check: with concrete (not traced) inputs, raise on a non-finite state or tangent vector.

    Returns:
        :class:`LyapunovResult`; exponents (k,) in QR order.

    Raises:
        attnphys.errors.NonFiniteError: the state or a tangent vector became NaN/±∞ (``check``; the error
            names the step and the parameters).
    """
    from attnphys._checks import check_array, check_count
    from attnphys.errors import InputError

    D = check_array(x0, "x0", ndim=1, what="one state (D,)")[0]
    k = D if k is None else k
    check_count(k, "k")
    if not 1 <= k <= D:
        raise ValueError(f"k must be in [1, D={D}], got {k}")
    check_count(steps, "steps")
    check_count(reortho_every, "reortho_every")
    check_count(align, "align", 0)
    check_count(history_every, "history_every", 0)
    if history_every > steps:
        raise InputError(
            f"must be at most steps ({steps}) to record a checkpoint (0: no history), got {history_every}",
            "history_every",
        )
    if init not in ("random", "identity"):
        raise ValueError(f"init must be 'random' or 'identity', got {init!r}")
    warn_if_single_precision(x0)
    res = lyapunov_core(
        m,
        x0,
        aux0,
        params,
        steps=steps,
        k=k,
        reortho_every=reortho_every,
        align=align,
        history_every=history_every,
        init=init,
    )
    if check and not is_traced(res.nonfinite):
        raise_if_nonfinite(res.nonfinite, params, what="state or tangent vector")
    return res


def sorted_exponents(exponents) -> np.ndarray:
    """Exponents sorted descending along the last axis (theory: docs/theory/dynamics.md §2.1)."""
    return -np.sort(-np.asarray(exponents), axis=-1)


def log_abs_det_average(m: AbstractMap, x0, aux0, params, steps: int) -> float:
    """⟨log|det J|⟩ along the orbit: the sum rule Σλ_i = ⟨log|det J_t|⟩ for the full spectrum
    (theory: docs/theory/dynamics.md §2.4)."""

    def f(y, aux):
        return m.step(y, aux, params)[0]

    def body(c, _):
        x, aux, s = c
        J = jax.jacfwd(f)(x, aux)
        x2, aux2 = m.step(x, aux, params)
        return (x2, aux2, s + jnp.linalg.slogdet(J)[1]), None

    (_, _, s), _ = jax.lax.scan(
        body, (jnp.asarray(x0), aux0, jnp.asarray(0.0, jnp.asarray(x0).dtype)), None, length=steps
    )
    return float(s) / steps


EVIDENCE: dict[str, tuple[type, object, dict]] = {
    "exponents": (np.float64, np.nan, {"long_name": "Lyapunov exponents, sorted descending", "units": "1/step"}),
    "roundoff_fraction": (
        np.float64,
        np.nan,
        {"long_name": "fraction of QR steps in which the direction was below round-off"},
    ),
    "below_roundoff": (np.bool_, False, {"long_name": "direction contracted below machine precision in some QR step"}),
    "zero_hits": (np.int64, 0, {"long_name": "exact annihilations of the direction"}),
    "parallel_fraction": (
        np.float64,
        np.nan,
        {"long_name": "fraction of QR steps in which the direction was numerically parallel to the leading ones"},
    ),
    "unreliable": (
        np.bool_,
        False,
        {
            "long_name": "direction numerically parallel to the leading ones in some QR step (fewer than ~10 "
            "correct bits there: a shorter reortho_every, or a direction contracted beyond resolution)"
        },
    ),
}
"""The variables of k exponents sorted descending with the evidence of the QR method, per exponent: dtype, fill
value and CF attributes (theory: docs/theory/dynamics.md §2.3). Exponents from Floquet multipliers have no QR
evidence: NaN fractions, no hits, not flagged."""


def sorted_evidence(exponents, roundoff, zero_hits, parallel) -> dict[str, np.ndarray]:
    """Exponents (…, k) in QR order, sorted descending along the last axis with their evidence: the
    variables of :data:`EVIDENCE` (theory: docs/theory/dynamics.md §2.1, §2.3)."""
    exponents = np.asarray(exponents)
    order = np.argsort(-exponents, axis=-1)

    def take(a):
        return np.take_along_axis(np.asarray(a), order, -1)

    ro, par = take(roundoff), take(parallel)
    return {
        "exponents": take(exponents),
        "roundoff_fraction": ro,
        "below_roundoff": ro > 0,
        "zero_hits": take(zero_hits).astype(np.int64),
        "parallel_fraction": par,
        "unreliable": par > 0,
    }
