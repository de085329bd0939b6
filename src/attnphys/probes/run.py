"""``attnphys probe``: every experiment on one model → dataset, JSON summary, figures, report
(theory: docs/theory/probes.md §3)."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from attnphys import _deprecated
from attnphys.clouds.stats import LONG_NAMES as STAT_LONG_NAMES
from attnphys.clouds.stats import STATISTICS
from attnphys.errors import InputError
from attnphys.metadata import base_attrs
from attnphys.probes import metrics
from attnphys.probes.capture import MAX_LENGTH, Capture, builtin_corpus, capture
from attnphys.probes.claims import CLAIMS, Evidence, evaluate_claims
from attnphys.probes.particle import temperature_variables
from attnphys.probes.sinks import SINK_ATTENTION_MIN_SHARE, SINK_ATTENTION_RATIO, SINK_NORM_RATIO

LONG_NAMES = {
    "stat": "token-cloud statistic at a stage of a layer",
    "stat_se": "standard error of the statistic over sentence folds",
    "qk_similarity": "cosine similarity of sym(W_q^T W_k)/sqrt(d_h) with the regularized inverse covariance",
    "qk_null_rotation_mean": "mean similarity with randomly rotated targets (null)",
    "qk_null_rotation_std": "standard deviation of the similarity with randomly rotated targets (null)",
    "qk_null_other_layer": "mean similarity with the other layers' inverse covariances (null)",
    "qk_null_mismatched_head": "mean similarity of other layers' heads with this layer's target (null)",
    "qk_similarity_to_sigma": "cosine similarity of sym(W_q^T W_k) with the covariance itself",
    "mlp_r2_affine": "held-out R^2 of the best affine map from MLP input to output, mean over the splits",
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
    "claim_statistic": "the claim's statistic (effect size) in each layer",
    "claim_z": "z-score (or t) of the claim's statistic against its null",
    "claim_p": "p-value of the claim's test in each layer (NaN: not tested, see claim_reason)",
    "claim_df": "degrees of freedom of the claim's test in each layer (inf: exact null)",
    "claim_p_holm": "p-value adjusted by Holm's correction over the tested layers",
    "claim_supported": "1 where the claim is supported at family-wise level 0.05 (Holm over the tested layers, "
    "enough degrees of freedom, the claimed effect; for a claim about training, no control passing it there)",
    "claim_control_passes": "how many of the control models pass the claim in the layer (-1: no control run)",
    "claim_reason": "why the layer was not tested, or why a significant test does not support the claim",
    "claim_training": "1 for a claim that a randomly initialised model of the family does not satisfy",
    "claim_min_df": "fewest degrees of freedom of a test behind a verdict",
    "stat_duplicates": "tokens whose states repeat an earlier token's (sampled once)",
    "sink_massive": "1 where the token's residual-stream norm exceeds the threshold times the layer's median",
    "sink_norm_ratio": "median norm of the sink tokens over the median norm of the others (NaN: no massive "
    "token in the layer, or every token is)",
    "sink_trace_share": "share of the covariance trace of the attention input carried by the sink tokens",
    "sink_trace_share_residual": "share of the covariance trace of the residual stream entering the layer "
    "carried by the sink tokens",
    "sink_attention_flag": "1 where the token receives more than the threshold times its uniform share of its "
    "sentence's attention, and at least the minimum share",
    "sink_attention_ratio": "the token's share of its sentence's attention over its share under uniform attention",
    "attention_sink_share": "mean attention weight on the attention-sink tokens (over queries and heads)",
    "attention_sink_uniform": "the same under uniform attention over the keys each query sees",
    "attention_sink_trace_share": "share of the covariance trace of the attention input carried by the "
    "attention-sink tokens",
    "attention_sink_trace_share_residual": "share of the covariance trace of the residual stream carried by the "
    "attention-sink tokens",
    "token_attention_sink": "1 for an attention-sink position (far more than its uniform share of the "
    "attention in some layer)",
    "mlp_underdetermined": "1 where a split's affine fit has fewer training tokens than parameters per output (D + 1)",
    "mlp_train_tokens": "fewest training tokens of a held-out split's affine fit",
    "mlp_fit_reason": "why the affine fit is flagged (empty: determined)",
    "swap_reason": "why the swapped model's numbers are NaN (empty: finite)",
    "sink_attention_share": "mean attention weight on the sink tokens (over queries and heads)",
    "sink_attention_uniform": "the same under uniform attention over the keys each query sees",
    "token_sink": "1 for a sink position (massive norm in some layer)",
    "token_position": "position of the token in its sentence",
    "token_special": "1 for a special token of the tokenizer ([CLS], [SEP], BOS, EOS)",
    "token_sentence": "index of the token's sentence",
    "token_id": "the tokenizer's id of the token",
    "qk_best_other_layer": "highest similarity of this layer's form with another layer's inverse covariance",
    "qk_best_mismatched_head": "highest similarity of another layer's form with this layer's inverse covariance",
    "qk_specificity": "own similarity minus the larger of qk_best_other_layer and qk_best_mismatched_head",
    "qk_similarity_with_sinks": "qk_similarity with the covariance of all tokens, the sink positions included",
    "mlp_r2_affine_with_sinks": "mlp_r2_affine fitted on all tokens, the sink positions included",
}
"""CF ``long_name`` of every variable of a probe dataset (the temperature section's are in
:data:`attnphys.probes.particle.TEMPERATURE_LONG_NAMES`)."""

STEPS = ("capture", "cloud statistics", "W_qᵀW_k vs Σ⁻¹", "MLP linearity", "updates vs ∇ log Z",
         "swapped norms", "temperatures", "claims")  # fmt: skip


def resolve_model(model, tokenizer, log, progress):
    """(name, model, tokenizer) for a model name (loaded by :func:`attnphys.probes.models.load_model`) or a
    loaded model with its ``tokenizer``."""
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
    max_length: int = MAX_LENGTH,
    control: str | list[str] | tuple[str, ...] | None = None,
    seed: int = 0,
    keep: str | Path | None = None,
    progress: bool = False,
    log=None,
) -> xr.Dataset:
    """Run every experiment of the probes on a real model and test every claim (theory:
    docs/theory/probes.md §3–§6).

    Args:
        model: a short name (``minilm``, ``smollm2``), a local model folder, a hub name, or a loaded
            transformers model, base or with a head (then ``tokenizer`` is needed). sentences: the text, one
            sentence per item (default: the built-in corpus); ``max_sentences`` keeps the first N.
            max_tokens: tokens sampled for the cloud statistics. max_length: tokens kept per sentence
            (longer ones are cut, with a :class:`~attnphys.probes._warnings.TruncationWarning`; at most the
            model's positions). control: None, ``random`` / ``shuffled``
            (:data:`attnphys.probes.controls.CONTROLS`), or several of them (a list, or ``"random,shuffled"``):
            run the same probe on each control model and store it beside the trained one (every variable
            again as ``control_<name>`` for one control, ``control_<kind>_<name>`` for several;
            :func:`control_prefixes`); a layer where a control passes a claim about training is not counted
            for the trained model (``claim_control_passes``). seed: seed of the samples,
            nulls and control. keep: a folder where each finished step is kept as it completes; calling
            again with the same model (weights), sentences and settings resumes after the last kept step
            (a folder kept for other inputs has its steps removed first); the folder is removed when the
            probe finishes. progress: show a progress bar. log: called with a line per step (default:
            print when ``progress``).

    Returns:
        Dataset: the cloud statistics per (layer, stage, tokens, statistic), tokens ∈ ``all``,
        ``no_special``, ``no_sinks``; the sink positions per layer (``sink_*``); the W_qᵀW_k similarities
        per (layer, head, lam) with their nulls; the MLP fits per layer; the update–gradient cosines per
        (layer, attn_head[, grad_head]); the swapped normalizations; every claim's statistic, z, p-value,
        degrees of freedom, verdict and reason per (claim, layer), without the sinks (the headline) and
        with them (``claim_*_with_sinks``); the heads' signed temperatures per (layer, attn_head) and the
        clustering beside the particle flow per layer; with ``control``, the control's variables.
        Attributes: the model, its family, the attention implementation it was loaded with and the one the
        capture ran, and the run's settings.

    Raises:
        InputError: an unknown ``control``, a ``max_length`` below 2 or beyond the model's positions.
    """
    from attnphys.probes.controls import control_model

    controls = control_kinds(control)
    t0 = time.perf_counter()
    log = log or (print if progress else (lambda *a: None))
    name, model, tokenizer = resolve_model(model, tokenizer, log, progress)
    sentences = _texts(sentences, max_sentences)
    step_control = None if not controls else (controls[0] if len(controls) == 1 else list(controls))
    steps = _step_store(keep, name, model, sentences, max_tokens, max_length, step_control, seed)
    ds = _measure(model, tokenizer, sentences, max_tokens, max_length, seed, progress, log, t0, "", steps)
    prefixes = {kind: "control_" if len(controls) == 1 else f"control_{kind}_" for kind in controls}
    for kind, pre in prefixes.items():
        twin = control_model(model, kind, seed)
        ctl = _measure(
            twin, tokenizer, sentences, max_tokens, max_length, seed, progress, log, t0, f"{kind} control: ", steps
        )
        for k in list(ctl.data_vars):
            ds[f"{pre}{k}"] = ctl[k]
            ds[f"{pre}{k}"].attrs["long_name"] = f"{kind} control: " + str(ctl[k].attrs.get("long_name", k))
        ds.attrs[f"{pre}n_sinks"] = ctl.attrs["n_sinks"]
    _discount_controlled(ds, prefixes)
    ds.attrs.update(
        base_attrs(
            None,
            model=name,
            control=",".join(controls) or "none",
            controls=json.dumps(list(controls)),
            seed=seed,
            wall_time_s=round(time.perf_counter() - t0, 2),
        )
    )
    steps.remove()
    return ds


def control_kinds(control) -> tuple[str, ...]:
    """The control kinds of a ``control`` argument: None → none; ``"random"``, ``"random,shuffled"`` or a
    list of names → those, in order, each once (theory: docs/theory/probes.md §4.2).

    Raises:
        InputError: a name not in :data:`attnphys.probes.controls.CONTROLS` (field ``control``).
    """
    from attnphys.probes.controls import CONTROLS

    if control is None:
        return ()
    names = control.split(",") if isinstance(control, str) else list(control)
    out: list[str] = []
    for c in names:
        c = c.strip() if isinstance(c, str) else c
        if c not in CONTROLS:
            raise InputError(f"unknown control {c!r}; choose from {', '.join(CONTROLS)}", "control")
        if c not in out:
            out.append(c)
    return tuple(out)


def control_prefixes(ds: xr.Dataset) -> dict[str, str]:
    """{control kind: prefix of its variables} of a probe dataset: ``control_`` for a single control,
    ``control_<kind>_`` for several; empty without controls (theory: docs/theory/probes.md §4.2)."""
    kinds = json.loads(ds.attrs.get("controls", "[]") or "[]")
    if not kinds and str(ds.attrs.get("control", "none")) not in ("none", "") and "control_claim_supported" in ds:
        kinds = [str(ds.attrs["control"])]  # a store written before several controls could run
    return {k: "control_" if len(kinds) == 1 else f"control_{k}_" for k in kinds}


def _discount_controlled(ds: xr.Dataset, prefixes: dict[str, str]) -> None:
    """A layer where any control passes a claim about training is not counted for the trained model: its
    ``claim_supported`` is 0 there, its reason names the controls; ``claim_control_passes`` (claim, layer)
    counts the controls that pass (theory: docs/theory/probes.md §4.2). The same for the verdicts with the
    sinks. Without controls the variables say that none was run (−1)."""
    training = ds.claim_training.values.astype(bool)
    for suffix in ("", "_with_sinks"):
        sup = ds[f"claim_supported{suffix}"].values.astype(bool)
        if not prefixes:
            ds[f"claim_control_passes{suffix}"] = (("claim", "layer"), np.full(sup.shape, -1, np.int8))
            continue
        passes = np.zeros(sup.shape, np.int8)
        who = np.full(sup.shape, "", dtype=object)
        for kind, pre in prefixes.items():
            ctl = ds[f"{pre}claim_supported{suffix}"].values.astype(bool)
            passes += ctl
            who[ctl] = np.where(who[ctl] == "", kind, who[ctl] + " and " + kind)
        drop = sup & (passes > 0) & training[:, None]
        reason = ds[f"claim_reason{suffix}"].values.astype(object)
        for i, layer in zip(*np.nonzero(drop)):
            reason[i, layer] = (
                f"not counted: the {who[i, layer]} control{'s pass' if passes[i, layer] > 1 else ' passes'} this "
                "claim about training in this layer too"
            )
        ds[f"claim_supported{suffix}"] = (("claim", "layer"), (sup & ~drop).astype(np.int8))
        ds[f"claim_reason{suffix}"] = (("claim", "layer"), reason.astype(str))
        ds[f"claim_control_passes{suffix}"] = (("claim", "layer"), passes)
    for suffix in ("", "_with_sinks"):
        for k in ("claim_supported", "claim_reason", "claim_control_passes"):
            text = LONG_NAMES[k] + (", the sink positions included" if suffix else "")
            ds[f"{k}{suffix}"].attrs["long_name"] = text


def _step_store(keep, name, model, sentences, max_tokens, max_length, control, seed):
    """Where the finished steps are kept (:class:`~attnphys.probes._checkpoint.StepStore`), keyed by all
    the probe's results depend on; nothing kept without ``keep``."""
    from attnphys.probes._checkpoint import NoSteps, StepStore, model_digest

    if keep is None:
        return NoSteps()
    import torch
    import transformers

    from attnphys._version import __version__

    inputs = {
        "model": name,
        "weights_sha256": model_digest(model),
        "sentences_sha256": hashlib.sha256(json.dumps(list(sentences)).encode()).hexdigest(),
        "n_sentences": len(sentences),
        "max_tokens": max_tokens,
        "max_length": max_length,
        "control": control,
        "seed": seed,
        "versions": [__version__, torch.__version__, transformers.__version__],
    }
    return StepStore(keep, inputs)


def _measure(model, tokenizer, sentences, max_tokens, max_length, seed, progress, log, t0, prefix, kept) -> xr.Dataset:
    """Every experiment and claim of :func:`probe` on one model (trained or control); each finished step
    through ``kept`` (:class:`~attnphys.probes._checkpoint.StepStore`): a kept step is not computed again."""
    from attnphys.probes.sinks import find_sinks
    from attnphys.progress import progress_bar

    with progress_bar(len(STEPS), f"{prefix}probe steps", enabled=progress) as advance:

        def step(what: str) -> None:
            log(f"{prefix}{what} ({time.perf_counter() - t0:.1f} s)")
            advance()

        cap = capture(model, tokenizer, sentences, max_length=max_length)
        ad = cap.adapter
        heads = _heads(model, cap)
        rotary = ad.rotary(model)
        sinks = find_sinks(cap)
        step(
            f"captured {cap.sentence.size} tokens of {len(sentences)} sentences, {cap.n_layers} layers; "
            f"{int(cap.sinks.sum())} sink positions"
        )
        clouds = kept.step(prefix + "clouds", lambda: metrics.cloud_stages(cap, max_tokens=max_tokens, seed=seed))
        step("(a) cloud statistics per layer and stage")
        keep = ~cap.sinks
        any_sinks = bool(cap.sinks.any())

        def qk_pair():
            qk = metrics.qk_vs_inverse_covariance(cap, heads, rotary=rotary, keep=keep)
            return qk, (metrics.qk_vs_inverse_covariance(cap, heads, rotary=rotary) if any_sinks else qk)

        qk, qk_all = kept.step(prefix + "qk", qk_pair)
        step("(b) W_qᵀW_k vs Σ⁻¹")

        def mlp_pair():
            mlps = [ad.mlp(model, layer) for layer in ad.layers(model)]
            init_std = getattr(model.config, "initializer_range", 0.02)
            mlp = metrics.mlp_linearity(cap, init_std=init_std, seed=seed, mlps=mlps, keep=keep)
            return mlp, (metrics.mlp_linearity(cap, init_std=init_std, seed=seed, mlps=mlps) if any_sinks else mlp)

        mlp, mlp_all = kept.step(prefix + "mlp", mlp_pair)
        step("(c) MLP linearity")
        _warn_missing_errors(clouds, mlp, len(sentences), log)
        _warn_underdetermined(mlp, prefix)
        grad = kept.step(
            prefix + "grad",
            lambda: metrics.update_vs_gradient(
                cap, heads, rotary=rotary, keep={"no_sinks": keep, "all": np.ones_like(keep)}
            ),
        )
        grad_all = dict(grad, matrix=grad["matrices"]["all"])
        step("(d) head updates vs ∇ log Z")
        swap = kept.step(
            prefix + "swap", lambda: metrics.swap_normalization(model, tokenizer, sentences, ad, max_length=max_length)
        )
        step("(e) swapped normalizations")
        temp_vars, temp_attrs = kept.step(prefix + "temperatures", lambda: temperature_variables(cap, heads, rotary))
        step("temperatures and particle flows")
        claims, claims_all = kept.step(
            prefix + "claims",
            lambda: (
                evaluate_claims(Evidence(cap, clouds, qk, mlp, grad, "no_sinks", keep, seed)),
                evaluate_claims(Evidence(cap, clouds, qk_all, mlp_all, grad_all, "all", None, seed)),
            ),
        )
        step("claims tested")

    H = heads[0].n_heads
    ds = xr.Dataset(
        {
            "stat": (("layer", "stage", "tokens", "statistic"), clouds["values"]),
            "stat_se": (("layer", "stage", "tokens", "statistic"), clouds["se"]),
            "stat_duplicates": (("layer",), clouds["duplicates"]),
            "sink_massive": (("layer", "token"), sinks["massive"].astype(np.int8)),
            "sink_norm_ratio": (("layer",), sinks["norm_ratio"]),
            "sink_trace_share": (("layer",), sinks["trace_share"]),
            "sink_trace_share_residual": (("layer",), sinks["trace_share_residual"]),
            "sink_attention_share": (("layer",), sinks["attention_share"]),
            "sink_attention_uniform": (("layer",), sinks["attention_uniform"]),
            "sink_attention_flag": (("layer", "token"), sinks["attention_flag"].astype(np.int8)),
            "sink_attention_ratio": (("layer", "token"), sinks["attention_ratio"].astype(np.float32)),
            "attention_sink_share": (("layer",), sinks["attention_sink_share"]),
            "attention_sink_uniform": (("layer",), sinks["attention_sink_uniform"]),
            "attention_sink_trace_share": (("layer",), sinks["attention_sink_trace_share"]),
            "attention_sink_trace_share_residual": (("layer",), sinks["attention_sink_trace_share_residual"]),
            "token_sink": (("token",), cap.sinks.astype(np.int8)),
            "token_attention_sink": (("token",), sinks["attention_sink"].astype(np.int8)),
            "token_position": (("token",), cap.position),
            "token_special": (("token",), cap.special.astype(np.int8)),
            "token_sentence": (("token",), cap.sentence),
            "token_id": (("token",), cap.token_ids if cap.token_ids is not None else np.full(cap.sentence.size, -1)),
            "qk_similarity": (("layer", "head", "lam"), qk["similarity"]),
            "qk_null_rotation_mean": (("layer", "head", "lam"), qk["null_rotation_mean"]),
            "qk_null_rotation_std": (("layer", "head", "lam"), qk["null_rotation_std"]),
            "qk_null_other_layer": (("layer", "head", "lam"), qk["null_other_layer"]),
            "qk_null_mismatched_head": (("layer", "head", "lam"), qk["null_mismatched_head"]),
            "qk_best_other_layer": (("layer", "head", "lam"), qk["best_other_layer"]),
            "qk_best_mismatched_head": (("layer", "head", "lam"), qk["best_mismatched_head"]),
            "qk_specificity": (("layer", "head", "lam"), qk["specificity"]),
            "qk_similarity_to_sigma": (("layer", "head"), qk["similarity_to_sigma"]),
            "qk_similarity_offset_average": (("layer", "head", "lam"), qk["similarity_offset_average"]),
            "qk_similarity_with_sinks": (("layer", "head", "lam"), qk_all["similarity"]),
            "mlp_r2_affine": (("layer",), mlp["r2_affine"]),
            "mlp_r2_affine_se": (("layer",), mlp["r2_affine_se"]),
            "mlp_r2_splits": (("layer", "split"), mlp["r2_splits"]),
            "mlp_r2_identity": (("layer",), mlp["r2_identity"]),
            "mlp_rel_update": (("layer",), mlp["rel_update"]),
            "mlp_r2_random_mlp": (("layer",), mlp["r2_random_mlp"]),
            "mlp_r2_affine_with_sinks": (("layer",), mlp_all["r2_affine"]),
            "mlp_underdetermined": (("layer",), np.asarray(mlp["underdetermined"], np.int8)),
            "mlp_train_tokens": (("layer",), np.asarray(mlp["train_tokens"], np.int64)),
            "mlp_fit_reason": (("layer",), np.asarray(mlp["fit_reason"]).astype(str)),
            "grad_cosine": (("layer", "attn_head"), grad["cos_update_gradient"]),
            "grad_cosine_null": (("layer", "attn_head"), grad["cos_null_other_heads"]),
            "grad_cosine_matrix": (("layer", "attn_head", "grad_head"), grad["matrix"]),
            "swap_token_cosine": (("norm_swap",), swap["token_cosine"]),
            "swap_relative_change": (("norm_swap",), swap["relative_change"]),
            "swap_sentence_cosine": (("norm_swap",), swap["sentence_cosine"]),
            "swap_per_layer_change": (("norm_swap", "hidden_state"), swap["per_layer_relative_change"]),
            "swap_reason": (("norm_swap",), np.asarray(swap["reason"]).astype(str)),
            "claim_training": (("claim",), np.array([c.training for c in CLAIMS.values()], np.int8)),
            "claim_min_df": (("claim",), np.array([c.min_df for c in CLAIMS.values()], float)),
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
            "token": np.arange(cap.sentence.size),
        },
    )
    for suffix, res in (("", claims), ("_with_sinks", claims_all)):
        for k in ("statistic", "z", "p", "df", "p_holm"):
            ds[f"claim_{k}{suffix}"] = (("claim", "layer"), res[k])
        ds[f"claim_supported{suffix}"] = (("claim", "layer"), res["supported"].astype(np.int8))
        ds[f"claim_reason{suffix}"] = (("claim", "layer"), res["reason"].astype(str))
    for k, (dims, val, attrs) in temp_vars.items():
        ds[k] = (dims, val, attrs)
    for k, text in LONG_NAMES.items():
        if k in ds:
            ds[k].attrs["long_name"] = text
        if f"{k}_with_sinks" in ds:
            ds[f"{k}_with_sinks"].attrs["long_name"] = text + ", the sink positions included"
    ds["stat"].attrs["statistics"] = "; ".join(f"{k}: {v}" for k, v in STAT_LONG_NAMES.items())
    ds["attn_head"].attrs["kv_head"] = json.dumps(heads[0].kv_heads().tolist())
    ds.attrs.update(
        family=ad.family,
        pre_ln=int(ad.pre_ln),
        norm=ad.norm,
        causal=int(ad.causal),
        rotary=int(rotary is not None),
        sliding_window=json.dumps(cap.windows),
        n_heads=H,
        n_kv_heads=int(len(set(heads[0].kv_heads().tolist()))),
        n_sentences=len(sentences),
        n_tokens=int(cap.sentence.size),
        n_special=int(cap.special.sum()),
        n_sinks=int(cap.sinks.sum()),
        sink_norm_ratio_threshold=SINK_NORM_RATIO,
        n_attention_sinks=int(sinks["attention_sink"].sum()),
        sink_attention_ratio_threshold=SINK_ATTENTION_RATIO,
        sink_attention_min_share=SINK_ATTENTION_MIN_SHARE,
        attn_implementation=cap.attn_implementation or "unknown",
        attn_captured=cap.attn_captured or "unknown",
        mlp_parameters=int(mlp["parameters"]),
        max_length=int(max_length),
        n_truncated=int(cap.truncated),
        stats_tokens=clouds["n_tokens"][2],
        stats_tokens_all=clouds["n_tokens"][0],
        stat_se_folds_all=clouds["folds"][0],
        stat_se_folds_no_special=clouds["folds"][1],
        stat_se_folds_no_sinks=clouds["folds"][2],
        mlp_se_splits=mlp["splits"],
        mlp_test_fraction=mlp["test_fraction"],
        swap_not_run=json.dumps(swap["not_run"]),
        swap_sentences=min(len(sentences), metrics.SWAP_SENTENCES),
        **temp_attrs,
    )
    return ds


def _warn_underdetermined(mlp: dict, prefix: str = "") -> None:
    """An :class:`~attnphys.probes._warnings.UnderdeterminedFitWarning` where the MLP's affine fits have
    fewer training tokens than parameters per output."""
    if not np.any(mlp["underdetermined"]):
        return
    import warnings

    from attnphys.errors import find_stack_level
    from attnphys.probes._warnings import UnderdeterminedFitWarning

    layers = ", ".join(str(i) for i in np.flatnonzero(mlp["underdetermined"]))
    warnings.warn(
        f"{prefix}the MLP's affine fits are underdetermined in layers {layers}: a split trains on "
        f"{int(np.min(mlp['train_tokens']))} tokens for {mlp['parameters']} parameters per output; their "
        "held-out R² is flagged (mlp_underdetermined) and the claim 'the MLP is close to an affine map' is not "
        "tested there; give more sentences",
        UnderdeterminedFitWarning,
        stacklevel=find_stack_level(),
    )


def _warn_missing_errors(clouds, mlp, n_sentences, log):
    why = (
        f"fewer than {metrics.FOLDS} sentences"
        if n_sentences < metrics.FOLDS
        else f"a sentence fold has fewer than {metrics.MIN_FOLD_TOKENS} sampled tokens"
    )
    names = ("all tokens", "tokens without the special ones", "tokens without the sinks")
    for tokens, folds in zip(names, clouds["folds"]):
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
        Dataset: ``beta`` (signed), ``beta_scale``, ``beta_spread``, ``beta_alignment``, ``beta_logit_std``,
        ``beta_particle``, ``beta_flow_clusters``, ``beta_one_cluster`` (layer, attn_head); ``beta_folds``
        (temperature_fold, layer, attn_head); ``beta_cos_std``, ``beta_layer``, ``layer_time``,
        ``cluster_model_mean_cosine``, ``cluster_model_count``, ``cluster_flow_mean_cosine``,
        ``cluster_flow_count`` (layer); attributes: the model, family, flow settings.
    """
    from attnphys.progress import progress_bar

    t0 = time.perf_counter()
    log = log or (print if progress else (lambda *a: None))
    name, model, tokenizer = resolve_model(model, tokenizer, log, progress)
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
            n_sinks=int(cap.sinks.sum()),
            attn_implementation=cap.attn_implementation or "unknown",
            attn_captured=cap.attn_captured or "unknown",
            wall_time_s=round(time.perf_counter() - t0, 2),
            **attrs,
        )
    )
    return ds


def summary(ds: xr.Dataset) -> dict:
    """The headline numbers per claim (JSON-ready), without the sink positions where the store has that
    token set (theory: docs/theory/probes.md §3)."""
    headline = "no_sinks" if "no_sinks" in ds.tokens.values else "all"
    st = ds.stat.sel(tokens=headline)
    pre = bool(ds.attrs["pre_ln"])

    def ratio(a, b, name):
        return (st.sel(stage=a, statistic=name) / st.sel(stage=b, statistic=name)).values

    norm_in = {"attn_norm": "input" if pre else "attn_add", "mlp_norm": "attn_add" if pre else "mlp_add"}
    out = {
        "model": ds.attrs["model"],
        "family": ds.attrs["family"],
        "tokens": ds.attrs["n_tokens"],
        "sentences": int(ds.attrs.get("n_sentences", 0)),
        "max_length": int(ds.attrs.get("max_length", 0)),
        "truncated_sentences": int(ds.attrs.get("n_truncated", 0)),
        "attn_implementation": str(ds.attrs.get("attn_implementation", "unknown")),
        "attn_captured": str(ds.attrs.get("attn_captured", "unknown")),
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
    zz = ((ds.qk_similarity - ds.qk_null_rotation_mean) / ds.qk_null_rotation_std).sel(head="sum").values
    z = xr.DataArray(  # the z of largest magnitude over λ, with its sign (two-sided)
        np.take_along_axis(zz, np.nanargmax(np.nan_to_num(np.abs(zz), nan=-1.0), axis=1)[:, None], axis=1)[:, 0]
    )
    out.update(
        qk_sum_best_similarity=best.values.tolist(),
        qk_sum_z_vs_rotations=z.values.tolist(),
        qk_sum_null_other_layer=ds.qk_null_other_layer.sel(head="sum").max("lam").values.tolist(),
        qk_sum_similarity_to_sigma=ds.qk_similarity_to_sigma.sel(head="sum").values.tolist(),
        mlp_r2_affine=ds.mlp_r2_affine.values.tolist(),
        mlp_r2_identity=ds.mlp_r2_identity.values.tolist(),
        mlp_r2_random_mlp=ds.mlp_r2_random_mlp.values.tolist(),
        **(
            {
                "mlp_underdetermined_layers": np.flatnonzero(ds.mlp_underdetermined.values).tolist(),
                "mlp_train_tokens": int(ds.mlp_train_tokens.values.min()),
                "mlp_parameters_per_output": int(ds.attrs.get("mlp_parameters", 0)),
            }
            if "mlp_underdetermined" in ds
            else {}
        ),
        grad_cosine_mean=ds.grad_cosine.mean("attn_head").values.tolist(),
        grad_cosine_null_mean=ds.grad_cosine_null.mean("attn_head").values.tolist(),
        swap_token_cosine=dict(zip(ds.norm_swap.values.tolist(), ds.swap_token_cosine.values.tolist())),
    )
    if "swap_reason" in ds:
        out["swap_nan_because"] = {str(k): str(r) for k, r in zip(ds.norm_swap.values, ds.swap_reason.values) if str(r)}
    prefixes = control_prefixes(ds)
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
                **(
                    {
                        "df": ds.claim_df.sel(claim=c).values.tolist(),
                        "not_tested_because": {
                            str(i): str(r) for i, r in enumerate(ds.claim_reason.sel(claim=c).values) if str(r)
                        },
                        "supported_layers_with_sinks": np.flatnonzero(
                            ds.claim_supported_with_sinks.sel(claim=c).values
                        ).tolist(),
                    }
                    if "claim_df" in ds
                    else {}
                ),
                **(
                    {
                        "control_supported_layers": np.flatnonzero(
                            ds.control_claim_supported.sel(claim=c).values
                        ).tolist()
                    }
                    if len(prefixes) == 1 and "control_claim_supported" in ds
                    else {}
                ),
                **(
                    {
                        "not_counted_control_passes": np.flatnonzero(
                            ds.claim_control_passes.sel(claim=c).values > 0
                        ).tolist()
                        if bool(ds.claim_training.sel(claim=c))
                        else [],
                        "controls": {
                            kind: {
                                "supported_layers": np.flatnonzero(
                                    ds[f"{pre}claim_supported"].sel(claim=c).values
                                ).tolist(),
                                **{
                                    k: ds[f"{pre}claim_{k}"].sel(claim=c).values.tolist()
                                    for k in ("statistic", "z", "p", "df")
                                    if f"{pre}claim_{k}" in ds
                                },
                            }
                            for kind, pre in prefixes.items()
                        },
                    }
                    if prefixes and "claim_control_passes" in ds
                    else {}
                ),
            }
            for c in ds.claim.values
        }
    out["tokens_headline"] = headline
    if "token_sink" in ds:
        out["sinks"] = {
            "tokens": int(ds.token_sink.sum()),
            "positions": sorted({int(p) for p in ds.token_position.values[ds.token_sink.values > 0]}),
            "norm_ratio": ds.sink_norm_ratio.values.tolist(),
            "trace_share": ds.sink_trace_share.values.tolist(),
            "attention_share": ds.sink_attention_share.values.tolist(),
            **(
                {
                    "trace_share_residual": ds.sink_trace_share_residual.values.tolist(),
                    "attention_sinks": {
                        "tokens": int(ds.token_attention_sink.sum()),
                        "positions": sorted(
                            {int(p) for p in ds.token_position.values[ds.token_attention_sink.values > 0]}
                        ),
                        "ratio_threshold": float(ds.attrs.get("sink_attention_ratio_threshold", SINK_ATTENTION_RATIO)),
                        "min_share": float(ds.attrs.get("sink_attention_min_share", SINK_ATTENTION_MIN_SHARE)),
                        "attention_share": ds.attention_sink_share.values.tolist(),
                        "attention_uniform": ds.attention_sink_uniform.values.tolist(),
                        "trace_share": ds.attention_sink_trace_share.values.tolist(),
                        "trace_share_residual": ds.attention_sink_trace_share_residual.values.tolist(),
                    },
                }
                if "token_attention_sink" in ds
                else {}
            ),
        }
    if "beta" in ds:
        out["temperatures"] = {
            "beta": ds.beta.values.tolist(),
            "alignment": ds.beta_alignment.values.tolist(),
            "beta_layer_median": ds.beta_layer.values.tolist(),
            "one_cluster_heads": int(ds.beta_one_cluster.sum()),
            **({"particle_heads": int(ds.beta_particle.sum())} if "beta_particle" in ds else {}),
            **({"beta_spread": ds.beta_spread.values.tolist()} if "beta_spread" in ds else {}),
            **({"control_beta": ds.control_beta.values.tolist()} if "control_beta" in ds else {}),
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
