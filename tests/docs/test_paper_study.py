"""The notebook-style study of the documentation (docs/gallery/paper_study.py) gives the numbers the commands
give: each of its steps and the matching command, at the script's quick sizes."""

import runpy
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from attnphys.cli import app
from attnphys.io import load

SCRIPT = Path(__file__).resolve().parents[2] / "docs" / "gallery" / "paper_study.py"


def commands(s: dict, tmp: Path) -> dict[str, list[str]]:
    """The command of each step of the study, with the study's sizes."""
    return {
        "bifurcation": ["dmft", "bifurcation", "--start-value", "0", "--stop-value", "3", "--num", str(s["values"]),
                        "--steps", str(s["steps"]), "--transient", str(s["transient"]), "--exponents", "3",
                        "--adaptive", "--start", "checkpoint"],
        "census": ["dmft", "attractors", "--beta-o", "1.27", "--ics", str(s["ics"]), "--steps", str(s["census_steps"]),
                   "--transient", str(s["census_transient"]), "--max-period", str(s["max_period"])],
        "basins": ["dmft", "basins", "--start-value", "1.24", "--stop-value", "1.30", "--num", str(s["basin_values"]),
                   "--ics", str(s["basin_ics"]), "--steps", str(s["census_steps"]),
                   "--transient", str(s["census_transient"]), "--max-period", str(s["max_period"])],
        "phase": ["dmft", "phase-diagram", "--x", "beta_o", "0", "3", str(s["phase"]), "--y", "beta_att", "0", "3",
                  str(s["phase"]), "--steps", str(s["phase_steps"]), "--transient", str(s["phase_transient"]),
                  "--exponents", "2", "--adaptive", "--start", "checkpoint"],
        "converge": ["dmft", "converge", "--beta-o", "0.5,1,3", "--n", ",".join(map(str, s["sizes"])),
                     "--paths", str(s["paths"]), "--steps", str(s["conv_steps"]), "--horizon", str(s["horizon"]),
                     "--transient", str(s["conv_transient"])],
    }


@pytest.fixture(scope="module")
def study():
    ns = runpy.run_path(str(SCRIPT), run_name="paper_study")
    sizes = ns["SIZES"]["quick"]
    return sizes, ns["study"](sizes)


@pytest.mark.slow
def test_the_study_gives_the_numbers_of_the_commands(study, tmp_path):
    sizes, results = study
    runner = CliRunner()
    for name, args in commands(sizes, tmp_path).items():
        out = tmp_path / f"{name}.zarr"
        res = runner.invoke(app, [*args, "--out", str(out)])
        assert res.exit_code == 0, f"{name}: {res.output}"
        cli, lib = load(out), results[name]
        shared = sorted(set(lib.data_vars) & set(cli.data_vars) - {"point_seed"})
        assert len(shared) >= 3 and set(lib.data_vars) - {"point_seed"} <= set(cli.data_vars), name
        for var in shared:
            np.testing.assert_array_equal(cli[var].values, lib[var].values, err_msg=f"{name}: {var}")
        for dim in lib.dims:
            if dim in lib.coords:
                np.testing.assert_array_equal(cli[dim].values, lib[dim].values, err_msg=f"{name}: {dim}")
