"""Property tests over every base measure (theory: docs/theory/expfam.md §1–5).

The tests that take a ``measure`` run over every concrete subclass of ``AbstractBaseMeasure``
(``measure_classes()``), each instance built by the class's own ``example``: a new base measure gets
them for free.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.expfam import (
    AbstractBaseMeasure,
    Discrete,
    ExpFamilyBase,
    Gaussian,
    GaussianMixture,
    GaussianMixtureFull,
    bregman,
    conjugate_discrete,
    conjugate_gaussian,
    conjugate_numeric,
    entropy_discrete,
    entropy_gaussian,
    gaussian_natural,
    grad_log_normalizer,
    kl_discrete,
    kl_gaussian,
    kl_monte_carlo,
    log_normalizer_monte_carlo,
    measure_classes,
)

CLASSES = measure_classes()


@pytest.fixture(params=CLASSES, ids=lambda c: c.__name__)
def measure(request):
    return request.param.example(jax.random.PRNGKey(42), 3)


def test_every_variant_is_under_test():
    assert {c.__name__ for c in CLASSES} >= {"Discrete", "Gaussian", "GaussianMixture", "GaussianMixtureFull",
                                             "ExpFamilyBase"}
    with pytest.raises(TypeError):
        AbstractBaseMeasure()

    class NoExample(AbstractBaseMeasure):  # an incomplete variant cannot be built, and is not listed
        def log_normalizer(self, eta, beta=1.0): ...
        def mean(self, eta, beta=1.0): ...
        def fisher(self, eta, beta=1.0): ...
        def sample_base(self, key, n): ...
        def sample(self, key, eta, n, beta=1.0): ...

    with pytest.raises(TypeError, match="example"):
        NoExample()
    assert NoExample not in measure_classes()


@pytest.mark.slow
@pytest.mark.parametrize("beta", [0.5, 1.0, 2.3])
def test_autodiff_gradient_is_mean(measure, beta):
    eta = jnp.array([0.3, -0.2, 0.5])
    np.testing.assert_allclose(jax.grad(measure.log_normalizer)(eta, beta) / beta, measure.mean(eta, beta), atol=1e-12)
    np.testing.assert_allclose(grad_log_normalizer(measure, eta, beta), beta * measure.mean(eta, beta), atol=1e-14)


@pytest.mark.slow
def test_autodiff_hessian_is_fisher_and_sampled_covariance(measure):
    eta = jnp.array([0.3, -0.2, 0.5])
    F = measure.fisher(eta, 1.3)
    np.testing.assert_allclose(jax.hessian(measure.log_normalizer)(eta, 1.3) / 1.3**2, F, atol=1e-12)
    np.testing.assert_allclose(F, F.T, atol=1e-14)
    assert np.all(np.linalg.eigvalsh(np.asarray(F)) > -1e-12)
    x = measure.sample(jax.random.PRNGKey(1), eta, 300_000, 1.3)
    np.testing.assert_allclose(jnp.cov(x, rowvar=False), F, atol=0.04 * float(jnp.max(jnp.abs(F))))
    np.testing.assert_allclose(x.mean(0), measure.mean(eta, 1.3), atol=0.02 * (1 + float(jnp.max(jnp.abs(F)))))


@pytest.mark.slow
def test_base_sampler_moments_are_the_family_at_zero(measure):
    """h itself is p(· | 0): its samples have mean E_0[x] and covariance F(0)."""
    zero = jnp.zeros(3)
    F0 = measure.fisher(zero)
    x = measure.sample_base(jax.random.PRNGKey(2), 200_000)
    assert x.shape == (200_000, 3)
    np.testing.assert_allclose(x.mean(0), measure.mean(zero), atol=0.02 * (1 + float(jnp.max(jnp.abs(F0)))))
    np.testing.assert_allclose(jnp.cov(x, rowvar=False), F0, atol=0.04 * float(jnp.max(jnp.abs(F0))))


def test_the_base_measure_is_normalised_and_beta_scales_eta(measure):
    """G(0) = log ∫h = 0; G_β(η) = G_1(βη), E_β[x](η) = E_1[x](βη), F_β(η) = F_1(βη)."""
    eta, beta = jnp.array([0.4, 0.1, -0.6]), 1.7
    assert abs(float(measure.log_normalizer(jnp.zeros(3), beta))) < 1e-13
    assert float(measure.log_normalizer(eta, beta)) == pytest.approx(float(measure.log_normalizer(beta * eta)), abs=1e-12)
    np.testing.assert_allclose(measure.mean(eta, beta), measure.mean(beta * eta), atol=1e-12)
    np.testing.assert_allclose(measure.fisher(eta, beta), measure.fisher(beta * eta), atol=1e-12)


@pytest.mark.slow
def test_jit_and_vmap_agree_with_eager(measure):
    etas = jnp.asarray(np.random.default_rng(0).normal(size=(5, 3)) * 0.5)
    G = eqx.filter_jit(lambda m, e: jax.vmap(m.log_normalizer, in_axes=(0, None))(e, 1.2))(measure, etas)
    M = jax.vmap(measure.mean, in_axes=(0, None))(etas, 1.2)
    for i in range(5):
        assert float(G[i]) == pytest.approx(float(measure.log_normalizer(etas[i], 1.2)), abs=1e-12)
        np.testing.assert_allclose(M[i], measure.mean(etas[i], 1.2), atol=1e-12)


@pytest.mark.slow
def test_monte_carlo_log_normalizer(measure):
    eta = jnp.array([0.2, 0.1, -0.3])
    mc = log_normalizer_monte_carlo(measure, eta, jax.random.PRNGKey(3), n=400_000)
    assert float(mc) == pytest.approx(float(measure.log_normalizer(eta)), abs=0.01)


def test_bregman_is_kl_with_the_right_argument_order(measure):
    e1, e2 = jnp.array([0.4, -0.3, 0.1]), jnp.array([-0.2, 0.5, 0.3])
    b = float(bregman(measure, e1, e2))
    kl = float(kl_monte_carlo(measure, e2, e1, jax.random.PRNGKey(5), n=400_000))  # KL(p_η2 ‖ p_η1)
    assert b >= 0 and b == pytest.approx(kl, abs=0.01 + 0.02 * b)


def test_conjugate_at_the_mean_is_the_numeric_sup(measure):
    """G*(μ) at μ = ∇G(η): L-BFGS sup (autodiff of G only) = the measure's closed form, attained at η."""
    eta = jnp.array([0.5, -0.4, 0.2])
    mu = grad_log_normalizer(measure, eta, 1.4)
    val, eta_star = conjugate_numeric(measure, mu, beta=1.4)
    assert val == pytest.approx(float(measure.conjugate_at(eta, 1.4)), abs=1e-8)
    assert val == pytest.approx(float(eta @ mu - measure.log_normalizer(eta, 1.4)), abs=1e-8)  # Fenchel–Young
    np.testing.assert_allclose(grad_log_normalizer(measure, jnp.asarray(eta_star), 1.4), mu, atol=1e-6)


