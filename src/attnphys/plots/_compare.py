"""Figures of stored diagrams read again: the comparison of two (:func:`attnphys.dmft.compare_diagrams`) and the
phase portraits of rerun points (:func:`attnphys.dmft.diagram_portraits`). The comparison: exponents side by side,
their difference and what changed where (theory: docs/theory/dmft.md §7.6)."""

from __future__ import annotations

import json

import numpy as np
import xarray as xr
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.figure import Figure

from attnphys.plots._bifurcation import REGIME_COLORS
from attnphys.plots._common import figure, param_label, root

CHANGE_COLORS = {"unchanged": "#f0f0f0", "exponents": "#9ecae1", "period": "#fd8d3c", "regime": "#d62728"}
"""One colour per code of :data:`attnphys.dmft.CHANGES`."""


def _changes(ds: xr.Dataset) -> list[str]:
    return str(ds["change"].attrs["flag_meanings"]).split()[1:]  # without not_computed


def _title(ds: xr.Dataset) -> str:
    counts = json.loads(str(ds.attrs.get("changes", "{}")))
    shown = ", ".join(f"{k}: {v}" for k, v in counts.items() if v)
    diff = json.loads(str(ds.attrs.get("config_changes", "{}")))
    cfg = "; ".join(f"{k} {a} → {b}" for k, (a, b) in diff.items()) or "same configuration"
    return f"b − a ({cfg}); {shown}; tol {ds.attrs.get('tol')}"


def _one_parameter(ds: xr.Dataset, fig) -> None:
    param = ds["change"].dims[-1]
    lead = [d for d in ds["change"].dims if d != param]
    rows = ds.stack(_lead=lead) if lead else ds.expand_dims(_lead=[0])
    axes = fig.subplots(3, 1, sharex=True, height_ratios=[3, 2, 1])
    names = _changes(ds)
    styles = ["-", "--", ":", "-."]
    x = np.asarray(ds[param].values)
    for j in range(rows.sizes["_lead"]):
        r = rows.isel(_lead=j)
        tag = "" if not lead else f" ({r['_lead'].item()})"
        ls = styles[j % len(styles)]
        axes[0].plot(x, r.lambda1_a, color="tab:blue", ls=ls, alpha=0.6, label=f"a{tag}")
        axes[0].plot(x, r.lambda1_b, color="tab:orange", ls=ls, label=f"b{tag}")
        axes[1].plot(x, r.d_lambda1, color="k", ls=ls, marker=".", ms=3, label=f"Δλ₁{tag}")
        for i, name in enumerate(names):
            hit = np.asarray(r.change.values) == i
            if hit.any() and name != "unchanged":
                axes[2].scatter(x[hit], np.full(hit.sum(), j), color=CHANGE_COLORS[name], marker="|", s=200, label=name)
    tol = float(ds.attrs.get("tol", 0.0))
    for s in (tol, -tol):
        axes[1].axhline(s, color="0.6", lw=0.6, ls=":")
    axes[0].axhline(0, color="0.6", lw=0.6)
    axes[0].set_ylabel("λ₁ per step")
    axes[0].legend(fontsize=7)
    axes[1].set_ylabel("λ₁(b) − λ₁(a)")
    axes[2].set_yticks(range(rows.sizes["_lead"]))
    axes[2].set_yticklabels([str(v) for v in rows["_lead"].values] if lead else [""])
    handles, labels = axes[2].get_legend_handles_labels()
    seen = dict(zip(labels, handles))
    if seen:
        axes[2].legend(seen.values(), seen.keys(), fontsize=7, ncol=len(seen), loc="upper right")
    axes[2].set_ylabel("changed")
    axes[2].set_xlabel(param_label(ds, str(param)))


def _two_parameters(ds: xr.Dataset, fig) -> None:
    from attnphys.dynamics.classify import REGIMES

    dims = list(ds["change"].dims)
    x, y = dims[-2], dims[-1]
    d = ds.isel({k: 0 for k in dims[:-2]}).transpose(y, x, ...)
    xs, ys = d[x].values, d[y].values
    axes = fig.subplots(1, 3)
    cmap = ListedColormap([REGIME_COLORS[r] for r in REGIMES])
    norm = BoundaryNorm(np.arange(len(REGIMES) + 1) - 0.5, len(REGIMES))
    for ax, var, what in ((axes[0], "regime_a", "regime in a"), (axes[1], "regime_b", "regime in b")):
        reg = d[var].values.astype(float)
        reg[reg < 0] = np.nan
        im = ax.pcolormesh(xs, ys, reg, cmap=cmap, norm=norm, shading="nearest")
        ax.set_title(what, fontsize=9)
    cb = fig.colorbar(im, ax=axes[1], ticks=np.arange(len(REGIMES)))  # pyright: ignore[reportPossiblyUnboundVariable]
    cb.ax.set_yticklabels([r.replace("_", " ") for r in REGIMES], fontsize=7)
    names = _changes(ds)
    ch = d["change"].values.astype(float)
    ch[ch < 0] = np.nan
    im = axes[2].pcolormesh(
        xs,
        ys,
        ch,
        cmap=ListedColormap([CHANGE_COLORS[n] for n in names]),
        norm=BoundaryNorm(np.arange(len(names) + 1) - 0.5, len(names)),
        shading="nearest",
    )
    cb = fig.colorbar(im, ax=axes[2], ticks=np.arange(len(names)))
    cb.ax.set_yticklabels(names, fontsize=7)
    axes[2].set_title("what changed", fontsize=9)
    for ax in axes:
        ax.set_xlabel(param_label(ds, str(x)))
        ax.set_ylabel(param_label(ds, str(y)))


