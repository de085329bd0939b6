"""``attnphys dmft switching``: the options are the analysis', the command passes them to
:func:`attnphys.dmft.switching` and stores what it returns, bad inputs are named, and a real run's store equals
the analysis called directly (theory: docs/theory/switching.md §6)."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from typer.testing import CliRunner

from attnphys.cli import app
from attnphys.dmft._analysis_options import LAW_NAMES, SwitchingOptions, SwitchingPoint
from attnphys.io import load

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_the_options_model_holds_the_analysis_defaults():
    from attnphys.dmft import switching
    from attnphys.dmft.switching import LAWS

    params = {p.name: p.default for p in inspect.signature(switching).parameters.values() if p.name != "cfg"}
    assert set(params) == set(SwitchingOptions.model_fields)
    for name, default in params.items():
        assert SwitchingOptions.default(name) == default, name
    assert LAW_NAMES == LAWS


def _lower_bound(info) -> tuple[float, bool]:
    """(bound, whether it is open) of a field's ge/gt constraint."""
    for c in info.metadata:
        if getattr(c, "ge", None) is not None:
            return c.ge, False
        if getattr(c, "gt", None) is not None:
            return c.gt, True
    raise AssertionError("no lower bound")


@pytest.mark.parametrize("name", [n for n in SwitchingPoint.model_fields if n != "laws"])
def test_the_models_lower_bounds_are_the_analysis_own(name):
    """The command refuses below the bound the analysis refuses below, and both take the bound itself (or just
    above it, for an open bound)."""
    from attnphys.dmft import preset
    from attnphys.dmft.switching import _check
    from attnphys.errors import InputError

    info = SwitchingPoint.model_fields[name]
    low, open_ = _lower_bound(info)
    below = low if open_ else low - 1
    inside = low + 0.01 if open_ else low
    o = {n: SwitchingPoint.default(n) for n in SwitchingPoint.model_fields if n != "laws"}
    o.update(census_transient=0, screen_steps=1)  # the rules between options hold at every bound
    with pytest.raises(InputError) as e:
        _check(preset("paper"), None, (990,), LAW_NAMES, {**o, name: type(o[name])(below)})
    assert e.value.field == name
    with pytest.raises(ValueError):
        SwitchingPoint(**{name: type(o[name])(below)})
    _check(preset("paper"), None, (990,), LAW_NAMES, {**o, name: type(o[name])(inside)})
    SwitchingPoint(**{name: type(o[name])(inside)})


def test_the_command_takes_the_models_options_with_their_defaults_help_and_bounds():
    from attnphys.jobs import job_class

    job = job_class("dmft switching")
    for name, info in SwitchingPoint.model_fields.items():
        got = job.model_fields[name]
        assert (got.annotation, got.default, got.description, got.metadata) == (
            info.annotation,
            info.default,
            info.description,
            info.metadata,
        ), name
    assert job.model_fields["n"].default == SwitchingOptions.default("sizes")
    assert job.model_fields["n"].description == SwitchingOptions.model_fields["sizes"].description


def fake_result(beta_o: float = 1.27, sizes=(990, 1980), laws=LAW_NAMES, walkers: int = 4) -> xr.Dataset:
    """A result shaped as :func:`attnphys.dmft.switching` writes it: two attractors, their barriers and escape
    times (the numbers of docs/theory/switching.md §5, a size with no escape)."""
    from attnphys.dmft import preset
    from attnphys.metadata import base_attrs

    ns = np.asarray(sorted(int(n) for n in sizes))  # the analysis sorts the sizes
    nl = len(laws)
    a, al, asz = ("attractor",), ("attractor", "law"), ("attractor", "size")
    tau = np.array([[1.3e4, np.nan], [1.2e4, 946.0]])
    data = {
        "census_index": (a, np.array([0, 1])),
        "period": (a, np.array([28, 56])),
        "basin_fraction": (a, np.array([0.75, 0.25])),
        "target": (a, np.array([1, 0])),
        "distance": (a, np.array([0.084, 0.084])),
        "phase_residual": (a, np.array([3e-16, 3e-15])),
        "start_phase": (a, np.array([0, 3])),
        "screen_action": (a, np.array([7e-6, 3e-7])),
        "action": (al, np.tile(np.array([[6.32e-6], [2.55e-7]]), (1, nl))),
        "horizon": (al, np.full((2, nl), 112)),
        "phase": (al, np.zeros((2, nl), np.int64)),
        "action_converged": (al, np.ones((2, nl), np.int8)),
        "constraint_violation": (al, np.full((2, nl), 1e-14)),
        "escape_time": (asz, tau),
        "escape_time_low": (asz, np.array([[6e3, 2e4], [5e3, 600.0]])),
        "escape_time_high": (asz, np.array([[5e4, np.inf], [4e4, 1500.0]])),
        "escapes": (asz, np.array([[2, 0], [3, 8]])),
        "censored": (asz, np.array([[2, 4], [1, 0]])),
        "slope": (a, np.array([np.nan, -2.6e-3])),  # ln(946 / 1.2e4) / 990
        "slope_low": (a, np.array([np.nan, -3.5e-3])),
        "slope_high": (a, np.array([np.nan, -1.7e-3])),
    }
    return xr.Dataset(
        data,
        coords={"attractor": [0, 1], "law": list(laws), "size": ns},
        attrs=base_attrs(
            preset("paper", beta_o=beta_o),
            analysis="switching",
            beta_o=beta_o,
            sizes=ns.tolist(),
            laws=list(laws),
            options={"walkers": walkers},
        ),  # fmt: skip
    )


