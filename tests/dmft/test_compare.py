"""The comparison of two stored orbit diagrams (attnphys.dmft.compare_diagrams, `dmft compare-diagrams`)."""

import json

import numpy as np
import pytest
import xarray as xr

from attnphys.dmft import compare_diagrams, preset
from attnphys.dynamics.classify import REGIME_CODE
from attnphys.errors import InputError

P, CH, FP = REGIME_CODE["periodic"], REGIME_CODE["chaotic"], REGIME_CODE["fixed_point"]


def _diagram(regime, period, lam, beta=(1.0, 1.1, 1.2, 1.3, 1.4), config=None):
    lam = np.asarray(lam, float)
    exps = np.stack([lam, lam - 0.5], axis=-1)
    return xr.Dataset(
        {
            "regime": (("beta_o",), np.asarray(regime, np.int8)),
            "period": (("beta_o",), np.asarray(period, np.int64)),
            "exponents": (("beta_o", "exponent"), exps),
            "lambda1": (("beta_o",), lam),
        },
        coords={"beta_o": list(beta), "exponent": [0, 1]},
        attrs={"config": json.dumps(config or {"epsilon": 0.02, "correlations": {"kind": "segments", "seed": 1}})},
    )


def test_codes_follow_the_rule():
    a = _diagram([P, P, P, CH, P], [2, 2, 4, 0, 2], [-0.1, -0.1, -0.2, 0.1, -np.inf])
    b = _diagram(
        [P, P, P, P, FP],
        [2, 2, 2, 4, 1],
        [-0.1, -0.1005 - 0.002, -0.2, -0.01, -np.inf],
        config={"epsilon": 0.03, "correlations": {"kind": "segments", "seed": 2}},
    )
    ds = compare_diagrams(a, b, tol=1e-3)
    # unchanged; exponent beyond tol; period 4 → 2; chaotic → periodic; periodic → fixed point (λ₁ −∞ both)
    assert ds.change.values.tolist() == [0, 1, 2, 3, 3]
    assert ds.d_lambda1.values[4] == 0.0  # equal infinities differ by 0
    np.testing.assert_allclose(ds.d_lambda1.values[:4], [0.0, -0.0025, 0.0, -0.11], atol=1e-15)
    np.testing.assert_allclose(ds.d_exponents.sel(exponent=1).values[:4], [0.0, -0.0025, 0.0, -0.11], atol=1e-15)
    assert ds.transitions.sel(regime_from="chaotic", regime_to="periodic").item() == 1
    assert ds.transitions.sel(regime_from="periodic", regime_to="fixed_point").item() == 1
    assert int(ds.transitions.sum()) == 5
    assert json.loads(ds.attrs["config_changes"]) == {"epsilon": [0.02, 0.03], "correlations.seed": [1, 2]}
    assert json.loads(ds.attrs["changes"]) == {
        "unchanged": 1,
        "exponents": 1,
        "period": 1,
        "regime": 2,
        "not_comparable": 0,
    }
    assert ds.attrs["max_abs_d_lambda1"] == pytest.approx(0.11)
    # a larger tolerance hides the small exponent change only
    assert compare_diagrams(a, b, tol=0.01).change.values.tolist() == [0, 0, 2, 3, 3]


def test_points_not_computed_are_not_comparable():
    a = _diagram([P, -1, P, P, P], [2, 0, 2, 2, 2], [-0.1, np.nan, -0.1, -0.1, -0.1])
    ds = compare_diagrams(a, a)
    assert ds.change.values.tolist() == [0, -1, 0, 0, 0]
    assert json.loads(ds.attrs["changes"])["not_comparable"] == 1


def test_finite_in_one_diagram_only_is_an_exponent_change():
    a = _diagram([P] * 5, [2] * 5, [-0.1, np.nan, -0.1, -0.1, -0.1])
    b = _diagram([P] * 5, [2] * 5, [-0.1] * 5)
    assert compare_diagrams(a, b).change.values.tolist() == [0, 1, 0, 0, 0]


@pytest.mark.parametrize(
    "other, words",
    [
        (dict(beta=(1.0, 1.1, 1.2, 1.3, 1.45)), "axis beta_o differs at index 4 (1.4 in a, 1.45 in b)"),
        (dict(beta=(1.0, 1.1, 1.2, 1.3)), "axis beta_o has 5 values in a and 4 in b"),
    ],
)
def test_different_grids_are_refused(other, words):
    n = len(other["beta"])
    a = _diagram([P] * 5, [2] * 5, [-0.1] * 5)
    b = _diagram([P] * n, [2] * n, [-0.1] * n, **other)
    with pytest.raises(InputError, match="not comparable") as e:
        compare_diagrams(a, b)
    assert words in str(e.value) and e.value.field == "b"


def test_other_axes_and_other_results_are_refused():
    a = _diagram([P] * 5, [2] * 5, [-0.1] * 5)
    b = a.rename(beta_o="epsilon")
    with pytest.raises(InputError, match=r"axes differ \(\['beta_o'\] and \['epsilon'\]\)"):
        compare_diagrams(a, b)
    with pytest.raises(InputError, match="is not an orbit diagram") as e:
        compare_diagrams(a.drop_vars("regime"), a)
    assert e.value.field == "a"
    with pytest.raises(InputError, match="must be a finite number") as e:
        compare_diagrams(a, a, tol=-1.0)
    assert e.value.field == "tol"


