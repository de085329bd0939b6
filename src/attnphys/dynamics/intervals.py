"""Binomial confidence intervals for basin fractions (theory: docs/theory/dynamics.md §7.3)."""

from __future__ import annotations

import numpy as np

Z95 = 1.959963984540054
"""The 97.5% quantile of the standard normal: two-sided 95% intervals."""


def wilson_interval(k, n, z: float = Z95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for a binomial proportion k/n (theory: docs/theory/dynamics.md §7.3):

        (p̂ + z²/2n ± z √(p̂(1 − p̂)/n + z²/4n²)) / (1 + z²/n),   p̂ = k/n.

    Unlike the normal-approximation interval it stays inside [0, 1] and is not degenerate at k = 0 or k = n.

    Args:
        k: successes (any shape). n: trials (broadcastable; n = 0 gives NaN). z: normal quantile.

    Returns:
        (low, high) arrays.
    """
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        denom = 1.0 + z**2 / n
        center = (p + z**2 / (2 * n)) / denom
        half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / denom
    return np.clip(center - half, 0.0, 1.0), np.clip(center + half, 0.0, 1.0)
