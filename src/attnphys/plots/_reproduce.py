"""Multi-panel figures of ``attnphys reproduce``: the planes of several trajectories (Fig. 4) and the time
series, spectra and autocorrelations of two regimes side by side (Fig. 5) (theory: docs/theory/dmft.md §8)."""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from attnphys.plots._common import config_title, figure, root, suptitle
from attnphys.plots._trajectory import (
    context_length,
    draw_autocorrelation,
    draw_spectrum,
    memory_of,
    memory_text,
    sampling_interval,
)


def planes_figure(ds: xr.Dataset, labels: list[str] | None = None, *, fig=None) -> Figure:
    """One column per β_o: (mo_se[0], mo_se[1]) above, (att[0], att[2]) below, every recorded step a point
    (theory: docs/theory/dmft.md §8). ``labels``: one line per column under β_o (e.g. the regime).
    ``fig``: a Figure or SubFigure to draw into (default: new)."""
    n = ds.sizes["beta_o"]
    fig = figure(fig, figsize=(2.6 * n + 0.6, 5.8))
    axes = fig.subplots(2, n, squeeze=False)
    j2 = min(2, ds.sizes["feature"] - 1)
    for i in range(n):
        d = ds.isel(beta_o=i)
        for row, (name, a, b) in enumerate((("mo_se", 0, 1), ("att", 0, j2))):
            y = d[name].values
            ax = axes[row, i]
            few = np.unique(np.round(y[:, [a, b]], 10), axis=0).shape[0] < 1000  # a periodic orbit: larger dots
            ax.plot(y[:, a], y[:, b], ".", ms=3.0 if few else 1.0, mew=0, color="k", alpha=0.6, rasterized=True)
            ax.set_xlabel(f"{name}[{a}]", fontsize=8)
            ax.set_ylabel(f"{name}[{b}]", fontsize=8)
            ax.tick_params(labelsize=6)
        title = f"β_o = {float(ds.beta_o.values[i]):g}"
        if labels:
            title += f"\n{labels[i]}"
        axes[0, i].set_title(title, fontsize=8)
    suptitle(fig, ds, config_title(ds))
    return root(fig)


def series_figure(
    ds: xr.Dataset, labels: list[str] | None = None, window: int = 350, max_lag: int = 1000, *, fig=None
) -> Figure:
    """One column per β_o: mo_se over the last ``window`` records, the power spectrum of mo_se[0] (1/L
    marked) and its autocorrelation up to ``max_lag`` steps (L and the autocorrelation time marked), with
    the memory numbers and their white-noise baseline in the column title (theory: docs/theory/dmft.md §8).
    ``fig``: a Figure or SubFigure to draw into (default: new)."""
    n = ds.sizes["beta_o"]
    L, dt = context_length(ds), sampling_interval(ds)
    fig = figure(fig, figsize=(5.6 * n, 8.6))
    axes = fig.subplots(3, n, squeeze=False)
    for i in range(n):
        d = ds.isel(beta_o=i)
        steps, y = d.step.values, d.mo_se.values
        w = slice(max(0, len(steps) - window), None)
        for f in range(y.shape[1]):
            axes[0, i].plot(steps[w], y[w, f], lw=0.8, label=f"mo_se[{f}]")
        axes[0, i].set_xlabel("step")
        axes[0, i].set_ylabel("mo_se")
        axes[0, i].legend(fontsize=7, ncol=3, loc="upper right")
        x = y[:, 0]
        mem = memory_of(d)
        draw_spectrum(axes[1, i], x, L, dt)
        draw_autocorrelation(axes[2, i], x, L, dt, max_lag=max_lag, tau=mem.get("tau"))
        title = f"β_o = {float(ds.beta_o.values[i]):g}" + (f": {labels[i]}" if labels else "")
        text = memory_text(x, L, dt, **mem, sep="\n")
        axes[0, i].set_title(f"{title}\n{text}", fontsize=8)
    suptitle(fig, ds, config_title(ds))
    return root(fig)
