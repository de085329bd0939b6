"""Phase diagrams: regime map and leading-exponent map over two swept parameters
(theory: docs/theory/dmft.md §7.3)."""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.colors import BoundaryNorm, ListedColormap, TwoSlopeNorm
from matplotlib.figure import Figure

from attnphys.dynamics.classify import REGIMES
from attnphys.plots._bifurcation import REGIME_COLORS
from attnphys.plots._common import config_title, figure, param_label, root, suptitle


def exponent_norm(lam: np.ndarray) -> tuple[TwoSlopeNorm, int]:
    """A colour scale centred on λ₁ = 0 with its own range on each side (theory: docs/theory/dmft.md §7.3):
    the negative side down to the 2nd percentile of the finite negative values, the positive side up to the
    largest finite value, so that weak chaos (λ₁ ≈ 0.05) shows beside strong contraction (−0.95). −∞ and
    values below the range take the lowest colour. Returns (norm, number of values below its range)."""
    lam = np.asarray(lam, float)
    fin = lam[np.isfinite(lam)]
    neg, pos = fin[fin < 0], fin[fin > 0]
    vmin = float(np.percentile(neg, 2)) if neg.size else -1e-3
    vmax = float(pos.max()) if pos.size else 1e-3 * max(1.0, -vmin)
    vmin = min(vmin, -1e-12)
    return TwoSlopeNorm(0.0, vmin, max(vmax, 1e-12)), int(np.sum(lam < vmin))


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
        norm1, _ = exponent_norm(lam)
        vmin = float(norm1.vmin if norm1.vmin is not None else -1.0)
        cm = _lambda_cmap()
        shown = np.where(np.isneginf(lam), vmin - 1.0, lam)  # −∞: below the range (the "under" colour)
        im = axes[1].pcolormesh(xs, ys, shown, cmap=cm, norm=norm1, shading="nearest")
        cb = fig.colorbar(im, ax=axes[1], extend="min")
        cb.set_label(f"λ₁ per step (negative side to {vmin:.3g}, −∞ and below in the end colour)", fontsize=8)
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


def _lambda_cmap():
    from matplotlib import colormaps

    cm = colormaps["RdBu_r"].copy()
    cm.set_under("#08306b")
    cm.set_bad("#dddddd")
    return cm
