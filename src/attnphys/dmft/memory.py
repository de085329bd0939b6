"""Memory beyond the context window, as numbers (theory: docs/theory/dmft.md §8; docs/theory/dynamics.md §4).

The network attends to its last L tokens only, yet its records can stay correlated over many more
steps: the context window carries the past forward. Two numbers per recorded series say how much:

* the **autocorrelation time** τ: the lag beyond which the normalised autocorrelation ρ(k) stays below
  1/e (linearly interpolated between lags; +∞ when |ρ| still reaches 1/e beyond half of the lags
  that a record of n samples estimates reliably, K = n/4). τ ≫ L means memory beyond the window; a
  periodic or quasi-periodic series never decorrelates (τ = +∞);
* the **low-frequency power fraction** Φ: the share of the power spectrum of the mean-removed series
  at frequencies 0 < ν < 1/L (cycles per step), i.e. in variations slower than one pass through the
  window. A series that only repeats the positional cycle has Φ ≈ 0.

Φ is read against its **white-noise baseline**: the exact mean of the estimator for Gaussian white noise
of the same record length (:func:`white_noise_baseline`, ≈ 2·dt/L: 50 % for L = 4 recorded every step),
with the one-sided p-value of Φ under that null (:func:`white_noise_pvalue`): how unlikely white noise
is to put at least that share of its power below 1/L.

All are pure numpy functions over the last axis (any leading batch axes).
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


def _bands(n: int, L: int, dt: float) -> tuple[int, int, bool]:
    """(m_low, m_high, Nyquist in the upper band): the interior frequencies 0 < k < n/2 below and above
    1/L, and whether the Nyquist frequency k = n/2 (n even) is counted above (theory:
    docs/theory/dmft.md §8.1). The Nyquist frequency is the highest: it is below 1/L only when all are."""
    k = np.arange(1, n // 2 + 1)
    low = k * L < n * dt  # ν_k = k / (n dt) < 1/L
    interior = 2 * k < n
    return int(np.sum(low & interior)), int(np.sum(~low & interior)), bool(n % 2 == 0 and not low[-1])


def white_noise_baseline(n: int, L: int, dt: float = 1.0) -> float:
    """Exact mean of :func:`low_frequency_fraction` over records of n samples of Gaussian white noise
    (theory: docs/theory/dmft.md §8.1).

    The periodogram ordinates of white noise at 0 < k < n/2 are independent, each (nσ²/2)·χ²₂, and the
    Nyquist ordinate (n even) is (nσ²/2)·2χ²₁. With m_l ordinates below 1/L, m_h above and M = m_l + m_h:
    without a Nyquist ordinate Φ ~ Beta(m_l, m_h) and EΦ = m_l/M; with it, Φ = R·T/(T + ν) with R ~ Beta,
    T = χ²_{2M} and ν = 2χ²₁ independent, ν/T = F/M with F ~ F(1, 2M), so EΦ = (m_l/M)·E[M/(M + F)]
    (one series: below). ≈ 2·dt/L; 1 when every frequency lies below 1/L, 0 when none does.
    """
    ml, mh, nyq = _bands(int(n), int(L), float(dt))
    M = ml + mh
    if ml == 0:
        return 0.0
    if mh == 0 and not nyq:
        return 1.0
    if not nyq:
        return ml / M
    # M/(M + F) = T/(T + 2χ²₁) = U/(2 − U) with U = T/(T + χ²₁) ~ Beta(M, ½), so
    # E[M/(M + F)] = Σ_{j≥1} E[U^j]/2^j, E[U^j] = Π_{i<j} (M + i)/(M + ½ + i) ≤ 1: 60 terms reach 2⁻⁶⁰
    moment, shrink = 1.0, 0.0
    for i in range(60):
        moment *= (M + i) / (M + 0.5 + i)
        shrink += moment / 2.0 ** (i + 1)
    return ml / M * shrink


def _tail_nodes(v: float, ml: int, mh: int, nodes: np.ndarray, weights: np.ndarray):
    """Quadrature nodes r and weights for ∫_v^1 dr (theory: docs/theory/dmft.md §8.1): Gauss–Legendre in
    t = √(r − v) (the F factor's √(r − v) at r = v becomes smooth) on panels that resolve every scale of
    the integrand: geometric from the F factor's scale v/M and the Beta density's decay beyond v up to
    1 − v, and one spread wide around the density's mode, wherever the bulk of the tail lies."""
    M = ml + mh
    top = 1.0 - v
    slope = (ml - 1) / v - (mh - 1) / top  # d log f_Beta / dr at v
    width = float(np.sqrt(v * top / (M + 1)))
    scale = min(width, -1.0 / slope) if slope < 0 else width
    first = max(min(scale, v / (M + 1)) / 64, 1e-300)
    breaks = list(first * 4.0 ** np.arange(int(np.log(top / first) / np.log(4.0)) + 1))
    mode = (ml - 1) / (M - 2) if M > 2 else v
    spread = float(np.sqrt(max(mode * (1 - mode), 0.0) / (M + 1)))
    breaks += list(mode - v + spread * np.arange(-12, 13))
    t = np.sqrt(np.unique(np.clip([0.0, top, *breaks], 0.0, top)))
    lo, hi = t[:-1, None], t[1:, None]
    tt = (lo + hi) / 2 + (hi - lo) / 2 * nodes[None]
    return (v + tt**2).ravel(), ((hi - lo) * weights[None] * tt).ravel()  # dr = 2t dt


def white_noise_pvalue(phi, n: int, L: int, dt: float = 1.0) -> np.ndarray:
    """One-sided p-value P(Φ ≥ φ) of :func:`low_frequency_fraction` under Gaussian white noise of n
    samples: how unlikely white noise is to put at least the share φ of its power below 1/L (theory:
    docs/theory/dmft.md §8.1).

    Without a Nyquist ordinate, Φ ~ Beta(m_l, m_h) and P = I_{1−φ}(m_h, m_l) (the Beta survival function).
    With it (upper band), P = ∫_φ^1 f_Beta(r; m_l, m_h) F_{F(1,2M)}(M (r − φ)/φ) dr (:func:`white_noise_baseline`
    for the notation), computed as the Beta tail times the mean of the F-distribution factor over the tail,
    so that p-values far below 1e−300 stay exact in relative terms down to the smallest float; the mean by
    Gauss–Legendre panels that follow the integrand's scales (:func:`_tail_nodes`), so that a fraction far
    below the baseline of a long record gets p ≈ 1 (an adaptive rule started near φ missed the bulk there).

    Args:
        phi: observed fractions (any shape). n: samples per record. L: context length. dt: steps between
            samples.

    Returns:
        p-values of the shape of ``phi`` (NaN where φ is NaN).
    """
    import scipy.special as sp

    phi = np.asarray(phi, dtype=np.float64)
    ml, mh, nyq = _bands(int(n), int(L), float(dt))
    M = ml + mh
    out = np.full(phi.shape, np.nan)
    flat, res = phi.reshape(-1), out.reshape(-1)
    degenerate = not (ml and (mh or nyq))  # Φ is identically 0 (nothing below 1/L) or 1 (everything is)
    log_norm = 0.0 if degenerate else float(sp.betaln(ml, mh))
    nodes, weights = np.polynomial.legendre.leggauss(32)
    for i, v in enumerate(flat):
        if not np.isfinite(v):
            continue
        if degenerate:
            res[i] = float(v <= (1.0 if ml else 0.0))
            continue
        tail = float(sp.betaincc(ml, mh, min(max(v, 0.0), 1.0)))
        if not nyq or v <= 0 or tail == 0.0:
            res[i] = tail
            continue
        r, w = _tail_nodes(v, ml, mh, nodes, weights)
        log_pdf = (ml - 1) * np.log(r) + sp.xlog1py(mh - 1, -r) - log_norm
        f = np.exp(log_pdf - np.log(tail)) * sp.fdtr(1, 2 * M, M * (r - v) / v)
        res[i] = tail * min(max(float(np.sum(w * f)), 0.0), 1.0)
    return out


MEMORY_ATTRS: dict[str, dict[str, str]] = {
    "autocorr_time": {
        "long_name": "autocorrelation time: lag beyond which |autocorrelation| < 1/e",
        "units": "step",
        "comment": "inf: no decay within a quarter of the record; 0: the series does not fluctuate",
    },
    "lowfreq_power": {
        "long_name": "fraction of the power at frequencies below 1/L (slower than one pass through the context)",
        "comment": "NaN: the series does not fluctuate; compare with lowfreq_baseline",
    },
    "lowfreq_baseline": {
        "long_name": "white-noise baseline of lowfreq_power: its exact mean for Gaussian white noise of the "
        "record's length",
    },
    "lowfreq_pvalue": {
        "long_name": "one-sided p-value of lowfreq_power against Gaussian white noise (share of white-noise "
        "records with at least this low-frequency power)",
    },
}
"""CF attributes of the :func:`memory_summary` numbers (the trajectory task stores them as ``mo_se_<key>``)."""


def memory_summary(x, L: int, dt: float = 1.0) -> dict[str, np.ndarray]:
    """The memory numbers of a record (..., n): ``autocorr_time`` (steps), ``lowfreq_power`` (fraction),
    its white-noise baseline ``lowfreq_baseline`` and the one-sided p-value ``lowfreq_pvalue`` against it
    (theory: docs/theory/dmft.md §8)."""
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[-1]
    phi = low_frequency_fraction(x, L, dt=dt)
    return {
        "autocorr_time": autocorrelation_time(x, dt=dt),
        "lowfreq_power": phi,
        "lowfreq_baseline": np.full(phi.shape, white_noise_baseline(n, L, dt) if n >= 4 else np.nan),
        "lowfreq_pvalue": white_noise_pvalue(phi, n, L, dt) if n >= 4 else np.full(phi.shape, np.nan),
    }


__all__ = [
    "LEVEL",
    "autocorrelation_time",
    "low_frequency_fraction",
    "memory_summary",
    "white_noise_baseline",
    "white_noise_pvalue",
]
