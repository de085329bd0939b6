"""``attnphys probe``: every experiment on one model → dataset, JSON summary, figures, report
(theory: docs/theory/probes.md §3)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import xarray as xr

from attnphys.clouds.stats import LONG_NAMES as STAT_LONG_NAMES
from attnphys.clouds.stats import STATISTICS
from attnphys.metadata import base_attrs
from attnphys.probes import metrics
from attnphys.probes.adapters import load_model
from attnphys.probes.capture import builtin_corpus, capture

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
}
"""CF ``long_name`` of every variable of a probe dataset."""


def probe(
    model_name: str = "minilm",
    sentences: list[str] | None = None,
    *,
    max_sentences: int | None = None,
    max_tokens: int = 1024,
    seed: int = 0,
    model=None,
    tokenizer=None,
    log=print,
) -> xr.Dataset:
    """Run all five experiments; returns one Dataset with every number (see :mod:`attnphys.probes.metrics`)
    (theory: docs/theory/probes.md §3)."""
    t0 = time.perf_counter()
    if model is None:
        model, tokenizer = load_model(model_name)
    sentences = builtin_corpus() if sentences is None else sentences
    if max_sentences:
        sentences = sentences[:max_sentences]
    cap = capture(model, tokenizer, sentences)
    ad = cap.adapter
    layers = ad.layers(model)
    heads = [ad.heads(model, layer) for layer in layers]
    log(
        f"captured {cap.sentence.size} tokens of {len(sentences)} sentences, {cap.n_layers} layers ({time.perf_counter() - t0:.1f} s)"
    )
    clouds = metrics.cloud_stages(cap, max_tokens=max_tokens, seed=seed)
    log(f"(a) cloud statistics per layer and stage ({time.perf_counter() - t0:.1f} s)")
    qk = metrics.qk_vs_inverse_covariance(cap, heads, seed=seed)
    log(f"(b) W_qᵀW_k vs Σ⁻¹ ({time.perf_counter() - t0:.1f} s)")
    mlp = metrics.mlp_linearity(cap, init_std=getattr(model.config, "initializer_range", 0.02), seed=seed)
    log(f"(c) MLP linearity ({time.perf_counter() - t0:.1f} s)")
    why = (
        f"fewer than {metrics.FOLDS} sentences"
        if len(sentences) < metrics.FOLDS
        else f"a sentence fold has fewer than {metrics.MIN_FOLD_TOKENS} sampled tokens"
    )
    for tokens, folds in zip(("all tokens", "tokens without the special ones"), clouds["folds"]):
        if not folds:
            log(f"warning: no standard errors of the cloud statistics of {tokens} ({why}): stat_se is NaN there")
    if mlp["splits"] < 2:
        log(
            "warning: no standard error of the MLP's affine R² (fewer than two distinct held-out splits of "
            f"{len(sentences)} sentences): mlp_r2_affine_se is NaN"
        )
    grad = metrics.update_vs_gradient(cap, heads)
    log(f"(d) head updates vs ∇ log Z ({time.perf_counter() - t0:.1f} s)")
    swap = metrics.swap_normalization(model, tokenizer, sentences, ad)
    log(f"(e) swapped normalizations ({time.perf_counter() - t0:.1f} s)")

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
            "mlp_r2_affine": (("layer",), mlp["r2_affine"]),
            "mlp_r2_affine_se": (("layer",), mlp["r2_affine_se"]),
            "mlp_r2_identity": (("layer",), mlp["r2_identity"]),
            "mlp_rel_update": (("layer",), mlp["rel_update"]),
            "mlp_r2_random_mlp": (("layer",), mlp["r2_random_mlp"]),
            "grad_cosine": (("layer", "attn_head"), grad["cos_update_gradient"]),
            "grad_cosine_null": (("layer", "attn_head"), grad["cos_null_other_heads"]),
            "swap_token_cosine": (("norm_swap",), swap["token_cosine"]),
            "swap_relative_change": (("norm_swap",), swap["relative_change"]),
            "swap_sentence_cosine": (("norm_swap",), swap["sentence_cosine"]),
            "swap_per_layer_change": (("norm_swap", "hidden_state"), swap["per_layer_relative_change"]),
        },
        coords={
            "layer": np.arange(cap.n_layers),
            "stage": clouds["stages"],
            "tokens": clouds["tokens"],
            "statistic": list(STATISTICS),
            "head": [f"h{h}" for h in range(H)] + ["sum"],
            "lam": qk["lams"],
            "attn_head": np.arange(H),
            "norm_swap": swap["kinds"],
            "hidden_state": np.arange(swap["per_layer_relative_change"].shape[1]),
        },
    )
    for name, text in LONG_NAMES.items():
        ds[name].attrs["long_name"] = text
    ds["stat"].attrs["statistics"] = "; ".join(f"{k}: {v}" for k, v in STAT_LONG_NAMES.items())
    ds.attrs.update(
        base_attrs(
            None,
            model=model_name,
            family=ad.family,
            pre_ln=int(ad.pre_ln),
            norm=ad.norm,
            n_sentences=len(sentences),
            n_tokens=int(cap.sentence.size),
            n_special=int(cap.special.sum()),
            stats_tokens=clouds["n_tokens"],
            stat_se_folds_all=clouds["folds"][0],
            stat_se_folds_no_special=clouds["folds"][1],
            mlp_se_splits=mlp["splits"],
            seed=seed,
            wall_time_s=round(time.perf_counter() - t0, 2),
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
    return out


def _json_ready(x):
    """``x`` with every non-finite float as None (JSON ``null``): JSON has no NaN."""
    if isinstance(x, dict):
        return {k: _json_ready(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_ready(v) for v in x]
    if isinstance(x, float) and not np.isfinite(x):
        return None
    return x


def write_outputs(ds: xr.Dataset, out: str | Path) -> list[Path]:
    """Dataset (``probe.zarr``), ``summary.json``, figures and ``report.md`` into the folder ``out``
    (created; files in it are replaced). The ``probe`` command calls it on a hidden folder that is moved
    into place when complete."""
    from attnphys.io import write_dataset
    from attnphys.plots import probe_figures, save_figure
    from attnphys.probes.report import report

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    import shutil

    shutil.rmtree(out / "probe.zarr", ignore_errors=True)
    write_dataset(ds, out / "probe.zarr")
    paths = [out / "probe.zarr"]
    s = summary(ds)
    (out / "summary.json").write_text(json.dumps(_json_ready(s), indent=2, allow_nan=False))
    paths.append(out / "summary.json")
    figs = [save_figure(f, out / "figures" / f"{name}.png") for name, f in probe_figures(ds).items()]
    paths += figs
    (out / "report.md").write_text(report(ds, s, [p.relative_to(out) for p in figs]))
    paths.append(out / "report.md")
    return paths
