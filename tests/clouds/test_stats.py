import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.clouds import cloud_statistics, cluster_count, gaussian_entropy, knn_entropy, mardia


@pytest.mark.slow
def test_entropies_of_a_gaussian_sample_match_the_closed_form():
    cov = np.diag([1.0, 0.5, 2.0])
    X = jnp.asarray(np.random.default_rng(0).multivariate_normal(np.zeros(3), cov, size=5000))
    exact = 0.5 * np.log(np.linalg.det(2 * np.pi * np.e * cov))
    ent, rank = gaussian_entropy(X)
    assert float(ent) == pytest.approx(exact, abs=0.03) and int(rank) == 3
    assert float(knn_entropy(X)) == pytest.approx(exact, abs=0.08)


def test_gaussian_entropy_reports_the_rank_of_a_flat_cloud():
    X = np.random.default_rng(1).normal(size=(500, 4))
    X = X - X.mean(1, keepdims=True)  # LayerNorm-like: rows sum to 0, rank D − 1
    assert int(gaussian_entropy(jnp.asarray(X))[1]) == 3


def test_mardia_separates_gaussian_from_uniform():
    rng = np.random.default_rng(2)
    b1, b2 = mardia(jnp.asarray(rng.normal(size=(4000, 3))))
    assert float(b1) < 0.02 and float(b2) == pytest.approx(1.0, abs=0.03)
    _, b2u = mardia(jnp.asarray(rng.uniform(-1, 1, size=(4000, 3))))
    assert float(b2u) == pytest.approx(11.4 / 15, abs=0.03)  # uniform: (3·1.8 + 6)/15, platykurtic


@pytest.mark.slow
def test_statistics_of_known_clouds():
    rng = np.random.default_rng(3)
    X = jnp.asarray(rng.normal(size=(2000, 8)))
    s = cloud_statistics(X)
    assert s["participation_ratio"] == pytest.approx(8, rel=0.05)
    assert s["cov_trace"] == pytest.approx(8, rel=0.05)
    assert abs(s["mean_cosine"]) < 0.01 and s["angular_spread"] == pytest.approx(1.0, abs=0.01)
    assert np.isnan(s["moved_apart"])
    assert cloud_statistics(2 * X, X)["moved_apart"] == 1.0
    assert s["energy_distance_gaussian"] < 0.05


def test_cluster_count():
    dirs = np.eye(3)
    X = np.concatenate([d + 1e-4 * np.random.default_rng(i).normal(size=(50, 3)) for i, d in enumerate(dirs)])
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    assert cluster_count(Xn @ Xn.T, 1e-3) == 3


def test_single_threaded_blas_sets_one_thread_and_restores():
    import jax.numpy as jnp

    from attnphys.clouds._blas import blas_threads, single_threaded

    jnp.linalg.eigh(jnp.eye(3)).eigenvalues.block_until_ready()  # loads the LAPACK behind jaxlib
    before = blas_threads()
    assert before, "no BLAS library found in this process"
    with single_threaded():
        assert blas_threads() == [1] * len(before)
    assert blas_threads() == before


