"""Two-parameter continuation of fold, flip and Neimark–Sacker curves and their codimension-two points,
against closed forms (theory: docs/theory/dynamics.md §9)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.dynamics import FunctionMap, bifurcation_curve, normal_form_coefficient
from attnphys.dynamics.maps import HENON
from attnphys.errors import InputError

BOX = ((-5.0, 10.0), (-1.5, 1.5))


def _special(ds, kind):
    at = np.flatnonzero(ds.special_kind.values == kind)
    assert at.size == 1, list(zip(ds.special_kind.values, ds.special_s1.values, ds.special_s2.values, strict=True))
    return float(ds.special_s1.values[at[0]]), float(ds.special_s2.values[at[0]]), ds.special_coefficient.values[at[0]]


def _cubic_flip(x, aux, p):
    """x ↦ −(1 + α)x + x² + γx³: the flip curve α = 0 with c = γ + 1 (§9.2), generalized flip at γ = −1."""
    return -(1.0 + p[0]) * x + x**2 + p[1] * x**3, aux


def _cusp(x, aux, p):
    """x ↦ x + α + βx − x³: fold curve (α, β) = (−2x³, 3x²) with a = −3x (§9.2), cusp at the origin."""
    return x + p[0] + p[1] * x - x**3, aux


@pytest.mark.slow
def test_flip_curve_generalized_flip_and_its_coefficient():
    ds = bifurcation_curve(FunctionMap(_cubic_flip), "flip", [0.0], [0.0, 0.5], direction=-1, max_points=40)
    np.testing.assert_allclose(ds.s1.values, 0.0, atol=1e-14)
    np.testing.assert_allclose(ds.coefficient.values, ds.s2.values + 1.0, atol=1e-12)
    alpha, gamma, c = _special(ds, "generalized_flip")
    assert (alpha, gamma) == pytest.approx((0.0, -1.0), abs=1e-10)
    assert abs(c) < 1e-10
    assert ds.attrs["kind"] == "flip" and ds.attrs["evaluations"] > 0


def test_fold_curve_cusp():
    ds = bifurcation_curve(FunctionMap(_cusp), "fold", [0.5], [-0.25, 0.75], max_points=40, ds_max=0.1)
    x = ds.x.values[:, 0]
    assert x.min() < 0 < x.max()  # through the cusp
    np.testing.assert_allclose(ds.s1.values, -2 * x**3, atol=1e-13)
    np.testing.assert_allclose(ds.s2.values, 3 * x**2, atol=1e-13)
    np.testing.assert_allclose(ds.coefficient.values, -3 * x, atol=1e-12)
    assert _special(ds, "cusp")[:2] == pytest.approx((0.0, 0.0), abs=1e-10)


@pytest.mark.slow
def test_henon_flip_curve_and_resonance_1_2():
    """Fixed point flip curve a = ¾(1 − b)²; the second multiplier is b, so 1:2 at (a, b) = (3, −1)."""
    b, a = 0.3, 0.75 * 0.7**2
    x = (1 - b) / (2 * a)
    ds = bifurcation_curve(HENON, "flip", [x, b * x], [a, b], param_names=("a", "b"), bounds=BOX, max_points=200)
    assert ds.attrs["status"] == "bounds"
    np.testing.assert_allclose(ds.a.values, 0.75 * (1 - ds.b.values) ** 2, atol=1e-12)
    assert ds.b.values.min() < -1
    kinds = list(ds.special_kind.values)
    assert kinds == ["resonance_1_2"], kinds  # c has a pole at 1:2, not a zero: no generalized flip
    at = 0
    assert (ds.special_a.values[at], ds.special_b.values[at]) == pytest.approx((3.0, -1.0), abs=1e-10)
    np.testing.assert_allclose(ds.special_multiplier_real.values[at], [-1.0, -1.0], atol=1e-7)


@pytest.mark.slow
@pytest.mark.long
def test_henon_fold_and_neimark_sacker_codim2_points():
    """Fold curve a = −¼(1 − b)² (second multiplier −b): 1:1 at (−1, −1). Neimark–Sacker curve b = −1 with
    trace −2ax = 2κ: 1:1 at a = −1, 1:3 at a = 5/4, 1:4 at a = 0, 1:2 at a = 3; the map is area-preserving
    there, so d vanishes identically and no Chenciner point is reported."""
    b, a = 0.3, -0.25 * 0.7**2
    x = (b - 1) / (2 * a)
    fold = bifurcation_curve(HENON, "fold", [x, b * x], [a, b], bounds=BOX, direction=-1, max_points=200)
    np.testing.assert_allclose(fold.s1.values, -0.25 * (1 - fold.s2.values) ** 2, atol=1e-12)
    assert list(fold.special_kind.values) == ["resonance_1_1"]
    assert _special(fold, "resonance_1_1")[:2] == pytest.approx((-1.0, -1.0), abs=1e-10)
    a = 2.0
    x = (-1 + np.sqrt(1 + a)) / a
    found = {}
    for direction in (1, -1):
        ns = bifurcation_curve(
            HENON, "neimark_sacker", [x, -x], [a, -1.0], bounds=BOX, direction=direction, max_points=200
        )
        np.testing.assert_allclose(ns.s2.values, -1.0, atol=1e-13)
        assert np.nanmax(np.abs(ns.coefficient.values)) < 1e-12
        found.update(
            {
                k: (float(s1), float(s2))
                for k, s1, s2 in zip(ns.special_kind.values, ns.special_s1.values, ns.special_s2.values, strict=True)
            }
        )
    assert set(found) == {"resonance_1_1", "resonance_1_2", "resonance_1_3", "resonance_1_4"}
    for kind, a_star in (
        ("resonance_1_1", -1.0),
        ("resonance_1_2", 3.0),
        ("resonance_1_3", 1.25),
        ("resonance_1_4", 0.0),
    ):
        assert found[kind] == pytest.approx((a_star, -1.0), abs=1e-10), kind


def _delayed_logistic(x, aux, p):
    """The delayed logistic map with a memory c: (x, y) ↦ (r x(1 − y), (1 − c)x + c y); c = 0 is the
    delayed logistic map. Fixed point x = y = 1 − 1/r, trace 1 + c, determinant c + (r − 1)(1 − c): the
    Neimark–Sacker curve is r = 2 with κ = (1 + c)/2."""
    r, c = p[0], p[1]
    return jnp.stack([r * x[0] * (1.0 - x[1]), (1.0 - c) * x[0] + c * x[1]]), aux


@pytest.mark.slow
@pytest.mark.long
def test_delayed_logistic_neimark_sacker_resonances():
    ds = bifurcation_curve(
        FunctionMap(_delayed_logistic),
        "neimark_sacker",
        [0.5, 0.5],
        [2.0, 0.0],
        direction=-1,
        max_points=100,
        bounds=((0.0, 4.0), (-3.5, 0.5)),
    )
    np.testing.assert_allclose(ds.s1.values, 2.0, atol=1e-13)
    for kind, c in (("resonance_1_4", -1.0), ("resonance_1_3", -2.0), ("resonance_1_2", -3.0)):
        assert _special(ds, kind)[:2] == pytest.approx((2.0, c), abs=1e-10), kind


def _normal_form_ns(x, aux, p):
    """z ↦ e^{iθ}((1 + α)z + (ρ + i)z|z|²), θ = 1: Neimark–Sacker curve α = 0 with d = 2ρ for ⟨q, q⟩ = 1
    (§9.2), Chenciner at ρ = 0."""
    z = x[0] + 1j * x[1]
    z2 = jnp.exp(1j) * ((1.0 + p[0]) * z + (p[1] + 1j) * z * z * jnp.conj(z))
    return jnp.stack([jnp.real(z2), jnp.imag(z2)]), aux


@pytest.mark.slow
@pytest.mark.long
def test_chenciner_point_and_lyapunov_coefficient():
    ds = bifurcation_curve(
        FunctionMap(_normal_form_ns), "neimark_sacker", [0.0, 0.0], [0.0, 0.5], direction=-1, max_points=30, ds_max=0.1
    )
    np.testing.assert_allclose(ds.coefficient.values, 2 * ds.s2.values, atol=1e-12)
    assert _special(ds, "chenciner")[:2] == pytest.approx((0.0, 0.0), abs=1e-10)


def test_flip_coefficient_of_the_logistic_map():
    """x ↦ 3x(1 − x) at x = 2/3: in ξ = x − 2/3, ξ ↦ −ξ − 3ξ², whose second iterate is ξ − 18ξ³: c = 9."""
    c = jax.jit(lambda x: normal_form_coefficient("flip", lambda y: 3.0 * y * (1 - y), x)[0])(jnp.array([2.0 / 3.0]))
    assert float(c) == pytest.approx(9.0, rel=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"kind": "hopf"}, "kind"),
        ({"period": 0}, "period"),
        ({"direction": 0}, "direction"),
        ({"x0": [np.nan, 0.0]}, "x0"),
        ({"s0": [1.0]}, "s0"),
        ({"ds": -1.0}, "ds"),
        ({"max_points": 1}, "max_points"),
        ({"bounds": ((1.0, 2.0), (0.0, 1.0))}, "bounds"),
    ],
)
def test_bad_arguments_are_named(kwargs, field):
    args = {"kind": "flip", "x0": [0.5, 0.15], "s0": [0.3675, 0.3]} | kwargs
    with pytest.raises(InputError) as err:
        bifurcation_curve(HENON, args.pop("kind"), args.pop("x0"), args.pop("s0"), **args)
    assert err.value.field == field


def test_no_curve_near_the_start_is_an_input_error():
    with pytest.raises(InputError, match="x0"):
        bifurcation_curve(FunctionMap(_cusp), "fold", [np.inf], [1.0, -1.0])


@pytest.mark.slow
@pytest.mark.long
def test_henon_period_two_flip_curve():
    """The period-2 orbit of the Hénon map: x₁ + x₂ = (1 − b)/a, x₁x₂ = ((1 − b)²/a − 1)/a, multipliers
    with trace 4((1 − b)² − a) + 2b and determinant b²; its flip curve is a = (1 − b)² + (1 + b)²/4 with the
    second multiplier −b², so 1:2 at (a, b) = (1, 1) and (4, −1)."""
    b = 0.3
    a = (1 - b) ** 2 + (1 + b) ** 2 / 4
    s, p = (1 - b) / a, ((1 - b) ** 2 / a - 1) / a
    x1 = (s + np.sqrt(s * s - 4 * p)) / 2
    found = {}
    for direction in (1, -1):
        ds = bifurcation_curve(
            HENON, "flip", [x1, b * (s - x1)], [a, b], period=2, bounds=BOX, direction=direction, max_points=200
        )
        np.testing.assert_allclose(ds.s1.values, (1 - ds.s2.values) ** 2 + (1 + ds.s2.values) ** 2 / 4, atol=1e-11)
        found.update(
            {
                round(float(s2)): (float(s1), float(s2))
                for k, s1, s2 in zip(ds.special_kind.values, ds.special_s1.values, ds.special_s2.values, strict=True)
                if k == "resonance_1_2"
            }
        )
    assert found[1] == pytest.approx((1.0, 1.0), abs=1e-10)
    assert found[-1] == pytest.approx((4.0, -1.0), abs=1e-10)
