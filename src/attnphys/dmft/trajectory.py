"""Trajectories of the mean-field map over parameter grids, as ``xarray.Dataset``
(theory: docs/theory/dmft.md §3.6).

>>> ds = trajectories(preset("paper"), start="token", steps=2000, sweep={"beta_o": [1.26, 2.0]})
>>> ds.mo_se.dims
('beta_o', 'step', 'feature')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import jax.numpy as jnp
import numpy as np
import xarray as xr

from attnphys.dmft.config import BATCHED, DMFTConfig
from attnphys.dmft.initial import split_starts
from attnphys.dmft.meanfield import OBSERVABLES, State, Window
from attnphys.errors import InputError

SWEEPABLE: tuple[str, ...] = BATCHED
"""Parameters :func:`trajectories` varies per trajectory inside one batch (other fields: a sweep task)."""


def grid_axes(sweep: Mapping[str, Sequence[float] | np.ndarray] | None, allowed: Sequence[str] = BATCHED):
    """Grid axes of a ``{name: values}`` sweep, in the given order (validated names and values)."""
    from attnphys.sweeps import Axis

    axes = []
    for name, values in (sweep or {}).items():
        if name not in allowed:
            raise InputError(f"cannot sweep {[name]}: sweepable parameters are {tuple(allowed)}", name)
        v = np.atleast_1d(np.asarray(values, dtype=np.float64))
        if v.ndim != 1 or v.size == 0:
            raise InputError(f"sweep over {name} needs a non-empty list of values", name)
        axes.append(Axis(name=name, values=tuple(float(x) for x in v)))
    return tuple(axes)


def trajectories(
    cfg: DMFTConfig,
    *,
    start="token",
    steps: int,
    transient: int = 0,
    record_every: int = 1,
    sweep: Mapping[str, Sequence[float] | np.ndarray] | None = None,
    record: Sequence[str] = OBSERVABLES,
    progress: bool = False,
) -> xr.Dataset:
    """Run the mean-field map on the outer-product grid ``sweep`` (and over initial conditions)
    (theory: docs/theory/dmft.md §3.6).

    Args:
        cfg: the configuration; unswept parameters come from it.
        start: ``"token"``, ``"checkpoint"``, a window file, one :class:`Window` or typed start, or a list
            of them (then a dimension ``ic`` is added first).
        steps, transient, record_every: T loop steps, the first T_tr not recorded, every k-th kept.
        sweep: parameter name → values, for β_o, β_att and ε; dims in the given order.

    Returns:
        Dataset with variables ``att, mo, mo_se, mv, mq, mk`` (…, step, feature), the final window
        ``final_A`` (…, lag, feature), ``final_pe`` (…, lag, bit), ``final_n``, attrs with the full config,
        the schedule, the start and the package version.
    """
    from attnphys.dmft.tasks import TrajectoryTask
    from attnphys.sweeps import Axis, Grid, Sweep, run_sweep

    axes = grid_axes(sweep)
    first, starts = split_starts(start)
    task = TrajectoryTask(
        config=cfg,
        start=first,  # pyright: ignore[reportArgumentType]  (validated by the task)
        starts=starts,
        steps=steps,
        transient=transient,
        record_every=record_every,
        record=tuple(record),
    )
    if len(starts) > 1:
        axes = (Axis(name="ic", values=tuple(float(i) for i in range(len(starts)))),) + axes
    size = int(np.prod([len(a.values) for a in axes])) if axes else 1
    ds = run_sweep(Sweep(grid=Grid(axes=axes, chunk=max(size, 1)), task=task), progress=progress)
    if "ic" in ds.dims:
        ds = ds.assign_coords(ic=np.arange(ds.sizes["ic"]))
    return ds.drop_vars("point_seed")


def final_windows(ds: xr.Dataset) -> list[Window | State]:
    """The final states of a trajectory dataset (flattened over its parameter dims): engine
    :class:`State` objects with their cached overlaps when the dataset has them (a run continued from one
    at the same parameters is bitwise the uninterrupted run), else windows."""
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
