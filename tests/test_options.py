"""One options model per analysis: the Python function, its ``plan_*`` dry run and its command derive their
options (names, defaults, help, bounds) from the model; old names keep working for one release with a
warning naming the new one (theory: docs/theory/sweeps.md §5)."""

import inspect
import warnings

import pytest
from typer.testing import CliRunner

import attnphys.clouds as clouds
import attnphys.dmft as dmft
from attnphys.cli import app
from attnphys.errors import InputError
from attnphys.jobs import build_job, job_class

ANALYSES = [
    # (analysis, its plan, its full model, the command, the model of the options the command exposes)
    ("trajectories", "TrajectoriesOptions", "dmft trajectory", "TrajectoryPoint"),
    ("lyapunov_spectrum", "LyapunovOptions", "dmft lyapunov", "LyapunovPoint"),
    ("bifurcation", "BifurcationOptions", "dmft bifurcation", "BifurcationPoint"),
    ("phase_diagram", "PhaseDiagramOptions", "dmft phase-diagram", "PhaseDiagramPoint"),
    ("attractors", "AttractorsOptions", "dmft attractors", "CensusPoint"),
    ("basins", "BasinsOptions", "dmft basins", "BasinsPoint"),
    ("orbit_continuation", "ContinuationOptions", "dmft orbit-continuation", "ContinuationPoint"),
    ("boundary", "BoundaryOptions", "dmft boundary", "BoundaryPoint"),
    ("finite_trajectories", "FiniteOptions", "dmft finite", "FinitePoint"),
    ("converge", "ConvergeOptions", "dmft converge", "ConvergePoint"),
    ("clustering_diagram", "ClusteringOptions", "clouds phase-diagram", "ClusteringPoint"),
]
STARTS = [a for a in ANALYSES if a[0] not in ("finite_trajectories", "converge", "clustering_diagram")]
"""The analyses with a start (the others start from the token)."""
IDS = [a[0] for a in ANALYSES]


def _package(command):
    return clouds if command.startswith("clouds") else dmft


def _point(name, command):
    from attnphys.clouds import _analysis_options as of_clouds
    from attnphys.dmft import _analysis_options as of_dmft

    return getattr(of_clouds if command.startswith("clouds") else of_dmft, name)


