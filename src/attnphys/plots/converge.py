"""Finite-N → mean-field convergence figure: distances vs N on log–log axes with fitted slopes
(theory: docs/theory/dmft.md §2.3)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from attnphys.plots._common import config_title, save, subplots


def plot_converge(ds: xr.Dataset, path: str | Path) -> Path:
    """Draw ``rms_deviation`` and ``stat_distance`` against N (log–log) per β_o, with the fitted slopes s of
    distance ∝ N^s (about −1/2 off chaos) and an N^(−1/2) guide; save to ``path``
    (theory: docs/theory/dmft.md §2.3).

    Args:
        ds: dataset of ``attnphys dmft converge`` (dims ``beta_o``, ``n``).
        path: PNG file to write.

    Returns:
        ``path``.
    """
    ns = ds.n.values.astype(float)
    fig, axes = subplots(1, 2, figsize=(11, 4.2), sharex=True)
    for b in ds.beta_o.values:
        d = ds.sel(beta_o=b)
        (line,) = axes[0].loglog(ns, d.rms_deviation.values, "o-", label=f"β_o={b:g}: slope {float(d.slope):.2f}")
        axes[1].loglog(
            ns,
            d.stat_distance.values,
            "s--",
            color=line.get_color(),
            label=f"β_o={b:g}: slope {float(d.stat_slope):.2f}",
        )
    ref = ds.rms_deviation.values[np.isfinite(ds.rms_deviation.values)]
    if ref.size:
        axes[0].loglog(ns, ref.max() * (ns / ns[0]) ** -0.5, "k:", lw=1, label="N^-1/2")
    axes[0].set_title("path deviation from the mean field (fixed horizon)", fontsize=9)
    axes[1].set_title("long-run statistics: finite vs mean field", fontsize=9)
    for ax in axes:
        ax.set_xlabel("N (semantic bits)")
        ax.legend(fontsize=7)
    axes[0].set_ylabel("RMS deviation")
    fig.suptitle(config_title(ds), fontsize=9)
    return save(fig, Path(path), dpi=130)
