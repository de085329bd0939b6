"""Damaged stores are never loaded as complete (docs/theory/sweeps.md §2.3): a variable's chunks or
metadata deleted, a done chunk overwritten with other bytes, an unreadable done flag. Loading refuses,
naming what is missing; re-running repairs the store and recomputes exactly the damaged points."""

import json
import os
import shutil
import warnings

import numpy as np
import pytest
import xarray as xr
import zarr

from attnphys._integrity import CHUNK_VARS, MANIFEST, chunk_file
from attnphys.errors import DamagedResultError, IncompleteResultError
from attnphys.io import load, save
from attnphys.sweeps import DamagedStoreWarning, Grid, Sweep, done_mask, open_result, run_sweep
from attnphys.sweeps.task import task_class
from tests.sweeps.test_sweeps import assert_same_store


def _sweep() -> Sweep:
    task, grid = task_class("dmft-trajectory").example()
    return Sweep(grid=Grid(axes=grid.axes, chunk=2), task=task)


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """A finished sweep store, and its result (copied into each test's folder)."""
    path = tmp_path_factory.mktemp("whole") / "s.zarr"
    return path, run_sweep(_sweep(), path, progress=False)


def _copy(whole, tmp_path):
    path = tmp_path / "s.zarr"
    shutil.copytree(whole[0], path)
    return path


def _file(path, var: str, chunk: int):
    shape = zarr.open_array(store=str(path), path=var, mode="r").shape
    return chunk_file(path, var, (chunk,) + (0,) * (len(shape) - 1))


def _data_var(path) -> str:
    """A result variable whose every chunk holds a file (finite values)."""
    return "mo_se"


def test_a_finished_store_records_its_files_and_chunk_sums(whole):
    attrs = dict(zarr.open_group(str(whole[0]), mode="r").attrs)
    manifest = json.loads(attrs[MANIFEST])
    assert "mo_se/zarr.json" in manifest and all(":" in v for v in manifest.values())
    assert "mo_se" in json.loads(attrs[CHUNK_VARS])
    assert_same_store(open_result(whole[0]).drop_attrs(), whole[1].drop_attrs())


@pytest.mark.parametrize("damage", ["chunk deleted", "chunk overwritten", "metadata deleted", "sums deleted"])
def test_a_damaged_store_is_refused_naming_what_and_a_rerun_repairs_it(whole, tmp_path, damage):
    path = _copy(whole, tmp_path)
    var = _data_var(path)
    if damage == "chunk deleted":
        os.remove(_file(path, var, 1))
        named = f"chunk 1 ({var}"
    elif damage == "chunk overwritten":
        _file(path, var, 0).write_bytes(b"not what was written" * 50)
        named = f"chunk 0 ({var}"
    elif damage == "metadata deleted":
        os.remove(path / var / "zarr.json")
        named = f"variable {var}: its metadata ({var}/zarr.json) is missing"
    else:
        shutil.rmtree(path / "chunk_sums")
        named = "chunk_sums"
    for reader in (load, open_result):
        with pytest.raises(DamagedResultError, match="is damaged") as err:
            reader(path)
        assert named in str(err.value) and "re-run the same command" in str(err.value)
    if damage == "sums deleted":  # the template itself: a run cannot repair it
        with pytest.raises(DamagedResultError, match="--overwrite"):
            run_sweep(_sweep(), path, progress=False)
        return
    with pytest.warns(DamagedStoreWarning, match="computed again"):
        again = run_sweep(_sweep(), path, progress=False)
    assert done_mask(path).all()
    assert_same_store(again.drop_attrs(), whole[1].drop_attrs())
    assert_same_store(load(path).drop_attrs(), whole[1].drop_attrs())


def test_an_unreadable_done_flag_counts_as_not_done(whole, tmp_path):
    path = _copy(whole, tmp_path)
    flag = chunk_file(path, "done", (1,))
    flag.write_bytes(b"\x00garbage")
    assert done_mask(path).tolist() == [True, False, True]
    with pytest.raises(IncompleteResultError, match="1 of 3 chunks are not done"):
        open_result(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DamagedStoreWarning)  # nothing was damaged: the chunk was simply not done
        again = run_sweep(_sweep(), path, progress=False)
    assert_same_store(again.drop_attrs(), whole[1].drop_attrs())


@pytest.mark.parametrize("damage", ["chunk deleted", "metadata deleted", "chunk overwritten"])
def test_a_damaged_single_result_is_refused(tmp_path, damage):
    ds = xr.Dataset({"a": (("x", "y"), np.arange(12.0).reshape(4, 3)), "b": ("x", np.ones(4))},
                    attrs={"attnphys_version": "test"})
    path = save(ds, tmp_path / "r.zarr")
    xr.testing.assert_identical(load(path).drop_attrs(), ds.drop_attrs())
    if damage == "chunk deleted":
        os.remove(_file(path, "a", 0))
    elif damage == "metadata deleted":
        os.remove(path / "b" / "zarr.json")
    else:
        _file(path, "a", 0).write_bytes(b"garbage")
    with pytest.raises(DamagedResultError, match="is damaged") as err:
        load(path)
    assert ("variable a" if damage != "metadata deleted" else "variable b: its metadata") in str(err.value)


def test_a_store_without_records_is_read_as_before(whole, tmp_path):
    """Stores written before the records existed have none to compare with."""
    path = _copy(whole, tmp_path)
    g = zarr.open_group(str(path), mode="r+")
    attrs = {k: v for k, v in g.attrs.items() if k not in (MANIFEST, CHUNK_VARS)}
    g.attrs.clear()
    g.attrs.update(attrs)
    assert_same_store(open_result(path).drop_attrs(), whole[1].drop_attrs())


def test_a_chunk_is_never_larger_than_the_grid(tmp_path):
    """The Zarr chunk (whose buffer is allocated whole when a region is written) is capped at the grid."""
    task, grid = task_class("dmft-trajectory").example()
    sweep = Sweep(grid=Grid(axes=grid.axes, chunk=10**9), task=task)
    run_sweep(sweep, tmp_path / "s.zarr", progress=False)
    arr = zarr.open_array(store=str(tmp_path / "s.zarr"), path="mo_se", mode="r")
    assert arr.chunks[0] == grid.size
    # the same sweep with the chunk given as the grid's size resumes the store (one chunk either way)
    run_sweep(Sweep(grid=Grid(axes=grid.axes, chunk=grid.size), task=task), tmp_path / "s.zarr", progress=False)
