"""Figures of attractor censuses: coexisting attractors side by side, and basins along a parameter
(theory: docs/theory/dynamics.md §7–§8)."""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from attnphys.dynamics.classify import REGIMES, flag_names
from attnphys.plots._common import check_component, config_title, figure, param_label, root, suptitle


def _kind_names(ds: xr.Dataset) -> dict[int, str]:
    a = ds["kind"].attrs
    return flag_names(a) if "flag_values" in a else dict(enumerate(REGIMES))


def _label(ds: xr.Dataset, a: int, names: dict[int, str]) -> str:
    kind = int(ds["kind"].values[a])
    per = int(ds["period"].values[a])
    name = names.get(kind, "?").replace("_", " ")
    what = f"period {per}" if per > 0 else name
    f, lo, hi = (float(ds[v].values[a]) for v in ("basin_fraction", "basin_ci_low", "basin_ci_high"))
    return f"{what}\nbasin {f:.2f} [{lo:.2f}, {hi:.2f}]\nλ₁ = {float(ds['exponents'].values[a, 0]):.3g}"


def track_colors(n: int) -> list:
    """n distinct colours: the 10 or 20 qualitative colours of matplotlib up to 20 tracks, evenly spaced
    hues beyond (no two tracks share a colour)."""
    from matplotlib import colormaps

    if n <= 10:
        return [colormaps["tab10"](i) for i in range(n)]
    if n <= 20:
        return [colormaps["tab20"](i) for i in range(n)]
    return [colormaps["turbo"](x) for x in np.linspace(0.03, 0.97, n)]


def attractors_figure(ds: xr.Dataset, pairs=((0, 1), (0, 2)), *, fig=None) -> Figure:
    """One column per attractor found at one parameter point, one row per plane (f, g) of the observable
    (components f and g of ``observed``); titles give kind or period, basin fraction with its 95%
    interval and λ₁; the share of divergent starts is in the figure title (theory: docs/theory/dynamics.md §7.3).
    ``fig``: a Figure or SubFigure to draw into."""
    n = int(ds["n_attractors"].values)
    div = REGIMES.index("divergent")
    kinds = ds["kind"].values
    found = [a for a in range(min(n, ds.sizes["attractor"])) if int(kinds[a]) >= 0 and int(kinds[a]) != div]
    diverged = [a for a in range(min(n, ds.sizes["attractor"])) if int(kinds[a]) == div]
    F = ds.sizes["feature"]
    pairs = [p for p in pairs if max(p) < F] or [(0, 0)]
    cols = max(len(found), 1)
    fig = figure(fig, figsize=(3.3 * cols + 0.5, 3.1 * len(pairs) + 1.2))
    axes = fig.subplots(len(pairs), cols, squeeze=False)
    names = _kind_names(ds)
    obs = ds["observed"].values
    colors = track_colors(max(len(found), 1))
    label = ds.attrs.get("observable", "mo_se")
    for j, a in enumerate(found):
        for i, (f, g) in enumerate(pairs):
            ax = axes[i, j]
            ms = 5 if int(ds["period"].values[a]) > 0 else 2
            ax.plot(obs[a, :, f], obs[a, :, g], ".", ms=ms, color=colors[j])
            ax.set_xlabel(f"{label}[{f}]")
            ax.set_ylabel(f"{label}[{g}]")
            if i == 0:
                ax.set_title(_label(ds, a, names), fontsize=8)
    if not found:
        for ax in axes.ravel():
            ax.text(0.5, 0.5, "no attractor settled", ha="center", va="center", transform=ax.transAxes)
            ax.set_xlabel(f"{label}[{pairs[0][0]}]")
            ax.set_ylabel(f"{label}[{pairs[0][1]}]")
    unsettled = float(ds["unsettled_fraction"].values)
    text = f"{config_title(ds)}; unsettled {unsettled:.2f}"
    for a in diverged:  # no points to draw: in the title
        f, lo, hi = (float(ds[v].values[a]) for v in ("basin_fraction", "basin_ci_low", "basin_ci_high"))
        text += f"; divergent starts {f:.2f} [{lo:.2f}, {hi:.2f}]"
    suptitle(fig, ds, text)
    return root(fig)


