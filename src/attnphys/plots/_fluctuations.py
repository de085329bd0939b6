"""Finite-size fluctuation figures: predicted and measured standard deviation and bias against N, the
separation of finite paths from the mean-field orbit against log N, and the predicted spread along a run
(theory: docs/theory/fluctuations.md)."""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from attnphys.plots._common import config_title, figure, root, suptitle


def _names(ds: xr.Dataset, suffix: str) -> list[str]:
    return [str(k) for k in ds.data_vars if f"{k}_{suffix}" in ds.data_vars and not str(k).endswith(suffix)]


def _comparison(ds: xr.Dataset, fig, lyapunov: float | None) -> None:
    ns = ds.n.values.astype(float)
    axes = fig.subplots(1, 3)
    for i, k in enumerate(_names(ds, "std_ratio")):
        c = f"C{i}"
        pred = ds[f"{k}_std_predicted"].mean(("step", "feature")).values  # (n,)
        ratio = ds[f"{k}_std_ratio"].mean("feature").values
        lo = ds[f"{k}_std_ratio_ci_low"].min("feature").values
        hi = ds[f"{k}_std_ratio_ci_high"].max("feature").values
        axes[0].loglog(ns, pred, "_-", ms=14, color=c, label=f"{k} predicted")
        axes[0].errorbar(
            ns,
            pred * ratio,
            yerr=[pred * (ratio - lo), pred * (hi - ratio)],
            fmt="o",
            mfc="none",
            color=c,
            ms=5,
            label=f"{k} measured",
        )
        axes[1].loglog(ns, ds[f"{k}_error_mean_field"].values, "o-", color=c, label=f"{k}: mean field")
        axes[1].loglog(ns, ds[f"{k}_error_corrected"].values, "s--", color=c, label=f"{k}: mean field + bias/N")
        axes[1].loglog(ns, ds[f"{k}_error_noise"].values, ":", color=c, lw=0.9)
    if ns.size == 1:  # one size: a log axis around it (autoscaling a single point leaves it off the axes)
        for a in axes[:2]:
            a.set_xlim(ns[0] / 3, ns[0] * 3)
    axes[0].set(xlabel="N (semantic bits)", ylabel="standard deviation (window and feature mean)")
    axes[0].set_title("fluctuations: predicted (line) vs measured (95% interval)", fontsize=9)
    axes[1].set(xlabel="N (semantic bits)", ylabel="path-averaged error of the mean")
    axes[1].set_title("bias: error of the mean field and of the corrected mean\n(dotted: sampling error)", fontsize=9)
    ax = axes[2]
    x = np.log(ns) / (lyapunov or 1.0)
    sep = np.where(np.isnan(ds.separation.values), np.inf, ds.separation.values)  # never separated: censored
    with np.errstate(invalid="ignore"):  # every path censored at a size: inf quantiles
        q = np.quantile(sep, [0.25, 0.5, 0.75], axis=1)
    fin = np.isfinite(q[1])
    ax.errorbar(
        x[fin],
        q[1][fin],
        yerr=[q[1][fin] - q[0][fin], np.where(np.isfinite(q[2][fin]), q[2][fin] - q[1][fin], 0)],
        fmt="o",
        label="median separation step (quartiles)",
    )
    ax.plot(x, ds.horizon.values, "s-", label="predicted horizon")
    if lyapunov and fin.any():
        j = int(np.flatnonzero(fin)[0])
        ax.plot(x, q[1][j] + (x - x[j]) / 2, "k:", label="slope 1/2: growth at λ₁")
    ax.set(xlabel="log N / λ₁" if lyapunov else "log N", ylabel="step")
    ax.set_title(f"separation from the mean field (≥ {ds.attrs.get('threshold', 0.1):g})", fontsize=9)
    for a in axes:
        a.legend(fontsize=6.5, frameon=False)


def _left(ds: xr.Dataset) -> str:
    """``; left the attractor (not in the comparison): 1 path at N=9900``, or nothing when none left."""
    if "left_step" not in ds:
        return ""
    counts = np.isfinite(ds.left_step.values).sum(axis=1)
    said = [f"{c} at N={n}" for n, c in zip(ds.n.values, counts, strict=True) if c]
    return f"; paths that left the attractor (not compared): {', '.join(said)}" if said else ""


def _prediction(ds: xr.Dataset, fig) -> None:
    axes = fig.subplots(1, 2)
    steps = ds.step.values
    for i, k in enumerate(_names(ds, "var")):
        c = f"C{i}"
        axes[0].semilogy(steps, np.sqrt(ds[f"{k}_var"].max("feature").values), color=c, label=k)
        axes[1].plot(steps, abs(ds[f"{k}_bias"]).max("feature").values, color=c, label=k)
    axes[0].set(xlabel="step", ylabel="√N × predicted std (largest feature)")
    axes[1].set(xlabel="step", ylabel="N × |predicted bias| (largest feature)")
    axes[0].set_title("predicted spread (divide by √N)", fontsize=9)
    axes[1].set_title("predicted O(1/N) bias of the mean (divide by N)", fontsize=9)
    for a in axes:
        a.legend(fontsize=7, frameon=False)


def fluctuations_figure(ds: xr.Dataset, *, lyapunov: float | None = None, fig=None) -> Figure:
    """The finite network's fluctuations (theory: docs/theory/fluctuations.md §4–§5).

    For a comparison (:func:`attnphys.dmft.compare_fluctuations`, dim ``n``): per observable the predicted
    standard deviation √(var/N) against N with the measured one and its 95% interval; the path-averaged error
    of the mean field and of the bias-corrected mean against N with the sampling error; the median separation
    step of the paths from the mean-field orbit (quartiles) and the predicted horizon against log N — divided
    by ``lyapunov`` (λ₁) when given, with the slope-½ line of growth at λ₁ (t* ≈ log N / (2λ₁) + const).
    The statistics are over the paths that stayed on the attractor; the title counts those that left (§5).
    For a prediction alone (:func:`attnphys.dmft.fluctuations`): √(N var) and N |bias| along the run.

    Args:
        ds: dataset of ``attnphys dmft fluctuations``. lyapunov: the leading exponent λ₁ (per step).
            fig: a Figure or SubFigure to draw into (default: new).
    """
    comparison = "n" in ds.dims
    fig = figure(fig, figsize=(15, 4.8) if comparison else (11, 4.4))
    if comparison:
        _comparison(ds, fig, lyapunov)
    else:
        _prediction(ds, fig)
    suptitle(fig, ds, config_title(ds) + (f"; {ds.attrs.get('paths')} paths" + _left(ds) if comparison else ""))
    return root(fig)
