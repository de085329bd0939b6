"""Figs. 4 and 5 of the paper: trajectories at chosen β_o from the published checkpoint — their planes, and
the time series, spectra and autocorrelations of a quasi-periodic and a chaotic regime (theory:
docs/theory/dmft.md §8)."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from attnphys.dmft.config import preset
from attnphys.reproduce._base import AbstractFigure, Work, settings_of

PAPER_BETAS: tuple[float, ...] = (1.255, 1.26451, 1.266, 1.27, 1.28, 1.4)
"""β_o of the paper's trajectory figures (theory: docs/theory/dmft.md §8)."""


def trajectory_set(settings: dict[str, Any], progress: bool = True) -> xr.Dataset:
    """Records of ``mo_se`` and ``att`` at every β_o of the settings from their start, with the memory
    numbers and the library's regime labels from the last ``n_class`` samples (theory:
    docs/theory/dmft.md §3.6, §7.1)."""
    from attnphys.dmft import trajectories
    from attnphys.dynamics.classify import REGIMES, classify

    s = settings
    ds = trajectories(
        preset(s["preset"]),
        sweep={"beta_o": s["betas"]},
        start=s["start"],
        steps=s["steps"],
        transient=s["transient"],
        record=("mo_se", "att"),
        progress=progress,
    )
    ds = ds.drop_vars([v for v in ("final_mv", "final_mk", "final_m0", "final_se0") if v in ds])
    cl = classify(ds.mo_se.values[:, -s["n_class"] :, :])
    ds["regime"] = (
        "beta_o",
        cl["regime"].astype(np.int8),
        {"long_name": f"attractor type code of the last {s['n_class']} samples (labels in attrs regimes)"},
    )
    ds["period"] = (
        "beta_o",
        cl["period"].astype(np.int64),
        {"long_name": "exact period of mo_se (0: none found)", "units": "step"},
    )
    ds["K"] = ("beta_o", np.asarray(cl["K"], np.float64), {"long_name": "0-1 test for chaos statistic of mo_se[0]"})
    ds.attrs["regimes"] = ",".join(REGIMES)
    ds.beta_o.attrs.update(long_name="output inverse temperature β_o")
    ds.step.attrs.update(long_name="loop step", units="step")
    return ds


def _baseline_text(ds: xr.Dataset, i: int) -> str:
    """``(white noise: 50%, p = 6.8e-113)``: the white-noise baseline of the low-frequency power of mo_se[0]
    at point i and the one-sided p-value against it (theory: docs/theory/dmft.md §8.1)."""
    if "mo_se_lowfreq_baseline" not in ds:
        return ""
    base, p = float(ds.mo_se_lowfreq_baseline.values[i, 0]), float(ds.mo_se_lowfreq_pvalue.values[i, 0])
    return (
        f"(white noise: {100 * base:.3g}%, p = {p:.2g} against it)"
        if p >= 1e-300
        else (f"(white noise: {100 * base:.3g}%, p < 1e-300 against it)")
    )


def regime_label(ds: xr.Dataset, i: int) -> str:
    """``periodic (period 44)``, ``chaotic``, … for point ``i``."""
    from attnphys.dynamics.classify import REGIMES

    name = REGIMES[int(ds.regime.values[i])].replace("_", "-")
    p = int(ds.period.values[i])
    return f"{name} (period {p})" if p > 0 else name


class _TrajectoryFigure(AbstractFigure):
    betas: tuple[float, ...]

    def __init__(self) -> None:
        s = self.settings()
        self.full_run = f"from the checkpoint; {s['steps']:,} steps, {s['transient']:,} discarded"

    def settings(self, quick: bool = False) -> dict[str, Any]:
        s = dict(
            preset="paper", betas=list(self.betas), start="checkpoint", steps=175_000, transient=100_000, n_class=2000
        )
        if quick:
            s.update(steps=12_000, transient=8_000, n_class=1000)
        return s

    def work(self, quick: bool = False) -> Work:
        s = self.settings(quick)
        # a batch of a few trajectories runs at about the sequential speed
        return Work(sequential=s["steps"] * max(1, len(self.betas) / 2), compiles=1)

    def compute(self, settings: dict[str, Any], progress: bool = True) -> xr.Dataset:
        return self.stamp(trajectory_set(settings, progress), settings, figure=self.name, source=self.source)


