"""Orbits of a map at many parameter values: transient, recorded window, zero-plane sections and
Lyapunov exponents in one pass (theory: docs/theory/dynamics.md §3).

For each parameter value the map runs ``transient`` steps unrecorded (its last ``align`` steps also
rotate the tangent vectors), then ``steps`` recorded steps, in which it keeps

* the last ``n_orbit`` observations y_t (in time order) and fingerprints f(x_t) of the full state
  (:mod:`attnphys.dynamics.fingerprint`; ``n_fingerprint`` numbers per step);
* for every pair (f, g) of ``section``: the values y_t[f] at steps where |y_t[g]| ≤ ``section_tol``
  (the zero-plane Poincaré section; theory: docs/theory/dmft.md §7.1), at most ``max_section`` of them, and their count;
* if k > 0, the leading k Lyapunov exponents over the recorded steps with their evidence ``roundoff``,
  ``zero_hits``, ``parallel``, ``unreliable`` (theory: docs/theory/dynamics.md §2.3) and
  ``tangent_nonfinite``, the first recorded step at which a tangent vector became non-finite (−1: never);
* the first step at which the state became non-finite (−1: never).

Tangent vectors start random (seeded) by default, as in :func:`attnphys.dynamics._lyapunov.lyapunov`;
``init="identity"`` is available for comparisons with reference codes.

:func:`orbit_sweep` vmaps this over a batch of parameters (cold start: independent initial states)
and :func:`continuation_chains` chains it along a parameter path, each point starting from the previous
point's final state, in both directions at once.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, NamedTuple

import jax
import jax.numpy as jnp

from attnphys import _deprecated
from attnphys._checks import check_array
from attnphys.dynamics._lyapunov import advance, initial_vectors, zero_acc
from attnphys.dynamics.fingerprint import fingerprint
from attnphys.dynamics.maps import AbstractMap
from attnphys.errors import InputError
from attnphys.runtime import shard_batch


class OrbitSpec(NamedTuple):
    """What to run and keep, hashable: a static argument (theory: docs/theory/dynamics.md §3).

    steps: recorded steps; transient: unrecorded steps before (its last ``align`` steps rotate the
    tangent vectors); k: exponents (0: none); reortho_every: Δ; n_orbit: observations kept;
    section/section_tol/max_section: zero-plane sections; init: initial tangent vectors (``random``, the
    default, or ``identity``); n_fingerprint: numbers per state fingerprint.
    """

    steps: int
    transient: int = 0
    k: int = 0
    align: int = 0
    reortho_every: int = 1
    n_orbit: int = 1000
    section: tuple[tuple[int, int], ...] = ()
    section_tol: float = 1e-3
    max_section: int = 1000
    init: str = "random"
    n_fingerprint: int = 4

    def validate(self) -> OrbitSpec:
        """Refuse a spec that breaks a rule (ValueError naming the field)."""
        for name in ("steps", "transient", "k", "align", "reortho_every", "n_orbit", "max_section", "n_fingerprint"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise ValueError(f"{name} must be an integer, got {v!r}")
        if self.steps < 1:
            raise ValueError(f"steps must be >= 1, got {self.steps}")
        if self.transient < 0:
            raise ValueError(f"transient must be >= 0, got {self.transient}")
        if not 0 <= self.align <= self.transient:
            raise ValueError(f"align must be in [0, transient={self.transient}], got {self.align}")
        if self.k < 0 or self.reortho_every < 1:
            raise ValueError("k must be >= 0 and reortho_every >= 1")
        if not 1 <= self.n_orbit <= self.steps:
            raise ValueError(f"n_orbit must be in [1, steps={self.steps}], got {self.n_orbit}")
        if self.section_tol < 0 or self.max_section < 1:
            raise ValueError("section_tol must be >= 0 and max_section >= 1")
        if self.init not in ("random", "identity"):
            raise ValueError(f"init must be 'random' or 'identity', got {self.init!r}")
        if self.n_fingerprint < 1:
            raise ValueError(f"n_fingerprint must be >= 1, got {self.n_fingerprint}")
        return self


_BLOCK = 16
"""Recorded steps run in blocks of this many steps (or Δ if larger): each block's observations are
written by ``lax.scan`` into a small buffer that stays in cache, then reduced at once (section
compaction). Measured on the DMFT map at batch 1024: blocks of 16 record at ~1e7 point-steps/s,
blocks of 1024 at ~1.5e6."""


def _section_update(spec: OrbitSpec, ys, sec, count):
    """Append the block's zero-plane points: ys (n, F) → sec (n_pairs, max_section), count (n_pairs,)."""
    if not spec.section:
        return sec, count
    f_idx = jnp.asarray([p[0] for p in spec.section])
    g_idx = jnp.asarray([p[1] for p in spec.section])
    hits = jnp.abs(ys[:, g_idx]) <= spec.section_tol  # (n, n_pairs)
    pos = count[None, :] + jnp.cumsum(hits, axis=0, dtype=count.dtype) - 1
    pos = jnp.where(hits, pos, spec.max_section)  # out of range: dropped
    vals = ys[:, f_idx]

    def put(row, p, v):
        return row.at[p].set(v, mode="drop")

    sec = jax.vmap(put, in_axes=(0, 1, 1))(sec, pos, vals)
    return sec, count + jnp.sum(hits, axis=0, dtype=count.dtype)


