"""Attractors of the mean-field map: the census at one parameter point, basins along a parameter (censuses
matched into tracks), and the continuation of one periodic orbit with its local bifurcations (theory:
docs/theory/dmft.md §7.5; docs/theory/dynamics.md §5–§8)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, overload

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from attnphys._messages import validated
from attnphys.dmft._abstract_model import AbstractModel
from attnphys.dmft._api._common import Config, Executor, Sweep, sweep_axes
from attnphys.dmft.config import DMFTConfig
from attnphys.dmft.model import model_of
from attnphys.dmft.starts import as_start
from attnphys.metadata import base_attrs

if TYPE_CHECKING:
    from attnphys.sweeps import Sweep as SweepPlan

Sampler = Literal["random", "perturb", "explicit"]


class ContinuationPlan(NamedTuple):
    """What :func:`orbit_continuation` would run, validated (its ``dry_run=True`` answer): the configuration,
    the parameter and its range, the start (typed) and the run's settings (theory: docs/theory/dmft.md §7.5)."""

    config: Any
    param: str
    start_value: float
    stop_value: float
    start: Any
    transient: int
    max_period: int
    step: float
    max_step: float
    max_points: int


def _census_task(
    cfg,
    *,
    ics,
    sampler,
    amplitude,
    radius,
    start: Any,
    starts,
    steps,
    transient,
    exponents,
    seed,
    max_attractors,
    max_period,
    observable,
):
    from attnphys.dmft.tasks import AttractorTask

    starts = tuple(starts)
    if sampler != "perturb" and not isinstance(cfg, DMFTConfig):
        start = "token"  # unused by this sampler; the paper's default checkpoint is no other model's start
    return validated(
        AttractorTask,
        arguments={"k": "exponents", "n_ics": "ics"},
        config=cfg,
        start=start,
        n_ics=len(starts) if sampler == "explicit" and starts else ics,
        steps=steps,
        transient=transient,
        k=exponents,
        sampler=sampler,
        amplitude=amplitude,
        radius=radius,
        starts=starts,
        seed=seed,
        max_attractors=max_attractors,
        max_period=max_period,
        observable=observable,
    )


@overload
def attractors(
    cfg: Config,
    *,
    ics: int = 256,
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
    progress: bool = False,
    dry_run: Literal[False] = False,
) -> xr.Dataset: ...


@overload
def attractors(
    cfg: Config,
    *,
    ics: int = 256,
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
    progress: bool = False,
    dry_run: Literal[True],
) -> SweepPlan: ...


def attractors(
    cfg: Config,
    *,
    ics: int = 256,
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
    progress: bool = False,
    dry_run: bool = False,
) -> xr.Dataset | SweepPlan:
    """The attractor census at the configuration's parameter point (theory: docs/theory/dmft.md §7.5;
    docs/theory/dynamics.md §7): ``ics`` starts run vectorised for at most ``steps`` steps, the first
    ``transient`` without period checks; the settled ones are grouped into attractors with kinds, periods,
    exponents (Floquet for periodic orbits, Benettin otherwise) and basin fractions with 95 % Wilson
    intervals; the others are counted as unsettled, never forced into a class.

    Args:
        sampler: ``random`` (full windows with A uniform in [−amplitude, amplitude]), ``perturb`` (``start``
            plus a uniform perturbation of radius ``radius``) or ``explicit`` (the windows of ``starts``).
        seed: the sampler's seed.
        max_attractors: the size of the ``attractor`` dim (more are counted in ``n_dropped``).
        max_period: the longest period detected exactly.
        observable: the observable recorded at the attractors' representative states.
        dry_run: validate the options, the grid and the starts, and return the :class:`~attnphys.sweeps.Sweep`
            that would run (its grid and task) instead of computing.

    Returns:
        Dataset with dims ``attractor``, ``ic``, ``exponent``, ``sample``, ``dim``, ``feature``: ``kind``,
        ``period``, ``basin_fraction`` (+ interval), ``exponents``, ``floquet_abs``, ``stable``, ``points``,
        ``observed``, per start ``label``, ``settle_step``, ``ic_outcome``; ``n_attractors``,
        ``unsettled_fraction`` (+ interval); attribute ``observable``.
    """
    from attnphys.sweeps import run_task

    task = _census_task(
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
    )
    if dry_run:
        return run_task(task, (), dry_run=True)
    ds = run_task(task, (), progress=progress)
    ds.attrs["observable"] = observable
    return ds


