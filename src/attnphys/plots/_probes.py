"""Probe figures: statistics vs layer and stage, per-head heat maps, null distributions, norm swaps
(theory: docs/theory/probes.md §3). Object API only (no pyplot)."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from attnphys.plots._clouds import panel_title as _panel_title
from attnphys.plots._clouds import stage_key, stage_ticks
from attnphys.plots._common import figure, mark_beyond, robust_limits, root, suptitle

SHOWN = ("cov_trace", "knn_entropy", "mean_pairwise_distance", "angular_spread", "participation_ratio", "radial_mean")


def _title(ds: xr.Dataset) -> str:
    return f"{ds.attrs.get('model', '')} ({ds.attrs.get('family', '')})"


def _stages(ds: xr.Dataset) -> list[str]:
    return [str(s) for s in ds.stage.values if not str(s).endswith("noaffine")]


def stages_figure(ds: xr.Dataset, *, fig=None) -> Figure:
    """The cloud statistics through every stage of every layer, all tokens and without the special ones,
    with standard errors over sentence folds; stages numbered between the layer ticks; a few extreme values
    kept from flattening a panel, undefined values (a k-NN entropy where tokens coincide) left as gaps and
    counted in the panel title (theory: docs/theory/probes.md §3).
    ``fig``: a Figure or SubFigure to draw into (default: new)."""
    stages = _stages(ds)
    fig = figure(fig, figsize=(14, 7.6))
    axes = fig.subplots(2, 3)
    for ax, name in zip(axes.ravel(), SHOWN):
        ys = []
        for tok, style in (("all", "-"), ("no_special", "--")):
            y = ds.stat.sel(statistic=name, tokens=tok, stage=stages).values.reshape(-1)
            e = ds.stat_se.sel(statistic=name, tokens=tok, stage=stages).values.reshape(-1)
            x = np.arange(y.size)
            ax.errorbar(x, y, yerr=e, fmt=style, lw=0.9, ms=2, label=tok)
            ys.append(y)
        stage_ticks(ax, stages, ds.sizes["layer"])
        if robust_limits(ax, np.concatenate(ys)):
            for y in ys:
                mark_beyond(ax, np.arange(y.size), y)
        ax.set_title(_panel_title(name, int(sum(np.sum(~np.isfinite(y)) for y in ys))), fontsize=9)
        ax.set_xlabel("layer (stages numbered)", fontsize=8)
        ax.set_ylabel("value", fontsize=8)
    axes[0, 0].legend(fontsize=7)
    suptitle(fig, ds, f"{_title(ds)}: statistics through every stage of every layer; {stage_key(stages)}")
    return root(fig)


def heads_figure(ds: xr.Dataset, *, fig=None) -> Figure:
    """Per head and layer: the best similarity of sym(W_qᵀW_k) with Σ_λ⁻¹, the cosine of a head's update
    with ∇log Z, and the summed heads against λ with the rotation null (theory: docs/theory/probes.md §3).
    ``fig``: a Figure or SubFigure to draw into (default: new)."""
    fig = figure(fig, figsize=(15, 4.6))
    axes = fig.subplots(1, 3)
    best = ds.qk_similarity.max("lam")
    im = axes[0].imshow(best.values, aspect="auto", cmap="viridis")
    axes[0].set_xticks(range(ds.sizes["head"]))
    axes[0].set_xticklabels(ds["head"].values, fontsize=6, rotation=90)
    axes[0].set_xlabel("head")
    axes[0].set_ylabel("layer")
    axes[0].set_title("cos(sym W_qᵀW_k, Σ_λ⁻¹), best λ", fontsize=9)
    fig.colorbar(im, ax=axes[0])
    im = axes[1].imshow(ds.grad_cosine.values, aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1)
    axes[1].set_title("cos(head update, ∇ log Z)", fontsize=9)
    axes[1].set_xlabel("head")
    axes[1].set_ylabel("layer")
    fig.colorbar(im, ax=axes[1])
    s = ds.qk_similarity.sel(head="sum")
    for layer in ds.layer.values:
        (line,) = axes[2].semilogx(ds.lam.values, s.sel(layer=layer).values, "o-", ms=3, label=f"L{layer}")
        m = ds.qk_null_rotation_mean.sel(head="sum", layer=layer).values
        sd = ds.qk_null_rotation_std.sel(head="sum", layer=layer).values
        axes[2].fill_between(ds.lam.values, m - 2 * sd, m + 2 * sd, color=line.get_color(), alpha=0.15)
    axes[2].set_xlabel("regularization λ")
    axes[2].set_ylabel("cosine similarity")
    axes[2].set_title("summed heads vs Σ_λ⁻¹; bands: rotation null ±2σ", fontsize=9)
    axes[2].legend(fontsize=6, ncol=2)
    suptitle(fig, ds, _title(ds))
    return root(fig)


def mlp_norms_figure(ds: xr.Dataset, *, fig=None) -> Figure:
    """MLP linearity per layer (held-out affine R², identity, a random MLP) and the relative change of the
    hidden states when a norm is swapped without retraining (theory: docs/theory/probes.md §3).
    ``fig``: a Figure or SubFigure to draw into (default: new)."""
    fig = figure(fig, figsize=(11, 4.4))
    axes = fig.subplots(1, 2)
    x = ds.layer.values
    axes[0].errorbar(x, ds.mlp_r2_affine.values, yerr=ds.mlp_r2_affine_se.values, fmt="o-", label="affine (held out)")
    axes[0].plot(x, ds.mlp_r2_identity.values, "s--", label="identity")
    axes[0].plot(x, ds.mlp_r2_random_mlp.values, "^:", label="random MLP, affine")
    ident = ds.mlp_r2_identity.values
    axes[0].set_ylim(min(-0.1, float(np.nanmin(ident)) if np.isfinite(ident).any() else -0.1), 1.05)
    axes[0].set_xlabel("layer")
    axes[0].set_ylabel("R²")
    axes[0].legend(fontsize=7)
    axes[0].set_title("MLP linearity", fontsize=9)
    for k in ds.norm_swap.values:
        axes[1].plot(ds.hidden_state.values, ds.swap_per_layer_change.sel(norm_swap=k).values, "o-", ms=3, label=str(k))
    axes[1].set_xlabel("hidden state (0 = embeddings)")
    axes[1].set_ylabel("relative change")
    axes[1].set_title("norm swapped without retraining", fontsize=9)
    axes[1].legend(fontsize=7)
    suptitle(fig, ds, _title(ds))
    return root(fig)


def probe_figures(ds: xr.Dataset) -> dict[str, Figure]:
    """The figures of a probe run by name: ``stats_by_stage``, ``heads``, ``mlp_and_norms`` and, when the probe
    measured them, ``temperatures`` (theory: docs/theory/probes.md §3, §5)."""
    figs = {"stats_by_stage": stages_figure(ds), "heads": heads_figure(ds), "mlp_and_norms": mlp_norms_figure(ds)}
    if "beta" in ds:
        figs["temperatures"] = temperatures_figure(ds)
    return figs


def temperatures_figure(ds: xr.Dataset, *args: Any, fig=None) -> Figure:
    """The particle picture's parameters of a probe (theory: docs/theory/probes.md §5): β per layer and
    head (log colour scale; a dot where the particle flow at that β ends in one cluster by the horizon),
    the heads' alignment with the token cosines, and the model's clouds layer by layer beside the
    particle flow at the layers' β (mean cosine between tokens). ``fig``: a Figure or SubFigure to draw
    into (default: new); given positionally it still works for one release, with a DeprecationWarning."""
    from matplotlib.colors import LogNorm, SymLogNorm

    if args:
        if len(args) > 1 or fig is not None:
            raise TypeError("temperatures_figure takes the dataset and the keyword fig= only")
        import warnings

        warnings.warn(
            "temperatures_figure(ds, fig) is deprecated: pass the figure as temperatures_figure(ds, fig=fig)",
            DeprecationWarning,
            stacklevel=2,
        )
        fig = list(args)[0]
    fig = figure(fig, figsize=(15, 4.6))
    axes = fig.subplots(1, 3)
    title = f"{ds.attrs.get('model', '')} ({ds.attrs.get('family', '')})"
    beta = ds.beta.values
    finite = beta[np.isfinite(beta) & (beta > 0)]
    if np.any(beta[np.isfinite(beta)] < 0):  # a signed β: a symmetric colour scale, negative heads in blue
        m = float(np.nanmax(np.abs(beta)))
        small = float(np.nanmin(np.abs(beta[np.isfinite(beta) & (beta != 0)]))) if m > 0 else 1.0
        norm, cmap = SymLogNorm(linthresh=max(small, 1e-3 * m), vmin=-m, vmax=m), "RdBu_r"
    else:
        norm = LogNorm(vmin=float(finite.min()), vmax=float(finite.max())) if finite.size else None
        cmap = "magma"
    im = axes[0].imshow(beta, aspect="auto", cmap=cmap, norm=norm, origin="lower")
    yy, xx = np.nonzero(ds.beta_one_cluster.values > 0)
    axes[0].plot(xx, yy, "o", ms=3, color="cyan")
    axes[0].set_xlabel("head")
    axes[0].set_ylabel("layer")
    axes[0].set_title(
        f"signed β; dots: the particle flow at β ends in one cluster by t = {ds.attrs.get('flow_horizon', '?'):.3g}",
        fontsize=8,
    )
    fig.colorbar(im, ax=axes[0])
    im = axes[1].imshow(ds.beta_alignment.values, aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1, origin="lower")
    axes[1].set_xlabel("head")
    axes[1].set_title("alignment of the scores with the token cosines", fontsize=9)
    fig.colorbar(im, ax=axes[1])
    x = ds.layer.values
    axes[2].plot(x, ds.cluster_model_mean_cosine.values, "o-", ms=3, label="model's clouds")
    axes[2].plot(x, ds.cluster_flow_mean_cosine.values, "s--", ms=3, label="particle flow at the layers' β")
    axes[2].set_xlabel("layer (flow time)")
    axes[2].set_ylabel("mean cosine between tokens")
    axes[2].set_ylim(min(0.0, float(np.nanmin(ds.cluster_model_mean_cosine.values))) - 0.02, 1.02)
    ax2 = axes[2].twinx()
    ax2.semilogy(x, ds.beta_layer.values, ":", color="gray", label="β of the layer (median over its particle heads)")
    ax2.set_ylabel("β", color="gray")
    axes[2].legend(fontsize=7, loc="lower right")
    axes[2].set_title("clustering of the token clouds (dotted: the layer's β)", fontsize=9)
    suptitle(fig, ds, title)
    return root(fig)
