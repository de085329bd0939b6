"""Phase diagrams: regime map and leading-exponent map over two swept parameters
(theory: docs/theory/dmft.md §7.3)."""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.colors import BoundaryNorm, ListedColormap, Normalize, TwoSlopeNorm
from matplotlib.figure import Figure

from attnphys.dynamics.classify import REGIMES
from attnphys.plots._bifurcation import REGIME_COLORS
from attnphys.plots._common import config_title, figure, param_label, root, suptitle


def exponent_norm(lam: np.ndarray) -> tuple[Normalize, int]:
    """A colour scale centred on λ₁ = 0 with its own range on each side (theory: docs/theory/dmft.md §7.3):
    the negative side down to the 2nd percentile of the finite negative values, the positive side up to the
    largest finite value, so that weak chaos (λ₁ ≈ 0.05) shows beside strong contraction (−0.95). −∞ and
    values below the range take the lowest colour. With values on one side of 0 only, the scale covers that
    side alone (no half of the colour bar left for values that do not occur): [vmin, 0] or [0, vmax], drawn
    with the matching half of the colour map (:func:`exponent_cmap`). Returns (norm, number of values below
    its range)."""
    lam = np.asarray(lam, float)
    fin = lam[np.isfinite(lam)]
    neg, pos = fin[fin < 0], fin[fin > 0]
    vmin = float(np.percentile(neg, 2)) if neg.size else 0.0
    vmax = float(pos.max()) if pos.size else 0.0
    below = int(np.sum(lam < vmin)) if neg.size else int(np.sum(np.isneginf(lam)))
    if neg.size and pos.size:
        return TwoSlopeNorm(0.0, min(vmin, -1e-12), max(vmax, 1e-12)), below
    if pos.size:
        return Normalize(0.0, max(vmax, 1e-12)), below
    return Normalize(min(vmin, -1e-12), 0.0), below


def exponent_cmap(norm: Normalize):
    """The colour map of :func:`exponent_norm`'s scale: blue (contraction) through white (0) to red (chaos),
    or only the half that the scale covers; −∞ and values below the range in dark blue, NaN grey."""
    from matplotlib import colormaps

    full = colormaps["RdBu_r"]
    if isinstance(norm, TwoSlopeNorm):
        cm = full
    else:
        side = np.linspace(0.0, 0.5, 128) if (norm.vmax or 0.0) <= 0 else np.linspace(0.5, 1.0, 128)
        cm = ListedColormap(full(side), name="RdBu_r_half")
    return cm.with_extremes(under="#08306b", bad="#dddddd")


def phase_diagram_figure(ds: xr.Dataset, x: str, y: str, *, fig=None) -> Figure:
    """Regime map (left) and λ₁ (right) over the (x, y) grid; other grid axes take their first value
    (theory: docs/theory/dmft.md §7.3). λ₁ uses :func:`exponent_norm`.

    Args:
        x, y: the swept coordinates on the axes. fig: a Figure or SubFigure to draw into (default: new).
    """
    sel = {d: 0 for d in ds.regime.dims if d not in (x, y)}
    d = ds.isel(sel).transpose(y, x, ...)
    xs, ys = d[x].values, d[y].values
    fig = figure(fig, figsize=(12, 5.0))
    axes = fig.subplots(1, 2)
    cmap = ListedColormap([REGIME_COLORS[r] for r in REGIMES])
    norm = BoundaryNorm(np.arange(len(REGIMES) + 1) - 0.5, len(REGIMES))
    reg = d.regime.values.astype(float)
    reg[reg < 0] = np.nan  # not computed
    im = axes[0].pcolormesh(xs, ys, reg, cmap=cmap, norm=norm, shading="nearest")
    cb = fig.colorbar(im, ax=axes[0], ticks=np.arange(len(REGIMES)))
    cb.ax.set_yticklabels([r.replace("_", " ") for r in REGIMES], fontsize=7)
    counts = {r: int(np.sum(d.regime.values == i)) for i, r in enumerate(REGIMES)}
    axes[0].set_title(
        "regime" + (f" ({counts['undetermined']} undetermined)" if counts["undetermined"] else ""), fontsize=9
    )
    if "lambda1" in d and np.isfinite(d.lambda1.values).any():
        lam = d.lambda1.values
        norm1, below = exponent_norm(lam)
        vmin = float(norm1.vmin if norm1.vmin is not None else -1.0)
        vmax = float(norm1.vmax if norm1.vmax is not None else 1.0)
        cm = exponent_cmap(norm1)
        shown = np.where(np.isneginf(lam), vmin - 1.0, lam)  # −∞: below the range (the "under" colour)
        im = axes[1].pcolormesh(xs, ys, shown, cmap=cm, norm=norm1, shading="nearest")
        cb = fig.colorbar(im, ax=axes[1], extend="min" if below else "neither")
        cb.set_label(
            f"λ₁ per step, {vmin:.3g} to {vmax:.3g}" + (" (−∞ and below in the end colour)" if below else ""),
            fontsize=8,
        )
        n_inf = int(np.sum(np.isneginf(lam)))
        axes[1].set_title(
            "leading Lyapunov exponent" + (f" ({n_inf} points with λ₁ = −∞)" if n_inf else ""), fontsize=9
        )
    else:
        axes[1].set_title("leading Lyapunov exponent (not computed)", fontsize=9)
        axes[1].text(0.5, 0.5, "no exponents stored", transform=axes[1].transAxes, ha="center", va="center")
    for ax in axes:
        ax.set_xlabel(param_label(ds, x))
        ax.set_ylabel(param_label(ds, y))
    suptitle(fig, ds, config_title(ds))
    return root(fig)