@overload
def basins(
    cfg: Config,
    sweep: Sweep,
    *,
    ics: int = 128,
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
    store: str | Path | None = None,
    overwrite: bool = False,
    chunk: int = 16,
    executor: Executor = "inprocess",
    workers: int | None = None,
    scheduler: str | None = None,
    store_attrs: dict | None = None,
    progress: bool = False,
    dry_run: Literal[False] = False,
) -> xr.Dataset: ...


@overload
def basins(
    cfg: Config,
    sweep: Sweep,
    *,
    ics: int = 128,
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
    store: str | Path | None = None,
    overwrite: bool = False,
    chunk: int = 16,
    executor: Executor = "inprocess",
    workers: int | None = None,
    scheduler: str | None = None,
    store_attrs: dict | None = None,
    progress: bool = False,
    dry_run: Literal[True],
) -> SweepPlan: ...


def basins(
    cfg: Config,
    sweep: Sweep,
    *,
    ics: int = 128,
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
    store: str | Path | None = None,
    overwrite: bool = False,
    chunk: int = 16,
    executor: Executor = "inprocess",
    workers: int | None = None,
    scheduler: str | None = None,
    store_attrs: dict | None = None,
    progress: bool = False,
    dry_run: bool = False,
) -> xr.Dataset | SweepPlan:
    """Attractor censuses along one parameter, matched into tracks: births, deaths, coexistence and
    hysteresis windows (theory: docs/theory/dmft.md §7.5; docs/theory/dynamics.md §8). Every value uses the
    same starts (common random numbers), so basin fractions vary smoothly along the parameter.

    Args:
        sweep: ``{field: values}``, one sweepable field.
        chunk: parameter values per vectorised batch (times ``ics`` lanes).
        Others: as :func:`attractors`; store, executor, …: as :func:`bifurcation`.

    Returns:
        The census variables of :func:`attractors` over the parameter and, with two or more values, the
        tracks (``track_id``, ``n_coexisting``, ``window_low``/``window_high`` …).
    """
    from attnphys.sweeps import run_task

    task = _census_task(
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
    )
    axes = sweep_axes(sweep, count=1, what="a basin diagram")
    if dry_run:
        return run_task(
            task,
            axes,
            chunk=chunk,
            executor=executor,
            workers=workers,
            scheduler=scheduler,
            store=store,
            overwrite=overwrite,
            dry_run=True,
        )
    ds = run_task(
        task,
        axes,
        store=store,
        overwrite=overwrite,
        chunk=chunk,
        executor=executor,
        workers=workers,
        scheduler=scheduler,
        store_attrs=store_attrs,
        progress=progress,
    )
    ds.attrs["observable"] = observable
    return ds


def exact_period(model: AbstractModel, window, sc, max_period: int, confirmations: int = 3) -> int:
    """The exact period of the orbit through an (unbatched) window: the classifier's rule
    (:func:`attnphys.dynamics.classify.detect_period`) applied to the next (confirmations + 1)·max_period
    states (A and the positional window together, so that the codes return too); 0 when none
    (theory: docs/theory/dynamics.md §4.1)."""
    from attnphys.dynamics.classify import detect_period

    m = model.map()
    par = (model.couplings, sc)

    def body(carry, _):
        x, aux = m.step(carry[0], carry[1], par)
        return (x, aux), jnp.concatenate([x, aux[0].reshape(-1)])

    _, ys = jax.lax.scan(body, m.state(window), None, length=(confirmations + 1) * max_period)
    return int(detect_period(np.asarray(ys), max_period=max_period, confirmations=confirmations))


