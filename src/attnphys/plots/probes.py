"""Probe figures: statistics vs layer and stage, per-head heat maps, null distributions, norm swaps
(theory: docs/theory/probes.md §3). Object API only (no pyplot)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from attnphys.plots.clouds import _save as save

SHOWN = ("cov_trace", "knn_entropy", "mean_pairwise_distance", "angular_spread", "participation_ratio", "radial_mean")


def plot_probe(ds: xr.Dataset, out_dir: str | Path) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    title = f"{ds.attrs['model']} ({ds.attrs['family']})"
    paths = []
    stages = [s for s in ds.stage.values if not s.endswith("noaffine")]
    fig = Figure(figsize=(14, 7))
    axes = fig.subplots(2, 3)
    for ax, name in zip(axes.ravel(), SHOWN):
        for tok, style in (("all", "-"), ("no_special", "--")):
            y = ds.stat.sel(statistic=name, tokens=tok, stage=stages).values.reshape(-1)
            e = ds.stat_se.sel(statistic=name, tokens=tok, stage=stages).values.reshape(-1)
            x = np.arange(y.size)
            ax.errorbar(x, y, yerr=e, fmt=style, lw=0.9, ms=2, label=tok)
        ax.set_xticks(np.arange(0, y.size, len(stages)))
        ax.set_xticklabels([f"L{i}" for i in range(ds.sizes["layer"])], fontsize=7)
        ax.set_title(name.replace("_", " "), fontsize=9)
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(f"{title}: statistics through every stage ({' → '.join(stages)}) of every layer", fontsize=9)
    paths.append(save(fig, out / "stats_by_stage.png"))

    fig = Figure(figsize=(15, 4))
    axes = fig.subplots(1, 3)
    best = ds.qk_similarity.max("lam")
    im = axes[0].imshow(best.values, aspect="auto", cmap="viridis")
    axes[0].set_xticks(range(ds.sizes["head"]))
    axes[0].set_xticklabels(ds["head"].values, fontsize=6, rotation=90)
    axes[0].set_ylabel("layer")
    axes[0].set_title("cos(sym W_qᵀW_k, Σ_λ⁻¹), best λ", fontsize=9)
    fig.colorbar(im, ax=axes[0])
    im = axes[1].imshow(ds.grad_cosine.values, aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1)
    axes[1].set_title("cos(head update, ∇ log Z)", fontsize=9)
    axes[1].set_xlabel("head")
    fig.colorbar(im, ax=axes[1])
    s = ds.qk_similarity.sel(head="sum")
    for layer in ds.layer.values:
        (line,) = axes[2].semilogx(ds.lam.values, s.sel(layer=layer).values, "o-", ms=3, label=f"L{layer}")
        m = ds.qk_null_rotation_mean.sel(head="sum", layer=layer).values
        sd = ds.qk_null_rotation_std.sel(head="sum", layer=layer).values
        axes[2].fill_between(ds.lam.values, m - 2 * sd, m + 2 * sd, color=line.get_color(), alpha=0.15)
    axes[2].set_xlabel("regularization λ")
    axes[2].set_title("summed heads vs Σ_λ⁻¹; bands: rotation null ±2σ", fontsize=9)
    axes[2].legend(fontsize=6, ncol=2)
    fig.suptitle(title, fontsize=9)
    paths.append(save(fig, out / "heads.png"))

    fig = Figure(figsize=(11, 4))
    axes = fig.subplots(1, 2)
    x = ds.layer.values
    axes[0].errorbar(x, ds.mlp_r2_affine.values, yerr=ds.mlp_r2_affine_se.values, fmt="o-", label="affine (held out)")
    axes[0].plot(x, ds.mlp_r2_identity.values, "s--", label="identity")
    axes[0].plot(x, ds.mlp_r2_random_mlp.values, "^:", label="random MLP, affine")
    axes[0].set_ylim(min(-0.1, float(np.nanmin(ds.mlp_r2_identity.values))), 1.05)
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
    fig.suptitle(title, fontsize=9)
    paths.append(save(fig, out / "mlp_and_norms.png"))
    return paths


def temperatures_figure(ds: xr.Dataset, fig: Figure | None = None) -> Figure:
    """The particle picture's parameters of a probe (theory: docs/theory/probes.md §5): β per layer and
    head (log colour scale; a dot where the particle flow at that β ends in one cluster by the horizon),
    the heads' alignment with the token cosines, and the model's clouds layer by layer beside the
    particle flow at the layers' β (mean cosine between tokens)."""
    from matplotlib.colors import LogNorm

    fig = fig or Figure(figsize=(15, 4.2))
    axes = fig.subplots(1, 3)
    title = f"{ds.attrs.get('model', '')} ({ds.attrs.get('family', '')})"
    beta = ds.beta.values
    finite = beta[np.isfinite(beta) & (beta > 0)]
    norm = LogNorm(vmin=float(finite.min()), vmax=float(finite.max())) if finite.size else None
    im = axes[0].imshow(beta, aspect="auto", cmap="magma", norm=norm, origin="lower")
    yy, xx = np.nonzero(ds.beta_one_cluster.values > 0)
    axes[0].plot(xx, yy, "o", ms=3, color="cyan")
    axes[0].set_xlabel("head")
    axes[0].set_ylabel("layer")
    axes[0].set_title(
        f"effective β; dots: the particle flow at β ends in one cluster by t = {ds.attrs.get('flow_horizon', '?'):g}",
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
    ax2.semilogy(x, ds.beta_layer.values, ":", color="gray", label="β of the layer (median over heads)")
    ax2.set_ylabel("β", color="gray")
    axes[2].legend(fontsize=7, loc="lower right")
    axes[2].set_title("clustering of the token clouds (dotted: the layer's β)", fontsize=9)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig
