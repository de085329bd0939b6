"""The slopes of the finite-N → mean-field convergence study (:func:`attnphys.dmft.converge`; theory:
docs/theory/dmft.md §2.3): least-squares slopes of log10(distance) against log10(N) over the largest three
decades of N, with their 95% confidence intervals (``*_ci_low``, ``*_ci_high``: the regression's standard
error times the Student-t quantile with n − 2 degrees of freedom; NaN with two sizes) and a flag
``*_noise_limited`` when the distance at the largest size is within twice its sampling noise
(:func:`path_noise`): the slope then measures the noise floor, not the convergence. A point where some
paths left the mean field's attractor (:func:`paths_elsewhere`) is left out of the fits, with a warning."""

from __future__ import annotations

import numpy as np
import xarray as xr

NOISE_FACTOR = 2.0
"""A distance at most this many times its sampling noise is noise-limited."""

ELSEWHERE_FACTOR = 3.0
"""A path whose RMS deviation from the mean field over the horizon exceeds this many times the median over
the paths of its point has left for another attractor."""

ELSEWHERE_MIN_PATHS = 5
"""Fewest paths at a point for :func:`paths_elsewhere` to judge them."""


def paths_elsewhere(finite: np.ndarray, mean_field: np.ndarray, horizon: int) -> float:
    """Fraction of the finite-N paths of one (β_o, N) point that left the mean field's attractor within the
    horizon (theory: docs/theory/dmft.md §2.3): path j's RMS deviation r_j over the first ``horizon`` steps
    and the features exceeds :data:`ELSEWHERE_FACTOR` × median_k r_k. Paths that follow the mean-field orbit
    deviate by O(N^{-1/2}) with a spread of a few tens of percent; one that lands on another attractor
    deviates by O(1).

    Args:
        finite: (P, T, F) paths. mean_field: (T, F) the mean-field trajectory. horizon: steps compared.

    Returns:
        the fraction in [0, 1]; NaN with fewer than :data:`ELSEWHERE_MIN_PATHS` paths (too few for their
        median to stand for the paths that follow the orbit).
    """
    fin, mf = np.asarray(finite, float), np.asarray(mean_field, float)
    if fin.shape[0] < ELSEWHERE_MIN_PATHS:
        return float("nan")
    r = np.sqrt(np.mean((fin[:, :horizon] - mf[None, :horizon]) ** 2, axis=(1, 2)))
    med = float(np.median(r))
    return float(np.mean(r > ELSEWHERE_FACTOR * med)) if med > 0 else 0.0


def fitted_slope(ns: np.ndarray, d: np.ndarray, decades: float = 3.0) -> float:
    """Slope of log10 d vs log10 N over N ≥ N_max / 10^decades (NaN with fewer than two points)
    (theory: docs/theory/dmft.md §2.3)."""
    return slope_fit(ns, d, decades=decades)["slope"]


