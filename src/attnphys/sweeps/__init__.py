"""Sweeps at scale: grids over configuration fields, resumable Zarr stores, in-process, local-process
and Dask executors."""

from attnphys.sweeps.engine import EXECUTORS, Sweep, prepare, run_chunk, run_sweep
from attnphys.sweeps.grid import Axis, Grid, point_seed
from attnphys.sweeps.store import StoreMismatchError, done_mask, open_result

__all__ = ["EXECUTORS", "Sweep", "prepare", "run_chunk", "run_sweep", "Axis", "Grid", "point_seed",
           "StoreMismatchError", "done_mask", "open_result"]
