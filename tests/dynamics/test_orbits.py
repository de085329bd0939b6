"""Orbit diagrams, zero-plane sections and continuation on maps with known dynamics."""

import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.dynamics._lyapunov import lyapunov
from attnphys.dynamics.maps import HENON, LOGISTIC, ROTATION, autonomous
from attnphys.dynamics.orbits import OrbitSpec, continuation_chains, orbit, orbit_sweep


@pytest.mark.slow
def test_orbit_records_the_last_steps_in_time_order():
    spec = OrbitSpec(steps=100, transient=7, n_orbit=30)
    out = orbit(LOGISTIC, spec, jnp.array([0.3]), None, jnp.asarray(3.9))
    xs = [0.3]
    for _ in range(107):
        xs.append(3.9 * xs[-1] * (1 - xs[-1]))
    np.testing.assert_allclose(np.asarray(out["orbit"])[:, 0], xs[77:107], rtol=1e-12)
    assert float(out["x"][0]) == pytest.approx(xs[107], rel=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("align", [0, 500])
def test_exponents_match_standalone_lyapunov(align):
    spec = OrbitSpec(steps=30_000, transient=align, k=2, align=align, n_orbit=100, init="random")
    out = orbit(HENON, spec, jnp.array([0.1, 0.1]), None, jnp.array([1.4, 0.3]))
    r = lyapunov(HENON, jnp.array([0.1, 0.1]), None, jnp.array([1.4, 0.3]), steps=30_000, align=align)
    np.testing.assert_allclose(out["exponents"], r.exponents, atol=1e-12)


@pytest.mark.slow
def test_zero_plane_section_of_a_rotation():
    """The rotation by ω crosses |y| ≤ tol at known steps; the section keeps x there, in order."""
    omega = 0.1234567
    spec = OrbitSpec(steps=5000, transient=0, n_orbit=10, section=((0, 1),), section_tol=0.05, max_section=50)
    out = orbit(ROTATION, spec, jnp.array([1.0, 0.0]), None, jnp.asarray(omega))
    t = np.arange(5000)
    x, y = np.cos(2 * np.pi * omega * t), np.sin(2 * np.pi * omega * t)
    hits = np.abs(y) <= 0.05
    assert int(out["section_count"][0]) == hits.sum()
    np.testing.assert_allclose(np.asarray(out["section"])[0], x[hits][:50], atol=1e-9)


@pytest.mark.slow
def test_nonfinite_step_is_reported():
    blow = autonomous(lambda x, p: x * p)
    spec = OrbitSpec(steps=2000, transient=0, n_orbit=10)
    out = orbit_sweep(blow, spec, jnp.ones((2, 1)), jnp.zeros(2), jnp.asarray([0.5, 10.0]))
    assert int(out["nonfinite_step"][0]) == -1
    assert int(out["nonfinite_step"][1]) == 309  # 10^309 overflows float64 at the state seen before step 309


@pytest.mark.slow
def test_continuation_chains_final_states():
    """Each point of an 'up' chain starts where the previous one ended: same as running it by hand."""
    rs = jnp.asarray([3.1, 3.3, 3.5])
    spec = OrbitSpec(steps=50, transient=20, n_orbit=5)
    out = continuation_chains(LOGISTIC, spec, jnp.array([0.3]), None, rs, directions=("up", "down"))
    assert out["orbit"].shape == (2, 3, 5, 1)
    for d, order in ((0, [0, 1, 2]), (1, [2, 1, 0])):
        x = jnp.array([0.3])
        for i in order:
            ref = orbit(LOGISTIC, spec, x, None, rs[i])
            np.testing.assert_allclose(out["orbit"][d, i], ref["orbit"], rtol=1e-12)
            x = ref["x"]


@pytest.mark.slow
def test_continuation_exposes_coexisting_attractors():
    """A bistable map x ↦ tanh(a x): cold starts at x0 > 0 all land on the + branch; continuation
    down from a large a keeps the branch it started on."""
    m = autonomous(lambda x, a: jnp.tanh(a * x))
    a = jnp.linspace(1.5, 3.0, 4)
    spec = OrbitSpec(steps=200, transient=200, n_orbit=10)
    down = continuation_chains(m, spec, jnp.array([-0.9]), None, a, directions=("down",))
    cold = orbit_sweep(m, spec, jnp.full((4, 1), 0.9), jnp.zeros(4), a)
    assert np.all(np.asarray(down["orbit"])[0, :, -1, 0] < 0)
    assert np.all(np.asarray(cold["orbit"])[:, -1, 0] > 0)


def test_spec_validation():
    with pytest.raises(ValueError, match="n_orbit"):
        OrbitSpec(steps=10, n_orbit=20).validate()
    with pytest.raises(ValueError, match="align"):
        OrbitSpec(steps=10, transient=5, align=6, n_orbit=5).validate()
