"""Memory beyond the context window, as numbers (theory: docs/theory/dmft.md §8; docs/theory/dynamics.md §4).

The network attends to its last L tokens only, yet its records can stay correlated over many more
steps: the context window carries the past forward. Two numbers per recorded series say how much:

* the **autocorrelation time** τ: the lag beyond which the normalised autocorrelation ρ(k) stays below
  1/e (linearly interpolated between lags; +∞ when |ρ| still reaches 1/e beyond half of the lags
  that a record of n samples estimates reliably, K = n/4). τ ≫ L means memory beyond the window; a
  periodic or quasi-periodic series never decorrelates (τ = +∞);
* the **low-frequency power fraction** Φ: the share of the power spectrum of the mean-removed series
  at frequencies 0 < ν < 1/L (cycles per step), i.e. in variations slower than one pass through the
  window. White noise has Φ ≈ 2/L; a series that only repeats the positional cycle has Φ ≈ 0.

Both are pure numpy functions over the last axis (any leading batch axes).
"""

from __future__ import annotations

import numpy as np

LEVEL = float(np.exp(-1.0))
"""The autocorrelation level that defines τ: 1/e (an exponential decay e^{−k/τ} crosses it at k = τ)."""


def _acf(x: np.ndarray, max_lag: int) -> tuple[np.ndarray, np.ndarray]:
    """Normalised autocorrelations ρ(0 … max_lag) of the last axis (unbiased, by FFT) and whether the
    series fluctuates at all."""
    n = x.shape[-1]
    d = x - x.mean(axis=-1, keepdims=True)
    f = np.fft.rfft(d, 2 * n, axis=-1)
    c = np.fft.irfft(f * np.conj(f), axis=-1)[..., : max_lag + 1]
    c = c / np.arange(n, n - max_lag - 1, -1)
    var = c[..., :1]
    scale = np.maximum(np.abs(x).max(axis=-1, keepdims=True), 1e-300)
    moving = var[..., 0] > (1e-12 * scale[..., 0]) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(moving[..., None], c / np.where(var > 0, var, 1.0), 0.0)
    return rho, moving


def autocorrelation_time(x, dt: float = 1.0, max_lag: int | None = None, level: float = LEVEL) -> np.ndarray:
    """Autocorrelation time τ of the series along the last axis (theory: docs/theory/dmft.md §8).

    τ is the smallest k such that |ρ(j)| < ``level`` for every lag j ≥ k up to K = ``max_lag`` (default
    n // 4), interpolated linearly between the last lag at or above the level and the next; for
    ρ(k) = e^{−k/τ₀} it returns ≈ τ₀. When the last lag at or above the level lies beyond K/2, the
    decay is not resolved by the record and τ = +∞. Returned in steps (lags × ``dt``).

    Args:
        x: (..., n) samples. dt: steps between samples (``record_every``).

    Returns:
        (...,) τ in steps: +∞ when |ρ| still reaches the level beyond lag K/2 (no decorrelation within
        the record, e.g. a periodic orbit), 0 for a series that does not fluctuate, NaN when n < 8.
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[-1]
    if n < 8:
        return np.full(x.shape[:-1], np.nan)
    K = max(2, n // 4) if max_lag is None else int(min(max_lag, n - 1))
    rho, moving = _acf(x, K)
    a = np.abs(rho)
    above = a >= level  # lag 0 is always above for a moving series
    # last lag at or above the level
    last = K - np.argmax(above[..., ::-1], axis=-1)
    tau = np.full(x.shape[:-1], np.inf)
    finite = last <= K // 2
    idx = np.clip(last, 0, K - 1)
    a0 = np.take_along_axis(a, idx[..., None], -1)[..., 0]
    a1 = np.take_along_axis(a, (idx + 1)[..., None], -1)[..., 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(a0 > a1, (a0 - level) / (a0 - a1), 0.0)
    tau = np.where(finite, (idx + np.clip(frac, 0.0, 1.0)) * dt, tau)
    return np.where(moving, tau, 0.0)


def low_frequency_fraction(x, L: int, dt: float = 1.0) -> np.ndarray:
    """Fraction Φ of the power of the mean-removed series at frequencies 0 < ν < 1/L cycles per step
    (theory: docs/theory/dmft.md §8).

    Φ = Σ_{0<ν<1/L} |X(ν)|² / Σ_{ν>0} |X(ν)|² over the one-sided spectrum (frequencies in cycles per
    step: sample frequencies divided by ``dt``).

    Args:
        x: (..., n) samples. L: context length. dt: steps between samples.

    Returns:
        (...,) Φ in [0, 1]; NaN for a series that does not fluctuate or has fewer than 4 samples.
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[-1]
    if n < 4:
        return np.full(x.shape[:-1], np.nan)
    d = x - x.mean(axis=-1, keepdims=True)
    power = np.abs(np.fft.rfft(d, axis=-1)) ** 2
    nu = np.fft.rfftfreq(n, d=dt)
    pos = nu > 0
    low = pos & (nu < 1.0 / L)
    total = power[..., pos].sum(axis=-1)
    scale = np.maximum(np.abs(x).max(axis=-1), 1e-300)
    with np.errstate(invalid="ignore", divide="ignore"):
        phi = power[..., low].sum(axis=-1) / total
    return np.where(total > (1e-12 * scale) ** 2 * n, phi, np.nan)


def memory_summary(x, L: int, dt: float = 1.0) -> dict[str, np.ndarray]:
    """Both numbers for a record (..., n): ``autocorr_time`` (steps) and ``lowfreq_power`` (fraction)
    (theory: docs/theory/dmft.md §8)."""
    return {"autocorr_time": autocorrelation_time(x, dt=dt), "lowfreq_power": low_frequency_fraction(x, L, dt=dt)}


__all__ = ["LEVEL", "autocorrelation_time", "low_frequency_fraction", "memory_summary"]
