"""Sweeps at scale: grids over configuration fields, tasks, resumable Zarr stores (or memory), and
in-process, local-process and Dask executors. The engine names no concrete task: tasks register
themselves (:func:`register_task`, or the ``attnphys.sweep_tasks`` entry points)."""

from attnphys.sweeps._executors import set_no_workers_policy
from attnphys.sweeps.engine import (
    EXECUTORS,
    Sweep,
    check_scheduler,
    compute_chunk,
    dask_client,
    prepare,
    run_chunk,
    run_sweep,
    run_task,
)
from attnphys.sweeps.grid import Axis, Grid, point_seed
from attnphys.sweeps.store import (
    DamagedStoreWarning,
    MemoryStore,
    StoreMismatchError,
    ZarrStore,
    done_mask,
    open_result,
)
from attnphys.sweeps.task import AbstractTask, VarSpec, register_task, task_class

__all__ = [
    "EXECUTORS",
    "Sweep",
    "check_scheduler",
    "compute_chunk",
    "dask_client",
    "prepare",
    "run_chunk",
    "run_sweep",
    "run_task",
    "Axis",
    "Grid",
    "point_seed",
    "set_no_workers_policy",
    "DamagedStoreWarning",
    "MemoryStore",
    "StoreMismatchError",
    "ZarrStore",
    "done_mask",
    "open_result",
    "AbstractTask",
    "VarSpec",
    "register_task",
    "task_class",
]