def compare_diagrams_figure(ds: xr.Dataset, *, fig=None) -> Figure:
    """The comparison of two diagrams (theory: docs/theory/dmft.md §7.6). Along one parameter: λ₁ of both
    diagrams, Δλ₁ = λ₁(b) − λ₁(a) with the tolerance band, and a strip marking where the exponents, the period
    or the regime changed (one row per value of a leading dim such as ``direction``). Over two parameters:
    the regime maps of a and b and the map of what changed (other grid dims at their first value).

    Args:
        ds: the result of :func:`attnphys.dmft.compare_diagrams`. fig: a Figure or SubFigure to draw into.
    """
    spatial = [d for d in ds["change"].dims if d != "direction"]
    fig = figure(fig, figsize=(9, 7) if len(spatial) < 2 else (15, 4.5))
    if len(spatial) < 2:
        _one_parameter(ds, fig)
    else:
        _two_parameters(ds, fig)
    fig.suptitle(_title(ds), fontsize=8)
    return root(fig)


__all__ = ["CHANGE_COLORS", "compare_diagrams_figure", "portraits_figure"]


def portraits_figure(ds: xr.Dataset, pairs=((0, 1), (0, 2)), *, fig=None) -> Figure:
    """Phase portraits of the points of a stored diagram rerun by :func:`attnphys.dmft.diagram_portraits`
    (theory: docs/theory/dmft.md §7.7): one column per point, one row per feature pair (f, g) of the
    diagram's observable, the recorded steps drawn as points of the plane (feature f, feature g); each column
    is titled with the point's parameters, its regime and period and λ₁.

    Args:
        ds: the result of :func:`attnphys.dmft.diagram_portraits`. pairs: the feature pairs (rows); pairs
            beyond the recorded features are left out. fig: a Figure or SubFigure to draw into.
    """
    from attnphys.dynamics.classify import REGIMES

    obs = str(ds.attrs.get("observable", "mo_se"))
    if obs not in ds:
        obs = next(str(v) for v in ds.data_vars if ds[v].dims == ("point", "step", "feature"))
    n_feat = ds.sizes["feature"]
    pairs = [(f, g) for f, g in pairs if max(f, g) < n_feat] or [(0, 0)]
    n = ds.sizes["point"]
    fig = figure(fig, figsize=(3.2 * n + 0.5, 3.0 * len(pairs)))
    axes = np.atleast_2d(fig.subplots(len(pairs), n, squeeze=False))
    params = [str(c) for c in ds.coords if ds[c].dims == ("point",) and c != "point"]
    for j in range(n):
        p = ds.isel(point=j)
        x = np.asarray(p[obs].values)
        reg = int(p.regime.item())
        color = REGIME_COLORS[REGIMES[reg]] if reg >= 0 else "k"
        for i, (f, g) in enumerate(pairs):
            ax = axes[i, j]
            ax.plot(x[:, f], x[:, g], ".", ms=4 if int(p.period.item()) > 0 else 1.5, color=color)
            ax.ticklabel_format(style="sci", scilimits=(-2, 3))
            ax.locator_params(nbins=4)
            ax.set_xlabel(f"{obs}[{f}]", fontsize=8)
            ax.set_ylabel(f"{obs}[{g}]", fontsize=8)
        where = ", ".join(f"{param_label(ds, c)} = {float(p[c]):.6g}" for c in params)
        what = REGIMES[reg].replace("_", " ") if reg >= 0 else "not computed"
        period = int(p.period.item())
        what += f" (period {period})" if period > 0 else ""
        lam = float(p.exponents.values[0]) if p.sizes.get("exponent", 0) else float("nan")
        axes[0, j].set_title(f"{where}\n{what}, λ₁ = {lam:.4g}", fontsize=8)
    fig.suptitle(
        f"rerun of {ds.attrs.get('diagram', 'a diagram')}: max |Δλ| {ds.attrs.get('max_exponent_difference')}, "
        f"max |Δ orbit| {ds.attrs.get('max_orbit_difference')}",
        fontsize=8,
    )
    return root(fig)
