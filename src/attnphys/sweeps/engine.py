"""Running a sweep: chunks → a resumable Zarr store, in-process, in local processes or on Dask.

A :class:`Sweep` is a grid, a task (what to compute per point, e.g.
:class:`attnphys.dmft.sweep.DMFTOrbitTask`) and a base seed. :func:`run_sweep` creates the store
once (or checks that an existing one holds the same sweep), then computes only the chunks whose
``done`` flag is not set. Every task is one chunk: :func:`run_chunk` computes it as one vectorised
batch and writes its region and then its flag itself, so a killed process or worker loses at most the
chunks in flight, which the scheduler (Dask) or the next run recomputes; the results are a pure
function of the sweep, so recomputing never changes them.
"""

from __future__ import annotations

import json
from pathlib import Path
import importlib
from typing import Any, Iterable, Literal

import numpy as np
import xarray as xr
from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from attnphys.metadata import base_attrs
from attnphys.progress import progress_bar
from attnphys.sweeps.grid import Grid, point_seed
from attnphys.sweeps.store import VarSpec, create_or_check, done_mask, open_result, write_chunk

EXECUTORS = ("inprocess", "processes", "dask")

TASKS: dict[str, str] = {"dmft-orbits": "attnphys.dmft.sweep:DMFTOrbitTask"}
"""Task kinds → ``module:class``. A task is a frozen pydantic model with ``kind``, ``check_grid(grid)``,
``schema(grid)``, ``coords(grid)``, ``attrs()`` and ``compute(grid, lo, hi, base_seed)``; register a
new one here (imported lazily, so worker processes resolve it from the stored definition)."""


def task_class(kind: str):
    if kind not in TASKS:
        raise ValueError(f"unknown task kind {kind!r}; known: {sorted(TASKS)}")
    module, name = TASKS[kind].split(":")
    return getattr(importlib.import_module(module), name)


class Sweep(BaseModel):
    """The full, validated definition of a sweep; its JSON form is stored with the results."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    grid: Grid
    task: Any = Field(description="what to compute per point (a registered task model)")
    base_seed: int = Field(0, ge=0, description="point seeds derive from (base_seed, point index)")

    @field_validator("task", mode="before")
    @classmethod
    def _task(cls, v):
        if isinstance(v, BaseModel):
            return v
        if not isinstance(v, dict) or "kind" not in v:
            raise ValueError("task must be a task model or a mapping with a 'kind'")
        return task_class(v["kind"]).model_validate(v)

    @field_serializer("task")
    def _dump_task(self, t):
        return t.model_dump(mode="json")

    def check(self) -> "Sweep":
        self.task.check_grid(self.grid)
        return self

    def definition(self) -> dict:
        return json.loads(self.model_dump_json())


def prepare(sweep: Sweep, store: str | Path) -> bool:
    """Validate the sweep and create (or check) its store; returns True if created now."""
    sweep.check()
    g = sweep.grid
    attrs = base_attrs(sweep.task.config if hasattr(sweep.task, "config") else None)
    attrs.pop("created", None)
    attrs.update(sweep.task.attrs())
    attrs["grid_shape"] = json.dumps(list(g.shape))
    attrs["grid_axes"] = json.dumps(g.names)
    coords = sweep.task.coords(g)
    schema = {**sweep.task.schema(g), "point_seed": VarSpec((), (), np.uint32, 0)}
    return create_or_check(store, sweep.definition(), g.size, g.chunk, schema, coords, attrs)


def run_chunk(definition: str, store: str, i: int) -> tuple[int, int]:
    """Compute chunk ``i`` of the sweep (JSON ``definition``) and write it into ``store``.

    Idempotent: the region is overwritten with the same values if the chunk runs twice.
    Returns (chunk index, points computed).
    """
    sweep = Sweep.model_validate_json(definition)
    lo, hi = sweep.grid.chunk_range(i)
    values = sweep.task.compute(sweep.grid, lo, hi, sweep.base_seed)
    values["point_seed"] = point_seed(sweep.base_seed, range(lo, hi))
    write_chunk(store, i, lo, hi, values)
    return i, hi - lo


def _jax_setup(x64: bool) -> None:
    """Worker set-up: float64 as the driver, one XLA device per worker process (one core each)."""
    from attnphys.runtime import configure

    configure(x64=x64, host_devices=1)


def run_sweep(
    sweep: Sweep,
    store: str | Path,
    executor: Literal["inprocess", "processes", "dask"] = "inprocess",
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    progress: bool = True,
) -> xr.Dataset:
    """Run (or resume) ``sweep`` into ``store`` and return the result on the grid axes.

    Args:
        executor: ``inprocess`` (chunks one after another, each split over this process's devices),
            ``processes`` (a local process pool), ``dask`` (a Dask cluster: ``scheduler`` address, or a
            ``LocalCluster`` of ``workers`` single-threaded worker processes started here).
        workers: processes/workers (default: CPU count).
    """
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {EXECUTORS}, got {executor!r}")
    if scheduler is not None and executor != "dask":
        raise ValueError("--scheduler needs the dask executor")
    prepare(sweep, store)
    store = str(store)
    done = done_mask(store)
    todo = [i for i in range(sweep.grid.n_chunks) if not done[i]]
    sizes = {i: sweep.grid.chunk_range(i)[1] - sweep.grid.chunk_range(i)[0] for i in todo}
    already = sweep.grid.size - sum(sizes.values())
    definition = sweep.model_dump_json()
    with progress_bar(sweep.grid.size, "points", enabled=progress, done=already) as advance:
        for _, n in _execute(executor, definition, store, todo, workers, scheduler):
            advance(n)
    return open_result(store)


def _execute(executor, definition, store, todo, workers, scheduler) -> Iterable[tuple[int, int]]:
    if not todo:
        return
    if executor == "inprocess":
        for i in todo:
            yield run_chunk(definition, store, i)
        return
    import jax
    import os

    x64 = bool(jax.config.jax_enable_x64)
    n = workers or os.cpu_count() or 1
    if executor == "processes":
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(max_workers=n, mp_context=mp.get_context("spawn"), initializer=_jax_setup,
                                 initargs=(x64,)) as pool:
            futures = [pool.submit(run_chunk, definition, store, i) for i in todo]
            for f in as_completed(futures):
                yield f.result()
        return
    yield from _execute_dask(definition, store, todo, n, scheduler, x64)


def _execute_dask(definition, store, todo, n, scheduler, x64):
    from dask.distributed import Client, LocalCluster, WorkerPlugin, as_completed

    class JaxSetup(WorkerPlugin):
        name = "attnphys-jax-setup"

        def setup(self, worker):
            _jax_setup(x64)

    cluster = None
    if scheduler is None:
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0")
        client = Client(cluster)
    else:
        client = Client(scheduler)
    try:
        client.register_plugin(JaxSetup())
        futures = client.map(run_chunk, [definition] * len(todo), [store] * len(todo), todo, pure=False, retries=3)
        for f in as_completed(futures):
            yield f.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


__all__ = ["EXECUTORS", "Sweep", "prepare", "run_chunk", "run_sweep"]
