"""Token-cloud operators: properties over every normalization, Theorem 1, clustering and expansion."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.clouds import (
    NORMS,
    attention_step,
    cloud_statistics,
    initial_cloud,
    layernorm,
    push_gaussian,
    renormalize,
    renormalize_population,
    rmsnorm,
    run_cloud,
    sphere,
    standard_layer,
    theorem1_affine,
)
from attnphys.expfam import Gaussian


@pytest.fixture
def X():
    return jnp.asarray(np.random.default_rng(0).normal(size=(200, 6)) * [1, 2, 0.5, 1, 3, 1] + 0.7)


@pytest.mark.parametrize("norm", sorted(NORMS))
def test_every_normalization_is_idempotent_and_finite(norm, X):
    f = NORMS[norm]()
    Y = f(X)
    assert Y.shape == X.shape and bool(jnp.all(jnp.isfinite(Y)))
    np.testing.assert_allclose(f(Y), Y, rtol=1e-4, atol=1e-5)


def test_normalization_invariants(X):
    Y = layernorm(X)
    np.testing.assert_allclose(Y.mean(1), 0, atol=1e-12)
    v = X.var(1)
    np.testing.assert_allclose(Y.var(1), v / (v + 1e-5), rtol=1e-12)  # unit variance up to eps
    np.testing.assert_allclose(jnp.mean(rmsnorm(X) ** 2, 1), 1, rtol=1e-5)
    np.testing.assert_allclose(jnp.linalg.norm(sphere(X, 2.5), axis=1), 2.5, rtol=1e-12)
    L0 = jnp.asarray([[2.0, 0.3, 0, 0, 0, 0], [0.3, 1, 0, 0, 0, 0]] + [[0] * i + [1.0] + [0] * (5 - i) for i in range(2, 6)])
    R = renormalize(X, jnp.arange(6.0), L0)
    np.testing.assert_allclose(R.mean(0), jnp.arange(6.0), atol=1e-12)
    np.testing.assert_allclose(jnp.cov(R, rowvar=False, bias=True), L0, atol=1e-10)
    g, b = jnp.linspace(0.5, 2, 6), jnp.ones(6)
    np.testing.assert_allclose(layernorm(X, g, b), layernorm(X) * g + b, atol=1e-12)


def test_attention_step_with_weights_and_heads(X):
    rng = np.random.default_rng(1)
    W, Wv = jnp.asarray(rng.normal(size=(6, 6))), jnp.asarray(rng.normal(size=(6, 6)))
    P = jax.nn.softmax(0.3 * X @ W @ X.T, axis=-1)
    np.testing.assert_allclose(attention_step(X, 0.3, W, Wv, alpha=0.5), X + 0.5 * P @ X @ Wv.T, atol=1e-12)
    two = attention_step(X, 0.3, jnp.stack([W, W.T]), jnp.stack([Wv, Wv]))
    P2 = jax.nn.softmax(0.3 * X @ W.T @ X.T, axis=-1)
    np.testing.assert_allclose(two, X + (P + P2) @ X @ Wv.T, atol=1e-12)


@pytest.mark.slow
def test_theorem1_exact_and_sampled():
    rng = np.random.default_rng(2)
    D = 4
    A_ = rng.normal(size=(D, D))
    S = jnp.asarray(A_ @ A_.T / D + 0.5 * np.eye(D))
    mu = jnp.asarray(rng.normal(size=D))
    Sinv = jnp.linalg.inv(S)
    A, b = theorem1_affine(mu, S)
    eta = jnp.asarray(rng.normal(size=D))
    np.testing.assert_allclose(A @ eta + b, eta + Gaussian(mu, S).mean(eta), atol=1e-14)  # η + ∇ log Z
    m1, c1 = push_gaussian(Sinv @ mu, Sinv, A, b)
    T, c = renormalize_population(m1, c1, Sinv @ mu, Sinv)
    m2, c2 = push_gaussian(m1, c1, T, c)
    np.testing.assert_allclose(m2, Sinv @ mu, atol=1e-12)
    np.testing.assert_allclose(c2, Sinv, atol=1e-12)
    # by sampling: RN with the cloud's own statistics restores p_eq, and the cloud stays Gaussian
    samples = jax.random.multivariate_normal(jax.random.PRNGKey(0), Sinv @ mu, Sinv, (100_000,))
    out = renormalize(samples @ A.T + b, Sinv @ mu, Sinv)
    np.testing.assert_allclose(out.mean(0), Sinv @ mu, atol=1e-10)
    np.testing.assert_allclose(jnp.cov(out, rowvar=False, bias=True), Sinv, atol=1e-10)
    st = cloud_statistics(out[:4000])
    assert abs(st["mardia_kurtosis_ratio"] - 1) < 0.03 and st["mardia_skewness"] < 0.05


def test_sphere_projection_with_identity_weights_clusters():
    """Tokens on the sphere under self-attention collapse into few angular clusters (Geshkovski et al.)."""
    X0 = initial_cloud("sphere", 256, 3, seed=1, dtype=jnp.float64)
    ds = run_cloud(X0, standard_layer("sphere", beta=4.0, alpha=0.5), layers=200, stats_every=50)
    assert ds.clusters.values[0] > 100
    assert ds.clusters.values[-1] <= 4
    assert np.all(np.diff(ds.clusters.values) <= 0)


def test_residual_attention_expands_a_centred_isotropic_gaussian():
    X0 = initial_cloud("gaussian", 1024, 16, seed=2, dtype=jnp.float64)
    ds = run_cloud(X0, standard_layer("none", beta=4.0), layers=3, stats_every=1)
    assert np.all(np.diff(ds.radial_mean.values) > 0)
    assert np.all(np.diff(ds.cov_trace.values) > 0)
    assert ds.moved_apart.values[1] > 0.9  # nearly every pair of tokens moved apart


@pytest.mark.slow
def test_layernorm_contracts_what_attention_expanded():
    X0 = initial_cloud("gaussian", 512, 16, seed=3, dtype=jnp.float64) * 4.0
    expanded = attention_step(X0, beta=0.25)
    s_exp, s_norm = cloud_statistics(expanded), cloud_statistics(layernorm(expanded))
    assert s_norm["cov_trace"] < s_exp["cov_trace"] and s_norm["radial_std"] < 1e-3
