import json

import numpy as np
import pytest
from typer.testing import CliRunner

from attnphys.cli import app
from attnphys.io import load

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_help_is_complete():
    for cmd in ([], ["dmft"], ["dmft", "trajectory"], ["dmft", "lyapunov"], ["dmft", "bifurcation"],
                ["dmft", "phase-diagram"], ["dmft", "finite"], ["dmft", "converge"], ["clouds"], ["clouds", "run"],
                ["verify"], ["demo"]):
        res = invoke(*cmd, "--help")
        assert res.exit_code == 0, res.output
    res = invoke("dmft", "trajectory", "--help")
    for opt in ("--preset", "--beta-o", "--steps", "--transient", "--start", "--out", "--record-every", "--plot"):
        assert opt in res.output


def test_clouds_and_verify_commands(tmp_path):
    res = invoke("clouds", "run", "--init", "gaussian", "--dim", "8", "--tokens", "64", "--layers", "20", "--norm",
                 "layernorm", "--beta", "1.0", "--snapshots", "0,20", "--out", tmp_path / "cl.zarr", "--plot",
                 tmp_path / "cl.png")
    assert res.exit_code == 0, res.output
    ds = load(tmp_path / "cl.zarr")
    assert ds.sizes["layer"] == 3 and ds.snapshot.shape == (2, 64, 8)
    assert (tmp_path / "cl.png").exists() and (tmp_path / "cl_snapshots.png").exists()
    res = invoke("clouds", "run", "--norm", "batchnorm", "--out", tmp_path / "y.zarr")
    assert res.exit_code == 2 and "--norm must be one of" in res.output
