"""The paper's trajectory figures: time series, planes, FFT and autocorrelation, with the memory beyond
the context window as numbers (theory: docs/theory/dmft.md §8, §3.6)."""

from __future__ import annotations

import json

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from attnphys.dmft.memory import (
    autocorrelation_time,
    low_frequency_fraction,
    white_noise_baseline,
    white_noise_pvalue,
)
from attnphys.dynamics.spectra import autocorrelation, power_spectrum
from attnphys.plots._common import config_title, figure, root, suptitle


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


def memory_text(
    x: np.ndarray,
    L: int,
    dt: int = 1,
    tau: float | None = None,
    phi: float | None = None,
    baseline: float | None = None,
    pvalue: float | None = None,
    sep: str = ", ",
) -> str:
    """ "τ = … steps (… L), power below 1/L: …% (white noise: …%, p = …)" for one recorded series: the
    low-frequency share beside its white-noise baseline and the one-sided p-value against it (theory:
    docs/theory/dmft.md §8.1)."""
    x = np.asarray(x, float)
    tau = float(autocorrelation_time(x, dt=dt)) if tau is None else float(tau)
    phi = float(low_frequency_fraction(x, L, dt=dt)) if phi is None else float(phi)
    baseline = white_noise_baseline(x.size, L, dt) if baseline is None else float(baseline)
    pvalue = float(white_noise_pvalue(phi, x.size, L, dt)) if pvalue is None else float(pvalue)
    t = "τ = ∞ (no decay)" if np.isinf(tau) else f"τ = {tau:.3g} steps ({tau / L:.3g} L)"
    p = "p < 1e-300" if pvalue < 1e-300 else f"p = {pvalue:.2g}"
    return f"{t}{sep}power below 1/L: {100 * phi:.3g}% (white noise: {100 * baseline:.3g}%, {p})"


def memory_of(d: xr.Dataset) -> dict:
    """The stored memory numbers of feature 0 of one trajectory, as keyword arguments of :func:`memory_text`."""
    out = {}
    for key, name in (("tau", "autocorr_time"), ("phi", "lowfreq_power"), ("baseline", "lowfreq_baseline")):
        if f"mo_se_{name}" in d:
            out[key] = float(d[f"mo_se_{name}"].values[0])
    if "mo_se_lowfreq_pvalue" in d:
        out["pvalue"] = float(d["mo_se_lowfreq_pvalue"].values[0])
    return out


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


def timeseries_figure(ds: xr.Dataset, window: int = 350, *, fig=None) -> Figure:
    """mo_se and att over the last ``window`` recorded steps of one trajectory (the first of a sweep)
    (theory: docs/theory/dmft.md §8). ``fig``: a Figure or SubFigure to draw into (default: new)."""
    one = _select(ds)
    steps = one.step.values
    mo_se, att = one.mo_se.values, one.att.values
    w = slice(max(0, len(steps) - window), None)
    fig = figure(fig, figsize=(8, 5.2))
    axes = fig.subplots(2, 1, sharex=True)
    for f in range(mo_se.shape[1]):
        axes[0].plot(steps[w], mo_se[w, f], lw=0.8, label=f"feature {f}")
        axes[1].plot(steps[w], att[w, f], lw=0.8)
    axes[0].set_ylabel("mo_se")
    axes[1].set_ylabel("att")
    axes[1].set_xlabel("step")
    axes[0].legend(fontsize=7, ncol=3)
    suptitle(fig, ds, _title(ds))
    return root(fig)


def trajectory_planes_figure(ds: xr.Dataset, *, fig=None) -> Figure:
    """The planes (mo_se[0], mo_se[1]) and (att[0], att[2]) of one trajectory, every recorded step a point
    (theory: docs/theory/dmft.md §8). ``fig``: a Figure or SubFigure to draw into (default: new)."""
    one = _select(ds)
    mo_se, att = one.mo_se.values, one.att.values
    fig = figure(fig, figsize=(9, 4.3))
    axes = fig.subplots(1, 2)
    pairs = [("mo_se", mo_se, 0, min(1, mo_se.shape[1] - 1)), ("att", att, 0, min(2, att.shape[1] - 1))]
    for ax, (name, y, i, j) in zip(axes, pairs):
        few = np.unique(np.round(y[:, [i, j]], 10), axis=0).shape[0] < 1000  # a periodic orbit: larger dots
        ax.plot(y[:, i], y[:, j], "." if few else ",", ms=3, alpha=0.6, color="k")
        ax.set_xlabel(f"{name}[{i}]")
        ax.set_ylabel(f"{name}[{j}]")
    suptitle(fig, ds, _title(ds))
    return root(fig)


def spectrum_figure(ds: xr.Dataset, *, fig=None) -> Figure:
    """Power spectrum and autocorrelation of mo_se[0] of one trajectory, with 1/L, L and the autocorrelation
    time marked and the memory numbers (with their white-noise baseline) in the title (theory:
    docs/theory/dmft.md §8). ``fig``: a Figure or SubFigure to draw into (default: new)."""
    one = _select(ds)
    L, dt = context_length(ds), sampling_interval(one)
    x = one.mo_se.values[:, 0]
    mem = memory_of(one)
    fig = figure(fig, figsize=(9, 4.2))
    axes = fig.subplots(1, 2)
    draw_spectrum(axes[0], x, L, dt)
    tau = mem.get("tau", float(autocorrelation_time(x, dt=dt)))
    draw_autocorrelation(axes[1], x, L, dt, tau=tau)
    suptitle(fig, ds, f"{_title(ds)}\nmemory of mo_se[0]: {memory_text(x, L, dt, **mem)}")
    return root(fig)


def trajectory_figures(ds: xr.Dataset, window: int = 350) -> dict[str, Figure]:
    """The trajectory figures of one trajectory (the first of any sweep), by name: ``timeseries``,
    ``planes``, ``spectrum`` (theory: docs/theory/dmft.md §8)."""
    return {
        "timeseries": timeseries_figure(ds, window),
        "planes": trajectory_planes_figure(ds),
        "spectrum": spectrum_figure(ds),
    }


def _title(ds: xr.Dataset) -> str:
    extra = [d for d in ds.mo_se.dims if d not in ("step", "feature")]
    title = config_title(ds)
    if extra:
        first = ", ".join(f"{d}={ds[d].values[0]!s}" for d in extra if d in ds.coords)
        title += f"; the first trajectory ({first})"
    return title