@pytest.fixture
def spy(monkeypatch):
    """:func:`attnphys.dmft.switching` replaced by a recorder that returns :func:`fake_result`."""
    import attnphys.dmft
    import attnphys.dmft.switching  # noqa: F401  (imported first: the import would set the package's attribute)

    calls = []

    def switching(cfg, **kw):
        calls.append((cfg, kw))
        return fake_result(float(cfg.beta_o), kw["sizes"], kw["laws"], kw["walkers"])

    monkeypatch.setattr(attnphys.dmft, "switching", switching)
    return calls


def test_the_command_passes_its_options_to_the_analysis_and_stores_its_result(tmp_path, spy):
    from attnphys.plots import switching_figure
    from tests.plots.test_figures import check_figure

    res = invoke(
        "dmft", "switching", "--beta-o", "1.27", "--n", "1980,990", "--laws", "gaussian", "--walkers", "4",
        "--max-steps", "300", "--ics", "8", "--census-steps", "3000", "--census-transient", "2000",
        "--screen-steps", "28", "--max-horizon", "28", "--phase-stride", "14", "--seed", "3",
        "--out", tmp_path / "s.zarr", "--plot", tmp_path / "s.png",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    [(cfg, kw)] = spy
    assert float(cfg.beta_o) == 1.27 and float(cfg.beta_att) == 2.2
    assert kw == dict(
        beta_o=1.27, sizes=(1980, 990), laws=("gaussian",), walkers=4, max_steps=300, b_level=0.8, ics=8,
        census_steps=3000, census_transient=2000, screen_steps=28, max_horizon=28, keep=1, phase_stride=14,
        tol=1e-2, max_iterations=200, seed=3,
    )  # fmt: skip
    back = load(tmp_path / "s.zarr")
    want = fake_result(1.27, (990, 1980), ("gaussian",), 4)
    xr.testing.assert_equal(back, want)
    assert back.attrs["attnphys_command"] == "dmft switching" and back.attrs["config"] == want.attrs["config"]
    assert (tmp_path / "s.png").stat().st_size > 0
    check_figure(
        switching_figure(back),
        title_has=("β_o=1.27", "4 runs per size"),
    )


def test_the_summary_gives_per_attractor_its_period_barriers_escape_times_and_slope(tmp_path, spy):
    from attnphys.jobs import build_job, job_class

    job = build_job(job_class("dmft switching"), {"beta_o": 1.27, "n": "990,1980", "out": tmp_path / "s.zarr"})
    rows = job.run(progress=False).rows
    assert rows["attractor 0"] == (
        "period 28, census basin fraction 0.750; nearest other: attractor 1 (period 56) at distance 0.084"
    )
    assert (
        rows["attractor 1 ΔS"] == "gaussian 2.55e-07 (horizon 112, phase 0); binomial 2.55e-07 (horizon 112, phase 0)"
    )
    assert rows["attractor 1 N=1980"] == "τ = 946 steps [600, 1500]; 8 escaped, 0 censored"
    assert rows["attractor 0 N=1980"] == "no run escaped: τ ≥ 2e+04 steps (95%); 0 escaped, 4 censored"
    assert (
        rows["attractor 1 slope"]
        == "d ln τ/dN = -0.0026 [-0.0035, -0.0017]; ΔS 2.55e-07 (gaussian), 2.55e-07 (binomial)"
    )
    assert rows["attractor 0 slope"].startswith("no slope (escapes at fewer than two sizes)")


def test_the_command_writes_netcdf_too(tmp_path, spy):
    res = invoke("dmft", "switching", "--beta-o", "1.27", "--n", "990,1980", "--out", tmp_path / "s.nc")
    assert res.exit_code == 0, res.output
    assert spy[0][1]["sizes"] == (990, 1980) and spy[0][1]["laws"] == LAW_NAMES and spy[0][1]["walkers"] == 32
    xr.testing.assert_equal(load(tmp_path / "s.nc"), fake_result(1.27, (990, 1980), LAW_NAMES, 32))


@pytest.mark.parametrize(
    ("args", "named", "said"),
    [
        (("--n", "1000"), "--n", "multiple of n_se = 99"),
        (("--n", "990,990"), "--n", "must differ"),
        (("--beta-o", "-1"), "--beta-o", "greater than or equal to 0"),
        (("--beta-o", "0"), "--beta-o", "Input should be greater than 0"),
        (("--laws", "poisson"), "--laws", "unknown law 'poisson'"),
        (("--laws", "gaussian,gaussian"), "--laws", "each law once"),
        (("--walkers", "0"), "--walkers", "greater than or equal to 1"),
        (("--walkers", "2000000"), "--walkers", "at most 1,000,000"),
        (("--b-level", "1.5"), "--b-level", "less than or equal to 1"),
        (("--census-transient", "40000"), "--census-transient (40000)", "smaller than --census-steps (30000)"),
        (("--census-steps", "200", "--census-transient", "100"), "--census-steps", "fingerprint ring"),
        (("--max-horizon", "20"), "--max-horizon", "at least screen_steps"),
        (("--design", "4_duplicity_loop_4"), "--design", "runs the paper's network only"),
        (("--era", "2024"), "--era", "head era only"),
    ],
)
def test_bad_inputs_are_named_without_a_traceback_and_nothing_is_written(tmp_path, args, named, said):
    res = invoke("dmft", "switching", *args, "--out", tmp_path / "x.zarr", "--plot", tmp_path / "x.png")
    out = " ".join(res.output.split())
    assert res.exit_code == 2, res.output
    assert named in out and said in out and "Traceback" not in out, out
    assert list(tmp_path.iterdir()) == []


def test_a_census_without_two_attractors_names_beta_o(tmp_path, monkeypatch):
    import attnphys.dmft
    import attnphys.dmft.switching  # noqa: F401
    from attnphys.errors import InputError

    def switching(cfg, **kw):
        raise InputError("the census at beta_o = 0.5 finds 1 stable periodic attractor(s): switching needs two", "cfg")

    monkeypatch.setattr(attnphys.dmft, "switching", switching)
    res = invoke("dmft", "switching", "--beta-o", "0.5", "--out", tmp_path / "x.zarr")
    out = " ".join(res.output.split())
    assert res.exit_code == 2 and "--beta-o: the census at beta_o = 0.5 finds 1" in out and "--ics" in out, out
    assert not (tmp_path / "x.zarr").exists()


SMALL = dict(
    sizes=(9900, 99000), walkers=8, max_steps=3000, b_level=0.8, ics=16, census_steps=30_000,
    census_transient=20_000, screen_steps=28, max_horizon=28, keep=1, phase_stride=14, laws=("gaussian",), seed=3,
)  # fmt: skip
"""The options of the deterministic test of tests/dmft/test_switching.py (about 50 s on two cores)."""


@pytest.mark.slow
def test_a_real_run_stores_what_the_analysis_returns(tmp_path):
    from attnphys.dmft import preset, switching

    args = ["dmft", "switching", "--beta-o", "1.27", "--out", tmp_path / "s.zarr", "--plot", tmp_path / "s.png"]
    for k, v in SMALL.items():
        args += [
            f"--{'n' if k == 'sizes' else k.replace('_', '-')}",
            ",".join(map(str, v)) if isinstance(v, tuple) else v,
        ]
    res = invoke(*args)
    assert res.exit_code == 0, res.output
    back = load(tmp_path / "s.zarr")
    direct = switching(preset("paper", beta_o=1.27), **SMALL)
    xr.testing.assert_equal(back, direct)
    assert sorted(back.period.values.tolist()) == [28, 56]
    assert json.loads(back.attrs["options"]) == json.loads(direct.attrs["options"])
    assert "period 28" in res.output and "d ln τ/dN" in res.output and (tmp_path / "s.png").stat().st_size > 0
