"""Statistics of a token cloud X ∈ R^{N×D} (theory: docs/theory/clouds.md §5).

They are all reported because they disagree on real data: covariance trace; Gaussian entropy
½ log det(2πe Σ) over the eigenvalues above a floor (with the rank used); Kozachenko–Leonenko k-NN
entropy; mean pairwise distance; angular spread 1 − mean cos; participation ratio (tr Σ)²/tr Σ²;
radial part (mean and std of ‖x‖) vs angular part (mean pairwise cosine); fraction of token pairs
moved apart since the previous snapshot; distance to the fitted Gaussian (Mardia skewness b₁ and
kurtosis ratio b₂/(D(D+2)), energy distance to a sample of the fitted Gaussian); angular cluster count
(connected components of cos > 1 − δ).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy.special import digamma, gammaln

from attnphys.clouds._blas import single_threaded

STATISTICS = (
    "cov_trace",
    "gaussian_entropy",
    "cov_rank",
    "knn_entropy",
    "mean_pairwise_distance",
    "angular_spread",
    "participation_ratio",
    "radial_mean",
    "radial_std",
    "mean_cosine",
    "moved_apart",
    "mardia_skewness",
    "mardia_kurtosis_ratio",
    "energy_distance_gaussian",
    "clusters",
)


LONG_NAMES = {
    "cov_trace": "trace of the covariance of the tokens",
    "gaussian_entropy": "Gaussian entropy 0.5 log det(2 pi e Sigma) over the covariance eigenvalues above the floor",
    "cov_rank": "number of covariance eigenvalues above the floor",
    "knn_entropy": "Kozachenko-Leonenko k-nearest-neighbour entropy estimate (k = 3)",
    "mean_pairwise_distance": "mean distance between two distinct tokens",
    "angular_spread": "1 - mean cosine between two distinct tokens",
    "participation_ratio": "participation ratio (tr Sigma)^2 / tr Sigma^2",
    "radial_mean": "mean token norm",
    "radial_std": "standard deviation of the token norms",
    "mean_cosine": "mean cosine between two distinct tokens",
    "moved_apart": "fraction of token pairs farther apart than at the previous record",
    "mardia_skewness": "Mardia's multivariate skewness b1 (0 for a Gaussian)",
    "mardia_kurtosis_ratio": "Mardia's kurtosis b2 / (D (D + 2)) (1 for a Gaussian)",
    "energy_distance_gaussian": "energy distance to a sample of the fitted Gaussian",
    "clusters": "angular clusters: connected components of cos > 1 - delta",
}
"""CF ``long_name`` of every statistic."""


def _sqdist(X, Y):
    d = jnp.sum(X**2, 1)[:, None] + jnp.sum(Y**2, 1)[None, :] - 2 * X @ Y.T
    return jnp.maximum(d, 0.0)


def gaussian_entropy(X, floor=1e-10):
    """(½ Σ_{λ>floor·λmax} log(2πe λ), rank) of the sample covariance (theory: docs/theory/clouds.md §5.2)."""
    lam = jnp.linalg.eigvalsh(jnp.cov(X, rowvar=False, bias=True))
    keep = lam > floor * jnp.max(lam)
    return 0.5 * jnp.sum(jnp.where(keep, jnp.log(2 * jnp.pi * jnp.e * jnp.where(keep, lam, 1.0)), 0.0)), jnp.sum(keep)


def knn_entropy(X, k: int = 3):
    """Kozachenko–Leonenko: H ≈ ψ(N) − ψ(k) + log V_D + (D/N) Σ_i log ε_i, ε_i the distance to the k-th
    nearest neighbour, V_D the unit-ball volume. Distances of duplicated points are floored at the
    smallest normal number of the dtype (theory: docs/theory/clouds.md §5.2)."""
    N, D = X.shape
    d2 = _sqdist(X, X) + jnp.diag(jnp.full(N, jnp.inf, X.dtype))
    rows = jnp.arange(N)
    for _ in range(k - 1):  # remove the k − 1 nearest (one per pass, ties kept): k row-minima beat a full top_k
        d2 = d2.at[rows, jnp.argmin(d2, axis=1)].set(jnp.inf)
    kth = jnp.min(d2, axis=1)
    log_vd = 0.5 * D * jnp.log(jnp.pi) - gammaln(0.5 * D + 1)
    return digamma(N) - digamma(k) + log_vd + 0.5 * D * jnp.mean(jnp.log(jnp.maximum(kth, jnp.finfo(X.dtype).tiny)))


def _offdiag_mean(M):
    N = M.shape[0]
    return (jnp.sum(M) - jnp.trace(M)) / (N * (N - 1))


def mardia(X):
    """Mardia's b₁ (skewness, 0 for a Gaussian) and b₂/(D(D+2)) (kurtosis ratio, 1 for a Gaussian)
    (theory: docs/theory/clouds.md §5.4)."""
    N, D = X.shape
    Z = X - X.mean(0)
    S = jnp.cov(X, rowvar=False, bias=True)
    w, V = jnp.linalg.eigh(S)
    w = jnp.maximum(w, 1e-12 * jnp.max(w))
    G = (Z @ V / w) @ (V.T @ Z.T)
    return jnp.mean(G**3), jnp.mean(jnp.diag(G) ** 2) / (D * (D + 2))


def energy_distance(X, Y):
    """2 E‖X − Y‖ − E‖X − X'‖ − E‖Y − Y'‖ (V-statistic) (theory: docs/theory/clouds.md §5.4)."""
    return 2 * jnp.mean(jnp.sqrt(_sqdist(X, Y))) - jnp.mean(jnp.sqrt(_sqdist(X, X))) - jnp.mean(jnp.sqrt(_sqdist(Y, Y)))


def fitted_gaussian_sample(key, mean, cov, n: int):
    """n draws from N(x̄, Σ) (mean (D,), cov (D, D): a cloud's fitted Gaussian) as x̄ + Z Λ^(1/2) Vᵀ with
    Σ = V Λ Vᵀ and Z (n, D) standard normal (theory: docs/theory/clouds.md §5.4). Through the
    eigendecomposition, with the eigenvalues clipped at 0, a singular Σ — N ≤ D tokens, or LayerNorm
    outputs, which have rank D − 1 — is sampled on its support (a Cholesky factor does not exist there).
    Returns (n, D)."""
    w, V = jnp.linalg.eigh(cov)
    Z = jax.random.normal(key, (n, mean.shape[0]), mean.dtype)
    return mean + (Z * jnp.sqrt(jnp.maximum(w, 0.0))) @ V.T


@jax.jit
def _device_stats(X, X_prev, key):
    N = X.shape[0]
    C = jnp.cov(X, rowvar=False, bias=True)
    tr = jnp.trace(C)
    ent, rank = gaussian_entropy(X)
    d2 = _sqdist(X, X)
    dist = jnp.sqrt(d2)
    norms = jnp.linalg.norm(X, axis=1)
    U = X / jnp.maximum(norms, 1e-300)[:, None]
    cos = U @ U.T
    moved = _offdiag_mean((dist > jnp.sqrt(_sqdist(X_prev, X_prev))).astype(X.dtype))
    b1, b2 = mardia(X)
    ref = fitted_gaussian_sample(key, X.mean(0), C, N)
    return dict(
        cov_trace=tr,
        gaussian_entropy=ent,
        cov_rank=rank.astype(X.dtype),
        knn_entropy=knn_entropy(X),
        mean_pairwise_distance=_offdiag_mean(dist),
        angular_spread=1.0 - _offdiag_mean(cos),
        participation_ratio=tr**2 / jnp.sum(C * C),
        radial_mean=jnp.mean(norms),
        radial_std=jnp.std(norms),
        mean_cosine=_offdiag_mean(cos),
        moved_apart=moved,
        mardia_skewness=b1,
        mardia_kurtosis_ratio=b2,
        energy_distance_gaussian=energy_distance(X, ref),
    ), cos


def cluster_count(cos, delta: float = 1e-3) -> int:
    """Angular clusters: connected components of the graph cos_ij > 1 − δ (label propagation on the
    device: every token takes the smallest label among its neighbours until nothing changes)
    (theory: docs/theory/clouds.md §5.5)."""
    return int(_components(jnp.asarray(cos) > 1 - delta))


@jax.jit
def _components(adj):
    N = adj.shape[0]
    adj = adj | jnp.eye(N, dtype=bool)

    def body(c):
        labels, _ = c
        new = jnp.min(jnp.where(adj, labels[None, :], N), axis=1)
        new = new[new]  # pointer jumping: follow labels to their own labels
        return new, jnp.any(new != labels)

    labels, _ = jax.lax.while_loop(lambda c: c[1], body, (jnp.arange(N), jnp.asarray(True)))
    return jnp.sum(labels == jnp.arange(N))


def cloud_statistics(X, X_prev=None, key=None, cluster_delta: float = 1e-3) -> dict[str, float]:
    """All :data:`STATISTICS` of the cloud X (N, D); ``moved_apart`` compares with ``X_prev`` (NaN if None)
    (theory: docs/theory/clouds.md §5). The covariance eigendecomposition and Cholesky factor run on one
    BLAS thread: at D of a few hundred a threaded LAPACK call is several times slower, and much slower on a
    busy machine."""
    X = jnp.asarray(X)
    key = jax.random.PRNGKey(0) if key is None else key
    with single_threaded():  # the D × D eigh and Cholesky: one BLAS thread (see attnphys.clouds._blas)
        out, cos = _device_stats(X, X if X_prev is None else jnp.asarray(X_prev), key)
        res = {k: float(v) for k, v in out.items()}
    if X_prev is None:
        res["moved_apart"] = float("nan")
    res["clusters"] = float(cluster_count(cos, cluster_delta))
    return res
