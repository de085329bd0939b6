"""The finite-N network and its approach to the mean field (theory: docs/theory/dmft.md §2)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np
import xarray as xr

from attnphys._messages import validated
from attnphys.dmft._api._common import Config, Sweep, sweep_axes
from attnphys.errors import InputError

if TYPE_CHECKING:
    from attnphys.sweeps import Sweep as SweepPlan


@overload
def finite_trajectories(
    cfg: Config,
    n: int,
    *,
    sweep: Sweep | None = None,
    paths: int = 16,
    steps: int = 1000,
    transient: int = 0,
    seed: int = 0,
    per_bit: bool = False,
    record: Sequence[str] | None = None,
    progress: bool = False,
    dry_run: Literal[False] = False,
) -> xr.Dataset: ...


@overload
def finite_trajectories(
    cfg: Config,
    n: int,
    *,
    sweep: Sweep | None = None,
    paths: int = 16,
    steps: int = 1000,
    transient: int = 0,
    seed: int = 0,
    per_bit: bool = False,
    record: Sequence[str] | None = None,
    progress: bool = False,
    dry_run: Literal[True],
) -> SweepPlan: ...


def finite_trajectories(
    cfg: Config,
    n: int,
    *,
    sweep: Sweep | None = None,
    paths: int = 16,
    steps: int = 1000,
    transient: int = 0,
    seed: int = 0,
    per_bit: bool = False,
    record: Sequence[str] | None = None,
    progress: bool = False,
    dry_run: bool = False,
) -> xr.Dataset | SweepPlan:
    """Sample paths of the finite-N stochastic network with the mean field's conventions (theory:
    docs/theory/dmft.md §2): N = ``n`` semantic bits, each of the configuration's n_se weight columns
    repeated N/n_se times, so that the network and the mean field share every correlation tensor. Path p
    uses the key fold_in(PRNGKey(seed), p): a pure function of its index, the same at every grid point.

    Args:
        n: semantic bits N (a multiple of n_se); sweep: field → values (any sweepable field).
        per_bit: sample every bit (memory O(N)) instead of one binomial per weight class.
        dry_run: validate the options, the grid and the starts, and return the :class:`~attnphys.sweeps.Sweep`
            that would run (its grid and task) instead of computing.
        record: the observables recorded (default: every one of
            observables of the registry (:mod:`attnphys.dmft.observables`) the finite network has; another is refused by name).

    Returns:
        Dataset with the recorded observables (sweep…, path, step, feature); attributes ``engine``,
        ``n_se_finite`` (N) and ``classes`` (weight classes sampled).
    """
    from attnphys.dmft.finite import check_finite_model, repeated_network
    from attnphys.dmft.tasks import FiniteTask
    from attnphys.sweeps import run_task

    options: dict[str, Any] = {} if record is None else {"record": tuple(record)}
    task = validated(
        FiniteTask,
        config=cfg,
        n=n,
        paths=paths,
        steps=steps,
        transient=transient,
        seed=seed,
        per_bit=per_bit,
        **options,
    )
    axes = sweep_axes(sweep)
    chunk = max(1, len(axes[0].values)) if len(axes) == 1 else None
    if dry_run:
        return run_task(task, axes, chunk=chunk, dry_run=True)
    ds = run_task(task, axes, chunk=chunk, progress=progress)
    ds.attrs.update(
        n_se_finite=int(n), classes=int(n) if per_bit else int(repeated_network(check_finite_model(cfg), n).W.shape[2])
    )
    return ds


@overload
def converge(
    cfg: Config,
    sizes: Sequence[int],
    *,
    sweep: Sweep | None = None,
    paths: int = 16,
    steps: int = 2000,
    horizon: int = 200,
    transient: int = 1000,
    observable: str = "mo_se",
    seed: int = 0,
    progress: bool = False,
    dry_run: Literal[False] = False,
) -> xr.Dataset: ...


@overload
def converge(
    cfg: Config,
    sizes: Sequence[int],
    *,
    sweep: Sweep | None = None,
    paths: int = 16,
    steps: int = 2000,
    horizon: int = 200,
    transient: int = 1000,
    observable: str = "mo_se",
    seed: int = 0,
    progress: bool = False,
    dry_run: Literal[True],
) -> SweepPlan: ...


def converge(
    cfg: Config,
    sizes: Sequence[int],
    *,
    sweep: Sweep | None = None,
    paths: int = 16,
    steps: int = 2000,
    horizon: int = 200,
    transient: int = 1000,
    observable: str = "mo_se",
    seed: int = 0,
    progress: bool = False,
    dry_run: bool = False,
) -> xr.Dataset | SweepPlan:
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
        dry_run: validate the options, the grid and the starts, and return the :class:`~attnphys.sweeps.Sweep`
            that would run (its grid and task) instead of computing.

    Raises:
        InputError: fewer than two sizes, a repeated size, or a size that is not a multiple of n_se.
    """
    from attnphys.dmft.tasks import ConvergeTask
    from attnphys.sweeps import Axis, run_task

    ns = [int(n) for n in sizes]
    if len(ns) < 2:
        raise InputError(f"give at least two network sizes to fit a slope, got {ns}", "sizes")
    if len(set(ns)) != len(ns):
        raise InputError(f"network sizes repeat: {ns}", "sizes")
    ns = sorted(ns)
    task = validated(
        ConvergeTask,
        config=cfg,
        paths=paths,
        steps=steps,
        horizon=horizon,
        transient=transient,
        observable=observable,
        seed=seed,
    )
    axes = sweep_axes(sweep) + (Axis(name="n", values=tuple(float(n) for n in ns)),)
    if dry_run:
        return run_task(task, axes, chunk=len(ns), dry_run=True)
    from attnphys.dmft._api.fluctuations import with_rms_prefactor

    ds = run_task(task, axes, chunk=len(ns), progress=progress).assign_coords(n=np.asarray(ns))
    return with_rms_prefactor(ds, cfg, horizon=horizon, observable=observable)
