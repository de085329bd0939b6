"""Running a sweep: chunks → a store, in-process, in local processes or on Dask
(theory: docs/theory/sweeps.md §3).

A :class:`Sweep` is a grid, a task (what to compute per point; any registered
:class:`~attnphys.sweeps.task.AbstractTask`) and a base seed. :func:`run_sweep` creates the store once
(or checks that an existing one holds the same sweep), then computes only the chunks whose ``done``
flag is not set. Every unit of work is one chunk: :func:`run_chunk` computes it as one vectorised batch
and, with a Zarr store, writes its region and then its flag itself, so a killed process or worker loses
at most the chunks in flight, which the scheduler (Dask) or the next run recomputes; the results are a
pure function of the sweep, so recomputing never changes them. Without a store path the results are
gathered in memory.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import numpy as np
import xarray as xr
from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from attnphys.errors import check_fits
from attnphys.metadata import base_attrs
from attnphys.progress import nested_progress, piece, progress_bar
from attnphys.sweeps.grid import MAX_GRID_POINTS, Grid, point_seed
from attnphys.sweeps.store import MemoryStore, ZarrStore
from attnphys.sweeps.task import VarSpec, task_class

EXECUTORS = ("inprocess", "processes", "dask")

DASK_CONNECT_TIMEOUT_S = 15
"""Seconds to wait for a Dask scheduler before giving up with a message naming its address."""


class Sweep(BaseModel):
    """The full, validated definition of a sweep; its JSON form is stored with the results."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    grid: Grid
    task: Any = Field(description="what to compute per point (a registered task model)")
    base_seed: int = Field(default=0, ge=0, description="point seeds derive from (base_seed, point index)")

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

    def check(self) -> Sweep:
        """Validate every grid point and the chunking (before anything is written)."""
        if self.grid.size > MAX_GRID_POINTS:
            raise ValueError(
                f"the grid has {self.grid.size} points ({' × '.join(map(str, self.grid.shape))}), more than "
                f"{MAX_GRID_POINTS}"
            )
        self.task.check_grid(self.grid)
        chain = self.task.chain_length(self.grid)
        if chain > 1 and self.grid.chunk % chain:
            raise ValueError(f"chunk ({self.grid.chunk}) must be a multiple of the chain length ({chain})")
        return self

    def definition(self) -> dict:
        return json.loads(self.model_dump_json())


def prepare(sweep: Sweep, store: str | Path) -> bool:
    """Validate the sweep and create (or check) its Zarr store; returns True if created now."""
    return prepare_target(sweep, ZarrStore(store))


def compute_chunk(sweep: Sweep, i: int) -> tuple[int, int, dict[str, np.ndarray]]:
    """(lo, hi, values) of chunk ``i``."""
    lo, hi = sweep.grid.chunk_range(i)
    with piece(hi - lo):  # inner layers move the bar within the chunk (attnphys.progress.report_fraction)
        values = sweep.task.compute(sweep.grid, lo, hi, sweep.base_seed)
    values["point_seed"] = point_seed(sweep.base_seed, range(lo, hi))
    return lo, hi, values


def run_chunk(definition: str, store: str | None, i: int):
    """Compute chunk ``i`` of the sweep (JSON ``definition``); with a store path write it there.

    Idempotent: the region is overwritten with the same values if the chunk runs twice.

    Returns:
        (chunk index, points computed, values or None when written to ``store``).
    """
    sweep = Sweep.model_validate_json(definition)
    lo, hi, values = compute_chunk(sweep, i)
    if store is None:
        return i, hi - lo, (lo, hi, values)
    ZarrStore(store).write_chunk(i, lo, hi, values)
    return i, hi - lo, None


def _jax_setup(x64: bool, cache: str | None = None) -> None:
    """Worker set-up: float64 and the compilation cache as the driver, one XLA device per worker process
    (one core each)."""
    from attnphys.runtime import configure

    configure(x64=x64, host_devices=1, compilation_cache=cache)


