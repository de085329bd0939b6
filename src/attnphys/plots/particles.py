"""Figures of tokens as particles: a flow over time and the (β, t) clustering phase diagram
(theory: docs/theory/particles.md §4, §5). Object API only (no pyplot)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from attnphys.plots.clouds import _save


def plot_flow(ds: xr.Dataset, path: str | Path) -> Path:
    """Energy, cluster count (with the plateaus), clustered pairs and angular spread over time, and the
    tokens at four times (their first two coordinates; on the circle for d = 2)."""
    t = ds.time.values
    fig = Figure(figsize=(15, 7))
    top = fig.subfigures(2, 1)
    axes = top[0].subplots(1, 4)  # pyright: ignore[reportIndexIssue]  (two subfigures: an array)
    axes[0].plot(t, ds.energy.values, lw=1.2)
    axes[0].set_title("interaction energy E_β", fontsize=9)
    axes[1].step(t, ds.clusters.values, where="post", lw=1.2)
    axes[1].set_yscale("log")
    axes[1].set_title("clusters", fontsize=9)
    if "plateau_length" in ds:
        for s, e, c, _closed in zip(
            ds.plateau_start.values, ds.plateau_end.values, ds.plateau_clusters.values, ds.plateau_closed.values
        ):
            if c > 1 and e - s >= 0.05 * (t[-1] - t[0]):
                axes[1].annotate(f"{e - s:.0f}", ((s + e) / 2, c), fontsize=7, ha="center", va="bottom")
    axes[2].plot(t, ds.clustered_pairs.values, lw=1.2)
    axes[2].set_ylim(-0.02, 1.02)
    axes[2].set_title("fraction of clustered pairs", fontsize=9)
    axes[3].plot(t, ds.angular_spread.values, lw=1.2)
    axes[3].set_title("angular spread 1 − mean cos", fontsize=9)
    for ax in axes:
        ax.set_xlabel("t")
    if "x" in ds:
        picks = np.unique(np.linspace(0, t.size - 1, 4).round().astype(int))
        sub = top[1].subplots(1, len(picks))  # pyright: ignore[reportIndexIssue]
        for ax, k in zip(np.atleast_1d(sub), picks):
            X = ds.x.values[k]
            if X.shape[1] == 2:
                th = np.linspace(0, 2 * np.pi, 200)
                ax.plot(np.cos(th), np.sin(th), color="0.8", lw=0.8)
            ax.plot(X[:, 0], X[:, 1], "o", ms=3, alpha=0.6)
            ax.set_aspect("equal", "datalim")
            ax.set_title(f"t = {t[k]:.3g}", fontsize=9)
    fig.suptitle(ds.attrs.get("title", "tokens as particles"), fontsize=10)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    return path


def plot_phase_diagram(ds: xr.Dataset, path: str | Path) -> Path:
    """Fraction of clustered pairs over (t, β) with the contours 0.5 and 0.99, and the time at which
    every sample is in one cluster."""
    beta, t = ds.beta.values, ds.time.values
    F = ds.clustered_pairs.transpose("beta", "time").values
    fig = Figure(figsize=(8, 5.5))
    ax = fig.subplots()
    im = ax.pcolormesh(t, beta, F, shading="nearest", cmap="magma", vmin=0, vmax=1)
    fig.colorbar(im, ax=ax, label="fraction of clustered pairs")
    if F.shape[0] > 1 and F.shape[1] > 1:
        cs = ax.contour(t, beta, F, levels=[0.5, 0.99], colors=["w", "c"], linewidths=1)
        ax.clabel(cs, fontsize=7)
    if "clustering_time" in ds:
        ax.plot(ds.clustering_time.values, beta, "w.", ms=4, label="all samples in one cluster")
        ax.legend(fontsize=7, loc="lower right")
    ax.set_xlabel("t")
    ax.set_ylabel("β")
    ax.set_title(
        f"clustering of {ds.attrs.get('tokens', '')} tokens on S^{int(ds.attrs.get('dim', 3)) - 1}, "
        f"{str(ds.attrs.get('dynamics', '')).upper()}, {ds.attrs.get('samples', '')} samples per β",
        fontsize=9,
    )
    return _save(fig, path)


__all__ = ["plot_flow", "plot_phase_diagram"]
