"""Switching figure: the finite network's escape times between coexisting attractors against N, with the fitted
slope of ln τ beside the least actions ΔS (theory: docs/theory/switching.md §2, §5)."""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from attnphys.plots._common import config_title, figure, root, suptitle

_MARKERS = {"gaussian": "o", "binomial": "s"}


def _escape_panel(ax, ds: xr.Dataset) -> None:
    ns = ds["size"].values.astype(float)
    for i in ds.attractor.values:
        a = ds.sel(attractor=i)
        c = f"C{int(i) % 10}"
        tau = a.escape_time.values.astype(float)
        lo, hi = a.escape_time_low.values.astype(float), a.escape_time_high.values.astype(float)
        k = a.escapes.values.astype(float)
        label = f"{int(i)}: period {int(a.period)} → {int(ds.period.values[int(a.target)])}"
        seen = np.isfinite(tau)
        top = np.where(np.isfinite(hi), hi, tau)
        ax.errorbar(
            ns[seen],
            tau[seen],
            yerr=[tau[seen] - lo[seen], top[seen] - tau[seen]],
            fmt="o",
            color=c,
            capsize=3,
            label=label,
        )
        if (~seen).any():  # no escape: the interval's lower end is a lower bound on τ
            ax.plot(ns[~seen], lo[~seen], "^", color=c, mfc="none", label=f"{int(i)}: no escape (τ above)")
        ok = seen & (k > 0)
        if ok.sum() >= 2 and np.isfinite(float(a.slope)):  # the weighted fit passes through the weighted centroid
            xm = float(np.sum(k[ok] * ns[ok]) / np.sum(k[ok]))
            ym = float(np.sum(k[ok] * np.log(tau[ok])) / np.sum(k[ok]))
            x = np.linspace(ns[ok].min(), ns[ok].max(), 50)
            ax.plot(x, np.exp(ym + float(a.slope) * (x - xm)), "-", color=c, lw=1, label=f"{int(i)}: fit of ln τ")
            for w in ds.law.values:
                dS = float(a.action.sel(law=w))
                if np.isfinite(dS):
                    ax.plot(
                        x,
                        np.exp(ym + dS * (x - xm)),
                        ":" if w == "gaussian" else "--",
                        color=c,
                        lw=1,
                        label=f"{int(i)}: slope ΔS ({w})",
                    )
    ax.set_yscale("log")
    ax.set(xlabel="N (semantic bits)", ylabel="mean escape time τ (steps)")
    ax.set_title("escape times (95% intervals) and the slope of ln τ", fontsize=9)
    ax.legend(fontsize=6.5, frameon=False)


def _slope_panel(ax, ds: xr.Dataset) -> None:
    idx = ds.attractor.values.astype(float)
    for j, w in enumerate(ds.law.values):
        ax.plot(
            idx + 0.1 * j,
            ds.action.sel(law=w).values,
            _MARKERS.get(str(w), "D"),
            ls="none",
            color=f"C{j}",
            label=f"ΔS ({w})",
        )
    s, lo, hi = (ds[v].values.astype(float) for v in ("slope", "slope_low", "slope_high"))
    ok = np.isfinite(s)
    if ok.any():
        ax.errorbar(
            idx[ok] - 0.1,
            s[ok],
            yerr=[s[ok] - lo[ok], hi[ok] - s[ok]],
            fmt="x",
            color="k",
            capsize=3,
            label="slope of ln τ (95%)",
        )
    ax.axhline(0.0, color="0.6", lw=0.6)
    ax.set_xticks(idx, [f"{int(i)}: period {int(p)}" for i, p in zip(idx, ds.period.values, strict=True)])
    ax.set(xlabel="attractor", ylabel="per semantic bit")
    ax.set_title("least action ΔS beside the measured slope", fontsize=9)
    ax.legend(fontsize=6.5, frameon=False)


def _options(ds: xr.Dataset) -> dict:
    """The analysis' options stored with the result (a JSON text; empty when absent or unreadable)."""
    import json

    o = ds.attrs.get("options", "{}")
    try:
        o = json.loads(o) if isinstance(o, str) else o
    except json.JSONDecodeError:
        return {}
    return o if isinstance(o, dict) else {}


def switching_figure(ds: xr.Dataset, *, fig=None) -> Figure:
    """Escapes between the coexisting attractors (theory: docs/theory/switching.md §2, §5).

    Left: per attractor the mean escape time τ̂ against N (log scale) with its chi-squared 95% interval (open
    triangles: no run escaped, the interval's lower end), the weighted fit of ln τ̂ against N (solid) and, through
    the same point, lines of slope ΔS under each law (τ ≈ K e^{N ΔS}). Right: per attractor the least actions ΔS
    beside the fitted slope and its 95% interval, where the two can be read together.

    Args:
        ds: dataset of :func:`attnphys.dmft.switching` (``attnphys dmft switching``). fig: a Figure or
            SubFigure to draw into (default: new).
    """
    fig = figure(fig, figsize=(12, 4.8))
    axes = fig.subplots(1, 2)
    _escape_panel(axes[0], ds)
    _slope_panel(axes[1], ds)
    runs = _options(ds).get("walkers")
    suptitle(fig, ds, config_title(ds) + (f"; {runs} runs per size" if runs else ""))
    return root(fig)
