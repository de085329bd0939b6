"""The paper's trajectory figures (spec ``dmft.md`` §7): time series, planes, FFT, autocorrelation."""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from attnphys.plots._common import config_title, save, subplots
from attnphys.dynamics.spectra import autocorrelation, power_spectrum


def _select(ds: xr.Dataset, **sel) -> xr.Dataset:
    extra = [d for d in ds.mo_se.dims if d not in ("step", "feature")]
    return ds.isel({d: sel.get(d, 0) for d in extra}) if extra else ds


def plot_trajectory(ds: xr.Dataset, out_dir: str | Path, window: int = 350, prefix: str = "trajectory") -> list[Path]:
    """Write the trajectory figures of one trajectory (the first of any sweep) into ``out_dir``.

    Files: ``{prefix}_timeseries.png`` (mo_se, att over the last ``window`` steps),
    ``{prefix}_planes.png`` (mo_se 0–1 and att 0–2), ``{prefix}_spectrum.png`` (FFT and
    autocorrelation of mo_se[:, 0] over the recorded steps).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    one = _select(ds)
    steps = one.step.values
    mo_se, att = one.mo_se.values, one.att.values
    title = config_title(ds)
    paths = []

    w = slice(max(0, len(steps) - window), None)
    fig, axes = subplots(2, 1, figsize=(8, 5), sharex=True)
    for f in range(mo_se.shape[1]):
        axes[0].plot(steps[w], mo_se[w, f], lw=0.8, label=f"feature {f}")
        axes[1].plot(steps[w], att[w, f], lw=0.8)
    axes[0].set_ylabel("mo_se")
    axes[1].set_ylabel("att")
    axes[1].set_xlabel("step")
    axes[0].legend(fontsize=7, ncol=3)
    fig.suptitle(title, fontsize=9)
    paths.append(save(fig, out / f"{prefix}_timeseries.png"))

    fig, axes = subplots(1, 2, figsize=(9, 4))
    pairs = [("mo_se", mo_se, 0, 1), ("att", att, 0, min(2, att.shape[1] - 1))]
    for ax, (name, y, i, j) in zip(axes, pairs):
        ax.plot(y[:, i], y[:, j], ",", alpha=0.6, color="k")
        ax.set_xlabel(f"{name}[{i}]")
        ax.set_ylabel(f"{name}[{j}]")
    fig.suptitle(title, fontsize=9)
    paths.append(save(fig, out / f"{prefix}_planes.png"))

    fig, axes = subplots(1, 2, figsize=(9, 3.5))
    freq, power = power_spectrum(mo_se[:, 0])
    axes[0].semilogy(freq[1:], power[1:] + 1e-300, lw=0.7)
    axes[0].set_xlabel("frequency (cycles/step)")
    axes[0].set_ylabel("power of mo_se[0]")
    acf = autocorrelation(mo_se[:, 0], max_lag=min(500, len(steps) - 1))
    axes[1].plot(acf, lw=0.8)
    axes[1].set_xlabel("lag (steps)")
    axes[1].set_ylabel("autocorrelation")
    fig.suptitle(title, fontsize=9)
    paths.append(save(fig, out / f"{prefix}_spectrum.png"))
    return paths
