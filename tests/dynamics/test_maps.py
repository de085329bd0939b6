"""Properties of every example map (theory: docs/theory/dynamics.md §1)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.dynamics.maps import EXAMPLES, AbstractMap

NAMES = sorted(EXAMPLES)


def test_examples_are_abstract_maps_and_hashable():
    for m in EXAMPLES.values():
        assert isinstance(m, AbstractMap)
        hash(m)
    assert {"delayed_logistic", "bistable"} <= set(EXAMPLES)


@pytest.mark.parametrize("name", NAMES)
def test_every_example_has_a_reference_periodic_orbit(name):
    rp = EXAMPLES[name].reference_points()["periodic"]
    assert rp.period >= 1 and np.ndim(rp.x) == 1


@pytest.mark.parametrize("name", NAMES)
def test_jacobian_equals_jacfwd(name):
    """The map's Jacobian (analytic or not) equals forward-mode differentiation of its step."""
    m = EXAMPLES[name]
    rp = m.reference_points()["periodic"]
    xs, _ = m.sample_states(jax.random.PRNGKey(0), 8, rp.params)
    assert xs.shape == (8, np.shape(rp.x)[0])

    @jax.jit
    def both(xs, p):
        J = jax.vmap(lambda x: m.jacobian(x, None, p))(xs)
        ref = jax.vmap(jax.jacfwd(lambda y: m.step(y, None, p)[0]))(xs)
        return J, ref

    J, ref = both(xs, rp.params)
    np.testing.assert_allclose(J, ref, rtol=1e-13, atol=1e-13)


def test_delayed_logistic_fixed_point_multipliers_closed_form():
    """μ² − μ + (a − 1) = 0 at x* = y* = 1 − 1/a."""
    m = EXAMPLES["delayed_logistic"]
    for a in (1.2, 1.9, 2.3):
        x = jnp.full(2, 1 - 1 / a)
        np.testing.assert_allclose(m.step(x, None, a)[0], x, atol=1e-15)
        mu = np.sort_complex(np.linalg.eigvals(np.asarray(m.jacobian(x, None, a))))
        np.testing.assert_allclose(mu, np.sort_complex(np.roots([1.0, -1.0, a - 1.0])), atol=1e-14)


def test_bistable_is_odd_and_keeps_its_interval():
    m = EXAMPLES["bistable"]
    a = 1.8
    xs, _ = m.sample_states(jax.random.PRNGKey(1), 1000, a)
    c = np.sqrt(a + 1)
    assert np.all(np.abs(xs) < c)
    np.testing.assert_allclose(m.f(-xs, a), -m.f(xs, a), atol=0)
    assert np.all(np.abs(np.asarray(m.f(xs, a))) <= c)


@pytest.mark.parametrize("name", NAMES)
def test_cached_stepping_equals_the_plain_step(name):
    """step_cached on cache_aux(x, aux) follows step (theory: docs/theory/dynamics.md §1.1), and
    uncache_aux gives the plain auxiliary state back."""
    m = EXAMPLES[name]
    rp = m.reference_points()["periodic"]
    x, aux, c = jnp.asarray(rp.x), rp.aux, m.cache_aux(jnp.asarray(rp.x), rp.aux, rp.params)
    for _ in range(20):
        x2, aux = m.step(x, aux, rp.params)
        xc, c = m.step_cached(x, c, rp.params)
        np.testing.assert_allclose(xc, x2, rtol=1e-14, atol=1e-15)
        x = x2
    assert jax.tree_util.tree_structure(m.uncache_aux(c)) == jax.tree_util.tree_structure(aux)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_cached_tangents_equal_the_plain_tangents(name):
    """tangent_cached on tangent_aux(cache_aux(x, aux)) gives the states and J Q of tangent, the
    forward-mode or analytic push (theory: docs/theory/dynamics.md §1.1, §2.1)."""
    m = EXAMPLES[name]
    rp = m.reference_points()["periodic"]
    x, aux = jnp.asarray(rp.x), rp.aux
    D = x.shape[0]
    Q = jnp.asarray(np.random.default_rng(0).normal(size=(D, min(D, 2))))
    t = m.tangent_aux(x, m.cache_aux(x, aux, rp.params), rp.params)
    for _ in range(10):
        aux_before = aux
        x2, aux, JQ = m.tangent(x, aux, rp.params, Q)
        xc, t, JQc = m.tangent_cached(x, t, rp.params, Q)
        np.testing.assert_allclose(xc, x2, rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(JQc, JQ, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(JQ, m.jacobian(x, aux_before, rp.params) @ Q, rtol=1e-12, atol=1e-14)
        x, Q = x2, JQ / jnp.max(jnp.abs(JQ))
