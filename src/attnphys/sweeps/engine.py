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
import math
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal, TypedDict, Unpack, overload

import numpy as np
import xarray as xr
from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from attnphys.errors import check_fits
from attnphys.metadata import base_attrs
from attnphys.progress import nested_progress, piece, progress_bar
from attnphys.sweeps.grid import MAX_GRID_POINTS, Axis, Grid, point_seed
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
    if store is not None and not os.path.isdir(store):
        from attnphys.sweeps._executors import check_store_visible

        check_store_visible(store)  # a worker on another file system: say so before computing
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


def check_executor(executor: str, scheduler: str | None) -> None:
    """The rules of where a sweep runs, in one place (theory: docs/theory/sweeps.md §3): a known executor,
    and a scheduler address only for Dask.

    Raises:
        InputError: naming ``executor`` or ``scheduler``.
    """
    from attnphys.errors import InputError

    if executor not in EXECUTORS:
        raise InputError(f"must be one of {', '.join(EXECUTORS)}, got {executor!r}", "executor")
    if scheduler is not None and executor != "dask":
        raise InputError("a scheduler address needs executor='dask'", "scheduler")


def check_store_place(store: str | Path, option: str = "store") -> Path:
    """The store's path (:func:`attnphys.io.resolve_output`), refused before anything is computed where no
    store can be created (:func:`attnphys._paths.check_writable_place`: a read-only file system, a folder
    without write permission, a parent that is a file, ``/proc``; theory: docs/theory/sweeps.md §5). An
    existing store is checked when it is opened.

    Raises:
        OutputError: naming ``option`` and the place.
    """
    from attnphys._paths import check_writable_place
    from attnphys.io import resolve_output

    path = resolve_output(store, option)
    if not path.exists():
        check_writable_place(path, option)
    return path


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
    check_executor(executor, scheduler)
    if store is not None:
        store = check_store_place(store)
    if scheduler is not None:
        check_scheduler(scheduler)  # before the store is created
    target = MemoryStore() if store is None else ZarrStore(store)
    try:
        prepare_target(sweep, target, extra_attrs=attrs, replace=replace)
    except OSError as e:  # a place that refuses new files (an immutable folder), found only by writing
        if store is None:
            raise
        from attnphys.errors import OutputError

        raise OutputError(
            f"store {store}: cannot create the store in {Path(store).parent} ({e.strerror or type(e).__name__}); "
            "choose a path in a folder this process may write"
        ) from None
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


class RunKeywords(TypedDict, total=False):
    """The keywords of :func:`run_task` besides ``dry_run``, for its typed forms (a dry run returns the
    :class:`Sweep`, a run its result)."""

    store: str | Path | None
    overwrite: bool
    chunk: int | None
    executor: Literal["inprocess", "processes", "dask"]
    workers: int | None
    scheduler: str | None
    seed: int
    store_attrs: dict | None
    progress: bool


@overload
def run_task(
    task, axes: Iterable[Axis] = (), *, dry_run: Literal[False] = False, **kw: Unpack[RunKeywords]
) -> xr.Dataset: ...
@overload
def run_task(task, axes: Iterable[Axis] = (), *, dry_run: Literal[True], **kw: Unpack[RunKeywords]) -> Sweep: ...