def run_sweep(
    sweep: Sweep,
    store: str | Path | None = None,
    executor: Literal["inprocess", "processes", "dask"] = "inprocess",
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    progress: bool = True,
    attrs: dict | None = None,
    replace: bool = False,
) -> xr.Dataset:
    """Run (or resume) ``sweep`` into ``store`` (a Zarr path, or memory when None) and return the
    result on the grid axes (after the task's :meth:`finalize`).

    Args:
        executor: ``inprocess`` (chunks one after another, each split over this process's devices),
            ``processes`` (a local process pool), ``dask`` (a Dask cluster: ``scheduler`` address, or a
            ``LocalCluster`` of ``workers`` single-threaded worker processes started here).
        workers: processes/workers (default: CPU count).
        attrs: extra attributes of a new store (e.g. the provenance of the command).
        replace: start over: replace an existing store (of any definition) by a new template.
    """
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {EXECUTORS}, got {executor!r}")
    if scheduler is not None and executor != "dask":
        raise ValueError("--scheduler needs the dask executor")
    if scheduler is not None:
        check_scheduler(scheduler)  # before the store is created
    target = MemoryStore() if store is None else ZarrStore(store)
    prepare_target(sweep, target, extra_attrs=attrs, replace=replace)
    done = target.done_mask()
    todo = [i for i in range(sweep.grid.n_chunks) if not done[i]]
    sizes = {i: sweep.grid.chunk_range(i)[1] - sweep.grid.chunk_range(i)[0] for i in todo}
    already = sweep.grid.size - sum(sizes.values())
    definition = sweep.model_dump_json()
    path = None if store is None else str(store)
    with (
        progress_bar(sweep.grid.size, "points", enabled=progress, done=already) as advance,
        nested_progress(advance) as tracker,
    ):
        for i, n, values in _execute(executor, definition, path, todo, workers, scheduler):
            if values is not None:
                target.write_chunk(i, *values)
            tracker.complete(n)
    return sweep.task.finalize(target.result())


def finalized(ds: xr.Dataset) -> xr.Dataset:
    """A complete sweep result with its task's derived quantities (:meth:`AbstractTask.finalize`), as
    :func:`run_sweep` returns it; :func:`attnphys.io.load` applies it to the stores it reads (entry point
    ``attnphys.result_views``)."""
    if "sweep" not in ds.attrs:
        return ds
    return Sweep.model_validate_json(ds.attrs["sweep"]).task.finalize(ds)


def prepare_target(sweep: Sweep, target, extra_attrs: dict | None = None, replace: bool = False) -> bool:
    """:func:`prepare` with optional extra template attributes."""
    sweep.check()
    g = sweep.grid
    attrs = base_attrs(getattr(sweep.task, "config", None))
    attrs.pop("created", None)
    attrs.update(sweep.task.attrs())
    attrs.update(extra_attrs or {})
    attrs["grid_shape"] = json.dumps(list(g.shape))
    attrs["grid_axes"] = json.dumps(g.names)
    coords = sweep.task.coords(g)
    schema = {**sweep.task.schema(g), "point_seed": VarSpec((), (), np.uint32, 0, "seed of the point")}
    _check_size(g, schema, sweep.task.working_bytes(g), sweep.task.working_option)
    return target.create_or_check(sweep.definition(), g.size, g.chunk, schema, coords, attrs, replace=replace)


def _execute(executor, definition, store, todo, workers, scheduler) -> Iterable[tuple[int, int, Any]]:
    if not todo:
        return
    if executor == "inprocess":
        for i in todo:
            yield run_chunk(definition, store, i)
        return
    import jax

    from attnphys.runtime import compilation_cache

    x64 = bool(jax.config.jax_enable_x64)  # pyright: ignore[reportAttributeAccessIssue]
    cache = compilation_cache()
    n = workers or os.cpu_count() or 1
    if executor == "processes":
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(
            max_workers=n, mp_context=mp.get_context("spawn"), initializer=_jax_setup, initargs=(x64, cache)
        ) as pool:
            futures = [pool.submit(run_chunk, definition, store, i) for i in todo]
            for f in as_completed(futures):
                yield f.result()
        return
    yield from _execute_dask(definition, store, todo, n, scheduler, x64, cache)


