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
    if "elsewhere_fraction" in d:
        away = [int(n) for n, f in zip(d["n"].values, np.atleast_1d(d["elsewhere_fraction"].values)) if f > 0]
        if away:
            text += f" (without N = {', '.join(map(str, away))})"
    return text


def converge_figure(ds: xr.Dataset, *, fig=None) -> Figure:
    """``rms_deviation`` and ``stat_distance`` against N (log–log) per β_o, each with its fitted slope s of
    distance ∝ N^s (about −1/2 off chaos) and the slope's 95% interval, twice the sampling noise of the
    distance as a thin dotted line of the same colour (a distance at or below it is noise-limited), the
    RMS deviation predicted by the system-size expansion (``rms_predicted`` = c/√N, dash-dotted; theory:
    docs/theory/fluctuations.md §5) where the dataset has it, sizes
    left out of the fit (paths on another attractor, ``elsewhere_fraction``) as open markers, and an
    N^(−1/2) guide; the legend below the panels, off the data (theory: docs/theory/dmft.md §2.3).

    Args:
        ds: dataset of ``attnphys dmft converge`` (dims ``beta_o``, ``n``). fig: a Figure or SubFigure to
            draw into (default: new).
    """
    if "beta_o" not in ds.dims:  # a run at the configuration's own point: one curve, at its β_o
        import json

        b = (
            ds["beta_o"].values
            if "beta_o" in ds.coords
            else json.loads(ds.attrs.get("config", "{}")).get("beta_o", np.nan)
        )
        ds = ds.expand_dims(beta_o=[float(np.asarray(b).reshape(-1)[0])])
    ns = ds.n.values.astype(float)
    fig = figure(fig, figsize=(11.5, 5.6))
    axes = fig.subplots(1, 2, sharex=True)
    away_any = False
    for b in ds.beta_o.values:
        d = ds.sel(beta_o=b)
        away = (
            np.nan_to_num(d["elsewhere_fraction"].values) > 0 if "elsewhere_fraction" in d else np.zeros(ns.size, bool)
        )
        away_any |= bool(away.any())
        color = None
        for ax, var, noise, style, prefix in (
            (axes[0], "rms_deviation", "rms_noise", "o-", "slope"),
            (axes[1], "stat_distance", "stat_noise", "s--", "stat_slope"),
        ):
            y = d[var].values
            (line,) = ax.loglog(ns, y, style, color=color, ms=5, label=f"β_o={b:g}: {_slope_label(d, prefix)}")
            color = line.get_color()
            if away.any():
                ax.plot(ns[away], y[away], style[0], ms=9, mfc="white", mec=color, mew=1.5, ls="none", zorder=4)
            if noise in d and np.isfinite(d[noise].values).any():
                ax.loglog(ns, 2 * d[noise].values, ":", color=color, lw=0.9)
        if "rms_predicted" in d and np.isfinite(d["rms_predicted"].values).any():
            axes[0].loglog(
                ns,
                d["rms_predicted"].values,
                "-.",
                color=color,
                lw=1.1,
                alpha=0.8,
                label=f"β_o={b:g}: predicted c/√N, c = {float(d['rms_prefactor_predicted']):.3g}",
            )
    ref = ds.rms_deviation.values[np.isfinite(ds.rms_deviation.values)]
    if ref.size:
        axes[0].loglog(ns, ref.max() * (ns / ns[0]) ** -0.5, "k-", lw=0.6, alpha=0.6, label="N^-1/2 guide")
    for ax, v in zip(axes, (ds.rms_deviation.values, ds.stat_distance.values)):
        fin = v[np.isfinite(v) & (v > 0)]
        if fin.size:
            ax.set_ylim(fin.min() / 3, fin.max() * 3)
    axes[0].set_title("path deviation from the mean field (fixed horizon)", fontsize=9)
    axes[1].set_title("long-run statistics: finite vs mean field", fontsize=9)
    for ax in axes:
        ax.set_xlabel("N (semantic bits)")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=1, frameon=False)
    axes[0].set_ylabel("RMS deviation")
    axes[1].set_ylabel("distance of time means and spreads")
    note = "; open markers: paths on another attractor, left out of the fit" if away_any else ""
    suptitle(fig, ds, config_title(ds) + "; slopes with 95% intervals; dotted: twice the sampling noise" + note)
    return root(fig)
