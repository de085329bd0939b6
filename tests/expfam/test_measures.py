"""Property tests over every base measure (spec probabilistic-attention.md §1–2)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.expfam import (
    Discrete,
    Gaussian,
    GaussianMixtureFull,
    bregman,
    conjugate_discrete,
    conjugate_gaussian,
    conjugate_numeric,
    entropy_discrete,
    gaussian_natural,
    grad_log_normalizer,
    kl_discrete,
    kl_gaussian,
    kl_monte_carlo,
    log_normalizer_monte_carlo,
)
from attnphys.verify import random_measures

NAMES = list(random_measures(np.random.default_rng(0)))


@pytest.fixture(params=NAMES)
def measure(request):
    return random_measures(np.random.default_rng(42))[request.param]


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.3])
def test_autodiff_gradient_is_mean(measure, beta):
    eta = jnp.array([0.3, -0.2, 0.5])
    np.testing.assert_allclose(jax.grad(measure.log_normalizer)(eta, beta) / beta, measure.mean(eta, beta), atol=1e-12)


def test_autodiff_hessian_is_fisher_and_sampled_covariance(measure):
    eta = jnp.array([0.3, -0.2, 0.5])
    F = measure.fisher(eta, 1.3)
    np.testing.assert_allclose(jax.hessian(measure.log_normalizer)(eta, 1.3) / 1.3**2, F, atol=1e-12)
    np.testing.assert_allclose(F, F.T, atol=1e-14)
    assert np.all(np.linalg.eigvalsh(np.asarray(F)) > -1e-12)
    x = measure.sample(jax.random.PRNGKey(1), eta, 300_000, 1.3)
    np.testing.assert_allclose(jnp.cov(x, rowvar=False), F, atol=0.04 * float(jnp.max(jnp.abs(F))))
    np.testing.assert_allclose(x.mean(0), measure.mean(eta, 1.3), atol=0.02 * (1 + float(jnp.max(jnp.abs(F)))))


def test_monte_carlo_log_normalizer(measure):
    eta = jnp.array([0.2, 0.1, -0.3])
    mc = log_normalizer_monte_carlo(measure, eta, jax.random.PRNGKey(3), n=400_000)
    assert float(mc) == pytest.approx(float(measure.log_normalizer(eta)), abs=0.01)


def test_bregman_is_kl_with_the_right_argument_order(measure):
    e1, e2 = jnp.array([0.4, -0.3, 0.1]), jnp.array([-0.2, 0.5, 0.3])
    b = float(bregman(measure, e1, e2))
    kl = float(kl_monte_carlo(measure, e2, e1, jax.random.PRNGKey(5), n=400_000))  # KL(p_η2 ‖ p_η1)
    assert b >= 0 and b == pytest.approx(kl, abs=0.01 + 0.02 * b)


def test_bregman_exact_cases():
    rng = np.random.default_rng(1)
    d = Discrete(jnp.asarray(rng.normal(size=(9, 3))))
    g = Gaussian(jnp.zeros(3), jnp.asarray(np.diag([1.0, 2.0, 0.5])))
    e1, e2 = jnp.asarray(rng.normal(size=3)), jnp.asarray(rng.normal(size=3))
    assert float(bregman(d, e1, e2)) == pytest.approx(float(kl_discrete(d, e2, e1)), abs=1e-13)
    assert float(bregman(g, e1, e2)) == pytest.approx(float(kl_gaussian(g, e2, e1)), abs=1e-13)
    # the other order is a different number (the divergence is not symmetric)
    assert abs(float(bregman(d, e1, e2)) - float(kl_discrete(d, e1, e2))) > 1e-3


def test_conjugate_closed_forms():
    rng = np.random.default_rng(2)
    d = Discrete(jnp.asarray(rng.normal(size=(6, 3))), jnp.asarray(rng.dirichlet(np.ones(6))))
    eta = jnp.asarray(rng.normal(size=3))
    val, eta_star = conjugate_numeric(d, grad_log_normalizer(d, eta))
    assert val == pytest.approx(float(conjugate_discrete(d, eta)), abs=1e-8)
    # uniform base weights: G*(∇G) = log N − H(p), the negative entropy up to the base offset
    u = Discrete(d.points)
    assert float(conjugate_discrete(u, eta)) == pytest.approx(np.log(6) - float(entropy_discrete(u, eta)), abs=1e-13)
    g = Gaussian(jnp.asarray(rng.normal(size=3)), jnp.asarray(np.diag([1.0, 0.5, 2.0])))
    mu = jnp.asarray(rng.normal(size=3))
    val, eta_star = conjugate_numeric(g, mu, beta=1.5)
    assert val == pytest.approx(float(conjugate_gaussian(g, mu, 1.5)), abs=1e-8)
    np.testing.assert_allclose(grad_log_normalizer(g, jnp.asarray(eta_star), 1.5), mu, atol=1e-6)  # attained at μ = ∇G


def test_jensen_lower_bound_and_its_gradient():
    m = random_measures(np.random.default_rng(3))["mixture_full"]
    assert isinstance(m, GaussianMixtureFull)
    for eta in np.random.default_rng(4).normal(size=(50, 3)):
        eta = jnp.asarray(eta)
        assert float(m.lower_bound(eta, 1.2)) <= float(m.log_normalizer(eta, 1.2)) + 1e-14
        np.testing.assert_allclose(jax.grad(m.lower_bound)(eta, 1.2), m.lower_bound_grad(eta, 1.2), atol=1e-12)


def test_prop1b_gaussian_base_is_cor1():
    mu, S = jnp.array([0.5, -1.0]), jnp.array([[1.0, 0.3], [0.3, 0.5]])
    a, b = gaussian_natural(mu, S), Gaussian(mu, S)
    eta = jnp.array([0.7, 0.2])
    assert float(a.log_normalizer(eta, 2.0)) == pytest.approx(float(b.log_normalizer(eta, 2.0)), abs=1e-12)
    np.testing.assert_allclose(a.mean(eta, 2.0), b.mean(eta, 2.0), atol=1e-12)
    np.testing.assert_allclose(a.fisher(eta), b.fisher(eta), atol=1e-12)


def test_log_sum_exp_is_stable_at_extreme_scales():
    d = Discrete(jnp.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]))
    eta = jnp.array([1.0, 0.5])
    for beta in (1e3, 1e5):
        assert np.isfinite(float(d.log_normalizer(eta, beta)))
        np.testing.assert_allclose(d.mean(eta, beta), [1.0, 0.0], atol=1e-12)