def slope_fit(
    ns: np.ndarray, d: np.ndarray, noise: np.ndarray | None = None, decades: float = 3.0, level: float = 0.95
) -> dict[str, float]:
    """Least-squares slope s of log10 d = a + s log10 N over N ≥ N_max / 10^decades, with its confidence
    interval and whether the fit is noise-limited (theory: docs/theory/dmft.md §2.3).

    With n fitted points, residual sum of squares SSR and S_xx = Σ(x − x̄)², the standard error is
    se = sqrt(SSR / ((n − 2) S_xx)) and the interval s ± t_{(1+level)/2, n−2} se (exact for independent
    Gaussian errors on log10 d); with n = 2 the line passes through both points and the interval is NaN.

    Args:
        ns: (n,) network sizes. d: (n,) distances. noise: (n,) sampling noise of each distance
            (:func:`path_noise`) or None. level: confidence level of the interval.

    Returns:
        ``slope``, ``ci_low``, ``ci_high``, ``stderr``, ``n_fit`` and ``noise_limited`` (1: the distance at
        the largest fitted size is at most :data:`NOISE_FACTOR` × its noise; 0: it is not; −1: no noise
        estimate).
    """
    import scipy.stats

    ns, d = np.asarray(ns, float), np.asarray(d, float)
    sel = (ns >= ns.max() / 10**decades) & np.isfinite(d) & (d > 0) if ns.size else np.zeros(0, bool)
    nan = float("nan")
    out = dict(slope=nan, ci_low=nan, ci_high=nan, stderr=nan, n_fit=int(sel.sum()), noise_limited=-1)
    if noise is not None and sel.any():
        last = np.flatnonzero(sel)[np.argmax(ns[sel])]
        nz = float(np.asarray(noise, float)[last])
        if np.isfinite(nz):
            out["noise_limited"] = int(d[last] <= NOISE_FACTOR * nz)
    if sel.sum() < 2:
        return out
    x, y = np.log10(ns[sel]), np.log10(d[sel])
    sxx = float(np.sum((x - x.mean()) ** 2))
    slope = float(np.sum((x - x.mean()) * (y - y.mean())) / sxx)
    out["slope"] = slope
    n = int(sel.sum())
    if n > 2:
        resid = y - (y.mean() + slope * (x - x.mean()))
        se = float(np.sqrt(np.sum(resid**2) / ((n - 2) * sxx)))
        t = float(scipy.stats.t.ppf(0.5 + level / 2, n - 2))
        out.update(stderr=se, ci_low=slope - t * se, ci_high=slope + t * se)
    return out


def path_noise(finite: np.ndarray, mean_field: np.ndarray, horizon: int, transient: int) -> tuple[float, float]:
    """Sampling noise of the two distances at one (β_o, N) point, from the spread over paths
    (theory: docs/theory/dmft.md §2.3).

    * RMS deviation r = sqrt(mean_j q_j) over P paths with q_j the path's mean square deviation: its
      standard error, sd_j(q_j) / (2 r sqrt(P)) (delta method);
    * long-run statistics: the finite estimate is the mean over paths of each path's time mean and time
      standard deviation s_j (per feature); the mean field contributes one more window of the same
      length, which on a chaotic attractor fluctuates like a path's. The noise of their difference is
      sd_j(s_j) sqrt(1 + 1/P), the largest over statistics and features.

    Args:
        finite: (P, T, F) paths. mean_field: (T, F) the mean-field trajectory. horizon, transient: as in
            :func:`converge`.

    Returns:
        (noise of ``rms_deviation``, noise of ``stat_distance``); NaN with one path.
    """
    fin, mf = np.asarray(finite, float), np.asarray(mean_field, float)
    P = fin.shape[0]
    if P < 2:
        return float("nan"), float("nan")
    q = np.mean((fin[:, :horizon] - mf[None, :horizon]) ** 2, axis=(1, 2))
    r = float(np.sqrt(q.mean()))
    rms_noise = float(np.std(q, ddof=1) / (2 * r * np.sqrt(P))) if r > 0 else 0.0
    late = fin[:, transient:]
    s = np.concatenate([late.mean(axis=1), late.std(axis=1)], axis=-1)  # (P, 2F)
    stat_noise = float(np.max(np.std(s, axis=0, ddof=1)) * np.sqrt(1 + 1 / P))
    return rms_noise, stat_noise


FIT_ATTRS = {
    "noise_limited": {
        "long_name": "fit limited by sampling noise",
        "flag_values": np.asarray([-1, 0, 1], np.int8),
        "flag_meanings": "no_noise_estimate no yes",
        "comment": "1: the distance at the largest N is at most 2x its sampling noise, so the slope measures "
        "the noise floor; -1: no noise estimate (one path)",
    },
}


