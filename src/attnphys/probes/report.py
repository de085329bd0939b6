"""A readable Markdown report: per claim of the paper, what the numbers support, with each claim's test
(theory: docs/theory/probes.md §3–§5)."""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

from attnphys.probes.claims import CLAIMS, MLP_AFFINE_R2, claim_verdict
from attnphys.probes.significance import ALPHA


def _fmt(xs, p=3):
    return ", ".join(f"{x:.{p}g}" for x in np.asarray(xs, float))


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


def _claim_line(ds: xr.Dataset, name: str) -> str:
    if "claim" not in ds.coords or name not in ds.claim.values:
        return "- no test stored for this claim (a store written by an older version)."
    c = CLAIMS[name]
    sup = ds.claim_supported.sel(claim=name).values.astype(bool)
    p = ds.claim_p.sel(claim=name).values
    z = ds.claim_z.sel(claim=name).values
    tested = int(np.isfinite(p).sum())
    return (
        f"- test: {c.test}; null: {c.null}; {tested} comparisons (one per layer), Holm-corrected; "
        f"z (or t) per layer: {_fmt(z)}; p: {_fmt(p, 2)};\n"
        f"- **verdict: {claim_verdict(sup, tested)}**"
        + (" — a claim about training: a randomly initialised model does not pass it." if c.training else ".")
    )


def _header(ds: xr.Dataset) -> list[str]:
    pre = bool(ds.attrs["pre_ln"])
    causal, rotary = bool(ds.attrs.get("causal", 0)), bool(ds.attrs.get("rotary", 0))
    kind = "decoder (causal attention)" if causal else "encoder (bidirectional attention)"
    lines = [
        f"# Probing `{ds.attrs['model']}` ({ds.attrs['family']}, {kind}, {'pre' if pre else 'post'}-norm, {ds.attrs['norm']})",
        "",
        f"{ds.attrs['n_sentences']} sentences, {ds.attrs['n_tokens']} tokens ({ds.attrs['n_special']} special); "
        f"cloud statistics on {ds.attrs['stats_tokens']} tokens (same tokens at every stage); "
        + _uncertainty(ds)
        + " attnphys "
        + ds.attrs["attnphys_version"]
        + ".",
        "",
    ]
    how = []
    if causal:
        how.append(
            "every attention statistic uses the causal mask (a token attends to itself and the tokens before it)"
        )
    if rotary:
        how.append(
            "queries and keys are rotated at their positions wherever scores or gradients are computed; "
            "the position-free W_qᵀW_k (offset 0) is compared separately from the form averaged over the "
            "text's offsets"
        )
    kv = json.loads(ds.attn_head.attrs.get("kv_head", "[]") or "[]")
    if kv and len(set(kv)) < len(kv):
        how.append(
            f"{len(kv)} query heads share {len(set(kv))} key/value heads (query head → key/value head: "
            + ", ".join(f"{h}→{g}" for h, g in enumerate(kv))
            + ")"
        )
    if how:
        lines += ["How the experiments read this model: " + "; ".join(how) + ".", ""]
    if "q4" in str(ds.attrs["model"]).lower() or str(ds.attrs["model"]) == "smollm2":
        lines += [
            "The weights are 4-bit quantized (GGUF Q4_1: blocks of 32 weights sharing a scale and an offset) and "
            "dequantized to float32: every number describes this quantized model, whose weights differ from "
            "the original SmolLM2's by up to half a quantization step.",
            "",
        ]
    return lines


def _verdict_table(ds: xr.Dataset) -> list[str]:
    if "claim" not in ds.coords:
        return []
    L = ds.sizes["layer"]
    rows = [
        "## Verdicts",
        "",
        f"Each claim is tested in every layer against its null; a layer supports it when its p-value survives "
        f"Holm's correction over the {L} layers at family-wise level {ALPHA:g}.",
        "",
        "| claim | depends on training | supported in | comparisons |",
        "|---|---|---|---|",
    ]
    for name in ds.claim.values:
        c = CLAIMS.get(str(name))
        sup = ds.claim_supported.sel(claim=name).values.astype(bool)
        n = int(np.isfinite(ds.claim_p.sel(claim=name).values).sum())
        where = f"{int(sup.sum())} of {L} layers" if n else "not tested"
        rows.append(f"| {c.title if c else name} | {'yes' if c and c.training else 'no'} | {where} | {n} |")
    return rows + [""]


