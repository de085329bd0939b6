"""Phase diagrams: regime map and leading-exponent heat map over two swept parameters
(theory: docs/theory/dmft.md §7.3)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.colors import BoundaryNorm, ListedColormap, TwoSlopeNorm

from attnphys.dynamics.classify import REGIMES
from attnphys.plots._common import config_title, save, subplots
from attnphys.plots.bifurcation import REGIME_COLORS


def plot_phase_diagram(ds: xr.Dataset, path: str | Path, x: str, y: str) -> Path:
    """Regime map (left) and λ1 (right) over the (x, y) grid; other grid axes take their first value
    (theory: docs/theory/dmft.md §7.3)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sel = {d: 0 for d in ds.regime.dims if d not in (x, y)}
    d = ds.isel(sel).transpose(y, x, ...)
    xs, ys = d[x].values, d[y].values
    fig, axes = subplots(1, 2, figsize=(12, 4.8))
    cmap = ListedColormap([REGIME_COLORS[r] for r in REGIMES])
    norm = BoundaryNorm(np.arange(len(REGIMES) + 1) - 0.5, len(REGIMES))
    im = axes[0].pcolormesh(xs, ys, d.regime.values.astype(float), cmap=cmap, norm=norm, shading="nearest")
    cb = fig.colorbar(im, ax=axes[0], ticks=np.arange(len(REGIMES)))
    cb.ax.set_yticklabels([r.replace("_", " ") for r in REGIMES], fontsize=7)
    axes[0].set_title("regime")
    if "lambda1" in d and np.isfinite(d.lambda1.values).any():
        lam = d.lambda1.values
        # robust colour range: degenerate points (e.g. β_o = 0, an exactly zero Jacobian) have huge |λ1|
        vmax = max(float(np.nanpercentile(np.abs(lam), 98)), 1e-12)
        im = axes[1].pcolormesh(
            xs, ys, np.clip(lam, -vmax, vmax), cmap="RdBu_r", norm=TwoSlopeNorm(0.0, -vmax, vmax), shading="nearest"
        )
        fig.colorbar(im, ax=axes[1], label="λ1 (per step, clipped to the 98th percentile of |λ1|)")
    axes[1].set_title("leading Lyapunov exponent")
    for ax in axes:
        ax.set_xlabel(x)
        ax.set_ylabel(y)
    fig.suptitle(config_title(ds), fontsize=9)
    return save(fig, path, dpi=130)