def run_task(
    task,
    axes: Iterable[Axis] = (),
    *,
    store: str | Path | None = None,
    overwrite: bool = False,
    chunk: int | None = None,
    executor: Literal["inprocess", "processes", "dask"] = "inprocess",
    workers: int | None = None,
    scheduler: str | None = None,
    seed: int = 0,
    store_attrs: dict | None = None,
    progress: bool = False,
    dry_run: bool = False,
) -> xr.Dataset | Sweep:
    """Run ``task`` at every point of the outer-product grid of ``axes``: the one composition of a task, a
    grid and a sweep that every analysis of the library calls (theory: docs/theory/sweeps.md §3).

    Args:
        task: a registered :class:`~attnphys.sweeps.task.AbstractTask`.
        axes: the grid axes (none: a single point).
        store: a resumable Zarr store (re-running the same call resumes; a different sweep is refused), or
            None to compute in memory.
        overwrite: with ``store``: start over, replacing an existing store.
        chunk: points per vectorised batch (default: the whole grid at once).
        executor, workers, scheduler: where chunks run (see :func:`run_sweep`).
        seed: the base seed of the per-point seeds (:func:`~attnphys.sweeps.grid.point_seed`).
        store_attrs: extra attributes of a new store (e.g. the command that made it).
        dry_run: validate the task, every grid point and the sizes, and return the :class:`Sweep` that would
            run (its grid and task) without computing.

    Returns:
        The result on the grid axes (after the task's :meth:`~AbstractTask.finalize`); the per-point seeds
        (``point_seed``) are kept only in stores, where they document a resumed run. A dry run returns the
        validated :class:`Sweep`.

    Raises:
        InputError: an invalid grid, chunking or executor, naming the rule.
        ResourceError: memory (host or device) ran out during the run, naming ``chunk``.
    """
    from pydantic import ValidationError

    from attnphys.errors import InputError

    axes = tuple(axes)
    size = int(np.prod([len(a.values) for a in axes])) if axes else 1
    for name, v in (("chunk", chunk), ("workers", workers)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1):
            raise InputError(f"must be an integer >= 1 (or None), got {v!r}", name)
    check_executor(executor, scheduler)
    if workers is not None and executor == "inprocess":
        raise InputError("workers need executor='processes' or 'dask'", "workers")
    try:
        sweep = Sweep(grid=Grid(axes=axes, chunk=max(1, size if chunk is None else chunk)), task=task, base_seed=seed)
    except ValidationError as e:
        from attnphys._messages import format_validation

        raise InputError(format_validation(e)) from None
    sweep.check()
    if dry_run:
        _stored_schema(sweep)
        return sweep
    from attnphys.errors import AttnphysError, ResourceError, is_out_of_memory

    try:
        ds = run_sweep(
            sweep,
            store,
            executor,
            workers=workers,
            scheduler=scheduler,
            progress=progress,
            attrs=store_attrs,
            replace=store is not None and overwrite,
        )
    except AttnphysError:
        raise
    except Exception as e:
        if not is_out_of_memory(e):
            raise
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        kept = " (the chunks finished so far are kept in the store: the same call resumes)" if store else ""
        raise ResourceError(
            f"memory ran out computing a chunk of {sweep.grid.chunk} points ({first}); a smaller chunk, or "
            f"fewer steps, starts or recorded samples, fits{kept}",
            "chunk",
        ) from None
    return ds.drop_vars("point_seed", errors="ignore") if store is None else ds


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
    schema = _stored_schema(sweep)
    coords = sweep.task.coords(g)  # after the size check: coordinates are as large as the results' axes
    return target.create_or_check(
        sweep.definition(), g.size, g.chunk, schema, coords, attrs, replace=replace, as_current=_stored_as_current
    )


def _stored_as_current(stored: dict) -> dict:
    """A stored sweep definition read through the current classes (:class:`Sweep`, its task's and its
    configuration's): a field added since the store was written, with a default, gets its default, so that
    the two definitions compare as the sweeps they run (theory: docs/theory/sweeps.md §2.1, rule 4). One
    the current classes refuse (a field removed, a changed initial-condition file, an unknown task) is
    returned as stored: the comparison then names what differs."""
    try:
        return Sweep.model_validate(stored).definition()
    except Exception:  # noqa: BLE001 - not readable now: compared as it is, and the difference is named
        return stored


def _stored_schema(sweep: Sweep) -> dict[str, VarSpec]:
    """The variables a sweep stores (the task's and the per-point seeds), after checking that the results and
    one chunk's working memory fit (:func:`_check_size`)."""
    g = sweep.grid
    schema = {**sweep.task.schema(g), "point_seed": VarSpec((), (), np.uint32, 0, "seed of the point")}
    _check_size(g, schema, sweep.task.working_bytes(g), sweep.task.working_option, _dim_options(sweep.task))
    return schema


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
        from attnphys.sweeps._executors import run_processes

        yield from run_processes(run_chunk, definition, store, todo, n, x64, cache)
        return
    yield from _execute_dask(definition, store, todo, n, scheduler, x64, cache)