def _temperature_section(ds: xr.Dataset) -> list[str]:
    if "beta" not in ds:
        return []
    beta = ds.beta.values
    med = ds.beta_layer.values
    one = ds.beta_one_cluster.values.astype(bool)
    align = ds.beta_alignment.values
    lines = [
        "## 7. The particle picture's parameters: temperatures and clustering",
        "",
        "Per layer and head, the effective inverse temperature β of the attention: the within-query spread of the "
        "head's scores per unit spread of the cosines of the same tokens' directions, on the layer's normalised "
        "hidden states (exactly β for the particle model's scores β⟨x_i, x_j⟩). These are parameters, not claims: "
        "no test.",
        "",
        f"- β per layer (median over heads): {_fmt(med)};",
        f"- β over all heads: min {np.nanmin(beta):.3g}, median {np.nanmedian(beta):.3g}, max {np.nanmax(beta):.3g};",
        f"- alignment of the scores with the cosines (1: the particle form; 0: unrelated), median per layer: "
        f"{_fmt(np.nanmedian(align, axis=1), 2)};",
        f"- regimes: the particle flow at a head's β, started from its layer's own token clouds "
        f"({ds.attrs.get('flow_clouds')} clouds of {ds.attrs.get('flow_tokens')} tokens) and run for "
        f"t = {ds.attrs.get('flow_horizon')} (one unit per layer), ends in one cluster for {int(one.sum())} of "
        f"{one.size} heads and stays on a metastable plateau of several clusters for the other {int((~one).sum())} "
        f"(median clusters at the horizon per layer: {_fmt(np.nanmedian(ds.beta_flow_clusters.values, axis=1), 2)});",
        f"- the model's own clouds (attention input, per sentence), mean cosine between tokens per layer: "
        f"{_fmt(ds.cluster_model_mean_cosine.values, 2)};",
        f"- the particle flow from the first layer's clouds at each layer's β: {_fmt(ds.cluster_flow_mean_cosine.values, 2)} "
        f"(clusters: model {_fmt(ds.cluster_model_count.values, 2)}; flow {_fmt(ds.cluster_flow_count.values, 2)}).",
        "",
    ]
    return lines


