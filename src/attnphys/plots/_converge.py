"""Finite-N → mean-field convergence figure: distances vs N on log–log axes with fitted slopes, their
confidence intervals and the sampling-noise floor (theory: docs/theory/dmft.md §2.3)."""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from attnphys.plots._common import config_title, figure, root, suptitle


def _slope_label(d: xr.Dataset, prefix: str) -> str:
    s = float(d[prefix])
    lo, hi = (float(d[f"{prefix}_ci_low"]), float(d[f"{prefix}_ci_high"])) if f"{prefix}_ci_low" in d else (np.nan,) * 2
    text = f"slope {s:.2f}" + (f" [{lo:.2f}, {hi:.2f}]" if np.isfinite(lo) else "")
    if f"{prefix}_noise_limited" in d and int(d[f"{prefix}_noise_limited"]) == 1:
        text += ", noise-limited"
    return text


def converge_figure(ds: xr.Dataset, *, fig=None) -> Figure:
    """``rms_deviation`` and ``stat_distance`` against N (log–log) per β_o, each with its fitted slope s of
    distance ∝ N^s (about −1/2 off chaos), the slope's 95% interval and, shaded, the sampling noise of the
    distance (a distance inside the band is noise-limited), and an N^(−1/2) guide
    (theory: docs/theory/dmft.md §2.3).

    Args:
        ds: dataset of ``attnphys dmft converge`` (dims ``beta_o``, ``n``). fig: a Figure or SubFigure to
            draw into (default: new).
    """
    ns = ds.n.values.astype(float)
    fig = figure(fig, figsize=(11.5, 4.8))
    axes = fig.subplots(1, 2, sharex=True)
    for b in ds.beta_o.values:
        d = ds.sel(beta_o=b)
        (line,) = axes[0].loglog(ns, d.rms_deviation.values, "o-", label=f"β_o={b:g}: {_slope_label(d, 'slope')}")
        axes[1].loglog(
            ns,
            d.stat_distance.values,
            "s--",
            color=line.get_color(),
            label=f"β_o={b:g}: {_slope_label(d, 'stat_slope')}",
        )
        for ax, noise in ((axes[0], "rms_noise"), (axes[1], "stat_noise")):
            if noise in d and np.isfinite(d[noise].values).any():
                ax.fill_between(ns, 1e-300, 2 * d[noise].values, color=line.get_color(), alpha=0.12, lw=0)
    ref = ds.rms_deviation.values[np.isfinite(ds.rms_deviation.values)]
    if ref.size:
        axes[0].loglog(ns, ref.max() * (ns / ns[0]) ** -0.5, "k:", lw=1, label="N^-1/2")
    for ax, v in zip(axes, (ds.rms_deviation.values, ds.stat_distance.values)):
        fin = v[np.isfinite(v) & (v > 0)]
        if fin.size:
            ax.set_ylim(fin.min() / 3, fin.max() * 3)
    axes[0].set_title("path deviation from the mean field (fixed horizon)", fontsize=9)
    axes[1].set_title("long-run statistics: finite vs mean field", fontsize=9)
    for ax in axes:
        ax.set_xlabel("N (semantic bits)")
        ax.legend(fontsize=7)
    axes[0].set_ylabel("RMS deviation")
    axes[1].set_ylabel("distance of time means and spreads")
    suptitle(fig, ds, config_title(ds) + "; slopes with 95% intervals; shaded: twice the sampling noise")
    return root(fig)
