"""dmft.boundary: a boundary of the phase diagram continued in two parameters (theory: docs/theory/dmft.md
§7.8; docs/theory/dynamics.md §9)."""

import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.dmft import boundary, orbit_continuation, plan_boundary, preset
from attnphys.dmft._api.boundary import two_params_of
from attnphys.dmft.config import gamma_of
from attnphys.dmft.model import model_of
from attnphys.errors import InputError


def test_two_parameters_compose_into_one_map_of_the_pair():
    """(β_o, β_att) ↦ scalars sets gain_o = β_o·s_o and γ = γ(β_att) (dmft §5.4), the rest as the model's."""
    cfg = preset("paper")
    model = model_of(cfg)
    cp, sc = two_params_of(model, "beta_o", "beta_att")(jnp.asarray([1.3, 0.7]))
    assert float(sc.gain_o) == pytest.approx(1.3 * cfg.scaling_o, rel=1e-15)
    assert float(sc.gamma) == pytest.approx(float(gamma_of(0.7, cfg.scaling_att, cfg.M)), rel=1e-15)
    base = model.params_of("beta_o")(jnp.asarray(1.3))[1]
    assert float(sc.eps) == float(base.eps)
    cp2, sc2 = two_params_of(model, "beta_att", "beta_o")(jnp.asarray([0.7, 1.3]))
    assert float(sc2.gain_o) == float(sc.gain_o) and float(sc2.gamma) == float(sc.gamma)
    assert cp is cp2 is model.couplings


@pytest.mark.parametrize(
    "args, kw, field",
    [
        (("hopf", ("beta_o", "beta_att"), 1.24, 1.26), {}, "kind"),
        (("fold", ("beta_o", "beta_o"), 1.24, 1.26), {}, "params"),
        (("fold", ("beta_o", "temperature"), 1.24, 1.26), {}, "params"),
        (("fold", "beta_o", 1.24, 1.26), {}, "params"),
        (("fold", ("beta_o", "beta_att"), 1.24, 1.26), {"x_min": 2.0, "x_max": 1.0}, "x_max"),
        (("fold", ("beta_o", "beta_att"), 1.24, 1.26), {"y_max": 2.0}, "y_min"),
        (("fold", ("beta_o", "beta_att"), 1.24, 1.26), {"x_max": 1.25}, "stop_value"),
        (("fold", ("beta_o", "beta_att"), 1.24, 1.24), {}, "stop_value"),
        (("fold", ("beta_o", "beta_att"), 1.24, 1.26), {"curve_points": 1}, "curve_points"),
    ],
)
def test_bad_arguments_are_named(args, kw, field):
    with pytest.raises(InputError) as e:
        plan_boundary(preset("paper"), *args, **kw)
    assert e.value.field == field, str(e.value)


@pytest.mark.slow
@pytest.mark.long
def test_neimark_sacker_boundary_meets_the_one_parameter_points(tmp_path):
    """The period-4 Neimark–Sacker curve from β_att = 2.2 passes through the Neimark–Sacker point that the
    one-parameter continuation locates independently at β_att = 1.9 and 2.6 (to 1e-6 in β_o, linear
    interpolation between curve points 0.1 apart), is supercritical (d < 0) and costs a few hundred Newton
    evaluations."""
    cfg = preset("paper")
    ds = boundary(cfg, "neimark_sacker", ("beta_o", "beta_att"), 1.24, 1.26, start="checkpoint", max_points=300)
    assert ds.attrs["period"] == 4 and ds.attrs["kind"] == "neimark_sacker"
    assert ds.attrs["status_forward"] == ds.attrs["status_backward"] == "bounds"
    assert ds.attrs["start_beta_att"] == 2.2 and abs(ds.attrs["start_beta_o"] - 1.2434445478) < 1e-9
    ba, bo = ds.beta_att.values, ds.beta_o.values
    # the curve crosses the whole box [0, 3]; the step beyond each edge is dropped, not returned
    assert 0 <= ba.min() < 0.11 and 2.89 < ba.max() <= 3 and ds.attrs["outside_box"] == 2
    assert (ds.coefficient.values < 0).all() and ds.sizes["special"] == 0
    assert ds.attrs["evaluations"] < 400
    order = np.argsort(ba)
    for beta_att in (1.9, 2.6):
        br = orbit_continuation(
            cfg.replace(beta_att=beta_att), "beta_o", 1.24, 1.26, start="checkpoint", max_points=300
        )
        k = list(br.event_kind.values).index("neimark_sacker")
        assert abs(np.interp(beta_att, ba[order], bo[order]) - float(br.event_s.values[k])) < 1e-6
    from attnphys.plots import boundary_figure, save_figure

    assert save_figure(boundary_figure(ds), tmp_path / "ns.png").stat().st_size > 10_000


