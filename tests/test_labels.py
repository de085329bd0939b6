"""Labelled results: every variable a command stores has a CF ``long_name``, and ``units`` where the
quantity has units, so that xarray's plots label themselves.

Two sides, each parametrised over everything registered (a new task or command is checked for free):
the result schema of every sweep task (``attnphys.sweeps.task.TASKS``, through each task's ``example()``),
and the dataset every result-writing command stores (``attnphys.jobs.JOBS``, run with small options).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import xarray as xr
from typer.testing import CliRunner

from attnphys._plugins import BUILTINS
from attnphys.cli import app
from attnphys.jobs import load_jobs
from attnphys.sweeps.task import ENTRY_POINT_GROUP, TASKS, task_class

ROOT = Path(__file__).resolve().parents[1]

# Quantities with units, by variable name: Lyapunov exponents are natural logs per map step, periods and
# step indices count map steps. Everything else the package stores is a pure number (an overlap, a
# fraction, a count, an entropy in nats of a dimensionless cloud), which CF leaves without units.
UNITS = [
    (re.compile(r"^(exponents|lambda\d+|lyapunov.*)$"), "1/step"),
    (re.compile(r"^(period|nonfinite_step|.*autocorr_time)$"), "step"),
    (re.compile(r"^(time|.*_time|plateau_(start|end|length))$"), None),   # continuous time: any units
]


def expected_units(name: str) -> tuple[bool, str | None]:
    """(has units, the units when fixed) of a stored variable named ``name``."""
    for pattern, units in UNITS:
        if pattern.match(name):
            return True, units
    return False, None


def label_problems(name: str, attrs: dict) -> list[str]:
    problems = []
    if not str(attrs.get("long_name", "")).strip():
        problems.append(f"{name}: no long_name")
    needs, units = expected_units(name)
    if needs and not attrs.get("units"):
        problems.append(f"{name}: no units")
    elif needs and units is not None and attrs["units"] != units:
        problems.append(f"{name}: units {attrs['units']!r}, expected {units!r}")
    return problems


def test_the_units_table_is_used():
    """The table recognises the quantities it is meant for (a table matching nothing checks nothing)."""
    assert expected_units("lambda1") == (True, "1/step")
    assert expected_units("exponents") == (True, "1/step")
    assert expected_units("mo_se_autocorr_time") == (True, "step")
    assert expected_units("time") == (True, None)
    assert expected_units("mo_se") == (False, None)
    assert label_problems("lambda1", {"long_name": "leading exponent"}) == ["lambda1: no units"]
    assert label_problems("mo", {}) == ["mo: no long_name"]


# -- sweep tasks -----------------------------------------------------------------------------------------

def _all_tasks() -> list[str]:
    """Every task: those the job modules register, and the library's own (its registry in code)."""
    load_jobs()  # the job modules import the tasks they run
    for kind in BUILTINS[ENTRY_POINT_GROUP]:
        task_class(kind)
    return sorted(TASKS)


# task variables still without the units their quantity has (remove an entry when it is fixed)
TASK_MISSING_UNITS: dict[str, str] = {}


def _task_params():
    return [pytest.param(k, marks=[pytest.mark.xfail(reason=TASK_MISSING_UNITS[k], strict=True)]
                         if k in TASK_MISSING_UNITS else []) for k in _all_tasks()]


@pytest.mark.parametrize("kind", _task_params())
def test_every_task_variable_is_labelled(kind):
    task, grid = TASKS[kind].example()
    schema = task.schema(grid)
    assert schema, f"{kind} declares no variables"
    problems = [p for name, spec in schema.items() for p in label_problems(name, spec.attrs)]
    assert not problems, f"task {kind}:\n" + "\n".join(problems)


# -- the datasets the commands write ---------------------------------------------------------------------

