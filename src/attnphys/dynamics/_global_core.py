"""Attractors as targets and starts run until they reach one: the common core of the global stability
measures (theory: docs/theory/dynamics.md §10.1).

A census (:func:`attnphys.dynamics.census`) names the attractors of a map at one parameter point. Here each
attractor becomes a *target*: a set of states on it (the whole cycle of a periodic orbit; a long sample of
a non-periodic attractor) with a tolerance radius ε_a. A start is run until its state comes within ε_a of
a target's states (it has *landed* on attractor a, at that step), leaves the bound (it landed on the
divergent pseudo-attractor), or spends its steps (unresolved, label −1). This is the proximity rule of
§10.1: for a stable periodic orbit and ε_a inside its basin, entering the ε_a-ball means converging to it.
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from attnphys.dynamics._census_geometry import pow2
from attnphys.dynamics.classify import REGIME_CODE
from attnphys.dynamics.maps import AbstractMap
from attnphys.dynamics.samplers import AbstractSampler, make_sampler
from attnphys.errors import InputError
from attnphys.runtime import take_rows

UNRESOLVED = -1
"""Label of a start that reached no attractor within its steps."""

DIVERGED = -2
"""Label of a start that left the bound when the census found no divergent pseudo-attractor."""

MEMORY = 1 << 27
"""Bytes of the largest distance array of one block of starts (starts × target states × D, float64)."""


class Targets(NamedTuple):
    """The attractors of a census as targets (theory: docs/theory/dynamics.md §10.1).

    points: (A, P, D) states on each attractor, NaN-padded (the divergent pseudo-attractor: all NaN).
    tol: (A,) the radius ε_a of each target. divergent: the index of the divergent pseudo-attractor (−2:
    none; a start that leaves the bound then gets label :data:`DIVERGED`). bound: a state with a
    component beyond it (or not finite) has diverged. origins: per attractor, (x (n, D), aux batched)
    states on it with their auxiliary states (None for the divergent one). kind, period: (A,) as the
    census's.
    """

    points: np.ndarray
    tol: np.ndarray
    divergent: int
    bound: float
    origins: list
    kind: np.ndarray
    period: np.ndarray


def full_params(params, shared):
    """The parameters the map receives: ``params``, or ``(shared, params)`` when ``shared`` is given, as
    in the census (theory: docs/theory/dynamics.md §7.2)."""
    p = jax.tree_util.tree_map(jnp.asarray, params)
    return p if shared is None else (shared, p)


def check_census(ds: Any, name: str = "attractors") -> xr.Dataset:
    """Refuse anything but a census at one parameter point (theory: docs/theory/dynamics.md §7).

    Raises:
        InputError: naming ``name``.
    """
    need = ("kind", "period", "representative", "ic_steps", "label", "points")
    if not isinstance(ds, xr.Dataset) or any(v not in ds for v in need):
        raise InputError("must be the Dataset of census(m, params, ...) at one parameter point", name)
    if "param" in ds.dims:
        raise InputError("must be a census at one parameter point (census, or census_batch(...).isel(param=i))", name)
    return ds


def starts(m: AbstractMap, params, sampler: AbstractSampler, ics: int, seed: int, shared) -> tuple[np.ndarray, Any]:
    """The census's starts, drawn again exactly as :func:`attnphys.dynamics.census` draws them (same key,
    same parameters): (x (K, D), aux batched) (theory: docs/theory/dynamics.md §7.1)."""
    x, aux = sampler.sample(m, jax.random.PRNGKey(seed), ics, full_params(params, shared))
    return np.asarray(x), jax.tree_util.tree_map(np.asarray, aux)


def check_int(value, name: str) -> int:
    """Refuse a value that is not an integer ≥ 1, naming it (theory: docs/theory/dynamics.md §10.1)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InputError(f"must be an integer >= 1 (got {value!r})", name)
    return int(value)


