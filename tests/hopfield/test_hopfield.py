import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphys import hopfield
from attnphys.expfam import Discrete, grad_log_normalizer


@pytest.mark.slow
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


def test_energy_is_minus_the_log_normalizer_plus_the_quadratic_term():
    """E(ξ) = −β⁻¹ G_β(ξ) + ½ ξᵀξ + ½ M², G the log-normalizer of the uniform discrete measure on Y."""
    rng = np.random.default_rng(4)
    Y, beta = jnp.asarray(rng.normal(size=(7, 5))), 1.7
    M2 = float(jnp.max(jnp.sum(Y**2, 1)))
    for xi in rng.normal(size=(10, 5)):
        xi = jnp.asarray(xi)
        G = float(Discrete(Y).log_normalizer(xi, beta))
        assert float(hopfield.energy(xi, Y, beta)) == pytest.approx(-G / beta + 0.5 * float(xi @ xi) + 0.5 * M2, abs=1e-12)
        assert float(hopfield.energy(xi, Y, beta)) >= 0.0


@pytest.mark.slow
def test_update_is_a_unit_gradient_step_with_the_cccp_decrease():
    """ξ' = ξ − ∇E(ξ), and E(ξ') ≤ E(ξ) − ½‖ξ' − ξ‖² (the CCCP bound)."""
    rng = np.random.default_rng(5)
    Y, beta = jnp.asarray(rng.normal(size=(9, 6))), 2.5
    for xi in 2 * rng.normal(size=(20, 6)):
        xi = jnp.asarray(xi)
        new = hopfield.update(xi, Y, beta)
        np.testing.assert_allclose(new, xi - jax.grad(hopfield.energy)(xi, Y, beta), atol=1e-13)
        drop = float(hopfield.energy(xi, Y, beta) - hopfield.energy(new, Y, beta))
        assert drop >= 0.5 * float(jnp.sum((new - xi) ** 2)) - 1e-12


def test_retrieve_reports_non_convergence():
    rng = np.random.default_rng(6)
    Y = jnp.asarray(rng.normal(size=(6, 20)))
    r = hopfield.retrieve(Y[0] + 0.5 * Y[1], Y, beta=0.3, max_steps=1)
    assert int(r.steps) == 1 and not bool(r.converged)
