"""The figure of a design's cycle report: emitted base patterns against the intended cycle (theory:
docs/theory/designed.md §4)."""

from __future__ import annotations

import json

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from attnphys.plots._common import root
from attnphys.plots._figure import new_figure


def cycle_figure(ds: xr.Dataset, *, steps: int | None = None, ax=None) -> Figure:
    """The emitted base patterns against the intended cycle (theory: docs/theory/designed.md §4): the
    overlap of every step's token with each base pattern (shading), the emitted pattern (dots) and the
    cycle at its detected phase (line), with the report's verdict (its stability as decided in §4.2).

    Args:
        ds: a :func:`attnphys.dmft.designed.cycle_report` dataset.
        steps: steps shown (default: up to the settling step plus four cycles, at most 80).
        ax: an Axes to draw into (default: a new figure with one).

    Returns:
        The Figure drawn into.
    """
    if ax is None:
        fig = new_figure((8, 3.4))
        ax = fig.add_subplot()
    else:
        fig = root(ax.figure)
    cycle = json.loads(ds.attrs["cycle"])
    ell = len(cycle)
    since = int(ds["cycle_step"])
    T = ds.sizes["step"]
    if steps is None:
        steps = min(T, 80, max(since, 0) + 4 * max(ell, int(ds["period"]), 1) + 4)
    base = ds["base_overlap"].values[:steps]
    im = ax.imshow(base.T, aspect="auto", origin="lower", cmap="Greys", vmin=0.0, vmax=1.0, interpolation="nearest")
    fig.colorbar(im, ax=ax, label="overlap with base pattern", pad=0.01)
    e = ds["emitted"].values[:steps]
    t = np.arange(steps)
    ax.plot(t[e >= 0], e[e >= 0], "o", color="tab:orange", ms=4, label="emitted")
    if since >= 0:
        phase = int(ds["cycle_phase"])
        tt = np.arange(since, steps)
        ax.step(
            tt, np.asarray(cycle)[(tt + phase) % ell], where="mid", color="tab:blue", lw=1.2, label="intended cycle"
        )
        ax.axvline(since - 0.5, color="tab:blue", ls=":", lw=1)
    ax.set_xlabel("step")
    ax.set_ylabel("base pattern")
    ax.set_yticks(np.arange(base.shape[1]))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), fontsize="small", ncol=2, frameon=False)
    cfg = json.loads(ds.attrs["config"])
    arrow = " → ".join(str(c) for c in cycle)
    verdict = f"settles on {arrow} at step {since}" if bool(ds["on_cycle"]) else f"does not settle on {arrow}"
    parts = [verdict]
    if "basin_fraction" in ds:
        parts.append(f"basin {float(ds['basin_fraction']):.0%}")
    stability = str(ds["stability"].values) if "stability" in ds else ("stable" if bool(ds["stable"]) else "unknown")
    if stability == "stable":
        if int(ds["floquet_resolved"]) > 0:
            parts.append(f"stable, max|μ| = {float(ds['floquet_abs'][0]):.2g}")
        elif float(ds["monodromy_norm"]) == 0.0:
            parts.append("superstable (monodromy 0 to round-off)")
        elif "radius_bound" in ds:
            parts.append(f"stable, max|μ| ≤ {float(ds['radius_bound']):.1e}")
        else:
            parts.append(f"stable, max|μ| ≤ {float(ds['monodromy_norm']):.1e}")
    else:
        parts.append(stability if stability == "unstable" else "stability unknown")
    name = ds.attrs.get("design") or "design"
    ax.set_title(
        f"{name}: β_o = {cfg['beta_o']:g}, γ = {cfg['gamma']:g}, ε = {cfg['epsilon']:g}\n" + "; ".join(parts),
        fontsize="small",
    )
    return root(fig)
