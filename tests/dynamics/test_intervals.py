"""Wilson intervals (theory: docs/theory/dynamics.md §7.3)."""

import numpy as np
import pytest

from attnphys.dynamics.intervals import wilson_interval


def test_wilson_closed_form_values():
    """k = 0: (0, z²/(n + z²)); k = n/2, n = 100: ½ ± z·√(0.25/n + z²/4n²)/(1 + z²/n)."""
    z = 1.959963984540054
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and hi == pytest.approx(z**2 / (10 + z**2), rel=1e-14)
    lo, hi = wilson_interval(50, 100)
    half = z * np.sqrt(0.25 / 100 + z**2 / 4e4) / (1 + z**2 / 100)
    assert (lo, hi) == (pytest.approx(0.5 - half, rel=1e-14), pytest.approx(0.5 + half, rel=1e-14))


def test_wilson_coverage_by_monte_carlo():
    """The interval covers the true p in ≈ 95% of binomial draws (n = 200)."""
    rng = np.random.default_rng(0)
    for p in (0.1, 0.5):
        k = rng.binomial(200, p, size=20_000)
        lo, hi = wilson_interval(k, 200)
        assert np.mean((lo <= p) & (p <= hi)) == pytest.approx(0.95, abs=0.015)
    assert np.all(np.isnan(wilson_interval(0, 0)))