def test_phase_diagram_grids_compare_point_by_point():
    x, y = [1.0, 2.0, 3.0], [0.01, 0.02]
    reg = np.array([[P, P], [P, CH], [CH, CH]], np.int8)
    a = xr.Dataset(
        {
            "regime": (("beta_o", "epsilon"), reg),
            "period": (("beta_o", "epsilon"), np.where(reg == P, 2, 0)),
            "lambda1": (("beta_o", "epsilon"), np.where(reg == P, -0.1, 0.1)),
        },
        coords={"beta_o": x, "epsilon": y},
    )
    b = a.copy(deep=True)
    b["regime"][1, 1] = P
    b["period"][1, 1] = 3
    ds = compare_diagrams(a, b)
    assert ds.change.dims == ("beta_o", "epsilon")
    expected = np.zeros((3, 2), int)
    expected[1, 1] = 3
    np.testing.assert_array_equal(ds.change.values, expected)


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """Two small bifurcation diagrams of the paper network written to stores (cold starts from the
    published window): a, and b with another ε."""
    from attnphys.dmft import bifurcation

    where = tmp_path_factory.mktemp("diagrams")
    cfg = preset("paper")
    spec = dict(steps=600, transient=400, exponents=2, n_orbit=20, start="checkpoint")
    grid = {"beta_o": [1.0, 2.0]}
    bifurcation(cfg, grid, **spec, store=where / "a.zarr")
    bifurcation(cfg.replace(epsilon=0.05), grid, **spec, store=where / "b.zarr")
    return where


@pytest.mark.slow
def test_stored_pair_in_one_call(stored, tmp_path):
    """Two stored diagrams compared by one command; a diagram compared with itself changes nothing and
    another ε names itself in the configuration changes."""
    from typer.testing import CliRunner

    from attnphys.cli import app
    from attnphys.io import load

    same = compare_diagrams(stored / "a.zarr", stored / "a.zarr")
    assert (same.change.values == 0).all() and same.attrs["max_abs_d_lambda1"] == 0.0
    assert json.loads(same.attrs["config_changes"]) == {}

    a, b = str(stored / "a.zarr"), str(stored / "b.zarr")
    res = CliRunner().invoke(
        app,
        ["dmft", "compare-diagrams", a, b, "--out", str(tmp_path / "c.zarr"), "--plot", str(tmp_path / "c.png")],
    )
    assert res.exit_code == 0, res.output
    out = load(tmp_path / "c.zarr")
    assert json.loads(out.attrs["config_changes"]) == {"epsilon": [0.02, 0.05]}
    np.testing.assert_array_equal(out.d_lambda1.values, load(b).lambda1.values - load(a).lambda1.values)
    assert out.attrs["attnphys_command"] == "dmft compare-diagrams"
    assert (tmp_path / "c.png").stat().st_size > 0

    res = CliRunner().invoke(
        app, ["dmft", "compare-diagrams", a, str(tmp_path / "none.zarr"), "--out", str(tmp_path / "d.zarr")]
    )
    assert res.exit_code != 0 and "no diagram at" in res.output and "Traceback" not in res.output


@pytest.mark.slow
@pytest.mark.long
def test_portraits_rerun_the_stored_points_exactly(stored, tmp_path):
    """A point of a stored diagram rerun from the diagram's record has the stored exponents, regime and
    period, and its trajectory ends on the stored orbit, to round-off (a batch of another size may round
    otherwise: 5e-13 measured here)."""
    from typer.testing import CliRunner

    from attnphys.cli import app
    from attnphys.dmft import diagram_portraits
    from attnphys.io import load

    ds = diagram_portraits(stored / "b.zarr", [2.0], keep=50)
    assert ds.mo_se.shape == (1, 50, 3) and ds.beta_o.values.tolist() == [2.0]
    assert ds.step.values.tolist() == list(range(550, 600))
    np.testing.assert_allclose(ds.exponents.values, ds.stored_exponents.values, rtol=0, atol=1e-9)
    assert ds.regime.item() == ds.stored_regime.item() and ds.period.item() == ds.stored_period.item()
    assert ds.attrs["max_exponent_difference"] <= 1e-9 and ds.attrs["max_orbit_difference"] <= 1e-9
    stored_orbit = load(stored / "b.zarr").orbit.sel(beta_o=2.0).values
    np.testing.assert_allclose(ds.mo_se.values[0, -20:], stored_orbit, rtol=0, atol=1e-9)
    assert ds.orbit_difference.item() == np.max(np.abs(ds.mo_se.values[0, -20:] - stored_orbit))

    res = CliRunner().invoke(
        app,
        [
            "dmft",
            "portraits",
            str(stored / "a.zarr"),
            "--at",
            "1.0",
            "--out",
            str(tmp_path / "p.zarr"),
            "--plot",
            str(tmp_path / "p.png"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert load(tmp_path / "p.zarr").attrs["max_exponent_difference"] <= 1e-9
    assert (tmp_path / "p.png").stat().st_size > 0


def test_portraits_refuse_points_off_the_grid_and_continuations(stored):
    from attnphys.dmft import diagram_portraits
    from attnphys.io import load

    with pytest.raises(InputError, match=r"beta_o = 1.5 is not a value of the diagram's grid \(nearest: 1\)") as e:
        diagram_portraits(stored / "a.zarr", [1.5])
    assert e.value.field == "values"
    with pytest.raises(InputError, match="each point needs 1 value"):
        diagram_portraits(stored / "a.zarr", [(1.0, 0.02)])
    ds = load(stored / "a.zarr")
    sweep = json.loads(ds.attrs["sweep"])
    sweep["grid"]["axes"].insert(0, {"name": "direction", "values": ["up", "down"]})
    ds.attrs["sweep"] = json.dumps(sweep)
    with pytest.raises(InputError, match="is a continuation diagram") as e:
        diagram_portraits(ds, [1.0])
    assert e.value.field == "diagram"
    with pytest.raises(InputError, match="records no sweep"):
        diagram_portraits(ds.drop_attrs(), [1.0])
