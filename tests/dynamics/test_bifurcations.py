"""Continuation and local bifurcations against closed forms (theory: docs/theory/dynamics.md §6)."""

import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.dynamics.bifurcations import continue_orbit
from attnphys.dynamics.maps import BISTABLE, DELAYED_LOGISTIC, HENON, LOGISTIC, autonomous


def ident(s):
    """s ↦ params for one-parameter maps (one function object: the compiled kernels are reused)."""
    return s


def henon_a(a):
    return jnp.array([a, 0.3])


CUSP = autonomous(lambda x, c: x + 0.3 * (c + x - x**3))


def _only(branch, kind):
    ev = [e for e in branch.events if e.kind == kind]
    assert len(ev) == 1, [(e.kind, e.s) for e in branch.events]
    return ev[0]


def test_logistic_period_doubling_points():
    """Fixed point 1 − 1/r: flip at r = 3 (μ = 2 − r); period-2 orbit: flip at r = 1 + √6."""
    b1 = continue_orbit(LOGISTIC, jnp.array([0.6]), None, ident, 2.5, 3.3)
    e = _only(b1, "flip")
    assert e.s == pytest.approx(3.0, abs=1e-10)
    assert complex(e.multipliers[0]) == pytest.approx(-1.0, abs=1e-10)
    np.testing.assert_allclose(b1.x[:, 0], 1 - 1 / b1.s, atol=1e-14)
    np.testing.assert_allclose(b1.multipliers[:, 0].real, 2 - b1.s, atol=1e-13)
    b2 = continue_orbit(LOGISTIC, jnp.array([0.5]), None, ident, 3.2, 3.6, period=2)
    e = _only(b2, "flip")
    assert e.s == pytest.approx(1 + np.sqrt(6), abs=1e-10)
    np.testing.assert_allclose(b2.multipliers[:, 0].real, -(b2.s**2) + 2 * b2.s + 4, atol=1e-12)
    assert b2.stable[0] and not b2.stable[-1]


def test_delayed_logistic_neimark_sacker():
    """|μ|² = a − 1: a complex pair leaves the unit circle at a = 2 with μ = e^{±iπ/3}."""
    b = continue_orbit(DELAYED_LOGISTIC, jnp.array([0.3, 0.3]), None, ident, 1.5, 2.5)
    e = _only(b, "neimark_sacker")
    assert e.s == pytest.approx(2.0, abs=1e-10)
    np.testing.assert_allclose(np.sort(np.angle(e.multipliers)), [-np.pi / 3, np.pi / 3], atol=1e-9)
    np.testing.assert_allclose(np.abs(e.multipliers), 1.0, atol=1e-10)
    assert not [x for x in b.events if x.kind in ("fold", "flip")]


def test_fold_of_the_cusp_map():
    """x' = x + 0.3 (c + x − x³): the upper fixed points fold at c = −2/(3√3) (x = 1/√3, μ = +1)."""
    b = continue_orbit(CUSP, jnp.array([1.2]), None, ident, 0.2, -0.6)
    e = _only(b, "fold")
    assert e.s == pytest.approx(-2 / (3 * np.sqrt(3)), abs=1e-10)
    assert float(e.x[0]) == pytest.approx(1 / np.sqrt(3), abs=1e-6)
    assert complex(e.multipliers[0]) == pytest.approx(1.0, abs=1e-9)


def test_continuation_stops_at_a_turning_point_unless_asked_to_go_on():
    """Past the cusp map's fold the branch runs back along its middle (unstable) side: by default the
    continuation stops there, just past the turning point; with past_folds it goes on towards c = 0.2."""
    b = continue_orbit(CUSP, jnp.array([1.2]), None, ident, 0.2, -0.6, max_steps=300)
    c_fold = -2 / (3 * np.sqrt(3))
    assert b.status == "fold" and [e.kind for e in b.events] == ["fold"]
    assert b.s.min() == pytest.approx(c_fold, abs=1e-3) and b.stable[:-1].all()
    assert b.s.size < 100
    on = continue_orbit(CUSP, jnp.array([1.2]), None, ident, 0.2, -0.6, max_steps=300, past_folds=True)
    assert on.status in ("end", "max_steps") and on.s.size > b.s.size
    assert not on.stable[-1]  # the middle branch


