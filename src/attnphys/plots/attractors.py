"""Figures of attractor censuses: coexisting attractors side by side, and basins along a parameter
(theory: docs/theory/dynamics.md §7–§8)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import xarray as xr

from attnphys.plots._common import check_component, config_title, save, subplots


def _kind_names(ds: xr.Dataset) -> list[str]:
    return json.loads(ds["kind"].attrs.get("labels", ds.attrs.get("regimes", "[]")))


def _label(ds: xr.Dataset, a: int, names: list[str]) -> str:
    kind = int(ds["kind"].values[a])
    per = int(ds["period"].values[a])
    name = names[kind] if 0 <= kind < len(names) else "?"
    what = f"period {per}" if per > 0 else name
    f, lo, hi = (float(ds[v].values[a]) for v in ("basin_fraction", "basin_ci_low", "basin_ci_high"))
    return f"{what}\nbasin {f:.2f} [{lo:.2f}, {hi:.2f}]\nλ₁ = {float(ds['exponents'].values[a, 0]):.3g}"


def attractors_figure(ds: xr.Dataset, pairs=((0, 1), (0, 2))):
    """One column per attractor found at one parameter point, one row per plane (f, g) of the observable
    (components f and g of ``observed``); titles give kind or period, basin fraction with its 95%
    interval and λ₁ (theory: docs/theory/dynamics.md §7.3)."""
    n = int(ds["n_attractors"].values)
    found = [a for a in range(min(n, ds.sizes["attractor"])) if int(ds["kind"].values[a]) >= 0]
    F = ds.sizes["feature"]
    pairs = [p for p in pairs if max(p) < F] or [(0, 0)]
    cols = max(len(found), 1)
    fig, axes = subplots(len(pairs), cols, figsize=(3.2 * cols, 3.0 * len(pairs)), squeeze=False)
    names = _kind_names(ds)
    obs = ds["observed"].values
    for j, a in enumerate(found):
        for i, (f, g) in enumerate(pairs):
            ax = axes[i, j]
            ax.plot(obs[a, :, f], obs[a, :, g], ".", ms=5 if int(ds["period"].values[a]) > 0 else 2, color=f"C{a}")
            ax.set_xlabel(f"{ds.attrs.get('observable', 'mo_se')}[{f}]")
            ax.set_ylabel(f"{ds.attrs.get('observable', 'mo_se')}[{g}]")
            if i == 0:
                ax.set_title(_label(ds, a, names), fontsize=9)
    if not found:
        axes[0, 0].text(0.5, 0.5, "no attractor settled", ha="center", va="center", transform=axes[0, 0].transAxes)
    unsettled = float(ds["unsettled_fraction"].values)
    fig.suptitle(f"{config_title(ds)}; unsettled {unsettled:.2f}", fontsize=9)
    return fig


def basins_figure(ds: xr.Dataset, param: str, component: int = 0):
    """The diagram along ``param`` coloured by track (the representative states' ``observed`` component)
    above the basin fraction of every track and the unsettled fraction (theory: docs/theory/dynamics.md §8)."""
    fig, (ax, bx) = subplots(2, 1, figsize=(9, 7), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    pv = ds[param].values
    track = ds["track"].values  # (param, attractor)
    obs = ds["observed"].values[..., check_component(component, ds["observed"].shape[-1])]  # (param, attractor, sample)
    n_tracks = ds.sizes.get("track_id", 0)
    for t in range(n_tracks):
        color = f"C{t % 10}"
        ii, aa = np.nonzero(track == t)
        if ii.size:
            y = obs[ii, aa]
            x = np.broadcast_to(pv[ii][:, None], y.shape)
            ax.plot(x.ravel(), y.ravel(), ",", color=color)
            ax.plot(x[:, :1].ravel(), y[:, :1].ravel(), ".", ms=2, color=color)
            bx.plot(pv, ds["track_basin_fraction"].values[:, t], "-", lw=1, color=color, label=f"track {t}")
    bx.plot(pv, ds["unsettled_fraction"].values, "k--", lw=1, label="unsettled")
    ax.set_ylabel(f"{ds.attrs.get('observable', 'mo_se')}[{component}]")
    ax.set_title(config_title(ds), fontsize=9)
    bx.set_ylabel("basin fraction")
    bx.set_xlabel(ds[param].attrs.get("long_name", param))
    bx.set_ylim(-0.02, 1.02)
    if n_tracks <= 12:
        bx.legend(fontsize=7, ncol=4)
    return fig


def plot_attractors(ds: xr.Dataset, path: str | Path) -> list[Path]:
    """Write :func:`attractors_figure`."""
    return [save(attractors_figure(ds), Path(path))]


def plot_basins(ds: xr.Dataset, path: str | Path, param: str, component: int = 0) -> list[Path]:
    """Write :func:`basins_figure`."""
    return [save(basins_figure(ds, param, component), Path(path))]
