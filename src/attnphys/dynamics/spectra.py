"""Power spectrum and autocorrelation of a scalar observable along an orbit, numpy, any length
(theory: docs/theory/dynamics.md §3)."""

from __future__ import annotations

import numpy as np

from attnphys._checks import check_array, check_count, check_positive
from attnphys.errors import InputError


def power_spectrum(x: np.ndarray, dt: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """One-sided power spectrum |X(f)|²/n of the mean-removed series (theory: docs/theory/dynamics.md §3).

    Args:
        x: (n,) samples. dt: sampling interval (steps).

    Returns:
        (frequencies in cycles per step, power), each (n//2 + 1,).
    """
    check_array(x, "x", ndim=1, what="one series of samples", finite=True)
    check_positive(dt, "dt")
    x = np.asarray(x, dtype=np.float64)
    if x.size < 2:
        raise InputError(f"needs at least 2 samples, got {x.size}", "x")
    x = x - x.mean()
    X = np.fft.rfft(x)
    return np.fft.rfftfreq(x.size, d=dt), np.abs(X) ** 2 / max(x.size, 1)


def autocorrelation(x: np.ndarray, max_lag: int | None = None) -> np.ndarray:
    """Normalised autocorrelation ρ(τ) = ⟨δx_t δx_{t+τ}⟩ / ⟨δx²⟩, τ = 0 … max_lag, by zero-padded FFT
    (theory: docs/theory/dynamics.md §3).

    A constant series has ρ ≡ 1 at τ = 0 and 0 elsewhere by convention.
    """
    check_array(x, "x", ndim=1, what="one series of samples", finite=True)
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    if n < 1:
        raise InputError("needs at least 1 sample", "x")
    if max_lag is not None:
        check_count(max_lag, "max_lag", 0)
    max_lag = n - 1 if max_lag is None else min(max_lag, n - 1)
    d = x - x.mean()
    f = np.fft.rfft(d, 2 * n)
    acf = np.fft.irfft(f * np.conj(f))[: max_lag + 1]
    acf /= np.arange(n, n - max_lag - 1, -1)  # unbiased: divide by the number of pairs
    if acf[0] <= 0:
        out = np.zeros(max_lag + 1)
        out[0] = 1.0
        return out
    return acf / acf[0]