def check_positive(value, name: str) -> float:
    """Refuse a value that is not a finite positive number, naming it (theory: docs/theory/dynamics.md §10.1)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"must be a finite positive number (got {value!r})", name)
    if not np.isfinite(value) or value <= 0:
        raise InputError(f"must be a finite positive number (got {value!r})", name)
    return float(value)


def resolve_sampler(sampler) -> AbstractSampler:
    """A sampler or its name (theory: docs/theory/dynamics.md §7.1); an unknown name raises InputError
    naming ``sampler``."""
    try:
        return make_sampler(sampler)
    except (ValueError, TypeError) as e:
        if isinstance(e, InputError):
            raise
        raise InputError(str(e), "sampler") from None


@partial(jax.jit, static_argnames=("m",))
def _advance(m: AbstractMap, x, aux, params, n):
    """n steps of one state (n traced: one program for every n)."""
    return jax.lax.fori_loop(0, n, lambda _, c: m.step(c[0], c[1], params), (x, aux))


@partial(jax.jit, static_argnames=("m", "n"))
def _trace(m: AbstractMap, x, aux, params, n: int, stride):
    """n states, ``stride`` steps apart, from (x, aux): the states and their auxiliary states."""

    def one(c, _):
        c2 = jax.lax.fori_loop(0, stride, lambda _, s: m.step(s[0], s[1], params), c)
        return c2, c

    _, (xs, auxs) = jax.lax.scan(one, (x, aux), None, length=n)
    return xs, auxs


def targets(
    m: AbstractMap,
    params,
    ds: xr.Dataset,
    x0: np.ndarray,
    aux0: Any,
    tol: float,
    n_points: int,
    bound: float,
) -> Targets:
    """The attractors of the census ``ds`` (at the full parameters ``params``) as targets (theory:
    docs/theory/dynamics.md §10.1).

    Each attractor's representative start (row of ``x0``/``aux0``) is run for the steps it ran in the
    census, which leaves it on the attractor; from there a periodic attractor of period p gives its p states
    (at most ``n_points``), a non-periodic one ``n_points`` states 7 steps apart. Radii: periodic,
    ε_a = tol·max(1, max|x|); non-periodic, the larger of that and 3 × the median distance from a sampled
    state to its nearest other one (the sample's spacing). Every radius is then cut to 0.4 × the distance
    between the attractor's states and any other's, so that no two targets overlap.
    """
    kind = ds["kind"].values.astype(np.int64)
    keep = kind >= 0
    kind = kind[keep]
    period = ds["period"].values.astype(np.int64)[keep]
    rep = ds["representative"].values.astype(np.int64)[keep]
    steps = ds["ic_steps"].values.astype(np.int64)
    A = int(kind.size)
    D = int(x0.shape[1])
    div = REGIME_CODE["divergent"]
    pts: list[np.ndarray] = []
    origins: list = []
    for a in range(A):
        if kind[a] == div:
            pts.append(np.full((1, D), np.nan))
            origins.append(None)
            continue
        r = int(rep[a])
        aux_r = take_rows(aux0, [r])
        aux_r = jax.tree_util.tree_map(lambda t: t[0], aux_r)
        x, aux = _advance(m, jnp.asarray(x0[r]), aux_r, params, int(max(steps[r], 1)))
        p = int(period[a])
        n = min(p, n_points) if p > 0 else n_points
        xs, auxs = _trace(m, x, aux, params, n, 1 if p > 0 else 7)
        pts.append(np.asarray(xs))
        origins.append((np.asarray(xs), jax.tree_util.tree_map(np.asarray, auxs)))
    P = max([len(p) for p in pts] + [1])
    points = np.full((A, P, D), np.nan)
    for a, p in enumerate(pts):
        points[a, : len(p)] = p
    radius = np.ones(A)
    for a in range(A):
        if origins[a] is None:
            continue
        own = points[a][np.isfinite(points[a, :, 0])]
        base = tol * max(1.0, float(np.max(np.abs(own))))
        if period[a] <= 0 and len(own) > 1:
            d = np.linalg.norm(own[:, None] - own[None], axis=-1)
            np.fill_diagonal(d, np.inf)
            base = max(base, 3.0 * float(np.median(np.min(d, axis=1))))
        for b in range(A):
            if b == a or origins[b] is None:
                continue
            other = points[b][np.isfinite(points[b, :, 0])]
            gap = float(np.min(np.linalg.norm(own[:, None] - other[None], axis=-1)))
            base = min(base, 0.4 * gap)
        radius[a] = base
    divergent = int(np.flatnonzero(kind == div)[0]) if np.any(kind == div) else DIVERGED
    return Targets(points, radius, divergent, float(bound), origins, kind, period)


@partial(jax.jit, static_argnames=("m", "block"))
def _land_block(m: AbstractMap, block: int, x, aux, lab, when, t, params, pts, tol, bound, div):
    """Up to ``block`` steps of a batch of starts, stopping early when every start has landed."""
    valid = jnp.isfinite(pts[..., 0])  # (A, P)
    step = jax.vmap(lambda y, a: m.step(y, a, params))

    def check(x, t, lab, when):
        d2 = jnp.sum((x[:, None, None, :] - pts[None]) ** 2, axis=-1)  # (n, A, P)
        d = jnp.sqrt(jnp.min(jnp.where(valid[None], d2, jnp.inf), axis=-1))  # (n, A)
        r = d / tol
        a = jnp.argmin(r, axis=1)
        near = jnp.take_along_axis(r, a[:, None], axis=1)[:, 0] <= 1.0
        gone = ~jnp.all(jnp.isfinite(x), axis=1) | (jnp.max(jnp.abs(x), axis=1) > bound)
        new = (lab == UNRESOLVED) & (near | gone)
        lab = jnp.where(new, jnp.where(gone, div, a), lab)
        return lab, jnp.where(new, t, when)

    lab, when = check(x, t, lab, when)

    def body(c):
        x, aux, lab, when, t, i = c
        x2, aux2 = step(x, aux)
        open_ = lab == UNRESOLVED
        x = jnp.where(open_[:, None], x2, x)
        aux = jax.tree_util.tree_map(
            lambda new, old: jnp.where(open_.reshape((-1,) + (1,) * (new.ndim - 1)), new, old), aux2, aux
        )
        lab, when = check(x, t + 1, lab, when)
        return x, aux, lab, when, t + 1, i + 1

    def cond(c):
        return (c[5] < block) & jnp.any(c[2] == UNRESOLVED)

    x, aux, lab, when, t, _ = jax.lax.while_loop(cond, body, (x, aux, lab, when, t, jnp.asarray(0)))
    return x, aux, lab, when, t


def land(
    m: AbstractMap,
    params,
    x: np.ndarray,
    aux: Any,
    tg: Targets,
    steps: int,
    report=None,
    block: int = 256,
) -> tuple[np.ndarray, np.ndarray]:
    """Run the starts (x (N, D), aux batched) until each lands on a target (theory:
    docs/theory/dynamics.md §10.1).

    Returns:
        (label (N,), step (N,)): the target's index (−1 unresolved within ``steps``; the divergent
        target's index, or −2 when the census had none, for a start that left the bound) and the first
        step n at which |x_n − y| ≤ ε_a for a state y of the target (−1 when unresolved). Step 0 is the
        start itself.
    """
    x = np.asarray(x, dtype=np.float64 if jax.config.read("jax_enable_x64") else np.float32)
    N, D = x.shape
    A, P = tg.points.shape[:2]
    per = max(16, min(1 << 16, MEMORY // max(1, 8 * A * P * D)))
    chunk = pow2(min(N, per), 16)
    label = np.full(N, UNRESOLVED, np.int64)
    when = np.full(N, -1, np.int64)
    pts, tol = jnp.asarray(tg.points), jnp.asarray(tg.tol)
    n_chunks = -(-N // chunk)
    leaves = jax.tree_util.tree_leaves(aux)
    for c in range(n_chunks):
        idx = np.arange(c * chunk, min(N, (c + 1) * chunk))
        xc = take_rows(x, idx, chunk)
        ac = take_rows(aux, idx, chunk) if leaves else aux
        lab = jnp.full(chunk, UNRESOLVED)
        wh = jnp.full(chunk, -1)
        t = jnp.asarray(0)
        done = 0
        while done < steps:
            b = min(block, steps - done)
            xc, ac, lab, wh, t = _land_block(m, b, xc, ac, lab, wh, t, params, pts, tol, tg.bound, tg.divergent)
            done += b
            if report is not None:
                report(c * steps + done, n_chunks * steps)
            if not bool(jnp.any(lab[: idx.size] == UNRESOLVED)):
                break
        label[idx] = np.asarray(lab)[: idx.size]
        when[idx] = np.where(label[idx] == UNRESOLVED, -1, np.asarray(wh)[: idx.size])
    if report is not None:
        report(1, 1)
    return label, when


class Prepared(NamedTuple):
    """A census and its attractors as targets, ready for landing runs (theory: docs/theory/dynamics.md §10.1).

    census: the census Dataset. targets: its :class:`Targets`. x0, aux0: its starts. params: the full
    parameters of the map. steps: the most steps of a landing run.
    """

    census: xr.Dataset
    targets: Targets
    x0: np.ndarray
    aux0: Any
    params: Any
    steps: int


def prepare(
    m: AbstractMap,
    params,
    sampler,
    attractors,
    ics: int,
    seed: int,
    options,
    shared,
    tol: float,
    steps,
    n_points: int = 256,
) -> Prepared:
    """The census (run here unless ``attractors`` gives one) and its targets (theory:
    docs/theory/dynamics.md §10.1). A given census must come from the same sampler: its starts are drawn
    again (with its seed) and compared with its ``ic_state``.

    Raises:
        InputError: naming ``m``, ``options``, ``tol``, ``steps``, ``sampler`` or ``attractors``.
    """
    from attnphys.dynamics._census import CensusOptions, census

    if not isinstance(m, AbstractMap):
        raise InputError(f"must be an AbstractMap (got {type(m).__name__})", "m")
    if not isinstance(options, CensusOptions):
        raise InputError(f"must be a CensusOptions (e.g. CensusOptions(budget=40_000)), got {options!r}", "options")
    tol = check_positive(tol, "tol")
    steps = options.budget if steps is None else check_int(steps, "steps")
    sampler = resolve_sampler(sampler)
    if attractors is None:
        ds = census(m, params, sampler, ics=ics, seed=seed, options=options, shared=shared)
    else:
        ds = check_census(attractors)
        seed = int(ds.attrs.get("seed", seed))
        ics = int(ds.sizes["ic"])
    x0, aux0 = starts(m, params, sampler, ics, seed, shared)
    if attractors is not None:
        given = ds["ic_state"].values
        if given.shape != x0.shape or not np.allclose(given, x0, rtol=1e-12, atol=0.0, equal_nan=True):
            raise InputError(
                "the sampler does not draw this census's starts (give the census's own sampler and seed)", "sampler"
            )
    p = full_params(params, shared)
    tg = targets(m, p, ds, x0, aux0, tol, n_points, options.bound)
    return Prepared(ds, tg, x0, aux0, p, int(steps))