# Small options for every command that stores a dataset. A new such command must be added here.
SMALL: dict[str, list[str]] = {
    "dmft trajectory": ["--preset", "paper", "--beta-o", "1.26,2", "--steps", "60", "--start", "token"],
    "dmft lyapunov": ["--preset", "paper", "--beta-o", "1.26", "--steps", "60", "--transient", "10", "--exponents", "2",
                      "--start", "token"],
    "dmft bifurcation": ["--preset", "paper", "--start-value", "1", "--stop-value", "2", "--num", "2",
                         "--steps", "60", "--transient", "20", "--exponents", "2", "--n-orbit", "20",
                         "--start", "token"],
    "dmft phase-diagram": ["--preset", "paper", "--x", "beta_o", "1", "2", "2", "--y", "beta_att", "1", "2", "2",
                           "--steps", "60", "--transient", "20", "--exponents", "1", "--n-orbit", "20",
                           "--start", "token"],
    "dmft compare-diagrams": ["{diagram}", "{diagram}"],
    "dmft portraits": ["{diagram}", "--at", "1"],
    "dmft finite": ["--preset", "paper", "--n", "99", "--paths", "2", "--steps", "20"],
    "dmft converge": ["--preset", "paper", "--beta-o", "1.0", "--n", "99,198", "--paths", "2", "--steps", "30",
                      "--horizon", "10", "--transient", "10"],
    "dmft attractors": ["--preset", "paper", "--beta-o", "1.0", "--ics", "4", "--steps", "1500", "--transient", "500",
                        "--max-period", "16"],
    "dmft basins": ["--preset", "paper", "--start-value", "1", "--stop-value", "1.1", "--num", "2", "--ics", "4",
                    "--steps", "1500", "--transient", "500", "--max-period", "16"],
    "dmft orbit-continuation": ["--preset", "paper", "--start-value", "0.5", "--stop-value", "0.6", "--transient",
                                "2000", "--max-points", "5"],
    "dmft boundary": ["--preset", "paper", "--start-value", "1.24", "--stop-value", "1.26", "--start", "checkpoint",
                      "--max-points", "300", "--curve-points", "3"],
    "dmft design-report": ["--design", "4_duplicity_loop_4", "--steps", "200", "--ics", "4", "--census-steps",
                           "400", "--grid", "3", "--no-continuation"],
    "clouds run": ["--dim", "4", "--tokens", "16", "--layers", "4", "--snapshots", "0,4"],
    "clouds flow": ["--dim", "3", "--tokens", "8", "--t-max", "1", "--saves", "3", "--keep-cloud"],
    "clouds phase-diagram": ["--dim", "3", "--tokens", "8", "--t-max", "1", "--saves", "3", "--beta", "1,2",
                             "--samples", "1"],
    "clouds through-model": ["--tokens", "32"],
    "probe": ["--sentences", "4", "--max-tokens", "32"],
    "dmft stability": ["--beta-o", "0.8", "--ics", "4", "--steps", "4000", "--transient", "0", "--max-period", "64",
                       "--directions", "2", "--origins", "1", "--scan", "4", "--bisections", "5", "--rounds", "0"],
    "dmft fluctuations": ["--beta-o", "1.0", "--steps", "20", "--n", "99,198", "--paths", "2"],
    "dmft switching": ["--beta-o", "1.27", "--n", "9900,99000", "--walkers", "8", "--max-steps", "3000", "--ics", "16",
                       "--screen-steps", "28", "--max-horizon", "28", "--phase-stride", "14", "--laws", "gaussian",
                       "--seed", "3"],
    "reproduce": ["fig5", "--quick"],
    "demo": ["--quick"],
}
NEEDS_TORCH = {"clouds through-model", "probe", "demo"}
# slow: the heavy ones, and the sweep commands, whose variables are the task schemas checked above
SLOW = {"reproduce", "demo", "probe", "clouds through-model", "dmft bifurcation", "dmft phase-diagram", "dmft design-report",
        "clouds phase-diagram", "dmft attractors", "dmft basins", "dmft compare-diagrams", "dmft portraits", "dmft boundary",
        "dmft switching"}
# commands that read a stored diagram: the small bifurcation diagram above is written first as {diagram}
NEEDS_DIAGRAM = {"dmft compare-diagrams", "dmft portraits", "dmft boundary"}
# stored variables still without the units their quantity has (remove an entry when it is fixed)
MISSING_UNITS: dict[str, str] = {}

STORING = ("result", "sweep", "folder")


def _storing_commands() -> list[str]:
    return sorted(c for c, cls in load_jobs().items() if any(k in STORING for k in cls.outputs_spec.values()))


def test_every_storing_command_has_small_options():
    missing = sorted(set(_storing_commands()) - set(SMALL))
    assert not missing, f"add small options for {missing} to SMALL"


def _params():
    return list(_param_iter())


def _param_iter():
    for command in _storing_commands():
        marks = []
        if command in SLOW:
            marks += [pytest.mark.slow, pytest.mark.long]
        if command in MISSING_UNITS:
            marks.append(pytest.mark.xfail(reason=MISSING_UNITS[command], strict=True))
        yield pytest.param(command, marks=marks, id=command.replace(" ", "-"))


def _datasets(out: Path) -> list[Path]:
    return [out] if out.suffix == ".zarr" else sorted(out.rglob("*.zarr"))


@pytest.mark.slow
@pytest.mark.parametrize("command", _params())
def test_every_stored_variable_is_labelled(command, tmp_path):
    if command in NEEDS_TORCH:
        pytest.importorskip("torch")
    kind = next(k for k in load_jobs()[command].outputs_spec.values() if k in STORING)
    out = tmp_path / ("out" if kind == "folder" else "out.zarr")
    args = SMALL[command]
    if command in NEEDS_DIAGRAM:
        diagram = tmp_path / "diagram.zarr"
        res = CliRunner().invoke(app, ["dmft", "bifurcation", *SMALL["dmft bifurcation"], "--out", str(diagram)])
        assert res.exit_code == 0, res.output
        args = [a.replace("{diagram}", str(diagram)) for a in args]
    res = CliRunner().invoke(app, [*command.split(), *args, "--out", str(out)])
    assert res.exit_code == 0, res.output
    stores = _datasets(out)
    assert stores, f"{command} wrote no dataset under {out}"
    problems = []
    for store in stores:
        ds = xr.open_zarr(store, consolidated=False)
        assert ds.data_vars, f"{store} holds no variables"
        for name, var in ds.data_vars.items():
            problems += [f"{store.name}: {p}" for p in label_problems(str(name), var.attrs)]
        for name, var in ds.coords.items():   # coordinates: units where their quantity has them
            if expected_units(str(name))[0]:
                problems += [f"{store.name}: {p}" for p in label_problems(str(name), var.attrs)]
    assert not problems, f"{command}:\n" + "\n".join(problems)
