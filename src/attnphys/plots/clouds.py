"""Token-cloud figures: statistics vs layer, 2-D projections of the cloud at chosen layers, and the
statistics of a cloud pushed stage by stage through a model (theory: docs/theory/clouds.md §5, §7).

Figures are built with :class:`matplotlib.figure.Figure` directly (no pyplot, no backend switching)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

PANELS = (
    "cov_trace",
    "gaussian_entropy",
    "knn_entropy",
    "mean_pairwise_distance",
    "angular_spread",
    "participation_ratio",
    "radial_mean",
    "moved_apart",
    "mardia_kurtosis_ratio",
    "energy_distance_gaussian",
    "clusters",
    "mean_cosine",
)


def _save(fig: Figure, path: str | Path, dpi: int = 120) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    return path


def plot_clouds(ds: xr.Dataset, path: str | Path) -> list[Path]:
    """``path``: statistics vs layer; ``<stem>_snapshots.png``: PCA projections of the snapshots."""
    path = Path(path)
    fig = Figure(figsize=(14, 8))
    axes = fig.subplots(3, 4, sharex=True)
    for ax, name in zip(axes.ravel(), PANELS):
        ax.plot(ds.layer.values, ds[name].values, "o-", ms=3, lw=1)
        ax.set_title(name.replace("_", " "), fontsize=9)
    for ax in axes[-1]:
        ax.set_xlabel("layer")
    fig.suptitle(ds.attrs.get("title", "token cloud"), fontsize=10)
    out = [_save(fig, path)]
    if "snapshot" in ds:
        snaps = ds.snapshot.values
        first = snaps[0] - snaps[0].mean(0)
        _, _, Vt = np.linalg.svd(first, full_matrices=False)  # principal plane of the first snapshot
        fig = Figure(figsize=(3.2 * len(snaps), 3.2))
        axes = fig.subplots(1, len(snaps), squeeze=False)
        for ax, layer, X in zip(axes[0], ds.snap_layer.values, snaps):
            P = X @ Vt[:2].T
            ax.plot(P[:, 0], P[:, 1], ".", ms=2, alpha=0.6)
            ax.set_title(f"layer {layer}", fontsize=9)
            ax.set_aspect("equal", "datalim")
        out.append(_save(fig, path.with_name(path.stem + "_snapshots.png")))
    return out


THROUGH_PANELS = ("cov_trace", "knn_entropy", "angular_spread", "participation_ratio", "radial_mean", "clusters")


def plot_through_model(ds: xr.Dataset, path: str | Path) -> Path:
    """Statistics of the cloud at every stage of every layer, one line per operator set (the model's
    own weights, random weights of the same shape, the theory's identity-weight block)."""
    stages = list(ds.stage.values)
    L = ds.sizes["layer"]
    x = np.arange(L * len(stages))
    fig = Figure(figsize=(15, 7.5))
    axes = fig.subplots(2, 3)
    for ax, name in zip(axes.ravel(), THROUGH_PANELS):
        for op, style in zip(ds.operator.values, ("o-", "s--", "^:")):
            y = ds.stat.sel(operator=op, statistic=name).values.reshape(-1)
            ax.plot(x, y, style, ms=2.5, lw=1, label=str(op))
        ax.set_xticks(np.arange(0, x.size, len(stages)))
        ax.set_xticklabels([f"L{i}" for i in range(L)], fontsize=7)
        ax.set_title(name.replace("_", " "), fontsize=9)
        if name in ("cov_trace", "participation_ratio"):
            ax.set_yscale("log")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(
        f"{ds.attrs.get('model', '')} ({ds.attrs.get('family', '')}), {ds.attrs.get('init', '')} cloud of "
        f"{ds.sizes['token'] if 'token' in ds.dims else ds.attrs.get('tokens', '')} tokens; stages per layer: "
        f"{' → '.join(stages)}",
        fontsize=9,
    )
    return _save(fig, path)


__all__ = ["PANELS", "plot_clouds", "plot_through_model"]
