"""Finite-N → mean-field convergence study (spec ``dmft.md`` §2 vs §3).

For every β_o and N: sample ``paths`` finite-N paths and the mean-field trajectory from the same token
(the finite network repeats the configuration's weight columns, so both models share every correlation
tensor) and measure

* ``rms_deviation``: sqrt of the mean over paths, the first ``horizon`` steps and features of
  (m_finite − m_MF)² for the observable (``mo_se`` by default) — O(N^{-1/2}) where the mean field is
  not chaotic;
* ``stat_distance``: distance between long-run statistics — the time mean and standard deviation of the
  observable over steps ≥ ``transient``, averaged over paths, vs the mean field's (max over features)
  — the quantity that can converge in chaotic regimes, where single paths separate from the mean field
  after ~log(N)/λ₁ steps;
* ``slope`` / ``stat_slope``: least-squares slopes of log10(distance) vs log10(N) over the largest three
  decades of N shown.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import xarray as xr

from attnphys.dmft.config import DMFTConfig
from attnphys.dmft.finite import finite_trajectories, repeated_network
from attnphys.dmft.trajectory import trajectories
from attnphys.metadata import base_attrs
from attnphys.progress import progress_bar


def fitted_slope(ns: np.ndarray, d: np.ndarray, decades: float = 3.0) -> float:
    """Slope of log10 d vs log10 N over N ≥ N_max / 10^decades (NaN with fewer than two points)."""
    ns, d = np.asarray(ns, float), np.asarray(d, float)
    sel = (ns >= ns.max() / 10**decades) & np.isfinite(d) & (d > 0)
    if sel.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log10(ns[sel]), np.log10(d[sel]), 1)[0])


def converge(cfg: DMFTConfig, betas: Sequence[float], ns: Sequence[int], *, paths: int = 16, steps: int = 2000,
             horizon: int = 200, transient: int = 1000, observable: str = "mo_se", seed: int = 0,
             progress: bool = False) -> xr.Dataset:
    """Distances between finite-N paths and the mean field, per β_o and N (see module doc)."""
    ns = sorted(int(n) for n in ns)
    if not ns:
        raise ValueError("give at least one N")
    for n in ns:
        repeated_network(cfg, n)  # validates every N before computing
    if not 1 <= horizon <= steps or not 0 <= transient < steps:
        raise ValueError(f"need 1 <= horizon <= steps and 0 <= transient < steps (steps={steps}, horizon={horizon}, "
                         f"transient={transient})")
    betas = [float(b) for b in betas]
    rms = np.full((len(betas), len(ns)), np.nan)
    stat = np.full_like(rms, np.nan)
    with progress_bar(len(betas) * len(ns), "(beta, N)", enabled=progress) as advance:
        for i, b in enumerate(betas):
            c = cfg.replace(beta_o=b)
            mf = trajectories(c, start="token", steps=steps, transient=0, record=(observable,))[observable].values
            mf_stats = np.stack([mf[transient:].mean(0), mf[transient:].std(0)])
            for j, n in enumerate(ns):
                fin = finite_trajectories(c, n, paths=paths, steps=steps, seed=seed)[observable].values  # (paths, T, M)
                rms[i, j] = np.sqrt(np.mean((fin[:, :horizon] - mf[None, :horizon]) ** 2))
                fs = np.stack([fin[:, transient:].mean(1).mean(0), fin[:, transient:].std(1).mean(0)])
                stat[i, j] = np.max(np.abs(fs - mf_stats))
                advance(1)
    ds = xr.Dataset(
        {
            "rms_deviation": (("beta_o", "n"), rms),
            "stat_distance": (("beta_o", "n"), stat),
            "slope": (("beta_o",), np.array([fitted_slope(ns, r) for r in rms])),
            "stat_slope": (("beta_o",), np.array([fitted_slope(ns, s) for s in stat])),
        },
        coords={"beta_o": betas, "n": ns},
    )
    ds["rms_deviation"].attrs["description"] = f"RMS of {observable}(finite) - {observable}(MF) over paths, first {horizon} steps, features"
    ds["stat_distance"].attrs["description"] = f"max |time mean, time std of {observable} (steps >= {transient}): finite - MF|"
    ds.attrs.update(base_attrs(cfg, paths=paths, steps=steps, horizon=horizon, transient=transient, observable=observable,
                               seed=seed))
    return ds
