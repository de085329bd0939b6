"""Orbits of a map at many parameter values: transient, recorded window, zero-plane sections and
Lyapunov exponents in one pass (spec ``dmft.md`` §5–6).

For each parameter value the map runs ``transient`` steps unrecorded (its last ``align`` steps also
rotate the tangent vectors), then ``steps`` recorded steps, in which it keeps

* the last ``n_orbit`` observations y_t (a ring buffer, returned in time order);
* for every pair (f, g) of ``section``: the values y_t[f] at steps where |y_t[g]| ≤ ``section_tol``
  (the zero-plane Poincaré section of spec §6.1), at most ``max_section`` of them, and their count;
* if k > 0, the leading k Lyapunov exponents over the recorded steps;
* the first step at which the state became non-finite (−1: never).

:func:`orbit_sweep` vmaps this over a batch of parameters (cold start: independent initial states)
and :func:`continuation` chains it along a parameter path, each point starting from the previous
point's final state, in both directions at once.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp

from attnphys.dynamics.lyapunov import evolve_blocks, initial_vectors, n_reorthonormalisations, zero_acc
from attnphys.dynamics.maps import Map
from attnphys.runtime import shard_batch


class OrbitSpec(NamedTuple):
    """What to run and keep (hashable; a static argument)."""

    steps: int
    transient: int = 0
    k: int = 0
    align: int = 0
    reortho_every: int = 1
    n_orbit: int = 1000
    section: tuple[tuple[int, int], ...] = ()
    section_tol: float = 1e-3
    max_section: int = 1000
    init: str = "identity"

    def validate(self) -> "OrbitSpec":
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
        return self


class _Rec(NamedTuple):
    t: jax.Array
    ring: jax.Array
    sec: jax.Array
    count: jax.Array
    bad: jax.Array


def _recorder(m: Map, params, spec: OrbitSpec):
    pairs = spec.section
    f_idx = jnp.asarray([p[0] for p in pairs], jnp.int32)
    g_idx = jnp.asarray([p[1] for p in pairs], jnp.int32)

    def hook(r: _Rec, x, aux) -> _Rec:
        y = m.obs(x, aux, params)
        ring = jax.lax.dynamic_update_index_in_dim(r.ring, y, r.t % spec.n_orbit, 0)
        bad = jnp.where((r.bad < 0) & ~jnp.all(jnp.isfinite(x)), r.t, r.bad)
        if not pairs:
            return _Rec(r.t + 1, ring, r.sec, r.count, bad)
        hit = jnp.abs(y[g_idx]) <= spec.section_tol
        slot = jnp.minimum(r.count, spec.max_section - 1)
        keep = hit & (r.count < spec.max_section)
        rows = jnp.arange(len(pairs))
        sec = r.sec.at[rows, slot].set(jnp.where(keep, y[f_idx], r.sec[rows, slot]))
        return _Rec(r.t + 1, ring, sec, r.count + hit, bad)

    return hook


def _single(m: Map, spec: OrbitSpec, x0, aux0, params):
    x0 = jnp.asarray(x0)
    dtype = x0.dtype
    x, aux, _, _, _ = evolve_blocks(m, params, spec.transient - spec.align, 1 << 30, x0, aux0)
    Q = acc = None
    if spec.k:
        Q = initial_vectors(x0.shape[0], spec.k, spec.init, dtype)
        acc = zero_acc(spec.k, dtype)
        if spec.align:
            x, aux, Q, _, _ = evolve_blocks(m, params, spec.align, spec.reortho_every, x, aux, Q, acc)
    y0 = m.obs(x, aux, params)
    n_pairs = len(spec.section)
    rec = _Rec(
        t=jnp.asarray(0, jnp.int32),
        ring=jnp.zeros((spec.n_orbit,) + y0.shape, dtype),
        sec=jnp.full((n_pairs, spec.max_section), jnp.nan, dtype),
        count=jnp.zeros(n_pairs, jnp.int32),
        bad=jnp.asarray(-1, jnp.int32),
    )
    x, aux, Q, acc, rec = evolve_blocks(
        m, params, spec.steps, spec.reortho_every if spec.k else 1 << 30, x, aux, Q, acc, _recorder(m, params, spec), rec
    )
    ring = jnp.roll(rec.ring, -(spec.steps % spec.n_orbit), axis=0) if spec.steps >= spec.n_orbit else rec.ring
    out = dict(orbit=ring, section=rec.sec, section_count=rec.count, nonfinite_step=rec.bad, x=x, aux=aux)
    if spec.k:
        n_qr = n_reorthonormalisations(spec.steps, spec.reortho_every)
        out.update(exponents=acc.S / spec.steps, roundoff=acc.roundoff / n_qr, zero_hits=acc.zero_hits)
    return out


@partial(jax.jit, static_argnames=("m", "spec"))
def orbit(m: Map, spec: OrbitSpec, x0, aux0, params) -> dict:
    """One orbit; see the module docstring for what is returned."""
    return _single(m, spec, x0, aux0, params)


def _with_shared(shared, p):
    return p if shared is None else (shared, p)


@partial(jax.jit, static_argnames=("m", "spec"))
def _sweep(m, spec, x0, aux0, params, shared):
    return jax.vmap(lambda x, a, p: _single(m, spec, x, a, _with_shared(shared, p)))(x0, aux0, params)


def orbit_sweep(m: Map, spec: OrbitSpec, x0, aux0, params, shared=None) -> dict:
    """Cold-start orbits for a batch: every leaf of x0, aux0 and params has a leading batch axis B.

    ``shared`` is an unbatched pytree; when given, the map receives ``(shared, params_i)``. The batch
    is split over the available devices.
    """
    spec.validate()
    B = int(jnp.shape(x0)[0])
    return shard_batch(lambda x, a, p: _sweep(m, spec, x, a, p, shared), (x0, aux0, params), B)


@partial(jax.jit, static_argnames=("m", "spec"))
def _chain(m, spec, x0, aux0, path, shared):
    def one(carry, p):
        x, aux = carry
        out = _single(m, spec, x, aux, _with_shared(shared, p))
        return (out["x"], out["aux"]), out

    _, outs = jax.lax.scan(one, (x0, aux0), path)
    return outs


def continuation(m: Map, spec: OrbitSpec, x0, aux0, path, directions=("up",), shared=None) -> dict:
    """Orbits along a parameter path, each point starting from the previous point's final state.

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
        lambda x, a, p: jax.vmap(lambda xx, aa, pp: _chain(m, spec, xx, aa, pp, shared))(x, a, p), (x0s, aux0s, stacked), n_dir
    )
    # put every direction back in increasing parameter order
    flip = jnp.asarray([d == "down" for d in directions])

    def reorder(a):
        return jnp.where(flip.reshape((-1,) + (1,) * (a.ndim - 1)), a[:, ::-1], a)

    return jax.tree_util.tree_map(reorder, outs)