def _dim_options(task) -> dict[str, str]:
    """The arguments that set the sizes of a task's result dimensions (``{"path": "paths"}``), where the task
    declares them (``dim_options``), for messages (the command line names them as its options)."""
    return dict(getattr(type(task), "dim_options", {}) or {})


def _check_size(
    grid: Grid,
    schema: dict[str, VarSpec],
    working: int = 0,
    option: str | None = None,
    dim_options: dict[str, str] | None = None,
) -> None:
    """Refuse a sweep whose results cannot fit in memory (they are assembled there at the end), or whose
    chunk needs more memory than fits while it is computed (``working``: bytes per point beyond its
    results; a chunk is never larger than the grid). The message names the largest result variable with
    its dimensions, and the option that sets the largest of them where known (``dim_options``)."""

    def nbytes(v: VarSpec) -> int:  # exact integers: a shape of 10⁹ × 10⁹ does not wrap around
        return math.prod(int(n) for n in v.shape) * v.dtype.itemsize

    per_point = float(sum(nbytes(v) for v in schema.values()))
    big = max(schema, key=lambda n: nbytes(schema[n]))
    spec = schema[big]
    dims = ", ".join(f"{d}={n}" for d, n in zip(spec.dims, spec.shape)) or "one value"
    named = [(int(n), d) for d, n in zip(spec.dims, spec.shape) if d in (dim_options or {})]
    field = (dim_options or {})[max(named)[1]] if named else None
    hint = f"lower `{field}`, or use fewer grid points" if field else "use fewer grid points or fewer recorded values"
    where = f"{grid.size} grid point(s) ({' × '.join(map(str, grid.shape))}; " if grid.axes else "one point ("
    check_fits(
        per_point * grid.size,
        f"the results of {where}the largest, {big}, holds {dims} per point)",
        hint,
        field,
    )
    n = min(grid.chunk, grid.size)
    check_fits(
        (float(working) + per_point) * n,
        f"the {n} point(s) of one chunk, while they are computed,",
        f"lower `{option}`" if option else "compute fewer points at once (a smaller chunk)",
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


_WORKER_CONFIGURED: list[bool] = []
"""Whether this (Dask worker) process has configured JAX for chunks (:func:`_dask_chunk`)."""


def _dask_chunk(definition: str, store: str | None, i: int, x64: bool, cache: str | None):
    """:func:`run_chunk` in a Dask worker, which configures JAX as the driver did before its first chunk
    (float64, one device per worker, the compilation cache). Done here rather than in a worker plugin,
    whose registration fails when a worker dies while it is being set up."""
    if not _WORKER_CONFIGURED:
        _jax_setup(x64, cache)
        _WORKER_CONFIGURED.append(True)
    return run_chunk(definition, store, i)


def _execute_dask(definition, store, todo, n, scheduler, x64, cache=None):
    """Chunks on a Dask cluster (theory: docs/theory/sweeps.md §3.1): the store path made absolute and
    checked visible from the workers, workers that go missing reported (or the run stopped, see
    :func:`~attnphys.sweeps._executors.no_workers_policy`), a lost scheduler turned into a message that says
    how to resume."""
    from attnphys.sweeps._executors import (
        check_workers_see,
        close_quietly,
        comm_errors,
        gather_dask,
        lost_scheduler,
        no_workers_policy,
        quiet_dask_logs,
        store_for_workers,
    )

    no_workers_policy()  # a bad setting is reported before connecting
    store = store_for_workers(store)
    total = Sweep.model_validate_json(definition).grid.n_chunks
    with quiet_dask_logs():
        client, cluster = dask_client(scheduler, n)
        try:
            if store is not None and scheduler is not None:
                check_workers_see(client, store)
            k = len(todo)
            try:
                futures = client.map(
                    _dask_chunk, [definition] * k, [store] * k, todo, [x64] * k, [cache] * k, pure=False, retries=3
                )
            except comm_errors() as e:
                raise lost_scheduler(scheduler, e, total - k, total) from None
            yield from gather_dask(client, futures, scheduler, total, store)
        finally:
            close_quietly(client, cluster)


__all__ = [
    "EXECUTORS",
    "check_executor",
    "Sweep",
    "prepare",
    "run_chunk",
    "run_sweep",
    "run_task",
    "compute_chunk",
    "check_scheduler",
    "dask_client",
]
