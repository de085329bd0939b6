"""Phase portraits at chosen points of a stored orbit diagram: each point rerun from the diagram's own
configuration, start, schedule and seed, checked against what the diagram stored (theory:
docs/theory/dmft.md §7.7)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from attnphys.errors import InputError

_GRID_RTOL = 1e-9


def _sweep_of(ds: xr.Dataset):
    """The stored diagram's task and grid, rebuilt from its ``sweep`` attribute."""
    from attnphys.dmft.tasks import OrbitTask
    from attnphys.sweeps.grid import Grid

    try:
        sw = json.loads(str(ds.attrs["sweep"]))
    except (KeyError, ValueError):
        raise InputError(
            "records no sweep (a diagram written by `dmft bifurcation` or `dmft phase-diagram`, or by "
            "bifurcation(...)/phase_diagram(...) with a store)",
            "diagram",
        ) from None
    if sw.get("task", {}).get("kind") != "dmft-orbits":
        raise InputError(f"is not an orbit diagram (its task is {sw.get('task', {}).get('kind')!r})", "diagram")
    grid = Grid.model_validate(sw["grid"])
    if any(a.name == "direction" for a in grid.axes):
        raise InputError(
            "is a continuation diagram: each of its points starts from the previous point's final state, so a "
            "point cannot be rerun alone; use a diagram of cold starts",
            "diagram",
        )
    task = OrbitTask.model_validate(sw["task"])
    return task, grid, int(sw.get("base_seed", 0))


def _indices(grid, at: Sequence) -> list[int]:
    names = [a.name for a in grid.axes]
    out = []
    for item in at:
        try:
            if isinstance(item, (str, bytes, bool, np.bool_)):
                raise TypeError
            point = tuple(float(v) for v in np.atleast_1d(np.asarray(item, dtype=float)).ravel())
        except (TypeError, ValueError):
            raise InputError(
                f"each point must be a number or a tuple of numbers (one per axis {names}), got {item!r:.60}", "values"
            ) from None
        if len(point) != len(names):
            raise InputError(
                f"each point needs {len(names)} value(s), one per axis {names}; got {list(point)}", "values"
            )
        index = []
        for name, v, axis in zip(names, point, grid.axes):
            if not np.isfinite(v):
                raise InputError(f"{name} = {v} is not a finite value (a point of the diagram's grid)", "values")
            vals = np.asarray(axis.values, dtype=float)
            hit = np.flatnonzero(np.isclose(vals, v, rtol=_GRID_RTOL, atol=0.0))
            if hit.size == 0:
                near = vals[int(np.argmin(np.abs(vals - v)))]
                raise InputError(
                    f"{name} = {v:g} is not a value of the diagram's grid (nearest: {near:.10g}); a point is rerun "
                    "only where the diagram has one",
                    "values",
                )
            index.append(int(hit[0]))
        out.append(int(np.ravel_multi_index(tuple(index), tuple(len(a.values) for a in grid.axes))))
    return out


def _stored_points(ds: xr.Dataset, names: list[str], grid, flat: list[int], shape: tuple[int, ...]) -> dict:
    """The stored values of each chosen point, selected by its parameter values in the dataset's own
    coordinates (a dataset cut from the diagram keeps the full grid in its ``sweep`` record, so an index of
    that grid may name another point of the cut); an InputError naming ``diagram`` where a point is not in
    the dataset."""
    out = {}
    for i in flat:
        where = {}
        for d, j in enumerate(np.unravel_index(i, shape)):
            name, v = names[d], float(grid.axes[d].values[j])
            if name not in ds.dims or name not in ds.coords:
                raise InputError(f"has no axis {name} (its sweep record has one)", "diagram")
            vals = np.asarray(ds[name].values, dtype=float)
            hit = np.flatnonzero(np.isclose(vals, v, rtol=_GRID_RTOL, atol=0.0))
            if hit.size != 1:
                raise InputError(
                    f"holds {'no' if hit.size == 0 else 'several'} stored point(s) at {name} = {v:g} although its "
                    "sweep record has it (a dataset cut from the diagram?)",
                    "diagram",
                )
            where[name] = int(hit[0])
        out[i] = ds.isel(where)
    return out


