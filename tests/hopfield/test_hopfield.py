import jax.numpy as jnp
import numpy as np
import pytest

from attnphys import hopfield
from attnphys.expfam import Discrete, grad_log_normalizer


@pytest.mark.parametrize("beta", [0.3, 1.0, 8.0])
def test_update_never_increases_energy(beta):
    rng = np.random.default_rng(0)
    Y = jnp.asarray(rng.normal(size=(20, 10)))
    for _ in range(30):
        xi = jnp.asarray(3 * rng.normal(size=10))
        for _ in range(15):
            new = hopfield.update(xi, Y, beta)
            assert float(hopfield.energy(new, Y, beta)) <= float(hopfield.energy(xi, Y, beta)) + 1e-12
            xi = new


def test_update_is_the_discrete_mean_map():
    rng = np.random.default_rng(1)
    Y, xi = jnp.asarray(rng.normal(size=(5, 4))), jnp.asarray(rng.normal(size=4))
    np.testing.assert_allclose(hopfield.update(xi, Y, 2.0), grad_log_normalizer(Discrete(Y), xi, 2.0) / 2.0, atol=1e-14)


def test_retrieval_of_well_separated_patterns():
    rng = np.random.default_rng(2)
    Y = jnp.asarray(np.sign(rng.normal(size=(10, 100))))
    for j in range(10):
        noisy = Y[j] * jnp.asarray(np.where(rng.random(100) < 0.2, -1.0, 1.0))
        r = hopfield.retrieve(noisy, Y, beta=0.5)
        assert bool(r.converged) and int(r.steps) <= 5
        np.testing.assert_allclose(r.state, Y[j], atol=1e-8)


def test_low_beta_gives_a_metastable_mixture():
    """At small β the fixed point is near the pattern mean, not a stored pattern (known Hopfield regime)."""
    rng = np.random.default_rng(3)
    Y = jnp.asarray(rng.normal(size=(6, 20)))
    r = hopfield.retrieve(Y[0], Y, beta=1e-3)
    assert float(jnp.max(jnp.abs(r.state - Y.mean(0)))) < 0.05
