"""Trajectories of the mean-field map over parameter grids (theory: docs/theory/dmft.md §3.6, §8)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax.numpy as jnp
import numpy as np
import xarray as xr

from attnphys._messages import validated
from attnphys._options import takes
from attnphys.dmft._analysis_options import TrajectoriesOptions
from attnphys.dmft._api._common import Config, Sweep, sweep_axes
from attnphys.dmft.meanfield import State, Window
from attnphys.dmft.observables import observable_names
from attnphys.dmft.starts import split_starts
from attnphys.errors import InputError

if TYPE_CHECKING:
    from attnphys.sweeps import Sweep as SweepPlan


def _trajectory_task(cfg: Config, sweep: Sweep | None, o: TrajectoriesOptions):
    """The trajectory task and its grid (a list of starts: an ``ic`` dim first)."""
    from attnphys.dmft.tasks import TrajectoryTask
    from attnphys.sweeps import Axis

    axes = sweep_axes(sweep)
    first, starts = split_starts(o.start)
    task = validated(
        TrajectoryTask,
        config=cfg,
        start=first,  # pyright: ignore[reportArgumentType]  (validated by the task)
        starts=starts,
        steps=o.steps,
        transient=o.transient,
        record_every=o.record_every,
        record=observable_names() if o.record is None else tuple(o.record),
    )
    if len(starts) > 1:
        axes = (Axis(name="ic", values=tuple(float(i) for i in range(len(starts)))),) + axes
    return task, axes


@takes(TrajectoriesOptions)
def plan_trajectories(cfg: Config, *, sweep: Sweep | None = None, options: TrajectoriesOptions) -> SweepPlan:
    """The sweep that :func:`trajectories` with the same arguments would run (its grid and task), with the
    options, the grid and the starts validated; nothing is computed (theory: docs/theory/sweeps.md §5).

    Raises:
        InputError: naming the argument or option refused.
    """
    from attnphys.sweeps import run_task

    return run_task(*_trajectory_task(cfg, sweep, options), dry_run=True)


@takes(TrajectoriesOptions, plan=plan_trajectories)
def trajectories(cfg: Config, *, sweep: Sweep | None = None, options: TrajectoriesOptions) -> xr.Dataset:
    """Run the mean-field map x_{t+1} = F(x_t) (theory: docs/theory/dmft.md §3.4) at every point of the
    outer-product grid ``sweep``, and over initial conditions, recording the observables per step
    (theory: docs/theory/dmft.md §3.6).

    >>> ds = trajectories(preset("paper"), start="token", steps=2000, sweep={"beta_o": [1.26, 2.0]})
    >>> ds.mo_se.dims
    ('beta_o', 'step', 'feature')

    Args:
        cfg: the configuration; unswept fields come from it.
        sweep: field → values (any sweepable configuration field); dims in the given order.

    The options (each a keyword; :class:`~attnphys.dmft.TrajectoriesOptions`): ``start`` (a list of starts
    adds a dimension ``ic`` first), the schedule ``steps``, ``transient``, ``record_every`` (T loop steps,
    the first T_tr not recorded, every k-th kept), ``record`` and ``progress``; :func:`plan_trajectories`
    validates them and returns the sweep that would run.

    Returns:
        Dataset with the recorded observables (sweep…, step, feature), the final window ``final_A``
        (…, lag, feature), ``final_pe`` (…, lag, bit), ``final_n`` and its cached overlaps; with ``mo_se``
        recorded, its autocorrelation time and the fraction of its power below 1/L per feature; attributes
        with the full configuration, the schedule, the start and the package version.
    """
    from attnphys.sweeps import run_task

    ds = run_task(*_trajectory_task(cfg, sweep, options), progress=options.progress)
    if "ic" in ds.dims:
        ds = ds.assign_coords(ic=np.arange(ds.sizes["ic"]))
    return ds


def final_windows(ds: xr.Dataset) -> list[Window | State]:
    """The final states of a trajectory dataset (flattened over its parameter dims), usable as starts: engine
    :class:`State` objects with their cached overlaps when the dataset has them (a run continued from one
    at the same parameters is bitwise the uninterrupted run; theory: docs/theory/dmft.md §3.7), else
    windows.

    Raises:
        InputError: naming ``ds``: not a dataset, or one without the final windows (``final_A``,
            ``final_pe``) that :func:`trajectories` records.
    """
    if not isinstance(ds, xr.Dataset):
        raise InputError(f"must be the dataset of trajectories(...), got {type(ds).__name__}", "ds")
    missing = [v for v in ("final_A", "final_pe") if v not in ds]
    if missing:
        raise InputError(
            f"holds no final windows ({', '.join(missing)} missing): give the dataset that trajectories(...) returns",
            "ds",
        )
    A = ds.final_A.transpose(..., "lag", "feature").values
    pe = ds.final_pe.transpose(..., "lag", "bit").values
    L, M, P = A.shape[-2], A.shape[-1], pe.shape[-1]
    B = A.size // (L * M)
    n = ds.final_n.values.reshape(-1) if "final_n" in ds else np.full(B, L)
    A, pe = A.reshape(B, L, M), pe.reshape(B, L, P)
    wins: list[Window | State] = [
        Window(A=jnp.asarray(a), pe=jnp.asarray(p), n=jnp.asarray(int(k), jnp.int32)) for a, p, k in zip(A, pe, n)
    ]
    if "final_mv" not in ds:
        return wins
    cache = {k: ds[f"final_{k}"].transpose(..., *ds[f"final_{k}"].dims[-2:]).values for k in ("mv", "mk", "m0", "se0")}
    cache = {k: v.reshape((B,) + v.shape[-2:]) for k, v in cache.items()}
    return [
        State(w.A, w.pe, w.n, *(jnp.asarray(cache[k][i]) for k in ("mv", "mk", "m0", "se0")))
        for i, w in enumerate(wins)
    ]