@pytest.mark.slow
@pytest.mark.long
def test_logistic_period3_fold():
    """The period-3 window opens in a fold at r = 1 + √8."""
    b = continue_orbit(LOGISTIC, jnp.array([0.15]), None, ident, 3.835, 3.82, period=3)
    e = _only(b, "fold")
    assert e.s == pytest.approx(1 + np.sqrt(8), abs=1e-10)


def test_symmetric_crossing_is_a_branch_point_not_a_fold():
    """The origin of x' = a x − x³ has μ = a: a pitchfork at a = 1, the branch does not turn."""
    b = continue_orbit(BISTABLE, jnp.array([0.01]), None, ident, 0.5, 1.5)
    e = _only(b, "branch_point")
    assert e.s == pytest.approx(1.0, abs=1e-10)
    assert "fold" not in [x.kind for x in b.events]


@pytest.mark.slow
@pytest.mark.long
def test_henon_fixed_point_flip():
    """Hénon's fixed point flips at a = 3(1 − b)²/4."""
    b = continue_orbit(HENON, jnp.array([0.9, 0.3]), None, henon_a, 0.2, 0.6)
    e = _only(b, "flip")
    assert e.s == pytest.approx(0.75 * 0.7**2, abs=1e-10)


def test_branch_dataset_has_cf_attributes():
    b = continue_orbit(LOGISTIC, jnp.array([0.6]), None, ident, 2.8, 3.1)
    ds = b.to_dataset("r")
    assert ds.sizes["event"] == 1 and str(ds["event_kind"].values[0]) == "flip"  # a name, not a code
    for v in ds.data_vars.values():
        assert "long_name" in v.attrs


def test_no_orbit_is_an_error():
    with pytest.raises(ValueError, match="Newton"):
        continue_orbit(autonomous(lambda x, p: x + 1.0), jnp.array([0.0]), None, ident, 0.0, 1.0)


def test_logistic_transcritical_branch_point_with_the_default_steps():
    """The fixed points 0 (μ = r) and 1 − 1/r (μ = 2 − r) exchange stability at r = 1, where both branches
    cross and the corrector's system is singular: located there from either branch and either side, with
    the public function's default steps."""
    from attnphys.dynamics import continuation

    for x0, a, b in [(0.0, 0.5, 1.5), (0.0, 1.5, 0.5), (0.5, 2.0, 0.5), (1 - 1 / 0.6, 0.6, 1.5)]:
        ds = continuation(LOGISTIC, jnp.array([x0]), None, ident, a, b, period=1)
        assert ds.sizes["event"] == 1, (x0, a, b)
        assert str(ds["event_kind"].values[0]) == "branch_point"
        assert float(ds["event_s"][0]) == pytest.approx(1.0, abs=1e-10), (x0, a, b)
        assert float(ds["s"][-1]) == pytest.approx(b, abs=1e-12) and ds.attrs["status"] == "end"


def test_a_branch_ends_on_its_range_and_reports_no_event_beyond_it():
    """A step that would cross the end of the range lands on it: no point and no event outside the range
    (the branch point of the origin at r = 1 lies past r = 0.995; the cusp map's branch past its fold runs
    back to c = 0.2)."""
    b = continue_orbit(LOGISTIC, jnp.array([0.0]), None, ident, 0.5, 0.995, ds=0.05, ds_max=0.05)
    assert b.status == "end" and b.s[-1] == pytest.approx(0.995, abs=1e-12) and b.s.max() <= 0.995 + 1e-12
    assert b.events == []
    on = continue_orbit(CUSP, jnp.array([1.2]), None, ident, 0.2, -0.6, max_steps=300, past_folds=True)
    assert on.status == "end" and on.s[-1] == pytest.approx(0.2, abs=1e-12)
    assert -0.6 <= on.s.min() and on.s.max() <= 0.2 + 1e-12
    assert all(-0.6 <= e.s <= 0.2 for e in on.events)
