"""The figure of a boundary continued in two parameters (:func:`attnphys.dmft.boundary`): the curve in the
parameter plane coloured by its normal-form coefficient, its codimension-two points, and the coefficient
and the critical multipliers along it (theory: docs/theory/dmft.md §7.8; docs/theory/dynamics.md §9)."""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from attnphys.plots._common import config_title, figure, param_label, root

_SPECIAL_MARKERS = {
    "cusp": "v",
    "resonance_1_1": "s",
    "resonance_1_2": "D",
    "resonance_1_3": "^",
    "resonance_1_4": "P",
    "fold_flip": "X",
    "generalized_flip": "*",
    "chenciner": "*",
}


def boundary_figure(ds: xr.Dataset, *, fig=None) -> Figure:
    """A boundary of :func:`attnphys.dmft.boundary` (theory: docs/theory/dmft.md §7.8): left, the curve in the
    plane of its two parameters, coloured by the normal-form coefficient (a, c or d: its sign says which side
    of the curve the new orbit lies on, docs/theory/dynamics.md §9.2), with the starting bifurcation and the
    codimension-two points marked; right, the coefficient and the moduli of the multipliers along the curve
    (point index).

    Args:
        ds: the result of :func:`attnphys.dmft.boundary` (or a curve of
            :func:`attnphys.dynamics.bifurcation_curve` with ``params`` in its attributes). fig: a Figure or
            SubFigure to draw into.
    """
    p1, p2 = str(ds.attrs.get("params", "s1,s2")).split(",")
    fig = figure(fig, figsize=(10.0, 4.2))
    ax, bx = fig.subplots(1, 2, width_ratios=[3, 2])
    x, y = np.asarray(ds[p1].values), np.asarray(ds[p2].values)
    coef = np.asarray(ds["coefficient"].values, float)
    name = str(ds.attrs.get("coefficient", "coefficient"))
    ax.plot(x, y, color="0.6", lw=0.8, zorder=1)
    finite = np.isfinite(coef)
    lim = float(np.max(np.abs(coef[finite]))) if finite.any() else 1.0
    sc = ax.scatter(x[finite], y[finite], c=coef[finite], cmap="coolwarm", vmin=-lim, vmax=lim, s=12, zorder=2)
    fig.colorbar(sc, ax=ax, label=f"normal-form coefficient {name}")
    s1, s2 = f"start_{p1}", f"start_{p2}"
    if s1 in ds.attrs and s2 in ds.attrs:
        ax.plot([ds.attrs[s1]], [ds.attrs[s2]], "ko", mfc="none", ms=9, label="start")
    for i in range(ds.sizes.get("special", 0)):
        kind = str(ds["special_kind"].values[i])
        ax.plot(
            [ds[f"special_{p1}"].values[i]],
            [ds[f"special_{p2}"].values[i]],
            ls="none",
            marker=_SPECIAL_MARKERS.get(kind, "o"),
            color="k",
            ms=9,
            label=kind.replace("_", " "),
        )
    ax.set_xlabel(param_label(ds, p1))
    ax.set_ylabel(param_label(ds, p2))
    ax.legend(fontsize=7, loc="best")
    kind = {"neimark_sacker": "Neimark–Sacker"}.get(str(ds.attrs.get("kind", "")), str(ds.attrs.get("kind", "")))
    ax.set_title(f"{kind} curve of the period-{ds.attrs.get('period', '?')} orbit", fontsize=9)
    idx = np.arange(x.size)
    bx.plot(idx, coef, "k.-", ms=3, lw=0.8, label=name)
    bx.axhline(0, color="0.6", lw=0.6)
    bx.set_xlabel("point along the curve")
    bx.set_ylabel(f"coefficient {name}")
    mu = np.hypot(np.asarray(ds["multiplier_real"].values), np.asarray(ds["multiplier_imag"].values))
    tx = bx.twinx()
    tx.plot(idx, np.sort(mu, axis=1)[:, -3:], color="tab:green", lw=0.8, alpha=0.8)
    tx.set_ylabel("|μ|, three largest", color="tab:green")
    fig.suptitle(config_title(ds), fontsize=8)
    return root(fig)