def diagram_portraits(
    diagram: xr.Dataset | str | Path,
    values: Sequence[float] | Sequence[Sequence[float]],
    *,
    record: Sequence[str] = ("mo_se",),
    keep: int | None = None,
    progress: bool = False,
) -> xr.Dataset:
    """Rerun chosen points of a stored orbit diagram and return their recorded trajectories for phase
    portraits (theory: docs/theory/dmft.md §7.7).

    Each point is computed twice from the diagram's own record (its ``sweep`` attribute: configuration,
    start, schedule, classifier options and the point's seed): once by the diagram's orbit task on that point
    alone, giving its exponents, regime and period again, and once as a trajectory x_{t+1} = F(x_t) from the
    same start over the same T steps, recording the observables after the same transient. The rerun is the
    stored point: the result states the largest differences between the rerun and the stored exponents and
    between the trajectory's last ``n_orbit`` values of the diagram's observable and the stored orbit.

    Args:
        diagram: a bifurcation or phase diagram of cold starts (a store path, or the loaded dataset) whose
            ``sweep`` attribute records how it was computed.
        values: the points: parameter values of a one-axis diagram (``[1.2, 1.4]``) or one tuple per point
            with a value per axis (``[(1.2, 0.02)]``); each must be a value of the stored grid (relative 1e-9).
        record: the observables recorded (:mod:`attnphys.dmft.observables`; default ``mo_se``).
        keep: the last steps kept per point (default: every recorded step, T − T_tr).
        progress: show progress over the points.

    Returns:
        Dataset over ``point`` (with the grid's parameters as coordinates along it): each recorded
        observable (point, step, feature); ``exponents`` and ``stored_exponents`` (point, exponent);
        ``regime``, ``period`` (rerun) and ``stored_regime``, ``stored_period``; ``exponent_difference`` and
        ``orbit_difference`` (point): the largest absolute differences from the stored values; attributes
        ``diagram`` (where it came from), ``config`` and ``sweep`` (the diagram's), ``max_exponent_difference``
        and ``max_orbit_difference``.

    Raises:
        InputError: naming ``diagram`` (no sweep record, not an orbit diagram, a continuation diagram),
            ``values`` (a value not on the grid, a point with the wrong number of values), ``record`` or
            ``keep``.
    """
    from attnphys.dmft import trajectories
    from attnphys.dmft._api.compare import open_diagram
    from attnphys.dmft.observables import observable_names
    from attnphys.metadata import base_attrs
    from attnphys.progress import progress_bar

    ds, where = open_diagram(diagram, "diagram")
    task, grid, base_seed = _sweep_of(ds)
    points: Any = values
    if isinstance(points, (int, float, np.integer, np.floating)) and not isinstance(points, (bool, np.bool_)):
        points = [points]
    if isinstance(points, np.ndarray):
        points = list(points)
    if isinstance(points, (str, bytes, Mapping)) or not isinstance(points, Sequence):
        raise InputError(
            f"must be a list of points (numbers, or tuples of a value per axis), not {type(values).__name__}", "values"
        )
    if len(points) == 0:
        raise InputError("give at least one point", "values")
    if isinstance(record, str):
        record = (record,)
    if not isinstance(record, Sequence) or not all(isinstance(r, str) for r in record):
        raise InputError(f"must be a list of observable names, not {record!r:.60}", "record")
    unknown = [r for r in record if r not in observable_names()]
    if unknown or not record:
        raise InputError(f"unknown observable(s) {unknown}; known: {', '.join(observable_names())}", "record")
    recorded = task.steps - task.transient
    if keep is not None and (isinstance(keep, (bool, np.bool_)) or not isinstance(keep, (int, np.integer))):
        raise InputError(f"must be an integer number of steps, not {keep!r}", "keep")
    if keep is not None and not 1 <= keep <= recorded:
        raise InputError(f"must be between 1 and the recorded steps {recorded}, not {keep}", "keep")
    keep = recorded if keep is None else keep
    flat = _indices(grid, points)
    names = [a.name for a in grid.axes]
    shape = tuple(len(a.values) for a in grid.axes)
    stored = _stored_points(ds, names, grid, flat, shape)

    rows: list[dict[str, np.ndarray]] = []
    series: dict[str, list[np.ndarray]] = {r: [] for r in record}
    with progress_bar(len(flat), "points", enabled=progress) as advance:
        for i in flat:
            rerun = task.compute(grid, i, i + 1, base_seed)
            point = dict(zip(names, (float(grid.axes[d].values[j]) for d, j in enumerate(np.unravel_index(i, shape)))))
            start = task.point_starts[i] if task.point_starts else task.start
            tr = trajectories(
                task.config.replace(**point),
                start=start,
                steps=task.steps,
                transient=task.transient,
                record=tuple(dict.fromkeys((*record, task.observable))),
            )
            for r in record:
                series[r].append(np.asarray(tr[r].transpose("step", ...).values)[-keep:])
            s = stored[i]
            row = {k: np.asarray(rerun[k])[0] for k in ("regime", "period")}
            row["exponents"] = np.asarray(rerun.get("exponents", rerun["lambda1"][:, None]))[0]
            row["stored_exponents"] = np.asarray(s["exponents"].values if "exponents" in s else [s["lambda1"].item()])
            row["stored_regime"] = np.asarray(s["regime"].values)
            row["stored_period"] = np.asarray(s["period"].values)
            with np.errstate(invalid="ignore"):
                d = np.abs(row["exponents"] - row["stored_exponents"])
            d = np.where(row["exponents"] == row["stored_exponents"], 0.0, d)  # equal infinities
            row["exponent_difference"] = np.asarray(np.nanmax(d) if d.size and not np.isnan(d).all() else 0.0)
            if "orbit" in s:
                orb = np.asarray(s["orbit"].transpose("sample", ...).values)
                obs = np.asarray(tr[task.observable].transpose("step", ...).values)[-orb.shape[0] :]
                row["orbit_difference"] = np.asarray(float(np.max(np.abs(obs - orb))))
            else:
                row["orbit_difference"] = np.asarray(np.nan)
            rows.append(row)
            advance(1)

    from attnphys.dynamics.classify import CLASSIFY_ATTRS, REGIME_ATTRS

    k = rows[0]["exponents"].shape[-1]
    out = xr.Dataset(
        {
            **{r: (("point", "step", "feature"), np.stack(series[r]), {"long_name": f"{r}, recorded"}) for r in record},
            "exponents": (
                ("point", "exponent"),
                np.stack([r["exponents"] for r in rows]),
                {"long_name": "Lyapunov exponents, rerun", "units": "1/step"},
            ),
            "stored_exponents": (
                ("point", "exponent"),
                np.stack([r["stored_exponents"][:k] for r in rows]),
                {"long_name": "exponents stored in the diagram", "units": "1/step"},
            ),
            "regime": (
                ("point",),
                np.stack([r["regime"] for r in rows]).astype(np.int8),
                {**REGIME_ATTRS, "long_name": "attractor type, rerun"},
            ),
            "stored_regime": (
                ("point",),
                np.stack([r["stored_regime"] for r in rows]).astype(np.int8),
                {**REGIME_ATTRS, "long_name": "attractor type stored in the diagram"},
            ),
            "period": (
                ("point",),
                np.stack([r["period"] for r in rows]).astype(np.int64),
                {**CLASSIFY_ATTRS["period"], "long_name": "exact period of the orbit, rerun"},
            ),
            "stored_period": (
                ("point",),
                np.stack([r["stored_period"] for r in rows]).astype(np.int64),
                {**CLASSIFY_ATTRS["period"], "long_name": "exact period stored in the diagram"},
            ),
            "exponent_difference": (
                ("point",),
                np.stack([r["exponent_difference"] for r in rows]).astype(float),
                {"long_name": "max |rerun − stored| of the exponents", "units": "1/step"},
            ),
            "orbit_difference": (
                ("point",),
                np.stack([r["orbit_difference"] for r in rows]).astype(float),
                {"long_name": "max |trajectory − stored orbit| over the stored samples"},
            ),
        },
        coords={
            "point": np.arange(len(flat)),
            "step": np.arange(task.steps - keep, task.steps),
            "exponent": np.arange(k),
            **{
                n: ("point", [float(grid.axes[d].values[j]) for j in (np.unravel_index(i, shape)[d] for i in flat)])
                for d, n in enumerate(names)
            },
        },
    )
    for n in names:
        if n in ds.coords:
            out[n].attrs.update(ds[n].attrs)
    out.attrs.update(
        base_attrs(
            None,
            diagram=where,
            config=str(ds.attrs.get("config", "")),
            sweep=str(ds.attrs["sweep"]),
            observable=task.observable,
            max_exponent_difference=float(np.max(out["exponent_difference"].values)),
            max_orbit_difference=float(np.nanmax(out["orbit_difference"].values))
            if np.isfinite(out["orbit_difference"].values).any()
            else float("nan"),
        )
    )
    return out


__all__ = ["diagram_portraits"]
