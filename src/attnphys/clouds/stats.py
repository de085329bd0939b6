"""Statistics of a token cloud X ∈ R^{N×D} (theory: docs/theory/clouds.md §5).

They are all reported because they disagree on real data: covariance trace; Gaussian entropy
½ log det(2πe Σ) over the eigenvalues above a floor (with the rank used); Kozachenko–Leonenko k-NN
entropy; mean pairwise distance; angular spread 1 − mean cos; participation ratio (tr Σ)²/tr Σ²;
radial part (mean and std of ‖x‖) vs angular part (mean pairwise cosine); fraction of token pairs
moved apart since the previous snapshot; distance to the fitted Gaussian (Mardia skewness b₁ and
kurtosis ratio b₂/(D(D+2)), each beside its value for a Gaussian sample of the same size, and energy
distance to a sample of the fitted Gaussian); angular cluster count (connected components of cos > 1 − δ).

A cloud with a non-finite entry has no statistics: :func:`cloud_statistics` refuses it, and the compiled
functions return NaN for it. The k-NN entropy is undefined (NaN) where more than k tokens coincide.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import digamma, gammaln

from attnphys._arguments import checked
from attnphys._arguments import number as number_rule
from attnphys.clouds._blas import single_threaded
from attnphys.errors import InputError, check_fits

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
    "mardia_skewness_null",
    "mardia_kurtosis_ratio_null",
)


LONG_NAMES = {
    "cov_trace": "trace of the covariance of the tokens",
    "gaussian_entropy": "Gaussian entropy 0.5 log det(2 pi e Sigma) over the covariance eigenvalues above the floor",
    "cov_rank": "number of covariance eigenvalues above the floor",
    "knn_entropy": "Kozachenko-Leonenko k-nearest-neighbour entropy estimate (k = 3); NaN where more than 3 "
    "tokens coincide (a k-th neighbour distance of 0: undefined)",
    "mean_pairwise_distance": "mean distance between two distinct tokens",
    "angular_spread": "1 - mean cosine between two distinct tokens",
    "participation_ratio": "participation ratio (tr Sigma)^2 / tr Sigma^2",
    "radial_mean": "mean token norm",
    "radial_std": "standard deviation of the token norms",
    "mean_cosine": "mean cosine between two distinct tokens",
    "moved_apart": "fraction of token pairs farther apart than at the previous record",
    "mardia_skewness": "Mardia's multivariate skewness b1 (compare mardia_skewness_null)",
    "mardia_kurtosis_ratio": "Mardia's kurtosis b2 / (D (D + 2)) (compare mardia_kurtosis_ratio_null)",
    "mardia_skewness_null": "mean of Mardia's b1 over Gaussian samples of the same N and D (exact)",
    "mardia_kurtosis_ratio_null": "mean of Mardia's b2 / (D (D + 2)) over Gaussian samples of the same N and D "
    "(exact: (N - 1) / (N + 1))",
    "energy_distance_gaussian": "energy distance to a sample of the fitted Gaussian",
    "clusters": "angular clusters: connected components of cos > 1 - delta",
}
"""CF ``long_name`` of every statistic."""


def _sqdist(X, Y):
    d = jnp.sum(X**2, 1)[:, None] + jnp.sum(Y**2, 1)[None, :] - 2 * X @ Y.T
    return jnp.maximum(d, 0.0)


def _cloud(X, name: str = "X", least: int = 1) -> tuple[int, int]:
    """(N, D) of a cloud: an (N, D) array of real numbers with N ≥ ``least`` (shapes only: works on traced
    arrays inside ``jax.jit``), or InputError naming ``name``."""
    from attnphys._checks import check_array

    N, D = check_array(X, name, ndim=2, what="tokens × dimensions (N, D)")
    if N < least or D < 1:
        raise InputError(f"must hold at least {least} token(s) of at least one dimension, got shape {(N, D)}", name)
    return N, D


@checked
def gaussian_entropy(X, floor=1e-10):
    """(½ Σ_{λ>floor·λmax} log(2πe λ), rank) of the sample covariance (theory: docs/theory/clouds.md §5.2)."""
    _cloud(X)
    lam = jnp.linalg.eigvalsh(jnp.cov(X, rowvar=False, bias=True))
    keep = lam > floor * jnp.max(lam)
    return 0.5 * jnp.sum(jnp.where(keep, jnp.log(2 * jnp.pi * jnp.e * jnp.where(keep, lam, 1.0)), 0.0)), jnp.sum(keep)


def knn_entropy(X, k: int = 3):
    """Kozachenko–Leonenko: H ≈ ψ(N) − ψ(k) + log V_D + (D/N) Σ_i log ε_i, ε_i the distance to the k-th
    nearest neighbour, V_D the unit-ball volume (theory: docs/theory/clouds.md §5.2). Where more than k
    tokens coincide (some ε_i = 0 to rounding, relative to the cloud's scale) log ε_i = −∞ and the estimate
    is undefined: NaN.

    Raises:
        InputError: ``X`` not an (N, D) cloud, ``k`` not an integer in [1, N)."""
    N, D = _cloud(X)
    from attnphys._checks import check_count

    if check_count(k, "k") >= N:
        raise InputError(f"must be below the number of tokens N = {N}, got {k}", "k")
    d2 = _sqdist(X, X) + jnp.diag(jnp.full(N, jnp.inf, X.dtype))
    rows = jnp.arange(N)
    for _ in range(k - 1):  # remove the k − 1 nearest (one per pass, ties kept): k row-minima beat a full top_k
        d2 = d2.at[rows, jnp.argmin(d2, axis=1)].set(jnp.inf)
    kth = jnp.min(d2, axis=1)
    log_vd = 0.5 * D * jnp.log(jnp.pi) - gammaln(0.5 * D + 1)
    scale2 = jnp.max(jnp.sum(X**2, axis=1))
    coincide = jnp.any(kth <= 16 * jnp.finfo(X.dtype).eps * scale2)
    h = digamma(N) - digamma(k) + log_vd + 0.5 * D * jnp.mean(jnp.log(jnp.maximum(kth, jnp.finfo(X.dtype).tiny)))
    return jnp.where(coincide, jnp.nan, h)


def _offdiag_mean(M):
    N = M.shape[0]
    return (jnp.sum(M) - jnp.trace(M)) / (N * (N - 1))


MARDIA_BLOCK_ELEMENTS = 1 << 22
"""Entries of one block of the products y_iᵀ y_j in :func:`mardia` (32 MB in float64)."""


def mardia(X):
    """Mardia's b₁ = N⁻² Σ_ij (y_iᵀ y_j)³ (skewness) and b₂/(D(D+2)) with b₂ = N⁻¹ Σ_i (y_iᵀ y_i)² (kurtosis
    ratio), y_i the whitened tokens Σ^{−1/2}(x_i − x̄) (theory: docs/theory/clouds.md §5.4). The N × N
    products are formed in blocks of rows (at most :data:`MARDIA_BLOCK_ELEMENTS` entries at a time), so
    memory stays O(N D) for any N. Compare with :func:`mardia_null`."""
    N, D = _cloud(X)
    Z = X - X.mean(0)
    S = jnp.cov(X, rowvar=False, bias=True)
    w, V = jnp.linalg.eigh(S)
    w = jnp.maximum(w, 1e-12 * jnp.max(w))
    Y = (Z @ V) / jnp.sqrt(w)
    rows = max(1, min(N, MARDIA_BLOCK_ELEMENTS // N))
    n_blocks = -(-N // rows)
    Yp = jnp.concatenate([Y, jnp.zeros((n_blocks * rows - N, D), Y.dtype)]).reshape(n_blocks, rows, D)
    b1 = jnp.sum(jax.lax.map(lambda B: jnp.sum((B @ Y.T) ** 3), Yp)) / N**2
    b2 = jnp.mean(jnp.sum(Y**2, axis=1) ** 2)
    return b1, b2 / (D * (D + 2))


def mardia_null(N: int, D: int) -> tuple[float, float]:
    """Means of Mardia's b₁ and b₂/(D(D+2)) over samples of N points of a D-dimensional Gaussian (Mardia
    1970; theory: docs/theory/clouds.md §5.4): E b₁ = D(D+2)[(N+1)(D+1) − 6]/((N+1)(N+3)) (≈ D(D+1)(D+2)/N)
    and E b₂ = D(D+2)(N−1)/(N+1), so the ratio's null is (N − 1)/(N + 1)."""
    b1 = D * (D + 2) * ((N + 1) * (D + 1) - 6) / ((N + 1) * (N + 3))
    return float(b1), float((N - 1) / (N + 1))