def test_statistics_on_one_blas_thread_equal_the_default_threading():
    """cloud_statistics (one BLAS thread for eigh and Cholesky) against the same device computation under
    the process's default BLAS threading, on a fixed well-conditioned cloud of a model's width (float32: the sampled energy distance moves by ~1e-4 relative
    with the summation order of the threads)."""
    import jax

    from attnphys.clouds.stats import cluster_components, device_stats

    rng = np.random.default_rng(7)
    N, D = 512, 192
    A = rng.normal(size=(D, D)) / np.sqrt(D) + np.eye(D)
    X = jnp.asarray((rng.normal(size=(N, D)) @ A + 0.3).astype(np.float32))
    X_prev = jnp.asarray((np.asarray(X) + rng.normal(size=(N, D))).astype(np.float32))
    key = jax.random.PRNGKey(11)
    out, cos = device_stats(X, X_prev, key)
    ref = {k: float(v) for k, v in out.items()}
    ref["clusters"] = float(cluster_components(cos > 1 - 1e-3))
    new = cloud_statistics(X, X_prev, key)
    assert set(new) == set(ref)
    for k in ref:
        assert new[k] == pytest.approx(ref[k], rel=2e-4, abs=1e-6), k


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("N, D", [(2000, 8), (29, 64)])
def test_energy_distance_of_a_singular_gaussian_cloud(N, D, dtype):
    """LayerNorm outputs (mean removed, unit variance per token) have a rank D − 1 covariance, and N ≤ D
    tokens a rank N − 1 one: the fitted Gaussian is sampled on its support, so the distance is finite and
    small for a Gaussian cloud (a Cholesky factor of the singular covariance gives NaN or nonsense)."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(N, D))
    X = X - X.mean(1, keepdims=True)  # the LayerNorm centring: every token ⟂ (1, …, 1)
    X = X / X.std(1, keepdims=True)
    e = cloud_statistics(X.astype(dtype))["energy_distance_gaussian"]
    assert np.isfinite(e) and -0.05 < e < (0.05 if N > D else 1.5)
    far = cloud_statistics(np.sign(X).astype(dtype))["energy_distance_gaussian"]
    assert far > e  # a cloud on the corners of a cube is farther from its fitted Gaussian


def _mardia_direct(X):
    """b1, b2/(D(D+2)) straight from the N × N matrix G = Z S⁻¹ Zᵀ."""
    Z = X - X.mean(0)
    S = np.cov(X, rowvar=False, bias=True)
    G = Z @ np.linalg.solve(S, Z.T)
    D = X.shape[1]
    return np.mean(G**3), np.mean(np.diag(G) ** 2) / (D * (D + 2))


def test_mardia_in_blocks_matches_the_direct_formula(monkeypatch):
    import attnphys.clouds.stats as st

    X = np.random.default_rng(4).standard_t(5, size=(1500, 4))
    monkeypatch.setattr(st, "MARDIA_BLOCK_ELEMENTS", 1500 * 7)  # 7 rows per block, the last one padded
    b1, b2 = st.mardia(jnp.asarray(X))
    np.testing.assert_allclose([float(b1), float(b2)], _mardia_direct(X), rtol=1e-10)


def test_mardia_gaussian_null_is_the_mean_over_gaussian_samples():
    """Monte Carlo over 400 Gaussian samples of 60 points in 3 dimensions against Mardia's exact means."""
    from attnphys.clouds.stats import mardia_null

    rng = np.random.default_rng(5)
    vals = np.array([_mardia_direct(rng.normal(size=(60, 3))) for _ in range(400)])
    null = mardia_null(60, 3)
    se = vals.std(0) / np.sqrt(len(vals))
    assert np.all(np.abs(vals.mean(0) - null) < 4 * se)
    s = cloud_statistics(rng.normal(size=(60, 3)))
    assert (s["mardia_skewness_null"], s["mardia_kurtosis_ratio_null"]) == pytest.approx(null)


def test_knn_entropy_is_undefined_where_tokens_coincide():
    X = np.random.default_rng(6).normal(size=(200, 4))
    assert np.isfinite(float(knn_entropy(jnp.asarray(X))))
    X[:4] = X[0]  # four tokens at one point: the 3rd neighbour of each is at distance 0
    assert np.isnan(float(knn_entropy(jnp.asarray(X))))
    X[:4] = X[0] + 1e-6 * np.arange(4)[:, None]  # close, not coincident: defined (and small)
    assert np.isfinite(float(knn_entropy(jnp.asarray(X))))


def test_a_cloud_with_nan_has_no_statistics():
    from attnphys.clouds.stats import device_stats
    from attnphys.errors import InputError

    X = np.random.default_rng(7).normal(size=(50, 3))
    X[3, 1] = np.nan
    with pytest.raises(InputError, match="non-finite entries .*token 3, dimension 1"):
        cloud_statistics(X)
    import jax

    out, _ = device_stats(jnp.asarray(X), jnp.asarray(X), jax.random.PRNGKey(0))
    assert all(np.isnan(float(v)) for v in out.values())


def test_a_cloud_too_large_for_pairwise_statistics_is_refused(monkeypatch):
    import attnphys.errors as errors
    from attnphys.errors import ResourceError

    monkeypatch.setattr(errors, "memory_budget", lambda: (2**20, "a 1 MiB budget"))
    with pytest.raises(ResourceError, match="pairwise statistics of 400 tokens.*a 1 MiB budget"):
        cloud_statistics(np.zeros((400, 3)))