def report(ds: xr.Dataset, s: dict, figures) -> str:
    L = ds.sizes["layer"]
    st_ns = ds.stat.sel(tokens="no_special")
    lines = _header(ds) + _verdict_table(ds)

    ent_ns = (
        st_ns.sel(stage="attn_add", statistic="knn_entropy") - st_ns.sel(stage="input", statistic="knn_entropy")
    ).values > 0
    lines += [
        "## 1. Attention + residual expands the token cloud",
        "",
        f"- covariance trace after/before the attention add, per layer: {_fmt(s['attention_residual_cov_trace_ratio'])};",
        _claim_line(ds, "attention_expands_cov"),
        f"- k-NN entropy change: {_fmt(s['attention_residual_knn_entropy_change'])};",
        _claim_line(ds, "attention_expands_knn"),
        f"- without special tokens the k-NN entropy grows in {int(ent_ns.sum())} of {L} layers "
        "(special tokens are outliers that can flip it).",
        "",
    ]
    lines += [
        "## 2. Normalization contracts it",
        "",
        f"- covariance trace after/before the norm next to attention: {_fmt(s['norm_cov_trace_ratio'])};",
        _claim_line(ds, "norm_contracts_cov"),
        f"- k-NN entropy change across that norm: {_fmt(s['norm_knn_entropy_change'])};",
        _claim_line(ds, "norm_contracts_knn"),
        "- the statistics disagree where the norm's learned affine rescales features: compare the "
        "`*_noaffine` stages in the dataset.",
        "",
    ]
    lines += [
        "## 3. W_qᵀW_k ≈ Σ⁻¹ (inverse covariance of the attention input)",
        "",
        f"- best cosine similarity over the regularization sweep (heads summed), per layer: {_fmt(s['qk_sum_best_similarity'])};",
        f"- z-score against randomly rotated targets: {_fmt(s['qk_sum_z_vs_rotations'])}; other layers' Σ⁻¹: "
        f"{_fmt(s['qk_sum_null_other_layer'])}; Σ itself: {_fmt(s['qk_sum_similarity_to_sigma'])};",
    ]
    if bool(ds.attrs.get("rotary", 0)) and "qk_similarity_offset_average" in ds:
        avg = ds.qk_similarity_offset_average.sel(head="sum").max("lam").values
        lines.append(
            "- with rotary positions the score form depends on the offset between query and key: the numbers above "
            "are the position-free form (offset 0, W_qᵀW_k); averaged over the causal offsets of this text "
            f"(W_qᵀ R̄ W_k) the best similarity is: {_fmt(avg)};"
        )
    lines += [
        _claim_line(ds, "qk_inverse_covariance"),
        "- a similarity close to 0 in absolute terms means the affine (Fisher) approximation does not describe "
        "the learned bilinear forms even where it beats the null.",
        "",
    ]
    lines += [
        "## 4. The MLP is close to the identity / to an affine map",
        "",
        f"- held-out R² of the best affine map (split by sentence): {_fmt(s['mlp_r2_affine'])}; identity R²: "
        f"{_fmt(s['mlp_r2_identity'])}; random-initialised MLP of the same shape (affine R²): {_fmt(s['mlp_r2_random_mlp'])};",
        _claim_line(ds, "mlp_affine"),
        f"- the threshold is R² > {MLP_AFFINE_R2}; a random MLP at initialisation can be almost affine (a plain MLP) or "
        "clearly not (a gated MLP multiplies two projections), so the gap to it measures what training did.",
        "",
    ]
    lines += [
        "## 5. Heads take the gradient step of log Z",
        "",
        f"- mean cosine between a head's real update W_o W_v E_p[x] and ∇ log Z of its own scores: {_fmt(s['grad_cosine_mean'])}; "
        f"other heads' gradients: {_fmt(s['grad_cosine_null_mean'])};",
        _claim_line(ds, "head_own_gradient"),
        "",
    ]
    sw = s["swap_token_cosine"]
    not_run = json.loads(ds.attrs.get("swap_not_run", "{}") or "{}")
    lines += [
        "## 6. Swapping the normalization without retraining",
        "",
        f"- a measurement, not a claim (no null hypothesis), on {ds.attrs.get('swap_sentences', ds.attrs['n_sentences'])} "
        "sentences: mean cosine similarity of the final token embeddings with the original model: "
        + ", ".join(f"{k}: {v:.3f}" for k, v in sw.items() if k not in not_run and v is not None and np.isfinite(v))
        + ";",
    ]
    for k, why in not_run.items():
        lines.append(f"- {k}: {why}.")
    for k in ds.norm_swap.values:
        k = str(k)
        if k in not_run or np.isfinite(ds.swap_token_cosine.sel(norm_swap=k).item()):
            continue
        change = ds.swap_per_layer_change.sel(norm_swap=k).values
        bad = np.flatnonzero(~np.isfinite(change))
        where = (
            f" from hidden state {bad[0]} on (relative change before it: {_fmt(change[: bad[0]])})" if bad.size else ""
        )
        lines.append(f"- {k}: the hidden states overflow (non-finite){where}: without it the model diverges.")
    lines.append("")
    lines += _temperature_section(ds)
    lines += ["## Figures", ""] + [f"![{p.stem}]({p.as_posix()})" for p in figures] + [""]
    return "\n".join(lines)