@pytest.mark.parametrize("name, model, command, point", ANALYSES, ids=IDS)
def test_the_function_and_its_plan_take_every_option_of_the_model_once(name, model, command, point):
    package = _package(command)
    fn, plan, model = getattr(package, name), getattr(package, "plan_" + name), getattr(package, model)
    sig, plan_sig = inspect.signature(fn), inspect.signature(plan)
    assert list(sig.parameters) == list(plan_sig.parameters)
    assert "dry_run" not in sig.parameters
    options = {p.name: p for p in sig.parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    for field, info in model.model_fields.items():
        assert options[field].default == info.get_default(call_default_factory=True), field
        assert field in (fn.__doc__ or ""), f"{name}'s docstring lacks {field}"
    assert plan_sig.return_annotation != sig.return_annotation


@pytest.mark.parametrize("name, model, command, point", ANALYSES, ids=IDS)
def test_a_command_takes_the_models_options_with_their_names_defaults_help_and_bounds(name, model, command, point):
    job, point, model = job_class(command), _point(point, command), getattr(_package(command), model)
    for field, info in point.model_fields.items():
        if field == "start":  # typed by the command (parsed), checked below
            continue
        got = job.model_fields[field]
        assert (got.annotation, got.default, got.description, got.metadata) == (
            info.annotation,
            info.default,
            info.description,
            info.metadata,
        ), field
    if "start" in model.model_fields:
        assert job.model_fields["start"].default == model.default("start")  # the command parses its own --start
    assert set(point.model_fields) <= set(model.model_fields)


def test_the_start_default_is_one_across_the_functions_and_the_commands():
    starts = {inspect.signature(getattr(dmft, a[0])).parameters["start"].default for a in STARTS}
    starts |= {job_class(a[2]).model_fields["start"].default for a in STARTS}
    assert starts == {"token"}


def test_the_paper_schedule_is_written_once():
    assert dmft.BifurcationOptions.default("steps") == 175_000
    assert inspect.signature(dmft.bifurcation).parameters["steps"].default == 175_000
    assert job_class("dmft bifurcation").model_fields["steps"].default == 175_000
    assert job_class("dmft phase-diagram").model_fields["steps"].default == 120_000


def test_a_refused_or_unknown_option_names_the_keyword():
    cfg = dmft.preset("paper")
    with pytest.raises(InputError, match="exponents: Input should be greater than or equal to 0"):
        dmft.plan_bifurcation(cfg, {"beta_o": [1.0]}, exponents=-1)
    with pytest.raises(InputError, match="stepz: plan_phase_diagram takes no option 'stepz'") as e:
        dmft.plan_phase_diagram(cfg, {"beta_o": [1.0], "beta_att": [1.0]}, stepz=10)
    assert e.value.field == "stepz"
    with pytest.raises(InputError, match="transient"):  # the model's own rule, before any task is built
        dmft.plan_trajectories(cfg, steps=10, transient=10)


def test_a_dry_run_of_0_3_is_the_plan_with_a_warning():
    cfg = dmft.preset("paper")
    kw = dict(steps=300, transient=100, exponents=1, n_orbit=20)
    plan = dmft.plan_bifurcation(cfg, {"beta_o": [1.0, 1.2]}, **kw)
    with pytest.warns(DeprecationWarning, match=r"dry_run=True is deprecated .* use plan_bifurcation"):
        old = dmft.bifurcation(cfg, {"beta_o": [1.0, 1.2]}, dry_run=True, **kw)
    assert old == plan
    with pytest.warns(DeprecationWarning, match="use plan_orbit_continuation"):
        cont = dmft.orbit_continuation(cfg, "beta_o", 1.25, 1.2, transient=100, dry_run=True)
    assert cont == dmft.plan_orbit_continuation(cfg, "beta_o", 1.25, 1.2, transient=100)


def _job(command, given):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        job = build_job(job_class(command), given)
    return job, [str(w.message) for w in caught if issubclass(w.category, FutureWarning)]


@pytest.mark.parametrize(
    "command, old, new, value",
    [
        ("dmft bifurcation", "lyapunov", "exponents", 1),
        ("dmft phase-diagram", "lyapunov", "exponents", 0),
        ("dmft lyapunov", "k", "exponents", 2),
        ("dmft attractors", "start_sampler", "sampler", "perturb"),
        ("dmft basins", "start_sampler", "sampler", "explicit"),
    ],
)
def test_an_old_option_name_works_one_release_with_a_warning_naming_the_new(command, old, new, value):
    job, said = _job(command, {old: value})
    assert getattr(job, new) == value and job == _job(command, {new: value})[0]
    flag, new_flag = "--" + old.replace("_", "-"), "--" + new.replace("_", "-")
    assert said == [f"{flag} is deprecated since 0.4.0 and will be removed in 0.5.0: use {new_flag}"]
    assert old not in job.model_dump()  # a stored job (and its rerun) names the new option only
    with pytest.raises(InputError, match=f"{flag} is the old name of {new_flag}"):
        _job(command, {old: value, new: value})
    help_text = CliRunner().invoke(app, [*command.split(), "--help"]).output
    assert new_flag in help_text and flag + " " not in help_text  # hidden from the help


@pytest.mark.slow
def test_the_old_option_on_the_command_line_warns_and_runs_as_the_new(tmp_path):
    runner = CliRunner()
    base = ["dmft", "lyapunov", "--steps", "40", "--transient", "10"]
    old = runner.invoke(app, [*base, "--k", "2", "--out", str(tmp_path / "old.zarr")])
    new = runner.invoke(app, [*base, "--exponents", "2", "--out", str(tmp_path / "new.zarr")])
    assert old.exit_code == 0 and new.exit_code == 0, old.output + new.output
    assert "warning: --k is deprecated since 0.4.0 and will be removed in 0.5.0: use --exponents" in old.output
    assert "deprecated since" not in new.output
    import xarray as xr

    a, b = xr.open_zarr(tmp_path / "old.zarr"), xr.open_zarr(tmp_path / "new.zarr")
    assert a.sizes["exponent"] == 2 and (a.exponents.values == b.exponents.values).all()
