"""A sweep store on a full disk says what was being written, where, the room left, and that the finished
points are kept; the same call run again resumes from them (docs/theory/sweeps.md §2.1)."""

import errno

import numpy as np
import pytest

import attnphys.sweeps.engine as engine
import attnphys.sweeps.store as store_module
from attnphys.errors import OutputError
from attnphys.sweeps import Grid, Sweep, done_mask, run_sweep
from attnphys.sweeps.engine import _stored_schema, prepare_target
from attnphys.sweeps.store import ZarrStore, write_chunk
from attnphys.sweeps.task import task_class
from tests.sweeps.test_sweeps import assert_same_store


def _sweep() -> Sweep:
    task, grid = task_class("dmft-trajectory").example()
    return Sweep(grid=Grid(axes=grid.axes, chunk=2), task=task)


def _failing(monkeypatch, fails, code):
    real = store_module._put

    def put(group, name, region, value):
        if fails(name, region):
            raise OSError(code, "No space left on device" if code == errno.ENOSPC else "Disk quota exceeded")
        real(group, name, region, value)

    monkeypatch.setattr(store_module, "_put", put)
    return real


FULL = {
    # case: (the write that fails, its errno, what the message names)
    "a variable": (
        lambda name, region: name == "mo_se" and region == slice(2, 4),
        errno.ENOSPC,
        "no space left on the device while writing variable mo_se of chunk 1",
    ),
    "the checksums": (
        lambda name, region: name == "chunk_sums" and region == 1,
        errno.ENOSPC,
        "no space left on the device while writing the checksums (chunk_sums) of chunk 1",
    ),
    "the done flag": (
        lambda name, region: name == "done" and region == 1,
        errno.ENOSPC,
        "no space left on the device while writing the done flag of chunk 1",
    ),
    "the quota": (
        lambda name, region: name == "att" and region == slice(2, 4),
        errno.EDQUOT,
        "the disk quota is exhausted while writing variable att of chunk 1",
    ),
}


@pytest.mark.parametrize("case", list(FULL))
def test_a_full_disk_while_writing_a_chunk_names_what_where_the_room_left_and_what_is_kept(tmp_path, monkeypatch, case):
    sweep, path = _sweep(), tmp_path / "s.zarr"
    prepare_target(sweep, ZarrStore(path))
    values = {name: np.zeros((2,) + spec.shape, spec.dtype) for name, spec in _stored_schema(sweep).items()}
    write_chunk(path, 0, 0, 2, values)
    fails, code, named = FULL[case]
    _failing(monkeypatch, fails, code)
    with pytest.raises(OutputError) as err:
        write_chunk(path, 1, 2, 4, values)
    message = str(err.value)
    assert message.startswith(f"{path}: {named} (points 2–3); ") and "[Errno" not in message
    assert " free on its file system" in message
    assert "The 1 of 3 chunks finished before are kept (flagged done); chunk 1 is not" in message
    assert "resumes from the finished points" in message
    assert done_mask(path).tolist() == [True, False, False]  # what the message says is kept is kept


@pytest.mark.slow
def test_a_sweep_stopped_by_a_full_disk_resumes_from_the_finished_points(tmp_path, monkeypatch):
    path = tmp_path / "s.zarr"
    real = _failing(monkeypatch, FULL["a variable"][0], errno.ENOSPC)
    with pytest.raises(OutputError, match="no space left on the device while writing variable mo_se"):
        run_sweep(_sweep(), path, progress=False)
    assert done_mask(path).tolist() == [True, False, False]
    monkeypatch.setattr(store_module, "_put", real)
    computed = []
    real_compute = engine.compute_chunk

    def counted(sweep, i):
        computed.append(i)
        return real_compute(sweep, i)

    monkeypatch.setattr(engine, "compute_chunk", counted)
    again = run_sweep(_sweep(), path, progress=False)
    assert computed == [1, 2]  # the finished chunk is not computed again
    whole = run_sweep(_sweep(), tmp_path / "whole.zarr", progress=False)
    assert_same_store(again.drop_attrs(), whole.drop_attrs())