@pytest.mark.slow
@pytest.mark.long
def test_a_start_without_the_orbit_or_the_bifurcation_is_refused_by_name():
    """The start settles on the period-4 orbit at β_o = 1.24: period 8 is refused naming ``period``; a range
    below its Neimark–Sacker point (≈ 1.24344) has none, refused naming ``kind``."""
    cfg = preset("paper")
    with pytest.raises(InputError, match="period-4 orbit") as e:
        boundary(cfg, "neimark_sacker", ("beta_o", "beta_att"), 1.24, 1.26, start="checkpoint", period=8)
    assert e.value.field == "period"
    with pytest.raises(InputError, match="no neimark_sacker point") as e:
        boundary(cfg, "neimark_sacker", ("beta_o", "beta_att"), 1.24, 1.243, start="checkpoint", max_points=300)
    assert e.value.field == "kind"


def _curve(p1, p2, xs, ys, sx, sy):
    import xarray as xr

    n = len(xs)
    return xr.Dataset({
        p1: ("point", np.asarray(xs, float)), p2: ("point", np.asarray(ys, float)),
        "x": (("point", "dim"), np.zeros((n, 3))), "coefficient": ("point", -np.ones(n)),
        "special_kind": ("special", np.array(["cusp"] * len(sx))),
        f"special_{p1}": ("special", np.asarray(sx, float)), f"special_{p2}": ("special", np.asarray(sy, float)),
    })


BOX = ((1.0, 1.5), (0.0, 3.0))
CURVES = {
    # case: (curve points (β_o, β_att), codimension-two points, the points kept, the specials kept)
    "both ends beyond the box": (([1.2, 1.21, 1.22, 1.23], [-0.031, 1.0, 2.0, 3.031]), ([], []), [1, 2], []),
    "ends on the edges": (([1.2, 1.21, 1.22], [0.0, 1.5, 3.0]), ([], []), [0, 1, 2], []),
    "beyond the first parameter's edge": (([1.49, 1.5, 1.51], [1.0, 1.1, 1.2]), ([], []), [0, 1], []),
    "a codimension-two point beyond it": (([1.2, 1.21], [1.0, 2.0]), ([1.2, 1.6], [1.5, 1.5]), [0, 1], [0]),
}


@pytest.mark.parametrize("case", list(CURVES))
def test_every_point_returned_lies_in_the_box_asked_for(case):
    from attnphys.dmft._api.boundary import inside_box

    (xs, ys), (sx, sy), kept, kept_special = CURVES[case]
    out, dropped = inside_box(_curve("beta_o", "beta_att", xs, ys, sx, sy), ("beta_o", "beta_att"), BOX)
    np.testing.assert_array_equal(out.beta_att.values, np.asarray(ys)[kept])
    np.testing.assert_array_equal(out.special_beta_o.values, np.asarray(sx)[kept_special])
    assert dropped == len(xs) - len(kept) + len(sx) - len(kept_special)
    assert out.sizes["dim"] == 3 and out.x.shape == (len(kept), 3)
