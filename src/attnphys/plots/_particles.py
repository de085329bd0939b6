"""Figures of tokens as particles: a flow over time and the (β, t) clustering phase diagram
(theory: docs/theory/particles.md §4, §5). Object API only (no pyplot)."""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, ScalarFormatter

from attnphys.plots._common import figure, root, suptitle, time_text


def _energy(ds: xr.Dataset) -> tuple[np.ndarray, str]:
    """E_β relative to its value for one cluster, e^β/(2β) (tokens on the sphere: the largest value), so that
    1 reads "one cluster" whatever β; the raw energy where β is unknown."""
    E = ds.energy.values
    beta = ds.attrs.get("beta")
    if beta is not None and float(beta) > 0:
        b = float(beta)
        return E * 2 * b * np.exp(-b), "E_β / E_β(one cluster)"
    return E, "interaction energy E_β"


def flow_figure(ds: xr.Dataset, *, fig=None) -> Figure:
    """Energy (relative to one cluster), cluster count with its plateaus (the one the run ends on marked
    ≥), clustered pairs and angular spread over time, and the tokens at four times (their first two
    coordinates; on the circle for d = 2) (theory: docs/theory/particles.md §4).

    Args:
        fig: a Figure or SubFigure to draw into (default: new)."""
    t = ds.time.values
    fig = figure(fig, figsize=(15, 7.6))
    top, bottom = fig.subfigures(2, 1, height_ratios=[1.0, 1.05])  # pyright: ignore[reportGeneralTypeIssues]
    axes = top.subplots(1, 4)
    E, e_label = _energy(ds)
    axes[0].plot(t, E, lw=1.2)
    axes[0].yaxis.set_major_formatter(ScalarFormatter(useOffset=False))
    axes[0].set_title("interaction energy", fontsize=9)
    axes[0].set_ylabel(e_label, fontsize=8)
    axes[1].step(t, ds.clusters.values, where="post", lw=1.2)
    axes[1].yaxis.set_major_locator(MaxNLocator(integer=True))
    axes[1].set_ylim(0, max(2.0, float(np.nanmax(ds.clusters.values))) * 1.12)
    axes[1].set_title("clusters (plateau lengths)", fontsize=9)
    axes[1].set_ylabel("cluster count")
    if "plateau_length" in ds:
        long = [
            (s, e, c, closed)
            for s, e, c, closed in zip(
                ds.plateau_start.values, ds.plateau_end.values, ds.plateau_clusters.values, ds.plateau_closed.values
            )
            if c > 1 and e - s >= 0.05 * (t[-1] - t[0])
        ]
        for s, e, c, closed in long[:8]:
            text = f"{e - s:.0f}" if closed else f"≥ {e - s:.0f}"
            axes[1].annotate(text, ((s + e) / 2, c), fontsize=7, ha="center", va="bottom")
    axes[2].plot(t, ds.clustered_pairs.values, lw=1.2)
    axes[2].set_ylim(-0.02, 1.02)
    axes[2].set_title("fraction of clustered pairs", fontsize=9)
    axes[2].set_ylabel("fraction of pairs")
    axes[3].plot(t, ds.angular_spread.values, lw=1.2)
    axes[3].set_title("angular spread", fontsize=9)
    axes[3].set_ylabel("1 − mean cos")
    for ax in axes:
        ax.set_xlabel("t")
    if "x" in ds:
        picks = np.unique(np.linspace(0, t.size - 1, 4).round().astype(int))
        sub = np.atleast_1d(bottom.subplots(1, len(picks)))
        for ax, k in zip(sub, picks):
            X = ds.x.values[k]
            if X.shape[1] == 2:
                th = np.linspace(0, 2 * np.pi, 200)
                ax.plot(np.cos(th), np.sin(th), color="0.8", lw=0.8)
            ax.plot(X[:, 0], X[:, 1], "o", ms=3, alpha=0.6)
            ax.set_aspect("equal", "datalim")
            ax.set_title(f"t = {time_text(t[k])}, {int(ds.clusters.values[k])} clusters", fontsize=9)
            ax.set_xlabel("x₁")
            ax.set_ylabel("x₂")
    suptitle(fig, ds, ds.attrs.get("title", "tokens as particles"), fontsize=10)
    return root(fig)


def particles_phase_figure(ds: xr.Dataset, *, ax=None) -> Figure:
    """Fraction of clustered pairs over (t, β) with the contours 0.5 and 0.99, and the time at which
    every sample is in one cluster (theory: docs/theory/particles.md §5).

    Args:
        ax: an Axes to draw into (default: a new figure with one)."""
    beta, t = ds.beta.values, ds.time.values
    F = ds.clustered_pairs.transpose("beta", "time").values
    if ax is None:
        fig = figure(None, figsize=(8, 5.5))
        ax = fig.subplots()
    else:
        fig = ax.figure
    im = ax.pcolormesh(t, beta, F, shading="nearest", cmap="magma", vmin=0, vmax=1)
    fig.colorbar(im, ax=ax, label="fraction of clustered pairs")
    if F.shape[0] > 1 and F.shape[1] > 1:
        cs = ax.contour(t, beta, F, levels=[0.5, 0.99], colors=["w", "c"], linewidths=1)
        ax.clabel(cs, fontsize=7)
    if "clustering_time" in ds and np.isfinite(ds.clustering_time.values).any():
        ax.plot(ds.clustering_time.values, beta, "w.", ms=4, label="all samples in one cluster")
        ax.legend(fontsize=7, loc="lower right")
    ax.set_xlabel("t")
    ax.set_ylabel("β")
    ax.set_title(
        f"clustering of {ds.attrs.get('tokens', '')} tokens on S^{int(ds.attrs.get('dim', 3)) - 1}, "
        f"{str(ds.attrs.get('dynamics', '')).upper()}, {ds.attrs.get('samples', '')} samples per β",
        fontsize=9,
    )
    return root(fig)