def _first_bad(ok, t0, bad):
    """First index t0 + i with ok[i] False, if ``bad`` is still −1."""
    i = jnp.argmin(ok)
    return jnp.where((bad < 0) & ~ok[i], jnp.asarray(t0 + i, bad.dtype), bad)


def _single(m: AbstractMap, spec: OrbitSpec, x0, aux0, params):
    x0 = jnp.asarray(x0)
    dtype = x0.dtype
    # every step below is the map's cached form (theory: docs/theory/dynamics.md §1.1)
    aux = m.cache_aux(x0, aux0, params)
    x, aux, _, _, _ = advance(m, params, spec.transient - spec.align, 1, x0, aux, cached=True)
    Q = acc = None
    if spec.k:
        aux = m.tangent_aux(x, aux, params)
        Q = initial_vectors(x0.shape[0], spec.k, spec.init, dtype)
        acc = zero_acc(spec.k, dtype)
        if spec.align:
            x, aux, Q, _, _ = advance(m, params, spec.align, spec.reortho_every, x, aux, Q, acc, cached=True)

    def emit(x, aux):
        return (m.observe_cached(x, aux, params), fingerprint(x, spec.n_fingerprint)), jnp.all(jnp.isfinite(x))

    d = spec.reortho_every
    n_pairs = len(spec.section)
    sec = jnp.full((n_pairs, spec.max_section), jnp.nan, dtype)
    count = jnp.zeros(n_pairs, jnp.int32)
    bad = jnp.asarray(-1, jnp.int32)

    def block(c, t0, n):
        x, aux, Q, acc, sec, count, bad = c
        x, aux, Q, acc, (ys, ok) = advance(m, params, n, d, x, aux, Q, acc, emit, cached=True)
        sec, count = _section_update(spec, ys[0], sec, count)
        return (x, aux, Q, acc, sec, count, _first_bad(ok, t0, bad)), ys

    blk = d * max(1, _BLOCK // d)

    def run(c, t0, n, keep):
        """n steps from step t0 in blocks; returns the observations (n, F) if ``keep``."""
        n_blk, rem = divmod(n, blk)
        parts = []
        if n_blk and keep:
            c, ys = jax.lax.scan(lambda c, i: block(c, t0 + i * blk, blk), c, jnp.arange(n_blk))
            parts.append(jax.tree_util.tree_map(lambda a: a.reshape((-1,) + a.shape[2:]), ys))
        elif n_blk:
            c = jax.lax.fori_loop(0, n_blk, lambda i, c: block(c, t0 + i * blk, blk)[0], c)
        if rem:
            c, ys = block(c, t0 + n_blk * blk, rem)
            parts.append(ys)
        return c, (jax.tree_util.tree_map(lambda *a: jnp.concatenate(a), *parts) if keep else None)

    # everything before the last n_orbit steps is seen by the section only; the rest is the orbit
    n_a = spec.steps - spec.n_orbit
    c, _ = run((x, aux, Q, acc, sec, count, bad), 0, n_a, False)
    c, ring = run(c, n_a, spec.n_orbit, True)
    assert ring is not None  # kept
    x, aux, Q, acc, sec, count, bad = c
    aux = m.uncache_aux(aux)
    out = dict(orbit=ring[0], fingerprint=ring[1], section=sec, section_count=count, nonfinite_step=bad, x=x, aux=aux)
    if spec.k:
        assert acc is not None  # accumulated with the tangent vectors
        out.update(
            exponents=acc.S / spec.steps,
            roundoff=acc.roundoff / acc.n,
            zero_hits=acc.zero_hits,
            parallel=acc.parallel / acc.n,
            unreliable=acc.parallel > 0,
            tangent_nonfinite=acc.nonfinite,
        )
    return out


@partial(jax.jit, static_argnames=("m", "spec"))
def _orbit(m: AbstractMap, spec: OrbitSpec, x0, aux0, params) -> dict:
    return _single(m, spec, x0, aux0, params)


def orbit(m: AbstractMap, spec: OrbitSpec, x0, aux0, params) -> dict:
    """One orbit (theory: docs/theory/dynamics.md §3); see the module docstring for what is returned:
    ``orbit`` (n_orbit, F), ``fingerprint`` (n_orbit, G), ``section`` (n_pairs, max_section),
    ``section_count`` (n_pairs,), ``nonfinite_step`` (), final ``x``/``aux`` and, if k > 0, ``exponents``,
    ``roundoff``, ``zero_hits``, ``parallel``, ``unreliable`` (k,), ``tangent_nonfinite`` ().

    Raises:
        ValueError: ``spec`` breaks a rule (:meth:`OrbitSpec.validate`, e.g. ``n_orbit`` > ``steps``), or
            ``x0`` is not a (D,) state (k exponents need k <= D).
    """
    if not isinstance(spec, OrbitSpec):
        raise InputError(f"must be an OrbitSpec(steps=…, …), got {type(spec).__name__}", "spec")
    spec.validate()
    D = check_array(x0, "x0", ndim=1, what="one state (D,); orbit_sweep takes a batch")[0]
    check_map_call(m, x0, aux0, params)
    if spec.k > D:
        raise InputError(f"must be at most the state dimension D = {D}, got {spec.k}", "k")
    return _orbit(m, spec, x0, aux0, params)


def _with_shared(shared, p):
    return p if shared is None else (shared, p)


@partial(jax.jit, static_argnames=("m", "spec"))
def _sweep(m, spec, x0, aux0, params, shared):
    return jax.vmap(lambda x, a, p: _single(m, spec, x, a, _with_shared(shared, p)))(x0, aux0, params)


def check_map_call(m, x0, aux0, params, batch: bool = False) -> tuple[int, ...]:
    """Refuse the wrong types at the entry of a toolkit analysis (theory: docs/theory/dynamics.md §2.3),
    before anything is traced: ``m`` not a map, ``x0`` not a (D,) state (``batch``: (B, D) states),
    parameters or auxiliary state that hold anything but numbers, batches of different sizes.

    Returns:
        The shape of ``x0``.

    Raises:
        InputError: naming the argument (``m``, ``x0``, ``aux0``, ``params``).
    """
    if not isinstance(m, AbstractMap):
        raise InputError(
            f"must be a map (an AbstractMap, e.g. FunctionMap(...) or EXAMPLES['logistic']), got {type(m).__name__}",
            "m",
        )
    shape = (
        check_array(x0, "x0", ndim=2, what="a batch of states (B, D)")
        if batch
        else check_array(x0, "x0", ndim=1, what="one state (D,)")
    )
    for name, tree in (("aux0", aux0), ("params", params)):
        for leaf in jax.tree_util.tree_leaves(tree):
            check_array(leaf, name, ndim=range(0, 8))
    if batch:
        _check_batch(params, shape[0], "params")
        _check_batch(aux0, shape[0], "aux0")
    return shape


def _check_batch(tree, B: int, name: str) -> None:
    """Every leaf of ``tree`` has the leading batch axis B."""
    for leaf in jax.tree_util.tree_leaves(tree):
        shape = jnp.shape(leaf)
        if not shape or shape[0] != B:
            raise InputError(
                f"every leaf needs a leading batch axis of {B} (one per state of x0), got shape {shape}", name
            )


def orbit_sweep(m: AbstractMap, spec: OrbitSpec, x0, aux0, params, shared=None) -> dict:
    """Cold-start orbits for a batch (theory: docs/theory/dynamics.md §3): every leaf of x0, aux0 and
    params has a leading batch axis B; every output gets that leading axis.

    ``shared`` is an unbatched pytree; when given, the map receives ``(shared, params_i)``. The batch
    is split over the available devices.
    """
    spec.validate()
    B, D = check_array(x0, "x0", ndim=2, what="a batch of states (B, D)")
    if spec.k > D:
        raise InputError(f"must be at most the state dimension D = {D}, got {spec.k}", "k")
    _check_batch(params, B, "params")
    _check_batch(aux0, B, "aux0")
    return shard_batch(lambda x, a, p: _sweep(m, spec, x, a, p, shared), (x0, aux0, params), B)


@partial(jax.jit, static_argnames=("m", "spec"))
def _chain(m, spec, x0, aux0, path, shared):
    def one(carry, p):
        x, aux = carry
        out = _single(m, spec, x, aux, _with_shared(shared, p))
        return (out["x"], out["aux"]), out

    _, outs = jax.lax.scan(one, (x0, aux0), path)
    return outs


def continuation_chains(m: AbstractMap, spec: OrbitSpec, x0, aux0, path, directions=("up",), shared=None) -> dict:
    """Orbits along a parameter path, each point starting from the previous point's final state
    (theory: docs/theory/dynamics.md §3).

    Args:
        path: parameters with a leading axis of length n (the points, in increasing order).
        shared: unbatched parameters; when given the map receives ``(shared, path_i)``.
        directions: any of ``up`` (first to last) and ``down`` (last to first); both run as one batch.

    Returns:
        dict of arrays with leading axes (direction, point), points always in increasing order.
    """
    spec.validate()
    paths = []
    for d in directions:
        if d not in ("up", "down"):
            raise ValueError(f"direction must be 'up' or 'down', got {d!r}")
        paths.append(path if d == "up" else jax.tree_util.tree_map(lambda a: a[::-1], path))
    stacked = jax.tree_util.tree_map(lambda *a: jnp.stack(a), *paths)
    n_dir = len(directions)
    x0s = jnp.broadcast_to(jnp.asarray(x0), (n_dir,) + jnp.shape(x0))
    aux0s = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (n_dir,) + jnp.shape(a)), aux0)
    outs = shard_batch(
        lambda x, a, p: jax.vmap(lambda xx, aa, pp: _chain(m, spec, xx, aa, pp, shared))(x, a, p),
        (x0s, aux0s, stacked),
        n_dir,
    )
    # put every direction back in increasing parameter order
    flip = jnp.asarray([d == "down" for d in directions])

    def reorder(a):
        return jnp.where(flip.reshape((-1,) + (1,) * (a.ndim - 1)), a[:, ::-1], a)

    return jax.tree_util.tree_map(reorder, outs)


if not TYPE_CHECKING:  # the names of 0.2.0 that moved, with a deprecation warning
    __getattr__ = _deprecated.module_getattr(__name__)