class PlanesFigure(_TrajectoryFigure):
    """Fig. 4: the planes (mo_se[0], mo_se[1]) and (att[0], att[2]) of the six trajectories of the paper
    (theory: docs/theory/dmft.md §8)."""

    name = "fig4"
    shows = "Fig. 4: the planes (mo_se[0], mo_se[1]) and (att[0], att[2]) of β_o ∈ {1.255, 1.26451, 1.266, 1.27, 1.28, 1.4} in one figure"
    title = "planes of the six trajectories"
    source = "arXiv 2406.07247, Fig. 4"
    betas = PAPER_BETAS

    def figure(self, ds: xr.Dataset, **_: Any):
        from attnphys.plots import planes_figure

        return planes_figure(ds, [regime_label(ds, i) for i in range(ds.sizes["beta_o"])])

    def caption(self, ds: xr.Dataset) -> str:
        s = settings_of(ds)
        lines = [
            f"{self.source}: {self.title}.",
            (
                f"Paper network (preset {s['preset']}), every β_o from the published β_o = 3 checkpoint; "
                f"{s['steps']:,} steps, the first {s['transient']:,} discarded, {s['steps'] - s['transient']:,} "
                f"recorded steps drawn as points. Top: (mo_se[0], mo_se[1]); bottom: (att[0], att[2]). Regimes "
                f"(library labels from the last {s['n_class']} samples) and memory beyond the context window "
                f"(L = 4) per β_o:"
            ),
        ]
        for i, b in enumerate(ds.beta_o.values):
            tau = float(ds.mo_se_autocorr_time.values[i, 0])
            phi = float(ds.mo_se_lowfreq_power.values[i, 0])
            lines.append(
                f"  β_o = {b:g}: {regime_label(ds, i)}; autocorrelation time of mo_se[0] "
                f"{'∞' if np.isinf(tau) else f'{tau:.3g} steps'}, power below 1/L {100 * phi:.3g}% "
                f"{_baseline_text(ds, i)}"
            )
        return "\n".join(lines) + "\n"


class SeriesFigure(_TrajectoryFigure):
    """Fig. 5: time series, power spectrum and autocorrelation of mo_se in the quasi-periodic (β_o = 1.255)
    and the chaotic (β_o = 1.28) regime, side by side (theory: docs/theory/dmft.md §8)."""

    name = "fig5"
    shows = "Fig. 5: time series, power spectrum and autocorrelation of the quasi-periodic (β_o = 1.255) and the chaotic (β_o = 1.28) regime side by side"
    title = "time series, spectrum and autocorrelation: quasi-periodic and chaotic"
    source = "arXiv 2406.07247, Fig. 5"
    betas = (1.255, 1.28)

    def figure(self, ds: xr.Dataset, **_: Any):
        from attnphys.plots import series_figure

        return series_figure(ds, [regime_label(ds, i) for i in range(ds.sizes["beta_o"])])

    def caption(self, ds: xr.Dataset) -> str:
        s = settings_of(ds)
        lines = [
            f"{self.source}: {self.title}.",
            (
                f"Paper network (preset {s['preset']}), from the published β_o = 3 checkpoint; {s['steps']:,} "
                f"steps, the first {s['transient']:,} discarded. Rows: mo_se over the last 350 recorded steps; power "
                f"spectrum of mo_se[0] over all {s['steps'] - s['transient']:,} recorded steps (dashed: 1/L); "
                "autocorrelation of mo_se[0] (dashed: lag L; dotted: ±1/e; red: autocorrelation time)."
            ),
        ]
        for i, b in enumerate(ds.beta_o.values):
            tau = float(ds.mo_se_autocorr_time.values[i, 0])
            phi = float(ds.mo_se_lowfreq_power.values[i, 0])
            lines.append(
                f"  β_o = {b:g}: {regime_label(ds, i)}; autocorrelation time "
                f"{'∞ (no decay)' if np.isinf(tau) else f'{tau:.3g} steps = {tau / 4:.3g} L'}, power below "
                f"1/L {100 * phi:.3g}% {_baseline_text(ds, i)}"
            )
        return "\n".join(lines) + "\n"


FIG4 = PlanesFigure()
FIG5 = SeriesFigure()
