"""TransformerLens-style names on the named activation cache (theory: docs/theory/adapters.md §4).

:func:`hook` reads one name of an :func:`~attnphys.probes.cache.activation_cache` Dataset as a labelled
DataArray, :func:`cache_names` lists every name a Dataset answers with the variable and selection it
reads. The names follow TransformerLens (``blocks.{l}.attn.hook_pattern`` …); the arrays keep the cache's
own dimensions (``head``, ``token``, ``sentence``, ``query``, ``key``), not TransformerLens' batch-first
layout, and the keys and values of grouped-query models are given per query head.

Post-norm models (BERT): the residual stream between the two sublayers is the first norm's output, so
``hook_resid_mid`` reads ``attn_norm`` (LN(resid_pre + attn_out), what the MLP reads and what its residual
adds to) and ``hook_resid_post`` reads ``mlp_norm`` (the layer output); the sums before the norms are
``blocks.{l}.hook_attn_add`` and ``blocks.{l}.hook_mlp_add``. Pre-norm models: ``hook_resid_mid`` is
``attn_add`` = resid_pre + attn_out and ``hook_resid_post`` is ``mlp_add``.
"""

from __future__ import annotations

import re

import xarray as xr

from attnphys.errors import InputError

PRE_LN_RESID = {"hook_resid_pre": "input", "hook_resid_mid": "attn_add", "hook_resid_post": "mlp_add"}
POST_LN_RESID = {"hook_resid_pre": "input", "hook_resid_mid": "attn_norm", "hook_resid_post": "mlp_norm"}
"""The stage each residual-stream name reads, by norm placement (docs/theory/adapters.md §4)."""

STAGE_NAMES = {
    "hook_attn_out": "attn_out",
    "hook_mlp_out": "mlp_out",
    "hook_attn_add": "attn_add",
    "hook_mlp_add": "mlp_add",
    "ln1.hook_normalized": "attn_norm",
    "ln2.hook_normalized": "mlp_norm",
}
"""Names under ``blocks.{l}.`` that read one stage of ``resid`` whatever the placement."""

VARIABLE_NAMES = {
    "attn.hook_q": "q",
    "attn.hook_k": "k",
    "attn.hook_v": "v",
    "attn.hook_rot_q": "q_rot",
    "attn.hook_rot_k": "k_rot",
    "attn.hook_z": "z",
    "attn.hook_result": "head_out",
    "attn.hook_pattern": "pattern",
    "attn.hook_attn_scores": "scores",
    "mlp.hook_post": "mlp_hidden",
}
"""Names under ``blocks.{l}.`` that read one layer of a cache variable."""

_NAME = re.compile(r"^blocks\.(\d+)\.(.+)$")


def _check(ds) -> tuple[int, bool]:
    if not isinstance(ds, xr.Dataset):
        raise InputError(f"expected the Dataset of activation_cache, not a {type(ds).__name__}", "ds")
    missing = [v for v in ("resid", *VARIABLE_NAMES.values()) if v not in ds.variables]
    if missing or "stage" not in ds.coords:
        raise InputError(
            f"not an activation cache: no {', '.join(missing) or 'stage coordinate'} "
            "(give the Dataset of attnphys.probes.activation_cache)",
            "ds",
        )
    stages = [str(s) for s in ds["stage"].values]
    return int(ds.sizes["layer"]), stages.index("attn_norm") < stages.index("attn_out")


def _suffixes(pre_ln: bool) -> dict[str, tuple[str, str | None]]:
    """name under ``blocks.{l}.`` → (variable, stage or None)."""
    resid = PRE_LN_RESID if pre_ln else POST_LN_RESID
    out: dict[str, tuple[str, str | None]] = {k: ("resid", v) for k, v in resid.items()}
    out.update({k: ("resid", v) for k, v in STAGE_NAMES.items()})
    out.update({k: (v, None) for k, v in VARIABLE_NAMES.items()})
    return out


def cache_names(ds: xr.Dataset) -> dict[str, str]:
    """Every TransformerLens-style name the activation cache ``ds`` answers, with what it reads: e.g.
    ``blocks.0.hook_resid_mid`` → ``resid[layer=0, stage='attn_add']`` (pre-norm) or
    ``resid[layer=0, stage='attn_norm']`` (post-norm) (the table of docs/theory/adapters.md §4).

    Args:
        ds: a Dataset of :func:`~attnphys.probes.cache.activation_cache` (L layers).

    Returns:
        dict: name → selection, for the 3 residual names, 6 stage names and 10 per-layer variables of
        every layer (19 L names), in layer order.

    Raises:
        InputError: ``ds`` is not an activation cache (field ``ds``).
    """
    L, pre_ln = _check(ds)
    out = {}
    for layer in range(L):
        for suffix, (var, stage) in _suffixes(pre_ln).items():
            sel = f"layer={layer}" + (f", stage={stage!r}" if stage is not None else "")
            out[f"blocks.{layer}.{suffix}"] = f"{var}[{sel}]"
    return out


def hook(ds: xr.Dataset, name: str) -> xr.DataArray:
    """The array of the activation cache ``ds`` under the TransformerLens-style ``name``
    (docs/theory/adapters.md §4), e.g. ``hook(ds, "blocks.3.attn.hook_pattern")`` = ``ds.pattern.sel(layer=3)``.

    Shapes (the cache's own dimensions, for one layer): residual and stage names (token, d_model);
    ``attn.hook_q``/``hook_k``/``hook_v``/``hook_rot_q``/``hook_rot_k``/``hook_z`` (head, token, d_head);
    ``attn.hook_result`` (head, token, d_model); ``attn.hook_pattern``/``hook_attn_scores`` (head, sentence,
    query, key); ``mlp.hook_post`` (token, d_mlp). The DataArray is named ``name``; its attrs are the
    Dataset's (model, family, versions, configuration) with ``hook``, ``variable``, ``stage`` ("" for
    variables) and ``layer``.

    Raises:
        InputError: ``ds`` is not an activation cache (field ``ds``); an unknown name, listing the valid
            ones, or a layer beyond the cache's (field ``name``).
    """
    L, pre_ln = _check(ds)
    table = _suffixes(pre_ln)
    m = _NAME.match(str(name))
    if m is None or m.group(2) not in table:
        valid = ", ".join(f"blocks.{{l}}.{s}" for s in table)
        raise InputError(f"unknown name {name!r}; the valid names are {valid} with l in 0 … {L - 1}", "name")
    layer, suffix = int(m.group(1)), m.group(2)
    if layer >= L:
        raise InputError(f"{name!r} names layer {layer}; the cache holds layers 0 … {L - 1}", "name")
    var, stage = table[suffix]
    da = ds[var].sel(layer=layer)
    if stage is not None:
        da = da.sel(stage=stage)
    da = da.drop_vars([c for c in ("layer", "stage") if c in da.coords]).rename(name)
    da.attrs = {**ds.attrs, "hook": name, "variable": var, "stage": stage or "", "layer": layer}
    return da


__all__ = ["POST_LN_RESID", "PRE_LN_RESID", "STAGE_NAMES", "VARIABLE_NAMES", "cache_names", "hook"]
