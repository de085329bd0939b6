"""Token-cloud figures: statistics vs layer, 2-D projections of the cloud at chosen layers, and the
statistics of a cloud pushed stage by stage through a model (theory: docs/theory/clouds.md §5, §7).

Figures are built with :class:`matplotlib.figure.Figure` directly (no pyplot, no backend switching)."""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.ticker import ScalarFormatter

from attnphys.plots._common import figure, mark_beyond, robust_limits, root, suptitle

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

NULLS = {"mardia_kurtosis_ratio": "mardia_kurtosis_ratio_null", "mardia_skewness": "mardia_skewness_null"}
"""Statistics drawn with their Gaussian null value (dashed)."""


def _panel(ax, x, y, name: str, style: str = "o-", label: str | None = None, **kw) -> int:
    """One statistic against x: NaN values are gaps (an undefined value: e.g. the k-NN entropy where tokens
    coincide), an all-NaN statistic says so. Returns the number of NaN values."""
    y = np.asarray(y, float)
    if not np.isfinite(y).any():
        ax.text(
            0.5, 0.5, "undefined\n(see its long_name)", transform=ax.transAxes, ha="center", va="center", fontsize=8
        )
        return int(y.size)
    kw.setdefault("markersize", 3)
    ax.plot(x, y, style, lw=1, label=label, **kw)
    return int(np.sum(~np.isfinite(y)))


def panel_title(name: str, undefined: int, total: int | None = None) -> str:
    """A panel title: the statistic, and at how many of its ``total`` points it is undefined (NaN: drawn as
    gaps; e.g. the k-NN entropy where tokens coincide)."""
    if not undefined:
        return name.replace("_", " ")
    of = f" of {total}" if total else ""
    return name.replace("_", " ") + f" (undefined at {undefined}{of} points: gaps)"


def clouds_statistics_figure(ds: xr.Dataset, *, fig=None) -> Figure:
    """Every statistic of :data:`PANELS` against the layer (Mardia's kurtosis ratio with its Gaussian null
    dashed; values beyond a robust range marked on the edge) (theory: docs/theory/clouds.md §5).
    ``fig``: a Figure or SubFigure to draw into (default: new)."""
    fig = figure(fig, figsize=(14, 8.4))
    axes = fig.subplots(3, 4, sharex=True)
    x = ds.layer.values
    for ax, name in zip(axes.ravel(), PANELS):
        y = ds[name].values
        bad = _panel(ax, x, y, name)
        if name in NULLS and NULLS[name] in ds:
            ax.plot(x, ds[NULLS[name]].values, "k--", lw=0.8, label="Gaussian null")
            ax.legend(fontsize=6)
        if robust_limits(ax, y):
            mark_beyond(ax, x, y)
        ax.set_title(panel_title(name, bad), fontsize=9)
        ax.set_ylabel(ds[name].attrs.get("units", "value") if name != "clusters" else "count", fontsize=7)
    for ax in axes[-1]:
        ax.set_xlabel("layer")
    suptitle(fig, ds, ds.attrs.get("title", "token cloud"), fontsize=10)
    return root(fig)


def clouds_snapshots_figure(ds: xr.Dataset, *, fig=None) -> Figure:
    """The cloud at the recorded snapshot layers, projected on the principal plane of the first snapshot
    (theory: docs/theory/clouds.md §5). ``fig``: a Figure or SubFigure to draw into (default: new)."""
    snaps = ds.snapshot.values
    first = snaps[0] - snaps[0].mean(0)
    _, _, Vt = np.linalg.svd(first, full_matrices=False)  # principal plane of the first snapshot
    fig = figure(fig, figsize=(3.3 * len(snaps) + 0.4, 3.8))
    axes = fig.subplots(1, len(snaps), squeeze=False)
    for ax, layer, X in zip(axes[0], ds.snap_layer.values, snaps):
        P = X @ Vt[:2].T
        centre = P.mean(0)
        spread = float(np.max(np.ptp(P, axis=0))) if P.size else 0.0
        # a collapsed cloud is drawn about its centre in units of its spread: no offset notation on the axes
        scale = 10.0 ** np.floor(np.log10(spread)) if 0 < spread < 1e-2 else 1.0
        Q = (P - centre) / scale if scale != 1.0 else P
        ax.plot(Q[:, 0], Q[:, 1], ".", ms=2, alpha=0.6)
        unit = f" − centre, × {scale:.0e}" if scale != 1.0 else ""
        ax.set_title(f"layer {layer}" + (f" (collapsed to {spread:.1e})" if scale != 1.0 else ""), fontsize=9)
        ax.set_aspect("equal", "datalim")
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(ScalarFormatter(useOffset=False))
        ax.set_xlabel(f"PC 1 of the first snapshot{unit}", fontsize=8)
        ax.set_ylabel(f"PC 2{unit}", fontsize=8)
    suptitle(fig, ds, ds.attrs.get("title", "token cloud") + ": projections", fontsize=10)
    return root(fig)


