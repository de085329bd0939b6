"""The slopes of the finite-N → mean-field convergence study (:func:`attnphys.dmft.converge`; theory:
docs/theory/dmft.md §2.3): least-squares slopes of log10(distance) against log10(N) over the largest three
decades of N."""

from __future__ import annotations

import numpy as np


def fitted_slope(ns: np.ndarray, d: np.ndarray, decades: float = 3.0) -> float:
    """Slope of log10 d vs log10 N over N ≥ N_max / 10^decades (NaN with fewer than two points)."""
    ns, d = np.asarray(ns, float), np.asarray(d, float)
    sel = (ns >= ns.max() / 10**decades) & np.isfinite(d) & (d > 0)
    if sel.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log10(ns[sel]), np.log10(d[sel]), 1)[0])
