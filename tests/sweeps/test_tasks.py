"""Properties every sweep task must have (parametrised over all registered tasks: a new task gets them)."""

import numpy as np
import pytest

from attnphys.sweeps import Grid, Sweep, run_sweep
from attnphys.sweeps.task import TASKS, task_class

KINDS = TASKS.names()
"""Every task of the registry (a new task's line there brings it under these tests)."""


@pytest.fixture(params=KINDS)
def example(request):
    return task_class(request.param).example()


def _same(a, b, name):
    """Integers exactly; floats to 1e-10 relative: a vectorised reduction (e.g. the QR dot products of a
    Lyapunov run) may sum in another order when the batch is wider, which moves an exponent averaged over
    thousands of steps by ~1e-11. Re-running the same chunking is bitwise identical (tests/sweeps)."""
    if np.issubdtype(a.dtype, np.floating):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b), err_msg=name)
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-14, err_msg=name)
    else:
        np.testing.assert_array_equal(a, b, err_msg=name)


@pytest.mark.slow
def test_compute_matches_the_schema(example):
    task, grid = example
    task.check_grid(grid)
    schema = task.schema(grid)
    lo, hi = grid.chunk_range(0)
    out = task.compute(grid, lo, hi)
    assert set(out) == set(schema)
    for name, spec in schema.items():
        assert out[name].shape == (hi - lo,) + spec.shape, name
        assert out[name].dtype == spec.dtype, name
        assert spec.attrs.get("long_name"), f"{name} has no long_name"


@pytest.mark.slow
def test_results_do_not_depend_on_chunking(example, tmp_path):
    """A pure function of the sweep: one point per chunk, the example's chunks, and a Zarr store agree."""
    task, grid = example
    a = run_sweep(Sweep(grid=grid, task=task), progress=False)
    one = Grid(axes=grid.axes, chunk=task.chain_length(grid))
    b = run_sweep(Sweep(grid=one, task=task), tmp_path / "s.zarr", progress=False)
    assert set(a.data_vars) == set(b.data_vars)
    for name in a.data_vars:
        _same(a[name].values, b[name].values, name)


def test_the_definition_round_trips(example):
    task, grid = example
    sweep = Sweep(grid=grid, task=task)
    again = Sweep.model_validate_json(sweep.model_dump_json())
    assert again.task == task and again.grid == grid