def test_conjugate_at_the_mean_is_kl_from_the_base(measure):
    """G*(∇G(η)) = KL(p(·|η) ‖ h) = B_G(0, η), and by sampling the tilted distribution."""
    eta = jnp.array([0.3, 0.2, -0.4])
    c = float(measure.conjugate_at(eta))
    assert c > 0
    assert c == pytest.approx(float(bregman(measure, jnp.zeros(3), eta)), abs=1e-12)
    mc = float(kl_monte_carlo(measure, eta, jnp.zeros(3), jax.random.PRNGKey(6), n=400_000))
    assert c == pytest.approx(mc, abs=0.01 + 0.02 * c)


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
    # the closed form for any μ agrees with conjugate_at at μ = ∇G(η)
    assert float(conjugate_gaussian(g, grad_log_normalizer(g, eta, 1.5), 1.5)) == pytest.approx(
        float(g.conjugate_at(eta, 1.5)), abs=1e-12)


def test_gaussian_entropy_matches_samples():
    """H = ½ log det(2πeΣ) = −E[log N(x; m, Σ)], estimated from samples of the tilted Gaussian."""
    g = Gaussian.example(jax.random.PRNGKey(7), 3)
    eta = jnp.array([0.3, -0.1, 0.2])
    x = g.sample(jax.random.PRNGKey(8), eta, 200_000)
    logp = jax.scipy.stats.multivariate_normal.logpdf(x, g.mean(eta), g.cov)
    assert float(entropy_gaussian(g, eta)) == pytest.approx(float(-logp.mean()), abs=0.02)


