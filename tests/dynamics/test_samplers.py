"""Initial-condition samplers (theory: docs/theory/dynamics.md §7.1), over every sampler."""

import jax
import numpy as np
import pytest

from attnphys.dynamics.maps import BISTABLE, HENON, LINEAR
from attnphys.dynamics.samplers import (
    SAMPLERS,
    DomainSampler,
    ExplicitSampler,
    GridSampler,
    PerturbationSampler,
    make_sampler,
)
from attnphys.errors import InputError

X = np.array([0.3, -0.2])


def _instance(name):
    return {"random": DomainSampler(), "perturb": PerturbationSampler(x=X, radius=0.1),
            "explicit": ExplicitSampler(x=np.tile(X, (50, 1))),
            "grid": GridSampler(lo=[-1.0, -0.5], hi=[1.0, 0.5], shape=(10, 5))}[name]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_every_sampler_gives_k_states(name):
    s = _instance(name)
    assert isinstance(s, SAMPLERS[name]) and s.describe().startswith(name)
    x, aux = s.sample(HENON, jax.random.PRNGKey(0), 50, np.array([1.4, 0.3]))
    assert np.shape(x) == (50, 2) and np.all(np.isfinite(x))


def test_perturbations_fill_the_ball_uniformly():
    """u uniform in the unit ball of R^D: P(|u| ≤ ρ) = ρ^D; every start within the radius."""
    s = PerturbationSampler(x=np.zeros(3), radius=2.0)
    x, _ = s.sample(LINEAR, jax.random.PRNGKey(1), 20_000, None)
    r = np.linalg.norm(np.asarray(x), axis=1) / 2.0
    assert np.all(r <= 1.0)
    assert np.mean(r <= 0.5) == pytest.approx(0.125, abs=0.01)
    np.testing.assert_allclose(np.mean(np.asarray(x), axis=0), 0.0, atol=0.03)


def test_domain_sampler_uses_the_map_and_explicit_checks_counts():
    x, _ = DomainSampler().sample(BISTABLE, jax.random.PRNGKey(2), 100, 1.8)
    assert np.all(np.abs(np.asarray(x)) < np.sqrt(2.8))
    with pytest.raises(InputError, match="explicit states"):
        ExplicitSampler(x=np.zeros((3, 2))).sample(HENON, None, 4, None)
    with pytest.raises(InputError, match="radius"):
        PerturbationSampler(x=X, radius=-1.0)
    with pytest.raises(InputError, match="unknown sampler"):
        make_sampler("nope")
    with pytest.raises(NotImplementedError):
        DomainSampler().sample(__import__("attnphys.dynamics.maps", fromlist=["autonomous"]).autonomous(lambda x, p: x),
                               jax.random.PRNGKey(0), 3, None)


def test_grid_sampler_is_the_box_in_c_order():
    s = GridSampler(lo=[0.0, -1.0], hi=[1.0, 1.0], shape=(3, 5))
    x, _ = s.sample(HENON, None, 15, None)
    x = np.asarray(x)
    np.testing.assert_array_equal(x[:5, 0], 0.0)  # the last dimension varies fastest
    np.testing.assert_allclose(x[:5, 1], np.linspace(-1, 1, 5))
    np.testing.assert_allclose(x.reshape(3, 5, 2)[:, 0, 0], [0.0, 0.5, 1.0])
    with pytest.raises(InputError, match="grid has 15 points"):
        s.sample(HENON, None, 16, None)
    with pytest.raises(InputError, match="hi >= lo"):
        GridSampler(lo=[1.0], hi=[0.0], shape=(3,))
    with pytest.raises(InputError, match="one length each"):
        GridSampler(lo=[0.0, 0.0], hi=[1.0], shape=(3, 3))
