"""Significance tests of the probes' claims against their nulls (theory: docs/theory/probes.md §4, §4.1).

Every claim is tested once per layer; a layer supports it when its p-value survives Holm's step-down
correction over the layers at family-wise level :data:`ALPHA`. Pure numpy/scipy functions over arrays, and
:func:`attach_claim`, which puts a claim's test beside the dataset it tests.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import stats

ALPHA = 0.05
"""Family-wise error rate of every claim's verdict (over the layers)."""


def holm(p) -> tuple[np.ndarray, np.ndarray]:
    """Holm's step-down correction of the p-values ``p`` (m,) (NaN: not tested, never rejected).

    Returns:
        (adjusted p-values (m,), rejected at :data:`ALPHA` (m,) bool). The adjusted value of the k-th
        smallest of the m tested p-values is max_{i≤k} min(1, (m − i + 1) p_(i)).
    """
    p = np.asarray(p, float)
    adj = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = ok.size
    if m:
        order = ok[np.argsort(p[ok], kind="stable")]
        vals = np.minimum(1.0, (m - np.arange(m)) * p[order])
        adj[order] = np.maximum.accumulate(vals)
    return adj, np.where(np.isfinite(adj), adj <= ALPHA, False)


def normal_sf(z):
    """One-sided p-value P(Z ≥ z) of a standard normal Z."""
    return stats.norm.sf(np.asarray(z, float))


MIN_DF = 3
"""Fewest degrees of freedom of any test behind a "supported" (a t-test over four folds has three)."""


def t_test(
    values, mu0: float = 0.0, greater: bool = True, *, two_sided: bool = False, test_fraction: float | None = None
) -> tuple[float, float]:
    """One-sample t-test of the mean of ``values`` (k,) against ``mu0`` (k − 1 degrees of freedom):
    one-sided (``greater``, or below when False) or ``two_sided``. With ``test_fraction`` (the share ρ of
    the data held out in each of k overlapping train/test splits) the variance of the mean is Nadeau and
    Bengio's corrected s²(1/k + ρ/(1 − ρ)) instead of s²/k: the splits share their training data, so
    their values are correlated (theory: docs/theory/probes.md §4, §4.1).

    Returns:
        (t, p); NaN for fewer than two values, for any non-finite value (a fold that could not be
        computed is not dropped: the test is undefined), or for zero spread.
    """
    v = np.asarray(values, float)
    if v.size < 2 or not np.all(np.isfinite(v)):
        return math.nan, math.nan
    factor = 1.0 / v.size if test_fraction is None else 1.0 / v.size + test_fraction / (1.0 - test_fraction)
    se = v.std(ddof=1) * math.sqrt(factor)
    if not se > 0:
        return math.nan, math.nan
    t = (v.mean() - mu0) / se
    if two_sided:
        return float(t), float(2 * stats.t.sf(abs(t), v.size - 1))
    return float(t), float(stats.t.sf(t if greater else -t, v.size - 1))


def welch_test(x, y) -> tuple[float, float, float]:
    """Welch's two-sample t-test of H₀: E y ≤ E x against E y > E x, for samples x (m,) and y (m',)
    (theory: docs/theory/probes.md §4.1):

        t = (ȳ − x̄) / √(s_x²/m + s_y²/m'),
        ν = (s_x²/m + s_y²/m')² / ((s_x²/m)²/(m − 1) + (s_y²/m')²/(m' − 1))   (Welch–Satterthwaite),

    one-sided p = P(t_ν ≥ t).

    Returns:
        (t, ν, p); NaN for fewer than two values in either sample or no spread in both.
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.size < 2 or y.size < 2:
        return math.nan, math.nan, math.nan
    vx, vy = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    if vx + vy == 0:
        return math.nan, math.nan, math.nan
    t = (y.mean() - x.mean()) / math.sqrt(vx + vy)
    df = (vx + vy) ** 2 / (vx**2 / (x.size - 1) + vy**2 / (y.size - 1))
    return float(t), float(df), float(stats.t.sf(t, df))


def attach_claim(ds, claim) -> None:
    """Put a claim's test (a Dataset over the controls, with attrs ``claim`` and ``units``) beside the
    placement ``ds`` it tests, in place: its variables as ``claim_<name>``, its statement and units as attrs
    (theory: docs/theory/probes.md §4.2)."""
    for v in claim.data_vars:
        ds[f"claim_{v}"] = claim[v]
    ds.attrs["claim"] = claim.attrs["claim"]
    ds.attrs["claim_units"] = claim.attrs["units"]


def normal_two_sided(z):
    """Two-sided p-value P(|Z| ≥ |z|) of a standard normal Z."""
    return 2 * stats.norm.sf(np.abs(np.asarray(z, float)))


def rotation_null(A: np.ndarray, T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact mean and standard deviation of ⟨A, Q T Qᵀ⟩ (Frobenius) over Haar-random rotations Q of
    O(D), for symmetric A (..., D, D) and T (..., D, D) (broadcast):

        E = tr A · tr T / D,   Var = 2 ‖A₀‖² ‖T₀‖² / ((D − 1)(D + 2)),

    A₀ = A − (tr A / D) I the traceless part (theory: docs/theory/probes.md §4, §4.1)."""
    D = A.shape[-1]
    ta, tt = np.trace(A, axis1=-2, axis2=-1), np.trace(T, axis1=-2, axis2=-1)  # each on its own batch shape
    a0 = np.einsum("...ij,...ij->...", A, A) - ta**2 / D
    t0 = np.einsum("...ij,...ij->...", T, T) - tt**2 / D
    return ta * tt / D, np.sqrt(np.maximum(2 * a0 * t0 / ((D - 1) * (D + 2)), 0.0))