@overload
def orbit_continuation(
    cfg: Config,
    param: str,
    start_value: float,
    stop_value: float,
    *,
    start: Any = "token",
    transient: int = 40_000,
    max_period: int = 256,
    step: float = 1e-3,
    max_step: float = 1e-2,
    max_points: int = 2000,
    progress: bool = False,
    dry_run: Literal[False] = False,
) -> xr.Dataset: ...


@overload
def orbit_continuation(
    cfg: Config,
    param: str,
    start_value: float,
    stop_value: float,
    *,
    start: Any = "token",
    transient: int = 40_000,
    max_period: int = 256,
    step: float = 1e-3,
    max_step: float = 1e-2,
    max_points: int = 2000,
    progress: bool = False,
    dry_run: Literal[True],
) -> ContinuationPlan: ...


def orbit_continuation(
    cfg: Config,
    param: str,
    start_value: float,
    stop_value: float,
    *,
    start: Any = "token",
    transient: int = 40_000,
    max_period: int = 256,
    step: float = 1e-3,
    max_step: float = 1e-2,
    max_points: int = 2000,
    progress: bool = False,
    dry_run: bool = False,
) -> xr.Dataset | ContinuationPlan:
    """Continue the periodic orbit that ``start`` settles on at ``param`` = ``start_value`` towards
    ``stop_value`` by pseudo-arclength continuation of F^p(x) = x, locating folds, flips and Neimark–Sacker
    points from its Floquet multipliers (theory: docs/theory/dmft.md §7.5; docs/theory/dynamics.md §6).

    Args:
        param: one of β_o, β_att, ε; start: the initial condition; transient: steps run at ``start_value``
            before the exact period is read (at most ``max_period``).
        step, max_step: the initial and largest arclength steps; max_points: most continuation points.
        dry_run: validate the options and the start, and return the :class:`ContinuationPlan` instead of
            computing.

    Returns:
        Dataset over the branch points: the parameter, the orbit, its multipliers and stability, the events
        (kind, parameter value, multipliers); attributes ``period``, ``status`` and the configuration.

    Raises:
        InputError: the start is not on a periodic orbit of period ≤ ``max_period`` after the transient,
            or an invalid parameter or range.
    """
    from attnphys.dynamics.bifurcations import check_continuation, continue_orbit
    from attnphys.errors import InputError

    if param not in cfg.batched_fields():
        raise InputError(f"continuation runs along one of {', '.join(cfg.batched_fields())}, got {param!r}", "param")
    start_value, stop_value = check_continuation(start_value, stop_value, step, max_step, max_points)
    for v, name in ((start_value, "start_value"), (stop_value, "stop_value")):
        try:
            cfg.check_axis(param, (v,))
        except ValueError as e:
            raise InputError(str(e), name) from None
    model = model_of(cfg)
    try:
        pf = model.params_of(param)
    except ValueError as e:
        raise InputError(str(e), "param") from None
    model.check_start(start)
    if dry_run:
        return ContinuationPlan(
            cfg, param, start_value, stop_value, as_start(start), transient, max_period, step, max_step, max_points
        )
    sc = pf(jnp.asarray(start_value, jnp.result_type(float)))[1]
    sc_b = jax.tree_util.tree_map(lambda a: jnp.asarray(a)[None], sc)
    win = jax.tree_util.tree_map(lambda a: a[0], model.windows_after(start, sc_b, transient))
    p = exact_period(model, win, sc, max_period)
    if not p:
        raise InputError(
            f"after {transient} steps at {param} = {start_value} the start is not on a periodic orbit of period "
            f"<= {max_period}; raise the transient, or start elsewhere",
            "transient",
        )
    m = model.map()
    x0, aux0 = m.state(win)
    branch = continue_orbit(
        m, x0, aux0, pf, start_value, stop_value, period=p, ds=step, ds_max=max_step, max_steps=max_points
    )
    ds = branch.to_dataset(param)
    ds.attrs.update(base_attrs(cfg, start=as_start(start).describe(), transient=transient))
    return ds
