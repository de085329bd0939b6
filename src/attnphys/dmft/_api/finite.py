"""The finite-N network and its approach to the mean field (theory: docs/theory/dmft.md §2)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from attnphys._messages import validated
from attnphys._options import takes
from attnphys.dmft._analysis_options import ConvergeOptions, FiniteOptions
from attnphys.dmft._api._common import Config, Sweep, sweep_axes
from attnphys.errors import InputError

if TYPE_CHECKING:
    from attnphys.sweeps import Sweep as SweepPlan


def _finite_task(cfg: Config, n: int, sweep: Sweep | None, o: FiniteOptions):
    from attnphys.dmft.tasks import FiniteTask

    record: dict[str, Any] = {} if o.record is None else {"record": tuple(o.record)}
    task = validated(
        FiniteTask,
        config=cfg,
        n=n,
        paths=o.paths,
        steps=o.steps,
        transient=o.transient,
        seed=o.seed,
        per_bit=o.per_bit,
        **record,
    )
    axes = sweep_axes(sweep)
    return task, axes, max(1, len(axes[0].values)) if len(axes) == 1 else None


@takes(FiniteOptions)
def plan_finite_trajectories(cfg: Config, n: int, *, sweep: Sweep | None = None, options: FiniteOptions) -> SweepPlan:
    """The sweep that :func:`finite_trajectories` with the same arguments would run, validated, nothing
    computed (theory: docs/theory/sweeps.md §5).

    Raises:
        InputError: naming the argument or option refused.
    """
    from attnphys.sweeps import run_task

    task, axes, chunk = _finite_task(cfg, n, sweep, options)
    return run_task(task, axes, chunk=chunk, dry_run=True)


@takes(FiniteOptions, plan=plan_finite_trajectories)
def finite_trajectories(cfg: Config, n: int, *, sweep: Sweep | None = None, options: FiniteOptions) -> xr.Dataset:
    """Sample paths of the finite-N stochastic network with the mean field's conventions (theory:
    docs/theory/dmft.md §2): N = ``n`` semantic bits, each of the configuration's n_se weight columns
    repeated N/n_se times, so that the network and the mean field share every correlation tensor. Path p
    uses the key fold_in(PRNGKey(seed), p): a pure function of its index, the same at every grid point.

    Args:
        n: semantic bits N (a multiple of n_se); sweep: field → values (any sweepable field).

    The options (each a keyword; :class:`~attnphys.dmft.FiniteOptions`): ``per_bit`` samples every bit
    (memory O(N)) instead of one binomial per weight class; ``record``, the observables recorded (default:
    every one of the registry, :mod:`attnphys.dmft.observables`, the finite network has; another is refused
    by name); :func:`plan_finite_trajectories` validates them and returns the sweep that would run.

    Returns:
        Dataset with the recorded observables (sweep…, path, step, feature); attributes ``engine``,
        ``n_se_finite`` (N) and ``classes`` (weight classes sampled).
    """
    from attnphys.dmft.finite import check_finite_model, repeated_network
    from attnphys.sweeps import run_task

    task, axes, chunk = _finite_task(cfg, n, sweep, options)
    ds = run_task(task, axes, chunk=chunk, progress=options.progress)
    ds.attrs.update(
        n_se_finite=int(n),
        classes=int(n) if options.per_bit else int(repeated_network(check_finite_model(cfg), n).W.shape[2]),
    )
    return ds


def _converge_task(cfg: Config, sizes: Sequence[int], sweep: Sweep | None, o: ConvergeOptions):
    from attnphys.dmft.tasks import ConvergeTask
    from attnphys.sweeps import Axis

    ns = [int(n) for n in sizes]
    if len(ns) < 2:
        raise InputError(f"give at least two network sizes to fit a slope, got {ns}", "sizes")
    if len(set(ns)) != len(ns):
        raise InputError(f"network sizes repeat: {ns}", "sizes")
    ns = sorted(ns)
    task = validated(
        ConvergeTask,
        config=cfg,
        paths=o.paths,
        steps=o.steps,
        horizon=o.horizon,
        transient=o.transient,
        observable=o.observable,
        seed=o.seed,
    )
    return task, sweep_axes(sweep) + (Axis(name="n", values=tuple(float(n) for n in ns)),), ns


@takes(ConvergeOptions)
def plan_converge(
    cfg: Config, sizes: Sequence[int], *, sweep: Sweep | None = None, options: ConvergeOptions
) -> SweepPlan:
    """The sweep that :func:`converge` with the same arguments would run, validated, nothing computed
    (theory: docs/theory/sweeps.md §5).

    Raises:
        InputError: naming the argument or option refused.
    """
    from attnphys.sweeps import run_task

    task, axes, ns = _converge_task(cfg, sizes, sweep, options)
    return run_task(task, axes, chunk=len(ns), dry_run=True)


@takes(ConvergeOptions, plan=plan_converge)
def converge(cfg: Config, sizes: Sequence[int], *, sweep: Sweep | None = None, options: ConvergeOptions) -> xr.Dataset:
    """How finite-N paths approach the mean field as N grows (theory: docs/theory/dmft.md §2.3): for every
    grid point and N, ``paths`` finite-N paths and the mean-field trajectory from the same token, with

    * ``rms_deviation``: the RMS over paths, the first ``horizon`` steps and features of
      m_finite − m_MF — O(N^{-1/2}) where the mean field is not chaotic;
    * ``stat_distance``: the largest difference of the long-run time mean and standard deviation of the
      observable (steps ≥ ``transient``), the quantity that can converge in chaotic regimes;
    * ``slope``, ``stat_slope``: least-squares slopes of log10(distance) against log10(N) over the largest
      three decades of N;
    * ``rms_prefactor_predicted``, ``rms_predicted``: the prefactor c of rms_deviation ≈ c N^{-1/2} predicted by
      the system-size expansion, and c N^{-1/2} (:func:`~attnphys.dmft.fluctuations`; theory:
      docs/theory/fluctuations.md §5).

    Args:
        sizes: network sizes N, at least two, each a positive multiple of n_se.
        sweep: field → values (default: the configuration's point).

    The options (each a keyword; :class:`~attnphys.dmft.ConvergeOptions`): ``paths``, ``steps``,
    ``horizon``, ``transient``, ``observable``, ``seed``; :func:`plan_converge` validates them and returns
    the sweep that would run.

    Raises:
        InputError: fewer than two sizes, a repeated size, or a size that is not a multiple of n_se.
    """
    from attnphys.dmft._api.fluctuations import with_rms_prefactor
    from attnphys.sweeps import run_task

    task, axes, ns = _converge_task(cfg, sizes, sweep, options)
    ds = run_task(task, axes, chunk=len(ns), progress=options.progress).assign_coords(n=np.asarray(ns))
    return with_rms_prefactor(ds, cfg, horizon=options.horizon, observable=options.observable)