def _check_size(grid: Grid, schema: dict[str, VarSpec], working: int = 0, option: str | None = None) -> None:
    """Refuse a sweep whose results cannot fit in memory (they are assembled there at the end), or whose
    chunk needs more working memory than fits (``working``: bytes per point while it is computed)."""
    per_point = sum(int(np.prod(v.shape, dtype=np.int64)) * v.dtype.itemsize for v in schema.values())
    shape = " × ".join(map(str, grid.shape)) or "1"
    check_fits(
        per_point * grid.size,
        f"the results of {grid.size} grid points ({shape})",
        "use fewer points or fewer recorded values",
    )
    n = min(grid.chunk, grid.size)
    check_fits(
        working * n,
        f"the {n} point(s) of one chunk, while they are computed,",
        f"lower {option}" if option else "compute fewer points at once",
        option,
    )


def check_scheduler(address: str, timeout: float | None = None) -> None:
    """Check that a Dask scheduler answers at ``address`` within ``timeout`` seconds (default
    :data:`DASK_CONNECT_TIMEOUT_S`): a closed port, a server that never answers and a server that is not a
    scheduler (e.g. a worker) are refused with a message naming the address.

    Raises:
        InputError: naming ``--scheduler``.
        MissingExtraError: Dask is not installed.
    """
    from attnphys.errors import InputError, MissingExtraError

    timeout = DASK_CONNECT_TIMEOUT_S if timeout is None else timeout
    if "://" not in address:
        raise InputError(f"{address!r} is not a scheduler address such as tcp://host:8786", "--scheduler")
    try:
        from distributed.comm import connect  # pyright: ignore[reportPrivateImportUsage]  (its documented path)
    except ImportError:
        raise MissingExtraError("dask", "the dask executor") from None

    async def identity():
        comm = await connect(address, timeout=timeout)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    result: dict[str, Any] = {}

    def probe():  # in its own thread and event loop: the caller may be inside one
        try:
            result["reply"] = asyncio.run(asyncio.wait_for(identity(), timeout))
        except BaseException as e:  # noqa: BLE001 - reported below
            result["error"] = e

    t = threading.Thread(target=probe, name="attnphys-dask-probe", daemon=True)
    t.start()
    t.join(timeout + 5)
    err = result.get("error")
    if t.is_alive() or err is not None or "reply" not in result:
        why = "" if err is None else f" ({type(err).__name__}{': ' + str(err) if str(err) else ''})"
        raise InputError(f"no Dask scheduler answered at {address} within {timeout:g} s{why}", "--scheduler")
    reply = result["reply"]
    kind = reply.get("type") if isinstance(reply, dict) else type(reply).__name__
    if kind != "Scheduler":
        raise InputError(f"{address} answered, but it is not a Dask scheduler (it is a {kind})", "--scheduler")


def dask_client(scheduler: str | None, workers: int):
    """A Dask client: of the scheduler at ``scheduler`` (failing within :data:`DASK_CONNECT_TIMEOUT_S`
    with a message naming the address), or of a new ``LocalCluster`` of single-threaded workers.

    Returns:
        (client, cluster or None).
    """
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        from attnphys.errors import MissingExtraError

        raise MissingExtraError("dask", "the dask executor") from None
    if scheduler is None:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0")
        return Client(cluster), cluster
    from attnphys.errors import InputError

    check_scheduler(scheduler)
    try:
        client = Client(scheduler, timeout=f"{DASK_CONNECT_TIMEOUT_S}s")
    except (OSError, TimeoutError) as e:
        raise InputError(
            f"no Dask scheduler answered at {scheduler} within {DASK_CONNECT_TIMEOUT_S} s ({type(e).__name__}: {e})",
            "--scheduler",
        ) from None
    return client, None


def _execute_dask(definition, store, todo, n, scheduler, x64, cache=None):
    from dask.distributed import WorkerPlugin, as_completed

    class JaxSetup(WorkerPlugin):
        name = "attnphys-jax-setup"

        def setup(self, worker):
            _jax_setup(x64, cache)

    client, cluster = dask_client(scheduler, n)
    try:
        client.register_plugin(JaxSetup())
        futures = client.map(run_chunk, [definition] * len(todo), [store] * len(todo), todo, pure=False, retries=3)
        for f in as_completed(futures):
            yield f.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


__all__ = ["EXECUTORS", "Sweep", "prepare", "run_chunk", "run_sweep", "compute_chunk", "check_scheduler", "dask_client"]