def clouds_figures(ds: xr.Dataset) -> dict[str, Figure]:
    """The figures of a cloud run by name: ``statistics`` and, when snapshots were kept, ``snapshots``
    (theory: docs/theory/clouds.md §5)."""
    out = {"statistics": clouds_statistics_figure(ds)}
    if "snapshot" in ds:
        out["snapshots"] = clouds_snapshots_figure(ds)
    return out


THROUGH_PANELS = ("cov_trace", "knn_entropy", "angular_spread", "participation_ratio", "radial_mean", "clusters")


MAX_LAYER_LABELS = 10
"""Most layer labels on a stage axis: beyond, every k-th layer is labelled (k = ⌈L / 10⌉)."""


def stage_ticks(ax, stages: list[str], n_layers: int) -> None:
    """Layer ticks ``L0``, ``L1``, … on a stage axis (theory: docs/theory/probes.md §1). Up to 8 layers: a
    labelled major tick at every layer and a minor tick, numbered 1…S, at every stage, the numbers keyed to
    the stage names in the figure title. More layers: a labelled tick every ⌈L / 10⌉ layers and an
    unlabelled minor tick at every layer (stage ticks would smear into a band)."""
    S = len(stages)
    every = max(1, -(-n_layers // MAX_LAYER_LABELS))
    major = list(range(0, n_layers, every))
    ax.set_xticks([S * i for i in major])
    ax.set_xticklabels([f"L{i}" for i in major], fontsize=7)
    if n_layers <= 8:
        minor = [k for k in range(S * n_layers) if k % S]
        ax.set_xticks(minor, minor=True)
        ax.set_xticklabels([str(k % S + 1) for k in minor], minor=True, fontsize=5, color="0.4")
    else:
        ax.set_xticks([S * i for i in range(n_layers) if i not in major], minor=True)
    ax.tick_params(axis="x", which="minor", length=2, pad=1)


def plain_numbers(ax) -> None:
    """y tick labels as plain numbers (``3``, ``255.5``): no offset (``1e-5 + 2.56e2``), no powers (``4×10⁰``)
    on a logarithmic axis."""
    from matplotlib.ticker import FormatStrFormatter, NullFormatter

    if ax.get_yscale() == "log":
        lo, hi = (float(v) for v in ax.get_ylim())
        ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
        # minor ticks (2, 3, … 9 × 10^k) labelled only over a range of under two decades, where decades
        # alone would leave one or two labels; beyond, they would crowd into a band
        few = lo > 0 and np.log10(hi / lo) < 2
        ax.yaxis.set_minor_formatter(FormatStrFormatter("%g") if few else NullFormatter())
    else:
        ax.yaxis.set_major_formatter(ScalarFormatter(useOffset=False))


def stage_key(stages: list[str]) -> str:
    """``stages per layer: 1 input → 2 attn_out → …``"""
    return "stages per layer: " + " → ".join(f"{i + 1} {s}" for i, s in enumerate(stages))


def through_model_figure(ds: xr.Dataset, *, fig=None) -> Figure:
    """Statistics of the cloud at every stage of every layer, one line per operator set (the model's own
    weights, random weights of the same shape, the theory's identity-weight block); stages numbered between
    the layer ticks (theory: docs/theory/clouds.md §7). ``fig``: a Figure or SubFigure to draw into."""
    stages = [str(s) for s in ds.stage.values]
    L = ds.sizes["layer"]
    x = np.arange(L * len(stages))
    fig = figure(fig, figsize=(15, 8.0))
    axes = fig.subplots(2, 3)
    ms = 3 if L <= 8 else 1.5
    for ax, name in zip(axes.ravel(), THROUGH_PANELS):
        ys, bad = [], 0
        for op, style in zip(ds.operator.values, ("o-", "s--", "^:")):
            y = ds.stat.sel(operator=op, statistic=name).values.reshape(-1)
            bad += _panel(ax, x, y, name, style, label=str(op), markersize=ms)
            ys.append(y)
        stage_ticks(ax, stages, L)
        ax.set_title(panel_title(name, bad, sum(y.size for y in ys)), fontsize=9)
        ax.set_xlabel("layer (stages numbered)" if L <= 8 else "layer (each tick a layer of stages 1…S)", fontsize=8)
        ax.set_ylabel("value" if name != "clusters" else "count", fontsize=8)
        if name in ("cov_trace", "participation_ratio"):
            ax.set_yscale("log")
        elif robust_limits(ax, np.concatenate(ys)):
            for y in ys:
                mark_beyond(ax, x, y)
        plain_numbers(ax)
    axes[0, 0].legend(fontsize=7)
    tokens = ds.sizes["token"] if "token" in ds.dims else ds.attrs.get("tokens", "")
    suptitle(
        fig,
        ds,
        f"{ds.attrs.get('model', '')} ({ds.attrs.get('family', '')}), {ds.attrs.get('init', '')} cloud of "
        f"{tokens} tokens; {stage_key(stages)}",
    )
    return root(fig)
