"""Finite-N → mean-field convergence study (theory: docs/theory/dmft.md §2.3).

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

from collections.abc import Sequence

import numpy as np
import xarray as xr

from attnphys.dmft.config import DMFTConfig


def fitted_slope(ns: np.ndarray, d: np.ndarray, decades: float = 3.0) -> float:
    """Slope of log10 d vs log10 N over N ≥ N_max / 10^decades (NaN with fewer than two points)."""
    ns, d = np.asarray(ns, float), np.asarray(d, float)
    sel = (ns >= ns.max() / 10**decades) & np.isfinite(d) & (d > 0)
    if sel.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log10(ns[sel]), np.log10(d[sel]), 1)[0])


def converge(
    cfg: DMFTConfig,
    betas: Sequence[float],
    ns: Sequence[int],
    *,
    paths: int = 16,
    steps: int = 2000,
    horizon: int = 200,
    transient: int = 1000,
    observable: str = "mo_se",
    seed: int = 0,
    progress: bool = False,
) -> xr.Dataset:
    """Distances between finite-N paths and the mean field, per β_o and N (see the module doc).

    Raises:
        InputError: fewer than two sizes (no slope), a repeated value, or a size that is not a positive
            multiple of n_se.
    """
    from attnphys.dmft.tasks import ConvergeTask
    from attnphys.errors import InputError
    from attnphys.sweeps import Axis, Grid, Sweep, run_sweep

    ns = [int(n) for n in ns]
    if len(ns) < 2:
        raise InputError(f"give at least two network sizes to fit a slope, got {ns}", "--n")
    if len(set(ns)) != len(ns):
        raise InputError(f"network sizes repeat: {ns}", "--n")
    ns = sorted(ns)
    betas = [float(b) for b in betas]
    if len(set(betas)) != len(betas):
        raise InputError(f"beta_o values repeat: {betas}", "--beta-o")
    task = ConvergeTask(
        config=cfg, paths=paths, steps=steps, horizon=horizon, transient=transient, observable=observable, seed=seed
    )
    grid = Grid(
        axes=(Axis(name="beta_o", values=tuple(betas)), Axis(name="n", values=tuple(float(n) for n in ns))),
        chunk=len(ns),
    )
    ds = run_sweep(Sweep(grid=grid, task=task), progress=progress)
    return ds.assign_coords(n=np.asarray(ns))
