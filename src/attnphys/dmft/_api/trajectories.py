"""Trajectories of the mean-field map over parameter grids (theory: docs/theory/dmft.md §3.6, §8)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

import jax.numpy as jnp
import numpy as np
import xarray as xr

from attnphys._messages import validated
from attnphys.dmft._api._common import Config, Sweep, sweep_axes
from attnphys.dmft.meanfield import State, Window
from attnphys.dmft.observables import observable_names
from attnphys.dmft.starts import split_starts
from attnphys.errors import InputError

if TYPE_CHECKING:
    from attnphys.sweeps import Sweep as SweepPlan


@overload
def trajectories(
    cfg: Config,
    *,
    sweep: Sweep | None = None,
    start: Any = "token",
    steps: int,
    transient: int = 0,
    record_every: int = 1,
    record: Sequence[str] | None = None,
    progress: bool = False,
    dry_run: Literal[False] = False,
) -> xr.Dataset: ...


@overload
def trajectories(
    cfg: Config,
    *,
    sweep: Sweep | None = None,
    start: Any = "token",
    steps: int,
    transient: int = 0,
    record_every: int = 1,
    record: Sequence[str] | None = None,
    progress: bool = False,
    dry_run: Literal[True],
) -> SweepPlan: ...


def trajectories(
    cfg: Config,
    *,
    sweep: Sweep | None = None,
    start: Any = "token",
    steps: int,
    transient: int = 0,
    record_every: int = 1,
    record: Sequence[str] | None = None,
    progress: bool = False,
    dry_run: bool = False,
) -> xr.Dataset | SweepPlan:
    """Run the mean-field map x_{t+1} = F(x_t) (theory: docs/theory/dmft.md §3.4) at every point of the
    outer-product grid ``sweep``, and over initial conditions, recording the observables per step
    (theory: docs/theory/dmft.md §3.6).

    >>> ds = trajectories(preset("paper"), start="token", steps=2000, sweep={"beta_o": [1.26, 2.0]})
    >>> ds.mo_se.dims
    ('beta_o', 'step', 'feature')

    Args:
        cfg: the configuration; unswept fields come from it.
        sweep: field → values (any sweepable configuration field); dims in the given order.
        start: ``"token"``, ``"checkpoint"``, a window file, a :class:`Window`, a typed start, or a list of
            them (then a dimension ``ic`` comes first).
        steps, transient, record_every: T loop steps, the first T_tr not recorded, every k-th kept.
        record: the observables recorded (default: every one of the registry, :mod:`attnphys.dmft.observables`).
        progress: show a progress bar.
        dry_run: validate the options, the grid and the starts, and return the :class:`~attnphys.sweeps.Sweep`
            that would run (its grid and task) instead of computing.

    Returns:
        Dataset with the recorded observables (sweep…, step, feature), the final window ``final_A``
        (…, lag, feature), ``final_pe`` (…, lag, bit), ``final_n`` and its cached overlaps; with ``mo_se``
        recorded, its autocorrelation time and the fraction of its power below 1/L per feature; attributes
        with the full configuration, the schedule, the start and the package version.
    """
    from attnphys.dmft.tasks import TrajectoryTask
    from attnphys.sweeps import Axis, run_task

    axes = sweep_axes(sweep)
    first, starts = split_starts(start)
    task = validated(
        TrajectoryTask,
        config=cfg,
        start=first,  # pyright: ignore[reportArgumentType]  (validated by the task)
        starts=starts,
        steps=steps,
        transient=transient,
        record_every=record_every,
        record=observable_names() if record is None else tuple(record),
    )
    if len(starts) > 1:
        axes = (Axis(name="ic", values=tuple(float(i) for i in range(len(starts)))),) + axes
    if dry_run:
        return run_task(task, axes, dry_run=True)
    ds = run_task(task, axes, progress=progress)
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