def energy_distance(X, Y):
    """2 E‖X − Y‖ − E‖X − X'‖ − E‖Y − Y'‖ (V-statistic) (theory: docs/theory/clouds.md §5.4)."""
    _, D = _cloud(X)
    if _cloud(Y, "Y")[1] != D:
        raise InputError(f"must have the D = {D} dimensions of X, got shape {tuple(Y.shape)}", "Y")
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
def device_stats(X, X_prev, key):
    out, cos = _stats(X, X_prev, key)
    ok = jnp.all(jnp.isfinite(X))  # a non-finite cloud has no statistics (theory: docs/theory/clouds.md §5)
    return {k: jnp.where(ok, v, jnp.nan) for k, v in out.items()}, cos


def _stats(X, X_prev, key):
    N, D = X.shape
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
        mardia_skewness_null=jnp.asarray(mardia_null(N, D)[0], X.dtype),
        mardia_kurtosis_ratio_null=jnp.asarray(mardia_null(N, D)[1], X.dtype),
    ), cos


def cluster_count(cos, delta: float = 1e-3) -> int:
    """Angular clusters: connected components of the graph cos_ij > 1 − δ (label propagation on the
    device: every token takes the smallest label among its neighbours until nothing changes)
    (theory: docs/theory/clouds.md §5.5).

    Raises:
        InputError: ``cos`` not an (N, N) array of real numbers, ``delta`` not a finite number in (0, 2)."""
    from attnphys._checks import check_array
    from attnphys.clouds._inputs import number

    N = check_array(cos, "cos", ndim=2, what="cosines of N tokens (N, N)")[0]
    if np.shape(cos) != (N, N):
        raise InputError(f"must be a square (N, N) matrix of cosines, got shape {np.shape(cos)}", "cos")
    delta = number(delta, "delta", low=0.0, high=2.0, low_open=True, high_open=True)
    return int(cluster_components(jnp.asarray(cos) > 1 - delta))


