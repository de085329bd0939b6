"""Global stability of the mean-field map's attractors at one parameter point: the census, the minimal
critical shock of each attractor and the convergence times of its basin (theory: docs/theory/dmft.md §7.5;
docs/theory/dynamics.md §10)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, overload

import jax
import numpy as np
import xarray as xr

from attnphys.dmft._api._common import Config
from attnphys.dmft._api.attractors import Sampler, attractors
from attnphys.dmft.model import model_of
from attnphys.errors import InputError
from attnphys.metadata import base_attrs
from attnphys.progress import step_bar, subrange

_CENSUS_VARS = ("kind", "period", "basin_fraction", "basin_ci_low", "basin_ci_high", "exponents", "stable")


def _check_search(tol, directions, origins, scan, bisections, rounds) -> None:
    for name, v in (("directions", directions), ("origins", origins), ("scan", scan), ("bisections", bisections)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise InputError(f"must be an integer >= 1 (got {v!r})", name)
    if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or rounds < 0:
        raise InputError(f"must be an integer >= 0 (got {rounds!r})", "rounds")
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not np.isfinite(tol) or tol <= 0:
        raise InputError(f"must be a finite positive number (got {tol!r})", "tol")


@overload
def stability(
    cfg: Config,
    *,
    ics: int = 64,
    sampler: Sampler = "random",
    amplitude: float = 1.0,
    radius: float = 1e-3,
    start: Any = "token",
    starts: Sequence[Any] = (),
    steps: int = 60_000,
    transient: int = 40_000,
    exponents: int = 3,
    seed: int = 0,
    max_attractors: int = 8,
    max_period: int = 256,
    observable: str = "mo_se",
    tol: float = 1e-4,
    directions: int = 8,
    origins: int = 2,
    scan: int = 8,
    bisections: int = 20,
    rounds: int = 4,
    progress: bool = False,
    dry_run: Literal[False] = False,
) -> xr.Dataset: ...


@overload
def stability(
    cfg: Config,
    *,
    ics: int = 64,
    sampler: Sampler = "random",
    amplitude: float = 1.0,
    radius: float = 1e-3,
    start: Any = "token",
    starts: Sequence[Any] = (),
    steps: int = 60_000,
    transient: int = 40_000,
    exponents: int = 3,
    seed: int = 0,
    max_attractors: int = 8,
    max_period: int = 256,
    observable: str = "mo_se",
    tol: float = 1e-4,
    directions: int = 8,
    origins: int = 2,
    scan: int = 8,
    bisections: int = 20,
    rounds: int = 4,
    progress: bool = False,
    dry_run: Literal[True],
) -> None: ...


def stability(
    cfg: Config,
    *,
    ics: int = 64,
    sampler: Sampler = "random",
    amplitude: float = 1.0,
    radius: float = 1e-3,
    start: Any = "token",
    starts: Sequence[Any] = (),
    steps: int = 60_000,
    transient: int = 40_000,
    exponents: int = 3,
    seed: int = 0,
    max_attractors: int = 8,
    max_period: int = 256,
    observable: str = "mo_se",
    tol: float = 1e-4,
    directions: int = 8,
    origins: int = 2,
    scan: int = 8,
    bisections: int = 20,
    rounds: int = 4,
    progress: bool = False,
    dry_run: bool = False,
) -> xr.Dataset | None:
    """Global stability of the attractors at the configuration's parameter point (theory:
    docs/theory/dmft.md §7.5; docs/theory/dynamics.md §10): the census of :func:`attnphys.dmft.attractors`
    (same options), then for every attractor its minimal critical shock δ* — the smallest change of the
    attention state A (Euclidean norm over its L·M entries, positional window kept) whose run lands on
    another attractor (:func:`attnphys.dynamics.minimal_shock`) — and the convergence times τ of the census's
    starts, steps until within ε = tol·max(1, max|A|) of their attractor
    (:func:`attnphys.dynamics.convergence_times`).

    Args:
        ics … observable: the census, as :func:`attnphys.dmft.attractors`. tol: relative radius of the
            attractors. directions, origins, scan, bisections, rounds: the shock search
            (:func:`attnphys.dynamics.minimal_shock`). dry_run: validate the options and return None.

    Returns:
        Dataset with dims ``attractor``, ``exponent``, ``dim``, ``ray``, ``ic``, ``quantile``: the census's
        ``kind``, ``period``, ``basin_fraction`` (+ interval), ``exponents``, ``stable``; ``shock_norm``,
        ``shock_norm_low``, ``shock``, ``origin``, ``lands_on``, ``ray_norm``, ``search_radius``,
        ``n_unresolved``; ``time``, ``label``, ``census_label`` per start, ``time_mean``, ``time_std``,
        ``time_min``, ``time_max``, ``time_quantile``, ``tolerance``, ``agreement``; attrs: the
        configuration, options and package version.
    """
    from attnphys.dynamics import convergence_times, minimal_shock
    from attnphys.dynamics._census import census

    task = attractors(
        cfg,
        ics=ics,
        sampler=sampler,
        amplitude=amplitude,
        radius=radius,
        start=start,
        starts=starts,
        steps=steps,
        transient=transient,
        exponents=exponents,
        seed=seed,
        max_attractors=max_attractors,
        max_period=max_period,
        observable=observable,
        dry_run=True,
    ).task
    _check_search(tol, directions, origins, scan, bisections, rounds)
    model = model_of(task.config)
    if dry_run:
        return None
    m = model.map(observable)
    sc = jax.tree_util.tree_map(lambda a: a[0], model.scalars(n=1))
    chosen = task.sampler_for(model)
    o = task.options()
    with step_bar(100.0, "%", enabled=progress):
        with subrange(0.0, 0.3):
            ds = census(m, sc, chosen, ics=task.n_ics, seed=seed, options=o, shared=model.couplings)
        with subrange(0.3, 0.9):
            ms = minimal_shock(
                m,
                sc,
                chosen,
                attractors=ds,
                directions=directions,
                origins=origins,
                scan=scan,
                bisections=bisections,
                rounds=rounds,
                seed=seed,
                progress=progress,
                options=o,
                shared=model.couplings,
                tol=tol,
            )
        with subrange(0.9, 1.0):
            ct = convergence_times(
                m, sc, chosen, attractors=ds, progress=progress, options=o, shared=model.couplings, tol=tol
            )
    A = int(ds.sizes["attractor"])
    full = np.arange(A)
    fills = {"lands_on": -1, "n_unresolved": 0}
    ms = ms.reindex(attractor=full, fill_value=np.nan)
    for name, fill in fills.items():
        ms[name] = ms[name].fillna(fill).astype(np.int64)
    out = xr.merge(
        [ds[list(_CENSUS_VARS)], ms, ct.drop_vars("kind")], compat="override", combine_attrs="drop_conflicts"
    )
    out.attrs.update(
        base_attrs(task.config),
        measure="global stability: minimal critical shock and convergence times",
        observable=observable,
        seed=int(seed),
        tol=float(tol),
        shock_search=ms.attrs["search"],
    )
    return out
