"""Bifurcation diagrams coloured by regime, Lyapunov exponents and zero-plane points (spec ``dmft.md`` §6).

Input: a dataset of :func:`attnphys.dmft.analysis.analyse` with one swept parameter (and optionally a
``direction`` dimension from continuation). In the diagram, points whose regime is a fixed point or a
periodic orbit show their recorded orbit samples; quasi-periodic and chaotic points show their
zero-plane section points (``f`` where |``g``| ≤ tol, pair 0|1 by default), as the paper does, or the
orbit samples when the orbit never crossed the plane.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from attnphys.plots._common import config_title, save, subplots
from attnphys.dynamics.classify import REGIMES

REGIME_COLORS = {
    "divergent": "#7f7f7f",
    "fixed_point": "#1f77b4",
    "periodic": "#2ca02c",
    "quasi_periodic": "#ff7f0e",
    "chaotic": "#d62728",
    "hyperchaotic": "#9467bd",
}


def _param(ds: xr.Dataset) -> str:
    names = [d for d in ds.regime.dims if d != "direction"]
    if len(names) != 1:
        raise ValueError(f"a bifurcation diagram needs exactly one swept parameter, got {names}")
    return names[0]


def _directions(ds: xr.Dataset) -> list[xr.Dataset]:
    if "direction" in ds.dims:
        return [ds.sel(direction=d) for d in ds.direction.values]
    return [ds]


def diagram_points(ds: xr.Dataset, feature: int = 0, pair: int = 0, max_points: int = 200) -> tuple[np.ndarray, ...]:
    """(parameter, value, regime code) of the points drawn in the diagram, for one direction."""
    p = _param(ds)
    xs, ys, cs = [], [], []
    periodic = {REGIMES.index("fixed_point"), REGIMES.index("periodic")}
    has_section = "section" in ds and ds.sizes.get("pair", 0) > pair
    for i, value in enumerate(ds[p].values):
        code = int(ds.regime.values[i])
        y = None
        if code not in periodic and has_section:
            sec = ds.section.values[i, pair]
            sec = sec[np.isfinite(sec)]
            y = sec[:max_points] if sec.size else None
        if y is None:
            orb = ds.orbit.values[i, :, feature]
            y = orb[-max_points:]
            if code in periodic:
                y = np.unique(np.round(y, 10))
        xs.append(np.full(y.size, value))
        ys.append(y)
        cs.append(np.full(y.size, code))
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(cs)


def plot_bifurcation(ds: xr.Dataset, path: str | Path, feature: int = 0, pair: int = 0) -> list[Path]:
    """Write the diagram with its exponents to ``path`` and the zero-plane points to ``<stem>_sections.png``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    p = _param(ds)
    dirs = _directions(ds)
    has_exp = "exponents" in ds
    nrows = 2 if has_exp else 1
    fig, axes = subplots(nrows, len(dirs), figsize=(7 * len(dirs), 3.2 * nrows + 0.6), squeeze=False, sharex=True)
    for j, d in enumerate(dirs):
        ax = axes[0, j]
        x, y, c = diagram_points(d, feature, pair)
        for code, name in enumerate(REGIMES):
            sel = c == code
            if sel.any():
                ax.plot(x[sel], y[sel], ",", color=REGIME_COLORS[name], alpha=0.7)
                ax.plot([], [], "s", color=REGIME_COLORS[name], label=name.replace("_", " "))
        label = d.attrs.get("observable", "mo_se")
        ax.set_ylabel(f"{label}[{feature}]")
        title = "cold start" if "direction" not in ds.dims else f"continuation {str(d.direction.values)}"
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7, loc="best", markerscale=1.5)
        if has_exp:
            ax = axes[1, j]
            ex = d.exponents.values
            for i in range(min(ex.shape[-1], 4)):
                ax.plot(d[p].values, ex[:, i], lw=0.7, label=f"λ{i + 1}")
            ax.axhline(0, color="k", lw=0.5)
            shown = ex[:, : min(ex.shape[-1], 4)]
            lo, hi = np.nanpercentile(shown, 2), np.nanmax(shown)  # degenerate points (β_o = 0) off-scale
            if np.isfinite(lo) and np.isfinite(hi) and hi > lo:
                ax.set_ylim(lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo))
            ax.set_ylabel("Lyapunov exponent")
            ax.legend(fontsize=7, ncol=4)
        axes[-1, j].set_xlabel(p)
    fig.suptitle(config_title(ds), fontsize=9)
    out = [save(fig, path)]

    if "section" in ds and ds.sizes.get("pair", 0):
        pairs = list(ds.pair.values)
        fig, axes = subplots(len(pairs), len(dirs), figsize=(7 * len(dirs), 2.2 * len(pairs) + 0.6),
                                 squeeze=False, sharex=True)
        for j, d in enumerate(dirs):
            for i, name in enumerate(pairs):
                sec = d.section.values[:, i]
                xx = np.broadcast_to(d[p].values[:, None], sec.shape)
                ok = np.isfinite(sec)
                axes[i, j].plot(xx[ok], sec[ok], ",", color="k")
                f, g = name.split("|")
                axes[i, j].set_ylabel(f"[{f}] at [{g}]≈0", fontsize=8)
            axes[-1, j].set_xlabel(p)
        fig.suptitle("zero-plane points · " + config_title(ds), fontsize=9)
        out.append(save(fig, path.with_name(path.stem + "_sections.png")))
    return out