def test_jensen_lower_bound_and_its_gradient():
    m = GaussianMixtureFull.example(jax.random.PRNGKey(3), 3)
    assert isinstance(m, GaussianMixtureFull)
    gaps = []
    for eta in np.random.default_rng(4).normal(size=(50, 3)):
        eta = jnp.asarray(eta)
        assert float(m.lower_bound(eta, 1.2)) <= float(m.log_normalizer(eta, 1.2)) + 1e-14
        np.testing.assert_allclose(jax.grad(m.lower_bound)(eta, 1.2), m.lower_bound_grad(eta, 1.2), atol=1e-12)
        gaps.append(float(m.log_normalizer(eta, 1.2) - m.lower_bound(eta, 1.2)))
    assert max(gaps) > 1e-2  # the bound is not tight for distinct components


def test_shared_covariance_mixture_is_the_full_mixture_with_equal_covariances():
    m = GaussianMixture.example(jax.random.PRNGKey(9), 3)
    full = GaussianMixtureFull(m.means, jnp.broadcast_to(m.cov, (4, 3, 3)), jnp.exp(m.log_weights))
    eta = jnp.array([0.7, -0.3, 0.4])
    assert float(m.log_normalizer(eta, 0.9)) == pytest.approx(float(full.log_normalizer(eta, 0.9)), abs=1e-12)
    np.testing.assert_allclose(m.mean(eta, 0.9), full.mean(eta, 0.9), atol=1e-12)
    np.testing.assert_allclose(m.fisher(eta, 0.9), full.fisher(eta, 0.9), atol=1e-12)


@pytest.mark.slow
def test_prop1b_gaussian_base_is_cor1():
    mu, S = jnp.array([0.5, -1.0]), jnp.array([[1.0, 0.3], [0.3, 0.5]])
    a, b = gaussian_natural(mu, S), Gaussian(mu, S)
    eta = jnp.array([0.7, 0.2])
    assert float(a.log_normalizer(eta, 2.0)) == pytest.approx(float(b.log_normalizer(eta, 2.0)), abs=1e-12)
    np.testing.assert_allclose(a.mean(eta, 2.0), b.mean(eta, 2.0), atol=1e-12)
    np.testing.assert_allclose(a.fisher(eta), b.fisher(eta), atol=1e-12)


def test_expfam_base_without_sampler_says_so():
    a = gaussian_natural(jnp.zeros(2), jnp.eye(2))
    bare = ExpFamilyBase(a.log_partition, a.eta1, a.eta2)
    with pytest.raises(NotImplementedError, match="sampler"):
        bare.sample_base(jax.random.PRNGKey(0), 10)


def test_log_sum_exp_is_stable_at_extreme_scales():
    d = Discrete(jnp.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]))
    eta = jnp.array([1.0, 0.5])
    for beta in (1e3, 1e5):
        assert np.isfinite(float(d.log_normalizer(eta, beta)))
        np.testing.assert_allclose(d.mean(eta, beta), [1.0, 0.0], atol=1e-12)


@pytest.mark.slow
def test_attention_weights_are_the_tilted_distribution():
    """Prop. 1(a): with uniform π and scale 1/√d, p(k_j | q) = softmax(qᵀk_j/√d) and E[x] = attention output."""
    rng = np.random.default_rng(5)
    K, q = jnp.asarray(rng.normal(size=(8, 4))), jnp.asarray(rng.normal(size=4))
    d = Discrete(K)
    w = jax.nn.softmax(K @ q / 2.0)
    np.testing.assert_allclose(d.probs(q, 0.5), w, atol=1e-14)
    np.testing.assert_allclose(d.mean(q, 0.5), w @ K, atol=1e-14)
    x = d.sample(jax.random.PRNGKey(0), q, 100_000, 0.5)
    freq = (x[:, None, :] == K[None]).all(-1).mean(0)
    np.testing.assert_allclose(freq, w, atol=0.01)
