"""The result contract is the job layer's, not each command's: a new command written in one file, which
writes its result with plain library calls, gets the provenance that ``--overwrite`` and ``rerun`` need."""

from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
import xarray as xr
from pydantic import Field

from attnphys.errors import OutputError
from attnphys.io import load, result_info
from attnphys.jobs import JOBS, AbstractJob, Report, build_job, register_job, rerun


@pytest.fixture
def new_command():
    @register_job
    class SquaresJob(AbstractJob):
        """A command that knows nothing of provenance: it writes a dataset with the bare xarray call."""

        command: ClassVar[str] = "test squares"
        n: int = Field(4, ge=1, description="How many squares.")
        out: Path = Field(Path("squares.zarr"), description="Output store.")

        def execute(self, progress: bool = True) -> Report:
            ds = xr.Dataset({"square": ("i", np.arange(self.n) ** 2)})
            ds.to_zarr(self.out, mode="w")
            return Report("squares", {}, [self.out], ds)

    yield SquaresJob
    del JOBS["test squares"]


def test_a_new_command_writes_results_that_overwrite_and_rerun_accept(new_command, tmp_path):
    out = tmp_path / "sq.zarr"
    build_job(new_command, {"n": 3, "out": str(out)}).run(progress=False)
    info = result_info(out)
    assert info is not None and info["attnphys_command"] == "test squares" and "attnphys_job" in info
    assert load(out).square.values.tolist() == [0, 1, 4]
    with pytest.raises(OutputError, match="--overwrite"):
        build_job(new_command, {"n": 5, "out": str(out)}).run(progress=False)
    build_job(new_command, {"n": 5, "out": str(out), "overwrite": True}).run(progress=False)
    assert load(out).square.values.tolist() == [0, 1, 4, 9, 16]
    again = tmp_path / "again.zarr"
    job = rerun(out, again)
    assert job.n == 5
    job.run(progress=False)
    assert load(again).square.values.tolist() == load(out).square.values.tolist()
