"""Orbit diagrams of the mean-field map: the bifurcation diagram along one parameter and the phase diagram
over two, with leading Lyapunov exponents, regimes and their evidence (theory: docs/theory/dmft.md §7)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import xarray as xr

from attnphys._messages import validated
from attnphys._options import takes
from attnphys.dmft._analysis_options import BifurcationOptions, PhaseDiagramOptions
from attnphys.dmft._api._common import Config, Sweep, sweep_axes, sweep_where
from attnphys.dmft.starts import split_starts
from attnphys.sweeps.engine import run_task

if TYPE_CHECKING:
    from attnphys.sweeps import Sweep as SweepPlan


def _orbit_task(cfg: Config, axes, o: BifurcationOptions | PhaseDiagramOptions) -> tuple[Any, dict[str, Any]]:
    """The orbit task on a grid (theory: docs/theory/dmft.md §7.1), one composition for both diagrams, and
    the keywords of its sweep."""
    from attnphys.dmft.tasks import OrbitTask

    first, point_starts = split_starts(o.start)
    task = validated(
        OrbitTask,
        arguments={"lyapunov": "exponents"},
        config=cfg,
        start=first,
        point_starts=point_starts,
        steps=o.steps,
        transient=o.transient,
        lyapunov=o.exponents,
        reortho_every=o.reortho_every,
        n_orbit=o.n_orbit,
        keep_orbit=isinstance(o, BifurcationOptions) or o.keep_orbit,
        observable=o.observable,
        section_tol=o.section_tol,
        max_section=o.max_section,
        align=o.align,
        init=o.init,
        full_state=o.full_state,
        keep_final=isinstance(o, BifurcationOptions) and o.keep_final,
        adaptive=o.adaptive,
        classify_options=dict(o.classify.__dict__) if o.classify is not None else {},
    )
    if isinstance(o, BifurcationOptions) and o.continuation is not None:
        # whole chains, both directions in one batch
        return task, sweep_where(o, chunk=len(axes[0].values) * len(axes[-1].values), seed=0)
    return task, sweep_where(o, seed=o.seed if isinstance(o, PhaseDiagramOptions) else 0)


def _bifurcation_axes(cfg: Config, sweep: Sweep, o: BifurcationOptions):
    from attnphys.sweeps import Axis

    allowed = cfg.batched_fields() if o.continuation is not None else None
    axes = sweep_axes(sweep, allowed=allowed, count=1, what="a bifurcation diagram")
    if o.continuation is not None:
        dirs = ("up", "down") if o.continuation == "both" else (o.continuation,)
        axes = (Axis(name="direction", values=dirs),) + axes
    return axes


@takes(BifurcationOptions)
def plan_bifurcation(cfg: Config, sweep: Sweep, *, options: BifurcationOptions) -> SweepPlan:
    """The sweep that :func:`bifurcation` with the same arguments would run (its grid and task), with the
    options, the grid and the starts validated; nothing is computed (theory: docs/theory/sweeps.md §5).

    Raises:
        InputError: naming the argument or option refused.
    """
    axes = _bifurcation_axes(cfg, sweep, options)
    task, where = _orbit_task(cfg, axes, options)
    return run_task(task, axes, dry_run=True, **where)


@takes(BifurcationOptions, plan=plan_bifurcation)
def bifurcation(cfg: Config, sweep: Sweep, *, options: BifurcationOptions) -> xr.Dataset:
    """The orbit (bifurcation) diagram along one parameter (theory: docs/theory/dmft.md §7.1–7.4): at every
    value the map runs ``transient`` steps, then ``steps − transient`` recorded ones, keeping the last
    ``n_orbit`` values of the observable, its zero-plane section points, the leading ``exponents``
    Lyapunov exponents and the regime with its evidence.

    Args:
        cfg: the configuration; sweep: ``{field: values}`` with exactly one of β_o, β_att, ε (or any
            sweepable field for cold starts).

    The options (each keyword below; :class:`~attnphys.dmft.BifurcationOptions`): ``start`` is every
    value's initial condition (cold starts; a list: one per value, in order), or the first value's
    (continuation); ``chunk``: values per vectorised batch (cold starts; a continuation runs its chains in
    one batch); :func:`plan_bifurcation` validates them and returns the sweep that would run.

    Returns:
        Dataset over the parameter (and ``direction``): ``regime``, ``period``, ``lambda1``, ``lambda2``,
        ``K``, ``agree``, ``exponents`` and their evidence, ``orbit`` (…, sample, feature), ``section``
        (…, pair, crossing), ``section_count``, ``obs_mean``, ``obs_std``; attribute ``run_mode`` (cold or
        continuation).
    """
    axes = _bifurcation_axes(cfg, sweep, options)
    task, where = _orbit_task(cfg, axes, options)
    ds = run_task(task, axes, store_attrs=options.store_attrs, progress=options.progress, **where)
    ds.attrs["run_mode"] = "cold" if options.continuation is None else "continuation"
    return ds


def _phase_axes(sweep: Sweep):
    return sweep_axes(sweep, count=2, what="a phase diagram")


@takes(PhaseDiagramOptions)
def plan_phase_diagram(cfg: Config, sweep: Sweep, *, options: PhaseDiagramOptions) -> SweepPlan:
    """The sweep that :func:`phase_diagram` with the same arguments would run, validated, nothing computed
    (theory: docs/theory/sweeps.md §5).

    Raises:
        InputError: naming the argument or option refused.
    """
    axes = _phase_axes(sweep)
    task, where = _orbit_task(cfg, axes, options)
    return run_task(task, axes, dry_run=True, **where)


@takes(PhaseDiagramOptions, plan=plan_phase_diagram)
def phase_diagram(cfg: Config, sweep: Sweep, *, options: PhaseDiagramOptions) -> xr.Dataset:
    """The phase diagram over two fields (theory: docs/theory/dmft.md §7): the regime, its evidence and the
    leading Lyapunov exponents at every point of the grid ``sweep`` (cold starts from ``start``).

    Args:
        sweep: ``{x: values, y: values}``, two sweepable configuration fields (dims in that order).

    The options (each keyword below; :class:`~attnphys.dmft.PhaseDiagramOptions`) are those of
    :func:`bifurcation` (its own schedule: 120,000 steps, 2 exponents) with ``seed`` (base seed of the
    per-point seeds) and ``keep_orbit`` instead of ``continuation``; :func:`plan_phase_diagram` validates
    them and returns the sweep that would run.

    Returns:
        Dataset over (x, y): ``regime``, ``period``, ``lambda1``, ``lambda2``, ``K``, ``agree``,
        ``exponents`` and their evidence, ``obs_mean``, ``obs_std``.
    """
    axes = _phase_axes(sweep)
    task, where = _orbit_task(cfg, axes, options)
    return run_task(task, axes, store_attrs=options.store_attrs, progress=options.progress, **where)
