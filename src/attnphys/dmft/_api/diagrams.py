"""Orbit diagrams of the mean-field map: the bifurcation diagram along one parameter and the phase diagram
over two, with leading Lyapunov exponents, regimes and their evidence (theory: docs/theory/dmft.md §7)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

import xarray as xr

from attnphys._messages import validated
from attnphys.dmft._api._common import Config, Executor, Sweep, sweep_axes
from attnphys.dmft.starts import split_starts
from attnphys.dynamics.classify import ClassifyOptions

if TYPE_CHECKING:
    from attnphys.sweeps import Sweep as SweepPlan


def _orbits(
    cfg: Config,
    axes,
    *,
    start: Any,
    steps: int,
    transient: int,
    exponents: int,
    reortho_every: int,
    n_orbit: int,
    adaptive: bool,
    observable: str,
    section_tol: float,
    max_section: int,
    keep_orbit: bool,
    keep_final: bool,
    align: int,
    init: str,
    full_state: bool,
    classify: ClassifyOptions | None,
    store,
    overwrite: bool,
    chunk: int,
    executor: Executor,
    workers: int | None,
    scheduler: str | None,
    seed: int,
    store_attrs: dict | None,
    progress: bool,
    dry_run: bool,
) -> xr.Dataset | SweepPlan:
    """The orbit task on a grid (theory: docs/theory/dmft.md §7.1): one composition for both diagrams."""
    from attnphys.dmft.tasks import OrbitTask
    from attnphys.sweeps import run_task

    first, point_starts = split_starts(start)
    task = validated(
        OrbitTask,
        arguments={"lyapunov": "exponents"},
        config=cfg,
        start=first,
        point_starts=point_starts,
        steps=steps,
        transient=transient,
        lyapunov=exponents,
        reortho_every=reortho_every,
        n_orbit=n_orbit,
        keep_orbit=keep_orbit,
        observable=observable,
        section_tol=section_tol,
        max_section=max_section,
        align=align,
        init=init,  # pyright: ignore[reportArgumentType]  (validated by the task)
        full_state=full_state,
        keep_final=keep_final,
        adaptive=adaptive,
        classify_options=dict(classify.__dict__) if classify is not None else {},
    )
    if dry_run:
        return run_task(
            task,
            axes,
            chunk=chunk,
            seed=seed,
            executor=executor,
            workers=workers,
            scheduler=scheduler,
            store=store,
            overwrite=overwrite,
            dry_run=True,
        )
    return run_task(
        task,
        axes,
        store=store,
        overwrite=overwrite,
        chunk=chunk,
        executor=executor,
        workers=workers,
        scheduler=scheduler,
        seed=seed,
        store_attrs=store_attrs,
        progress=progress,
    )


@overload
def bifurcation(
    cfg: Config,
    sweep: Sweep,
    *,
    start: Any = "token",
    steps: int = 175_000,
    transient: int = 100_000,
    exponents: int = 3,
    reortho_every: int = 1,
    n_orbit: int = 1000,
    adaptive: bool = False,
    observable: str = "mo_se",
    section_tol: float = 1e-3,
    continuation: Literal["up", "down", "both"] | None = None,
    max_section: int = 1000,
    keep_final: bool = False,
    align: int = 0,
    init: Literal["identity", "random"] = "random",
    full_state: bool = False,
    classify: ClassifyOptions | None = None,
    store: str | Path | None = None,
    overwrite: bool = False,
    chunk: int = 1024,
    executor: Executor = "inprocess",
    workers: int | None = None,
    scheduler: str | None = None,
    store_attrs: dict | None = None,
    progress: bool = False,
    dry_run: Literal[False] = False,
) -> xr.Dataset: ...


@overload
def bifurcation(
    cfg: Config,
    sweep: Sweep,
    *,
    start: Any = "token",
    steps: int = 175_000,
    transient: int = 100_000,
    exponents: int = 3,
    reortho_every: int = 1,
    n_orbit: int = 1000,
    adaptive: bool = False,
    observable: str = "mo_se",
    section_tol: float = 1e-3,
    continuation: Literal["up", "down", "both"] | None = None,
    max_section: int = 1000,
    keep_final: bool = False,
    align: int = 0,
    init: Literal["identity", "random"] = "random",
    full_state: bool = False,
    classify: ClassifyOptions | None = None,
    store: str | Path | None = None,
    overwrite: bool = False,
    chunk: int = 1024,
    executor: Executor = "inprocess",
    workers: int | None = None,
    scheduler: str | None = None,
    store_attrs: dict | None = None,
    progress: bool = False,
    dry_run: Literal[True],
) -> SweepPlan: ...


def bifurcation(
    cfg: Config,
    sweep: Sweep,
    *,
    start: Any = "token",
    steps: int = 175_000,
    transient: int = 100_000,
    exponents: int = 3,
    reortho_every: int = 1,
    n_orbit: int = 1000,
    adaptive: bool = False,
    observable: str = "mo_se",
    section_tol: float = 1e-3,
    continuation: Literal["up", "down", "both"] | None = None,
    max_section: int = 1000,
    keep_final: bool = False,
    align: int = 0,
    init: Literal["identity", "random"] = "random",
    full_state: bool = False,
    classify: ClassifyOptions | None = None,
    store: str | Path | None = None,
    overwrite: bool = False,
    chunk: int = 1024,
    executor: Executor = "inprocess",
    workers: int | None = None,
    scheduler: str | None = None,
    store_attrs: dict | None = None,
    progress: bool = False,
    dry_run: bool = False,
) -> xr.Dataset | SweepPlan:
    """The orbit (bifurcation) diagram along one parameter (theory: docs/theory/dmft.md §7.1–7.4): at every
    value the map runs ``transient`` steps, then ``steps − transient`` recorded ones, keeping the last
    ``n_orbit`` values of the observable, its zero-plane section points, the leading ``exponents``
    Lyapunov exponents and the regime with its evidence.

    Args:
        cfg: the configuration; sweep: ``{field: values}`` with exactly one of β_o, β_att, ε (or any
            sweepable field for cold starts).
        start: every value's initial condition (cold starts; a list: one per value, in order), or the first
            value's (continuation); default the token start, as in every DMFT analysis (``"checkpoint"``:
            the published β_o = 3 window, the command's default).
        continuation: ``None`` for cold starts; ``"up"``, ``"down"`` or ``"both"``: every value starts from
            the previous value's final state, along increasing or decreasing values (a ``direction`` dim).
        adaptive: stop a value early once its orbit is confirmed periodic (exponents from Floquet
            multipliers; cold starts only; theory: docs/theory/dmft.md §7.1).
        keep_final: also store every value's final window (``final_A``, ``final_pe``, ``final_n``).
        classify: the classifier's thresholds (default :class:`~attnphys.dynamics.ClassifyOptions`).
        store: a resumable Zarr store (re-running the same call resumes), or None (memory).
        chunk: values per vectorised batch (cold starts; a continuation runs its chains in one batch).
        executor, workers, scheduler: where chunks run (in-process, local processes or Dask).
        store_attrs: extra attributes of a new store.
        dry_run: validate the options, the grid and the starts, and return the :class:`~attnphys.sweeps.Sweep`
            that would run (its grid and task) instead of computing.

    Returns:
        Dataset over the parameter (and ``direction``): ``regime``, ``period``, ``lambda1``, ``lambda2``,
        ``K``, ``agree``, ``exponents`` and their evidence, ``orbit`` (…, sample, feature), ``section``
        (…, pair, crossing), ``section_count``, ``obs_mean``, ``obs_std``; attribute ``run_mode`` (cold or
        continuation).
    """
    from attnphys.sweeps import Axis

    allowed = cfg.batched_fields() if continuation is not None else None
    axes = sweep_axes(sweep, allowed=allowed, count=1, what="a bifurcation diagram")
    if continuation is not None:
        dirs = ("up", "down") if continuation == "both" else (continuation,)
        axes = (Axis(name="direction", values=dirs),) + axes
        chunk = len(dirs) * len(axes[-1].values)  # whole chains, both directions in one batch
    ds = _orbits(
        cfg,
        axes,
        start=start,
        steps=steps,
        transient=transient,
        exponents=exponents,
        reortho_every=reortho_every,
        n_orbit=n_orbit,
        adaptive=adaptive,
        observable=observable,
        section_tol=section_tol,
        max_section=max_section,
        keep_orbit=True,
        keep_final=keep_final,
        align=align,
        init=init,
        full_state=full_state,
        classify=classify,
        store=store,
        overwrite=overwrite,
        chunk=chunk,
        executor=executor,
        workers=workers,
        scheduler=scheduler,
        seed=0,
        store_attrs=store_attrs,
        progress=progress,
        dry_run=dry_run,
    )
    if isinstance(ds, xr.Dataset):
        ds.attrs["run_mode"] = "cold" if continuation is None else "continuation"
    return ds


@overload
def phase_diagram(
    cfg: Config,
    sweep: Sweep,
    *,
    start: Any = "token",
    steps: int = 120_000,
    transient: int = 100_000,
    exponents: int = 2,
    reortho_every: int = 1,
    n_orbit: int = 1000,
    adaptive: bool = False,
    observable: str = "mo_se",
    keep_orbit: bool = False,
    section_tol: float = 1e-3,
    max_section: int = 1000,
    align: int = 0,
    init: Literal["identity", "random"] = "random",
    full_state: bool = False,
    classify: ClassifyOptions | None = None,
    seed: int = 0,
    store: str | Path | None = None,
    overwrite: bool = False,
    chunk: int = 1024,
    executor: Executor = "inprocess",
    workers: int | None = None,
    scheduler: str | None = None,
    store_attrs: dict | None = None,
    progress: bool = False,
    dry_run: Literal[False] = False,
) -> xr.Dataset: ...


@overload
def phase_diagram(
    cfg: Config,
    sweep: Sweep,
    *,
    start: Any = "token",
    steps: int = 120_000,
    transient: int = 100_000,
    exponents: int = 2,
    reortho_every: int = 1,
    n_orbit: int = 1000,
    adaptive: bool = False,
    observable: str = "mo_se",
    keep_orbit: bool = False,
    section_tol: float = 1e-3,
    max_section: int = 1000,
    align: int = 0,
    init: Literal["identity", "random"] = "random",
    full_state: bool = False,
    classify: ClassifyOptions | None = None,
    seed: int = 0,
    store: str | Path | None = None,
    overwrite: bool = False,
    chunk: int = 1024,
    executor: Executor = "inprocess",
    workers: int | None = None,
    scheduler: str | None = None,
    store_attrs: dict | None = None,
    progress: bool = False,
    dry_run: Literal[True],
) -> SweepPlan: ...


def phase_diagram(
    cfg: Config,
    sweep: Sweep,
    *,
    start: Any = "token",
    steps: int = 120_000,
    transient: int = 100_000,
    exponents: int = 2,
    reortho_every: int = 1,
    n_orbit: int = 1000,
    adaptive: bool = False,
    observable: str = "mo_se",
    keep_orbit: bool = False,
    section_tol: float = 1e-3,
    max_section: int = 1000,
    align: int = 0,
    init: Literal["identity", "random"] = "random",
    full_state: bool = False,
    classify: ClassifyOptions | None = None,
    seed: int = 0,
    store: str | Path | None = None,
    overwrite: bool = False,
    chunk: int = 1024,
    executor: Executor = "inprocess",
    workers: int | None = None,
    scheduler: str | None = None,
    store_attrs: dict | None = None,
    progress: bool = False,
    dry_run: bool = False,
) -> xr.Dataset | SweepPlan:
    """The phase diagram over two fields (theory: docs/theory/dmft.md §7): the regime, its evidence and the
    leading Lyapunov exponents at every point of the grid ``sweep`` (cold starts from ``start``).

    Args:
        sweep: ``{x: values, y: values}``, two sweepable configuration fields (dims in that order).
        keep_orbit: also store the last ``n_orbit`` observations and the section points per point.
        seed: base seed of the per-point seeds.
        Others: as :func:`bifurcation`.

    Returns:
        Dataset over (x, y): ``regime``, ``period``, ``lambda1``, ``lambda2``, ``K``, ``agree``,
        ``exponents`` and their evidence, ``obs_mean``, ``obs_std``.
    """
    axes = sweep_axes(sweep, count=2, what="a phase diagram")
    return _orbits(
        cfg,
        axes,
        start=start,
        steps=steps,
        transient=transient,
        exponents=exponents,
        reortho_every=reortho_every,
        n_orbit=n_orbit,
        adaptive=adaptive,
        observable=observable,
        section_tol=section_tol,
        max_section=max_section,
        keep_orbit=keep_orbit,
        keep_final=False,
        align=align,
        init=init,
        full_state=full_state,
        classify=classify,
        store=store,
        overwrite=overwrite,
        chunk=chunk,
        executor=executor,
        workers=workers,
        scheduler=scheduler,
        seed=seed,
        store_attrs=store_attrs,
        progress=progress,
        dry_run=dry_run,
    )
