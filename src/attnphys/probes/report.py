"""A readable Markdown report: per claim of the paper, what the numbers support."""

from __future__ import annotations

import numpy as np
import xarray as xr


def _fmt(xs, p=3):
    return ", ".join(f"{x:.{p}g}" for x in np.asarray(xs, float))


def _verdict(n_yes: int, n: int) -> str:
    if n_yes == n:
        return "supported in every layer"
    if n_yes == 0:
        return "not supported in any layer"
    return f"supported in {n_yes} of {n} layers"


def _uncertainty(ds: xr.Dataset) -> str:
    """Where the standard errors come from, or which are missing (stores without the counts: 4 folds)."""
    folds = {t: int(ds.attrs.get(f"stat_se_folds_{t}", 4)) for t in ("all", "no_special")}
    splits = int(ds.attrs.get("mlp_se_splits", 4))
    if all(folds.values()):
        cloud = f"standard errors from {folds['all']} sentence folds"
    elif folds["all"]:
        cloud = f"standard errors from {folds['all']} sentence folds (none without the special tokens: too few of them per fold)"
    else:
        cloud = "no standard errors of the cloud statistics (too few sentences, or too few tokens per sentence fold)"
    mlp = (
        f"MLP R² over {splits} held-out splits"
        if splits > 1
        else "none of the MLP R² (fewer than two distinct held-out splits)"
    )
    return f"{cloud}; {mlp}."


def report(ds: xr.Dataset, s: dict, figures) -> str:
    L = ds.sizes["layer"]
    st_ns = ds.stat.sel(tokens="no_special")
    pre = bool(ds.attrs["pre_ln"])
    lines = [
        f"# Probing `{ds.attrs['model']}` ({ds.attrs['family']}, {'pre' if pre else 'post'}-norm, {ds.attrs['norm']})",
        "",
        f"{ds.attrs['n_sentences']} sentences, {ds.attrs['n_tokens']} tokens ({ds.attrs['n_special']} special); "
        f"cloud statistics on {ds.attrs['stats_tokens']} tokens (same tokens at every stage); "
        + _uncertainty(ds)
        + " attnphys "
        + ds.attrs["attnphys_version"]
        + ".",
        "",
    ]

    exp = np.asarray(s["attention_residual_cov_trace_ratio"]) > 1
    ent = np.asarray(s["attention_residual_knn_entropy_change"]) > 0
    ent_ns = (
        st_ns.sel(stage="attn_add", statistic="knn_entropy") - st_ns.sel(stage="input", statistic="knn_entropy")
    ).values > 0
    lines += [
        "## 1. Attention + residual expands the token cloud",
        "",
        f"- covariance trace after/before the attention add, per layer: {_fmt(s['attention_residual_cov_trace_ratio'])} "
        f"→ {_verdict(int(exp.sum()), L)} by this statistic;",
        f"- k-NN entropy change: {_fmt(s['attention_residual_knn_entropy_change'])} → {_verdict(int(ent.sum()), L)};",
        f"- without special tokens the k-NN entropy verdict is: {_verdict(int(ent_ns.sum()), L)} "
        "(special tokens are outliers that can flip it).",
        "",
    ]
    con = np.asarray(s["norm_cov_trace_ratio"]) < 1
    con_e = np.asarray(s["norm_knn_entropy_change"]) < 0
    lines += [
        "## 2. Normalization contracts it",
        "",
        f"- covariance trace after/before the norm next to attention: {_fmt(s['norm_cov_trace_ratio'])} → "
        f"{_verdict(int(con.sum()), L)};",
        f"- k-NN entropy change across that norm: {_fmt(s['norm_knn_entropy_change'])} → {_verdict(int(con_e.sum()), L)};",
        "- the statistics disagree where the norm's learned affine rescales features: compare the "
        "`*_noaffine` stages in the dataset.",
        "",
    ]
    z = np.asarray(s["qk_sum_z_vs_rotations"])
    lines += [
        "## 3. W_qᵀW_k ≈ Σ⁻¹ (inverse covariance of the attention input)",
        "",
        f"- best cosine similarity over the regularization sweep (heads summed), per layer: {_fmt(s['qk_sum_best_similarity'])};",
        f"- z-score against randomly rotated targets: {_fmt(z)}; other layers' Σ⁻¹: {_fmt(s['qk_sum_null_other_layer'])}; "
        f"Σ itself: {_fmt(s['qk_sum_similarity_to_sigma'])};",
        f"- verdict: the similarity exceeds the rotation null by 3σ in {int((z > 3).sum())} of {L} layers; "
        "a similarity close to 0 in absolute terms means the affine (Fisher) approximation does not describe "
        "the learned bilinear forms even where it beats the nulls.",
        "",
    ]
    r2 = np.asarray(s["mlp_r2_affine"])
    lines += [
        "## 4. The MLP is close to the identity / to an affine map",
        "",
        f"- held-out R² of the best affine map (split by sentence): {_fmt(r2)}; identity R²: {_fmt(s['mlp_r2_identity'])}; "
        f"random-initialised MLP of the same shape (affine R²): {_fmt(s['mlp_r2_random_mlp'])};",
        f"- verdict: affine R² > 0.9 in {int((r2 > 0.9).sum())} of {L} layers (a random MLP at initialisation is "
        "almost affine, so the gap to it measures the learned non-linearity).",
        "",
    ]
    g, gn = np.asarray(s["grad_cosine_mean"]), np.asarray(s["grad_cosine_null_mean"])
    lines += [
        "## 5. Heads take the gradient step of log Z",
        "",
        f"- mean cosine between a head's real update W_o W_v E_p[x] and ∇ log Z of its own scores: {_fmt(g)}; "
        f"other heads' gradients (null): {_fmt(gn)};",
        f"- verdict: own-gradient alignment exceeds the mismatched-head null in {int((g > gn).sum())} of {L} layers.",
        "",
    ]
    sw = s["swap_token_cosine"]
    lines += [
        "## 6. Swapping the normalization without retraining",
        "",
        "- mean cosine similarity of the final token embeddings with the original model: "
        + ", ".join(f"{k}: {v:.3f}" for k, v in sw.items())
        + ".",
        "",
    ]
    lines += ["## Figures", ""] + [f"![{p.stem}]({p.as_posix()})" for p in figures] + [""]
    return "\n".join(lines)