@jax.jit
def cluster_components(adj):
    N = adj.shape[0]
    adj = adj | jnp.eye(N, dtype=bool)

    def body(c):
        labels, _ = c
        new = jnp.min(jnp.where(adj, labels[None, :], N), axis=1)
        new = new[new]  # pointer jumping: follow labels to their own labels
        return new, jnp.any(new != labels)

    labels, _ = jax.lax.while_loop(lambda c: c[1], body, (jnp.arange(N), jnp.asarray(True)))
    return jnp.sum(labels == jnp.arange(N))


PAIRWISE_ARRAYS = 8
"""N × N arrays alive at once in :func:`cloud_statistics` (distances, cosines, the k-NN search, the energy
distance): the memory check counts that many."""


@checked(cluster_delta=number_rule(0.0, 2.0))
def cloud_statistics(X, X_prev=None, key=None, cluster_delta: float = 1e-3) -> dict[str, float]:
    """All :data:`STATISTICS` of the cloud X (N, D); ``moved_apart`` compares with ``X_prev`` (NaN if None)
    (theory: docs/theory/clouds.md §5). The covariance eigendecomposition and Cholesky factor run on one
    BLAS thread: at D of a few hundred a threaded LAPACK call is several times slower, and much slower on a
    busy machine.

    Raises:
        InputError: the cloud has a non-finite entry (its statistics would be undefined), or its N × N
            pairwise arrays would not fit in memory, or is not an (N, D) array of real numbers."""
    _cloud(X)
    if X_prev is not None and tuple(np.shape(X_prev)) != tuple(np.shape(X)):
        raise InputError(f"must have the shape {tuple(np.shape(X))} of X, got {tuple(np.shape(X_prev))}", "X_prev")
    X = jnp.asarray(X)
    bad = np.argwhere(~np.isfinite(np.asarray(X)))
    if bad.size:
        raise InputError(
            f"the cloud has non-finite entries ({len(bad)}; the first at token {bad[0][0]}, dimension "
            f"{bad[0][-1]}): its statistics are undefined",
            field="tokens",
        )
    N = int(X.shape[0])
    check_fits(
        PAIRWISE_ARRAYS * N * N * X.dtype.itemsize,
        f"the pairwise statistics of {N} tokens (N x N distances, cosines, neighbours)",
        "subsample the tokens, or use mardia() and gaussian_entropy(), which need O(N D) memory",
        field="tokens",
    )
    key = jax.random.PRNGKey(0) if key is None else key
    with single_threaded():  # the D × D eigh and Cholesky: one BLAS thread (see attnphys.clouds._blas)
        out, cos = device_stats(X, X if X_prev is None else jnp.asarray(X_prev), key)
        res = {k: float(v) for k, v in out.items()}
    if X_prev is None:
        res["moved_apart"] = float("nan")
    res["clusters"] = float(cluster_count(cos, cluster_delta))
    return res