NAMED_TRACKS = 9
"""Tracks drawn in their own colour and named in the legend of :func:`basins_figure` (the largest basins);
the others are drawn in grey."""

OTHER_TRACKS = "#b0b0b0"


def basins_figure(ds: xr.Dataset, param: str, component: int = 0, *, fig=None) -> Figure:
    """The diagram along ``param`` coloured by track (the representative states' ``observed`` component)
    above the basin fraction of every track and the unsettled fraction (theory: docs/theory/dynamics.md §8).
    The :data:`NAMED_TRACKS` tracks with the largest basins (their largest fraction along ``param``) get
    distinct qualitative colours and a legend entry each; any others are drawn in light grey under one entry
    that says how many there are and how large their basins get (a continuous colour map cannot tell 29
    tracks apart). ``fig``: a Figure or SubFigure to draw into."""
    from matplotlib import colormaps

    fig = figure(fig, figsize=(9.5, 7.6))
    ax, bx = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    pv = ds[param].values
    track = ds["track"].values  # (param, attractor)
    obs = ds["observed"].values[..., check_component(component, ds["observed"].shape[-1])]  # (param, attractor, sample)
    n_tracks = ds.sizes.get("track_id", 0)
    basin = ds["track_basin_fraction"].values if n_tracks else np.zeros((pv.size, 0))
    peak = np.nan_to_num(np.nanmax(basin, axis=0), nan=0.0) if n_tracks else np.zeros(0)
    named = [int(t) for t in np.argsort(-peak, kind="stable")[:NAMED_TRACKS]]
    palette = [colormaps["tab10"](i) for i in range(10) if i != 7]  # tab10 without its grey
    colors = {t: (palette[i] if t in named else OTHER_TRACKS) for i, t in enumerate(named)}
    others = [t for t in range(n_tracks) if t not in colors]
    for t in others + sorted(named, key=lambda t: -peak[t])[::-1]:  # named tracks drawn last, largest on top
        color = colors.get(t, OTHER_TRACKS)
        ii, aa = np.nonzero(track == t)
        if ii.size:
            y = obs[ii, aa]
            x = np.broadcast_to(pv[ii][:, None], y.shape)
            ax.plot(x.ravel(), y.ravel(), ",", color=color)
            ax.plot(x[:, :1].ravel(), y[:, :1].ravel(), ".", ms=2, color=color)
        label = f"track {t} (basin ≤ {peak[t]:.2f})" if t in colors else None
        bx.plot(
            pv, basin[:, t], "-", lw=1.2 if t in colors else 0.7, color=color, label=label, zorder=3 if label else 2
        )
    if others:
        bx.plot(
            [],
            [],
            "-",
            lw=0.7,
            color=OTHER_TRACKS,
            label=f"{len(others)} other tracks (basin ≤ {peak[others].max():.2f})",
        )
    bx.plot(pv, ds["unsettled_fraction"].values, "k--", lw=1, label="unsettled", zorder=4)
    ax.set_ylabel(f"{ds.attrs.get('observable', 'mo_se')}[{component}] (representative states)")
    ax.set_title(
        f"{n_tracks} tracks"
        + (f"; the {len(named)} with the largest basins in colour, {len(others)} in grey" if others else ""),
        fontsize=9,
    )
    bx.set_ylabel("basin fraction")
    bx.set_xlabel(param_label(ds, param))
    bx.set_ylim(-0.02, 1.02)
    handles, labels = bx.get_legend_handles_labels()
    bx.legend(handles, labels, fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.3), frameon=False)
    suptitle(fig, ds, config_title(ds))
    return root(fig)
