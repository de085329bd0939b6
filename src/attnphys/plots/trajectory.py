"""The paper's trajectory figures: time series, planes, FFT and autocorrelation, with the memory beyond
the context window as numbers (theory: docs/theory/dmft.md §8, §3.6)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import xarray as xr

from attnphys.dmft.memory import autocorrelation_time, low_frequency_fraction
from attnphys.dynamics.spectra import autocorrelation, power_spectrum
from attnphys.plots._common import config_title, save, subplots


def _select(ds: xr.Dataset, **sel) -> xr.Dataset:
    extra = [d for d in ds.mo_se.dims if d not in ("step", "feature")]
    return ds.isel({d: sel.get(d, 0) for d in extra}) if extra else ds


def context_length(ds: xr.Dataset) -> int:
    """L of the configuration stored in the dataset's attributes (4 when absent)."""
    try:
        return int(json.loads(ds.attrs.get("config", "{}")).get("L", 4))
    except (json.JSONDecodeError, TypeError, ValueError):
        return 4


def sampling_interval(ds: xr.Dataset) -> int:
    """Steps between two records (``record_every``)."""
    steps = ds.step.values
    return int(steps[1] - steps[0]) if steps.size > 1 else 1


def memory_text(x: np.ndarray, L: int, dt: int = 1, tau: float | None = None, phi: float | None = None) -> str:
    """ "τ = … steps (… L), power below 1/L: …%" for one recorded series (theory: docs/theory/dmft.md §8)."""
    tau = float(autocorrelation_time(x, dt=dt)) if tau is None else float(tau)
    phi = float(low_frequency_fraction(x, L, dt=dt)) if phi is None else float(phi)
    t = "τ = ∞ (no decay)" if np.isinf(tau) else f"τ = {tau:.3g} steps ({tau / L:.3g} L)"
    return f"{t}, power below 1/L: {100 * phi:.3g}%"


def draw_spectrum(ax, x: np.ndarray, L: int, dt: int = 1, label: str = "mo_se[0]") -> None:
    """Power spectrum of ``x`` with the frequency 1/L marked (theory: docs/theory/dmft.md §8)."""
    freq, power = power_spectrum(x, dt=dt)
    ax.semilogy(freq[1:], power[1:] + 1e-300, lw=0.7)
    ax.axvline(1.0 / L, color="0.4", lw=0.8, ls="--")
    ax.text(1.0 / L, 0.97, " 1/L", transform=ax.get_xaxis_transform(), va="top", fontsize=7, color="0.3")
    ax.set_xlabel("frequency (cycles/step)")
    ax.set_ylabel(f"power of {label}")


def draw_autocorrelation(ax, x: np.ndarray, L: int, dt: int = 1, max_lag: int = 500, tau: float | None = None) -> None:
    """Autocorrelation of ``x`` against the lag in steps (lags up to a quarter of the record, where the
    estimate is reliable), with L, ±1/e and the autocorrelation time marked."""
    acf = autocorrelation(x, max_lag=max(1, min(max_lag // dt, len(x) // 4)))
    ax.plot(np.arange(acf.size) * dt, acf, lw=0.8)
    ax.axvline(L, color="0.4", lw=0.8, ls="--")
    ax.axhline(np.exp(-1.0), color="0.6", lw=0.5, ls=":")
    ax.axhline(-np.exp(-1.0), color="0.6", lw=0.5, ls=":")
    if tau is not None and np.isfinite(tau):
        ax.axvline(tau, color="C3", lw=0.8)
    ax.set_xlabel("lag (steps)")
    ax.set_ylabel("autocorrelation")


def plot_trajectory(ds: xr.Dataset, out_dir: str | Path, window: int = 350, prefix: str = "trajectory") -> list[Path]:
    """Write the trajectory figures of one trajectory (the first of any sweep) into ``out_dir``
    (theory: docs/theory/dmft.md §8).

    Files: ``{prefix}_timeseries.png`` (mo_se, att over the last ``window`` steps),
    ``{prefix}_planes.png`` (mo_se 0–1 and att 0–2), ``{prefix}_spectrum.png`` (FFT and
    autocorrelation of mo_se[:, 0] over the recorded steps, with 1/L, L and the autocorrelation time
    marked and the memory numbers in the title).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    one = _select(ds)
    steps = one.step.values
    mo_se, att = one.mo_se.values, one.att.values
    title = config_title(ds)
    L, dt = context_length(ds), sampling_interval(one)
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

    fig, axes = subplots(1, 2, figsize=(9, 3.8))
    x = mo_se[:, 0]
    tau = float(one.mo_se_autocorr_time.values[0]) if "mo_se_autocorr_time" in one else None
    phi = float(one.mo_se_lowfreq_power.values[0]) if "mo_se_lowfreq_power" in one else None
    draw_spectrum(axes[0], x, L, dt)
    draw_autocorrelation(axes[1], x, L, dt, tau=tau if tau is not None else float(autocorrelation_time(x, dt=dt)))
    fig.suptitle(f"{title}\nmemory of mo_se[0]: {memory_text(x, L, dt, tau, phi)}", fontsize=9)
    paths.append(save(fig, out / f"{prefix}_spectrum.png"))
    return paths
