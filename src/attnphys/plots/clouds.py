"""Token-cloud figures: statistics vs layer, and 2-D projections of the cloud at chosen layers."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402

from attnphys.plots._common import save  # noqa: E402

PANELS = ("cov_trace", "gaussian_entropy", "knn_entropy", "mean_pairwise_distance", "angular_spread",
          "participation_ratio", "radial_mean", "moved_apart", "mardia_kurtosis_ratio", "energy_distance_gaussian",
          "clusters", "mean_cosine")


def plot_clouds(ds: xr.Dataset, path: str | Path) -> list[Path]:
    """``path``: statistics vs layer; ``<stem>_snapshots.png``: PCA projections of the snapshots."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(3, 4, figsize=(14, 8), sharex=True)
    for ax, name in zip(axes.ravel(), PANELS):
        ax.plot(ds.layer.values, ds[name].values, "o-", ms=3, lw=1)
        ax.set_title(name.replace("_", " "), fontsize=9)
    for ax in axes[-1]:
        ax.set_xlabel("layer")
    fig.suptitle(ds.attrs.get("title", "token cloud"), fontsize=10)
    out = [save(fig, path)]
    if "snapshot" in ds:
        snaps = ds.snapshot.values
        first = snaps[0] - snaps[0].mean(0)
        _, _, Vt = np.linalg.svd(first, full_matrices=False)  # principal plane of the first snapshot
        fig, axes = plt.subplots(1, len(snaps), figsize=(3.2 * len(snaps), 3.2), squeeze=False)
        for ax, layer, X in zip(axes[0], ds.snap_layer.values, snaps):
            P = X @ Vt[:2].T
            ax.plot(P[:, 0], P[:, 1], ".", ms=2, alpha=0.6)
            ax.set_title(f"layer {layer}", fontsize=9)
            ax.set_aspect("equal", "datalim")
        out.append(save(fig, path.with_name(path.stem + "_snapshots.png")))
    return out