def fit_slopes(ds: xr.Dataset) -> xr.Dataset:
    """Add the fitted slopes of ``rms_deviation`` and ``stat_distance`` against ``n`` (:func:`slope_fit`)
    to a convergence dataset, per point of its other dims: ``slope``, ``slope_ci_low``, ``slope_ci_high``,
    ``slope_noise_limited``, ``slope_n_fit`` and the same with ``stat_`` (theory: docs/theory/dmft.md §2.3).
    The sampling noise is read from ``rms_noise`` / ``stat_noise`` when present; sizes whose
    ``elsewhere_fraction`` is above zero (paths on another attractor) are left out of the fit, with a
    warning naming each."""
    import warnings

    others = [d for d in ds.rms_deviation.dims if d != "n"]
    shape = [ds.sizes[d] for d in others]
    ns = ds["n"].values
    away = np.zeros((int(np.prod(shape)), ns.size), bool)
    if "elsewhere_fraction" in ds:
        frac = ds["elsewhere_fraction"].transpose(*others, "n").values.reshape(-1, ns.size)
        away = np.nan_to_num(frac) > 0
        for i, j in zip(*np.nonzero(away)):
            at = dict(zip(others, np.unravel_index(i, shape))) if others else {}
            where = ", ".join(f"{d} = {ds[d].values[k]:g}" for d, k in at.items())
            warnings.warn(
                f"at {where + ', ' if where else ''}N = {int(ns[j])}: {frac[i, j]:.0%} of the finite-N paths left "
                "the mean field's attractor within the horizon; this point is left out of the fitted slopes "
                "(elsewhere_fraction)",
                UserWarning,
                stacklevel=2,
            )
    for prefix, src, noise in (("slope", "rms_deviation", "rms_noise"), ("stat_slope", "stat_distance", "stat_noise")):
        arr = np.where(away, np.nan, ds[src].transpose(*others, "n").values.reshape(-1, ns.size))
        nz = ds[noise].transpose(*others, "n").values.reshape(-1, ns.size) if noise in ds else None
        fits = [slope_fit(ns, arr[i], None if nz is None else nz[i]) for i in range(arr.shape[0])]

        def col(key, dtype: type = float, fits=fits):
            return np.asarray([f[key] for f in fits], dtype=dtype).reshape(shape)

        what = f"log-log slope of {src} vs N over the largest three decades"
        ds[prefix] = (others, col("slope"), {"long_name": what})
        ds[f"{prefix}_ci_low"] = (others, col("ci_low"), {"long_name": f"{what}, lower end of the 95% interval"})
        ds[f"{prefix}_ci_high"] = (others, col("ci_high"), {"long_name": f"{what}, upper end of the 95% interval"})
        ds[f"{prefix}_noise_limited"] = (
            others,
            col("noise_limited", np.int8),
            {**FIT_ATTRS["noise_limited"], "long_name": f"{what}: limited by sampling noise"},
        )
        ds[f"{prefix}_n_fit"] = (
            others,
            col("n_fit", np.int16),
            {"long_name": f"{what}: sizes fitted (those with paths on another attractor left out)"},
        )
    return ds


def slope_text(ds: xr.Dataset, prefix: str = "slope") -> str:
    """``-0.49 [-0.53, -0.45]`` or ``-0.11 [-0.9, 0.7], noise-limited`` for a one-point selection of a
    convergence dataset (theory: docs/theory/dmft.md §2.3)."""
    s, lo, hi = (float(ds[f"{prefix}{k}"]) for k in ("", "_ci_low", "_ci_high"))
    text = f"{s:.2f}" + (f" [{lo:.2f}, {hi:.2f}]" if np.isfinite(lo) else " (no interval: two sizes)")
    flag = f"{prefix}_noise_limited"
    if flag in ds and int(ds[flag]) == 1:
        text += ", noise-limited"
    if "elsewhere_fraction" in ds:
        away = [int(n) for n, f in zip(ds["n"].values, np.atleast_1d(ds["elsewhere_fraction"].values)) if f > 0]
        if away:
            text += f"; N = {', '.join(map(str, away))} left out (paths on another attractor)"
    return text