def head_permutation_test(C: np.ndarray, n_perm: int = 20_000, seed: int = 0) -> tuple[float, float]:
    """Is a head's update more aligned with its own gradient than with the other heads'? ``C`` (H, H):
    C[h, g] the mean cosine of head h's update with head g's gradient. Statistic: the mean of the
    diagonal; null: the gradients' head labels exchangeable (what a randomly initialised layer gives),
    so the statistic of a random permutation of the columns. Exact over all H! permutations for H ≤ 8,
    else ``n_perm`` seeded random ones (the identity counted once).

    Returns:
        (z, p): z-score of the statistic in the permutation distribution, one-sided p-value.
    """
    H = C.shape[0]
    obs = float(np.trace(C) / H)
    if H < 2:
        return math.nan, math.nan
    if H <= 8:
        perms = np.array(list(itertools.permutations(range(H))))
        null = C[np.arange(H), perms].mean(1)
        p = float(np.mean(null >= obs - 1e-12))
    else:
        rng = np.random.default_rng(seed)
        perms = np.argsort(rng.random((n_perm, H)), axis=1)
        null = C[np.arange(H), perms].mean(1)
        p = float((1 + np.sum(null >= obs - 1e-12)) / (n_perm + 1))
    sd = null.std()
    return (float((obs - null.mean()) / sd) if sd > 0 else math.nan), p


def bootstrap_counts(n_sentences: int, n_boot: int = 1000, seed: int = 0) -> np.ndarray:
    """(n_boot, S) how often each of the S sentences is drawn in each bootstrap resample (seeded)."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_sentences, (n_boot, n_sentences))
    return np.stack([np.bincount(d, minlength=n_sentences) for d in draws]).astype(float)


def log_cov_trace_ratio(X: np.ndarray, Y: np.ndarray, sentence: np.ndarray, n_boot: int = 1000, seed: int = 0):
    """log(tr Σ_Y / tr Σ_X) over the same tokens (rows of X, Y (T, D)) and its standard error from a
    bootstrap over the sentences (the tokens of a sentence are not independent), with the one-sided
    p-values of the ratio being above and below 1 (normal approximation of the bootstrap distribution).

    Returns:
        (log ratio, standard error, p for > 0, p for < 0).
    """
    ids, inv = np.unique(sentence, return_inverse=True)

    def suff(Z):
        Z = np.asarray(Z, float)
        n = np.bincount(inv, minlength=ids.size).astype(float)
        sx = np.zeros((ids.size, Z.shape[1]))
        np.add.at(sx, inv, Z)
        sxx = np.bincount(inv, weights=np.sum(Z * Z, 1), minlength=ids.size)
        return n, sx, sxx

    def trace(w, n, sx, sxx):
        N = w @ n
        m = (w @ sx) / N[..., None]
        return (w @ sxx) / N - np.sum(m * m, -1)

    sX, sY = suff(X), suff(Y)
    one = np.ones(ids.size)
    est = float(np.log(trace(one, *sY) / trace(one, *sX)))
    if ids.size < 2:
        return est, math.nan, math.nan, math.nan
    W = bootstrap_counts(ids.size, n_boot, seed)
    reps = np.log(trace(W, *sY) / trace(W, *sX))
    se = float(reps.std(ddof=1))
    if not se > 0:
        return est, math.nan, math.nan, math.nan
    return est, se, float(normal_sf(est / se)), float(normal_sf(-est / se))


__all__ = [
    "ALPHA",
    "holm",
    "normal_sf",
    "MIN_DF",
    "t_test",
    "normal_two_sided",
    "rotation_null",
    "head_permutation_test",
    "bootstrap_counts",
    "log_cov_trace_ratio",
]
