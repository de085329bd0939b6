"""``attnphys probe``: every experiment on one model → dataset, JSON summary, figures, report
(theory: docs/theory/probes.md §3)."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from attnphys import _deprecated
from attnphys.clouds.stats import LONG_NAMES as STAT_LONG_NAMES
from attnphys.clouds.stats import STATISTICS
from attnphys.metadata import base_attrs
from attnphys.probes import metrics
from attnphys.probes.capture import Capture, builtin_corpus, capture
from attnphys.probes.claims import CLAIMS, evaluate_claims
from attnphys.probes.particle import temperature_variables

LONG_NAMES = {
    "stat": "token-cloud statistic at a stage of a layer",
    "stat_se": "standard error of the statistic over sentence folds",
    "qk_similarity": "cosine similarity of sym(W_q^T W_k)/sqrt(d_h) with the regularized inverse covariance",
    "qk_null_rotation_mean": "mean similarity with randomly rotated targets (null)",
    "qk_null_rotation_std": "standard deviation of the similarity with randomly rotated targets (null)",
    "qk_null_other_layer": "mean similarity with the other layers' inverse covariances (null)",
    "qk_null_mismatched_head": "mean similarity of other layers' heads with this layer's target (null)",
    "qk_similarity_to_sigma": "cosine similarity of sym(W_q^T W_k) with the covariance itself",
    "mlp_r2_affine": "held-out R^2 of the best affine map from MLP input to output",
    "mlp_r2_affine_se": "standard error of the affine R^2 over sentence splits",
    "mlp_r2_identity": "R^2 of the identity as a predictor of the MLP output",
    "mlp_rel_update": "mean ratio of MLP output norm to input norm",
    "mlp_r2_random_mlp": "held-out affine R^2 of a random-initialised MLP of the same shape",
    "grad_cosine": "mean cosine between a head's update and the gradient of its log-normalizer",
    "grad_cosine_null": "mean cosine with the other heads' gradients (null)",
    "swap_token_cosine": "mean cosine similarity of final token embeddings with the original model's",
    "swap_relative_change": "mean relative L2 change of the final token embeddings",
    "swap_sentence_cosine": "mean cosine similarity of mean-pooled sentence embeddings",
    "swap_per_layer_change": "mean relative L2 change of each hidden state",
    "qk_similarity_offset_average": "cosine similarity of sym(W_q^T Rbar W_k)/sqrt(d_h), the rotary form averaged over the text's causal offsets, with the regularized inverse covariance (NaN without rotary positions)",
    "grad_cosine_matrix": "mean cosine between head h's update and head g's gradient of its log-normalizer",
    "mlp_r2_splits": "held-out affine R^2 of every sentence split",
    "claim_statistic": "the claim's statistic in each layer",
    "claim_z": "z-score (or t) of the claim's statistic against its null",
    "claim_p": "one-sided p-value of the claim's test in each layer",
    "claim_p_holm": "p-value adjusted by Holm's correction over the layers",
    "claim_supported": "1 where the claim is supported at family-wise level 0.05 (Holm over the layers)",
    "claim_training": "1 for a claim that a randomly initialised model of the family does not satisfy",
}
"""CF ``long_name`` of every variable of a probe dataset (the temperature section's are in
:data:`attnphys.probes.particle.TEMPERATURE_LONG_NAMES`)."""

STEPS = ("capture", "cloud statistics", "W_qᵀW_k vs Σ⁻¹", "MLP linearity", "updates vs ∇ log Z",
         "swapped norms", "temperatures", "claims")  # fmt: skip


def _resolve(model, tokenizer, log, progress):
    """(name, model, tokenizer) for a name or a loaded model."""
    from attnphys.probes.models import load_model

    if isinstance(model, str):
        m, tok = load_model(model, progress=progress, log=log)
        return model, m, tok
    if tokenizer is None:
        raise ValueError("a loaded model needs its tokenizer (tokenizer=...)")
    name = getattr(getattr(model, "config", None), "name_or_path", None) or type(model).__name__
    return str(name), model, tokenizer


def _texts(sentences, max_sentences):
    sentences = builtin_corpus() if sentences is None else list(sentences)
    return sentences[:max_sentences] if max_sentences else sentences


def _heads(model, cap: Capture):
    ad = cap.adapter
    return [ad.heads(model, layer) for layer in ad.layers(model)]


def probe(
    model="minilm",
    sentences: list[str] | None = None,
    *,
    tokenizer=None,
    max_sentences: int | None = None,
    max_tokens: int = 1024,
    seed: int = 0,
    progress: bool = False,
    log=None,
) -> xr.Dataset:
    """Run every experiment of the probes on a real model and test every claim (theory:
    docs/theory/probes.md §3–§5).

    Args:
        model: a short name (``minilm``, ``smollm2``), a local model folder, a hub name, or a loaded
            transformers model (then ``tokenizer`` is needed). sentences: the text, one sentence per
            item (default: the built-in corpus); ``max_sentences`` keeps the first N. max_tokens: tokens
            sampled for the cloud statistics. seed: seed of the samples and nulls. progress: show a
            progress bar. log: called with a line per step (default: print when ``progress``).

    Returns:
        Dataset: the cloud statistics per (layer, stage, tokens, statistic); the W_qᵀW_k similarities
        per (layer, head, lam) with their nulls; the MLP fits per layer; the update–gradient cosines per
        (layer, attn_head[, grad_head]); the swapped normalizations; every claim's statistic, z, p-value
        and verdict per (claim, layer); the heads' temperatures per (layer, attn_head) and the clustering
        beside the particle flow per layer. Attributes: the model, its family and the run's settings.
    """
    from attnphys.progress import progress_bar

    t0 = time.perf_counter()
    log = log or (print if progress else (lambda *a: None))
    name, model, tokenizer = _resolve(model, tokenizer, log, progress)
    sentences = _texts(sentences, max_sentences)
    with progress_bar(len(STEPS), "probe steps", enabled=progress) as advance:

        def step(what: str) -> None:
            log(f"{what} ({time.perf_counter() - t0:.1f} s)")
            advance()

        cap = capture(model, tokenizer, sentences)
        ad = cap.adapter
        heads = _heads(model, cap)
        rotary = ad.rotary(model)
        step(f"captured {cap.sentence.size} tokens of {len(sentences)} sentences, {cap.n_layers} layers")
        clouds = metrics.cloud_stages(cap, max_tokens=max_tokens, seed=seed)
        step("(a) cloud statistics per layer and stage")
        qk = metrics.qk_vs_inverse_covariance(cap, heads, rotary=rotary)
        step("(b) W_qᵀW_k vs Σ⁻¹")
        mlps = [ad.mlp(model, layer) for layer in ad.layers(model)]
        mlp = metrics.mlp_linearity(
            cap, init_std=getattr(model.config, "initializer_range", 0.02), seed=seed, mlps=mlps
        )
        step("(c) MLP linearity")
        _warn_missing_errors(clouds, mlp, len(sentences), log)
        grad = metrics.update_vs_gradient(cap, heads, rotary=rotary)
        step("(d) head updates vs ∇ log Z")
        swap = metrics.swap_normalization(model, tokenizer, sentences, ad)
        step("(e) swapped normalizations")
        temp_vars, temp_attrs = temperature_variables(cap, heads, rotary)
        step("temperatures and particle flows")
        claims = evaluate_claims(cap, clouds, qk, mlp, grad, seed=seed)
        step("claims tested")

    H = heads[0].n_heads
    ds = xr.Dataset(
        {
            "stat": (("layer", "stage", "tokens", "statistic"), clouds["values"]),
            "stat_se": (("layer", "stage", "tokens", "statistic"), clouds["se"]),
            "qk_similarity": (("layer", "head", "lam"), qk["similarity"]),
            "qk_null_rotation_mean": (("layer", "head", "lam"), qk["null_rotation_mean"]),
            "qk_null_rotation_std": (("layer", "head", "lam"), qk["null_rotation_std"]),
            "qk_null_other_layer": (("layer", "head", "lam"), qk["null_other_layer"]),
            "qk_null_mismatched_head": (("layer", "head", "lam"), qk["null_mismatched_head"]),
            "qk_similarity_to_sigma": (("layer", "head"), qk["similarity_to_sigma"]),
            "qk_similarity_offset_average": (("layer", "head", "lam"), qk["similarity_offset_average"]),
            "mlp_r2_affine": (("layer",), mlp["r2_affine"]),
            "mlp_r2_affine_se": (("layer",), mlp["r2_affine_se"]),
            "mlp_r2_splits": (("layer", "split"), mlp["r2_splits"]),
            "mlp_r2_identity": (("layer",), mlp["r2_identity"]),
            "mlp_rel_update": (("layer",), mlp["rel_update"]),
            "mlp_r2_random_mlp": (("layer",), mlp["r2_random_mlp"]),
            "grad_cosine": (("layer", "attn_head"), grad["cos_update_gradient"]),
            "grad_cosine_null": (("layer", "attn_head"), grad["cos_null_other_heads"]),
            "grad_cosine_matrix": (("layer", "attn_head", "grad_head"), grad["matrix"]),
            "swap_token_cosine": (("norm_swap",), swap["token_cosine"]),
            "swap_relative_change": (("norm_swap",), swap["relative_change"]),
            "swap_sentence_cosine": (("norm_swap",), swap["sentence_cosine"]),
            "swap_per_layer_change": (("norm_swap", "hidden_state"), swap["per_layer_relative_change"]),
            "claim_statistic": (("claim", "layer"), claims["statistic"]),
            "claim_z": (("claim", "layer"), claims["z"]),
            "claim_p": (("claim", "layer"), claims["p"]),
            "claim_p_holm": (("claim", "layer"), claims["p_holm"]),
            "claim_supported": (("claim", "layer"), claims["supported"].astype(np.int8)),
            "claim_training": (("claim",), np.array([c.training for c in CLAIMS.values()], np.int8)),
        },
        coords={
            "layer": np.arange(cap.n_layers),
            "stage": clouds["stages"],
            "tokens": clouds["tokens"],
            "statistic": list(STATISTICS),
            "head": [f"h{h}" for h in range(H)] + ["sum"],
            "lam": qk["lams"],
            "attn_head": np.arange(H),
            "grad_head": np.arange(H),
            "split": np.arange(mlp["r2_splits"].shape[1]),
            "norm_swap": swap["kinds"],
            "hidden_state": np.arange(swap["per_layer_relative_change"].shape[1]),
            "claim": list(CLAIMS),
        },
    )
    for k, (dims, val, attrs) in temp_vars.items():
        ds[k] = (dims, val, attrs)
    for k, text in LONG_NAMES.items():
        ds[k].attrs["long_name"] = text
    ds["stat"].attrs["statistics"] = "; ".join(f"{k}: {v}" for k, v in STAT_LONG_NAMES.items())
    ds["attn_head"].attrs["kv_head"] = json.dumps(heads[0].kv_heads().tolist())
    ds.attrs.update(
        base_attrs(
            None,
            model=name,
            family=ad.family,
            pre_ln=int(ad.pre_ln),
            norm=ad.norm,
            causal=int(ad.causal),
            rotary=int(rotary is not None),
            n_heads=H,
            n_kv_heads=int(len(set(heads[0].kv_heads().tolist()))),
            n_sentences=len(sentences),
            n_tokens=int(cap.sentence.size),
            n_special=int(cap.special.sum()),
            stats_tokens=clouds["n_tokens"],
            stat_se_folds_all=clouds["folds"][0],
            stat_se_folds_no_special=clouds["folds"][1],
            mlp_se_splits=mlp["splits"],
            swap_not_run=swap["not_run"],
            swap_sentences=min(len(sentences), metrics.SWAP_SENTENCES),
            seed=seed,
            wall_time_s=round(time.perf_counter() - t0, 2),
            **temp_attrs,
        )
    )
    return ds


def _warn_missing_errors(clouds, mlp, n_sentences, log):
    why = (
        f"fewer than {metrics.FOLDS} sentences"
        if n_sentences < metrics.FOLDS
        else f"a sentence fold has fewer than {metrics.MIN_FOLD_TOKENS} sampled tokens"
    )
    for tokens, folds in zip(("all tokens", "tokens without the special ones"), clouds["folds"]):
        if not folds:
            log(f"warning: no standard errors of the cloud statistics of {tokens} ({why}): stat_se is NaN there")
    if mlp["splits"] < 2:
        log(
            "warning: no standard error of the MLP's affine R² (fewer than two distinct held-out splits of "
            f"{n_sentences} sentences): mlp_r2_affine_se is NaN"
        )


def temperatures(
    model="minilm",
    sentences: list[str] | None = None,
    *,
    tokenizer=None,
    max_sentences: int | None = None,
    progress: bool = False,
    log=None,
) -> xr.Dataset:
    """The particle picture's parameters of a real model (theory: docs/theory/probes.md §5): per layer
    and head the effective inverse temperature β of the attention, its alignment with the token
    cosines and its regime under the particle flow; per layer the clustering of the model's own token
    clouds beside the particle flow at the layers' β.

    Args: as :func:`probe`.

    Returns:
        Dataset: ``beta``, ``beta_alignment``, ``beta_logit_std``, ``beta_flow_clusters``,
        ``beta_one_cluster`` (layer, attn_head); ``beta_cos_std``, ``beta_layer``,
        ``cluster_model_mean_cosine``, ``cluster_model_count``, ``cluster_flow_mean_cosine``,
        ``cluster_flow_count`` (layer); attributes: the model, family, flow settings.
    """
    from attnphys.progress import progress_bar

    t0 = time.perf_counter()
    log = log or (print if progress else (lambda *a: None))
    name, model, tokenizer = _resolve(model, tokenizer, log, progress)
    sentences = _texts(sentences, max_sentences)
    with progress_bar(2, "steps", enabled=progress) as advance:
        cap = capture(model, tokenizer, sentences)
        advance()
        rotary = cap.adapter.rotary(model)
        heads = _heads(model, cap)
        v, attrs = temperature_variables(cap, heads, rotary, log)
        advance()
    ds = xr.Dataset(
        {k: (dims, val, a) for k, (dims, val, a) in v.items()},
        coords={"layer": np.arange(cap.n_layers), "attn_head": np.arange(heads[0].n_heads)},
    )
    ds["attn_head"].attrs["kv_head"] = json.dumps(heads[0].kv_heads().tolist())
    ds.attrs.update(
        base_attrs(
            None,
            model=name,
            family=cap.adapter.family,
            causal=int(cap.adapter.causal),
            rotary=int(rotary is not None),
            n_sentences=len(sentences),
            n_tokens=int(cap.sentence.size),
            wall_time_s=round(time.perf_counter() - t0, 2),
            **attrs,
        )
    )
    return ds


def summary(ds: xr.Dataset) -> dict:
    """The headline numbers per claim (JSON-ready) (theory: docs/theory/probes.md §3)."""
    st = ds.stat.sel(tokens="all")
    pre = bool(ds.attrs["pre_ln"])

    def ratio(a, b, name):
        return (st.sel(stage=a, statistic=name) / st.sel(stage=b, statistic=name)).values

    norm_in = {"attn_norm": "input" if pre else "attn_add", "mlp_norm": "attn_add" if pre else "mlp_add"}
    out = {
        "model": ds.attrs["model"],
        "family": ds.attrs["family"],
        "tokens": ds.attrs["n_tokens"],
        "attention_residual_cov_trace_ratio": ratio("attn_add", "input", "cov_trace").tolist(),
        "attention_residual_knn_entropy_change": (
            st.sel(stage="attn_add", statistic="knn_entropy") - st.sel(stage="input", statistic="knn_entropy")
        ).values.tolist(),
        "norm_cov_trace_ratio": [float(r) for r in ratio("attn_norm", norm_in["attn_norm"], "cov_trace")],
        "norm_knn_entropy_change": (
            st.sel(stage="attn_norm", statistic="knn_entropy")
            - st.sel(stage=norm_in["attn_norm"], statistic="knn_entropy")
        ).values.tolist(),
    }
    best = ds.qk_similarity.sel(head="sum").max("lam")
    z = ((ds.qk_similarity - ds.qk_null_rotation_mean) / ds.qk_null_rotation_std).sel(head="sum").max("lam")
    out.update(
        qk_sum_best_similarity=best.values.tolist(),
        qk_sum_z_vs_rotations=z.values.tolist(),
        qk_sum_null_other_layer=ds.qk_null_other_layer.sel(head="sum").max("lam").values.tolist(),
        qk_sum_similarity_to_sigma=ds.qk_similarity_to_sigma.sel(head="sum").values.tolist(),
        mlp_r2_affine=ds.mlp_r2_affine.values.tolist(),
        mlp_r2_identity=ds.mlp_r2_identity.values.tolist(),
        mlp_r2_random_mlp=ds.mlp_r2_random_mlp.values.tolist(),
        grad_cosine_mean=ds.grad_cosine.mean("attn_head").values.tolist(),
        grad_cosine_null_mean=ds.grad_cosine_null.mean("attn_head").values.tolist(),
        swap_token_cosine=dict(zip(ds.norm_swap.values.tolist(), ds.swap_token_cosine.values.tolist())),
    )
    if "claim" in ds.coords:
        out["claims"] = {
            str(c): {
                "title": CLAIMS[str(c)].title if str(c) in CLAIMS else str(c),
                "depends_on_training": bool(ds.claim_training.sel(claim=c)),
                "supported_layers": np.flatnonzero(ds.claim_supported.sel(claim=c).values).tolist(),
                "comparisons": int(np.isfinite(ds.claim_p.sel(claim=c).values).sum()),
                "z": ds.claim_z.sel(claim=c).values.tolist(),
                "p": ds.claim_p.sel(claim=c).values.tolist(),
                "p_holm": ds.claim_p_holm.sel(claim=c).values.tolist(),
            }
            for c in ds.claim.values
        }
    if "beta" in ds:
        out["temperatures"] = {
            "beta": ds.beta.values.tolist(),
            "alignment": ds.beta_alignment.values.tolist(),
            "beta_layer_median": ds.beta_layer.values.tolist(),
            "one_cluster_heads": int(ds.beta_one_cluster.sum()),
            "heads": int(ds.beta.size),
            "flow_horizon": ds.attrs.get("flow_horizon"),
            "model_mean_cosine": ds.cluster_model_mean_cosine.values.tolist(),
            "flow_mean_cosine": ds.cluster_flow_mean_cosine.values.tolist(),
        }
    return out


def json_ready(x):
    """``x`` with every non-finite float as None (JSON ``null``): JSON has no NaN."""
    if isinstance(x, dict):
        return {k: json_ready(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_ready(v) for v in x]
    if isinstance(x, float) and not np.isfinite(x):
        return None
    return x


if not TYPE_CHECKING:  # the names of 0.2.0 that moved, with a deprecation warning
    __getattr__ = _deprecated.module_getattr(__name__)
