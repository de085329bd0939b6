"""TransformerLens-style names on the activation cache of tiny random Llama (pre-norm) and BERT (post-norm)
models: every name reads its variable and stage, the residual names chain from layer to layer, and the
per-head names recombine into the stages (closed forms); unknown names are refused listing the valid ones."""

import numpy as np
import pytest

from attnphys import __version__
from attnphys.errors import InputError
from attnphys.probes import activation_cache, adapter_for
from attnphys.probes.cache_names import POST_LN_RESID, PRE_LN_RESID, cache_names, hook
from tests.probes.test_probes import SENTENCES, CharTokenizer, tiny

pytest.importorskip("transformers")


@pytest.fixture(scope="module", params=["llama", "bert"])
def cached(request):
    model = tiny(request.param)
    return model, activation_cache(model, SENTENCES[:3], tokenizer=CharTokenizer())


def test_every_name_reads_its_variable_and_stage(cached):
    model, ds = cached
    names = cache_names(ds)
    assert len(names) == 19 * ds.sizes["layer"]
    pre_ln = adapter_for(model).pre_ln
    resid = PRE_LN_RESID if pre_ln else POST_LN_RESID
    assert names["blocks.1.hook_resid_mid"] == f"resid[layer=1, stage={resid['hook_resid_mid']!r}]"
    for name, sel in names.items():
        da = hook(ds, name)
        assert da.name == name and da.attrs["hook"] == name and da.attrs["attnphys_version"] == __version__
        layer = int(name.split(".")[1])
        ref = ds[da.attrs["variable"]].sel(layer=layer)
        if da.attrs["stage"]:
            ref = ref.sel(stage=da.attrs["stage"])
        np.testing.assert_array_equal(da.values, ref.values)
        assert sel.startswith(da.attrs["variable"] + "[")
        assert "layer" not in da.dims and "stage" not in da.dims
    assert hook(ds, "blocks.0.attn.hook_pattern").dims == ("head", "sentence", "query", "key")
    assert hook(ds, "blocks.0.attn.hook_q").dims == ("head", "token", "d_head")
    assert hook(ds, "blocks.0.hook_resid_pre").dims == ("token", "d_model")
    assert hook(ds, "blocks.0.mlp.hook_post").dims == ("token", "d_mlp")


def test_the_residual_stream_chains_from_layer_to_layer(cached):
    """resid_post of layer l is resid_pre of layer l + 1, in both placements; pre-norm resid_mid is
    resid_pre + attn_out, post-norm resid_mid its norm (= ln1.hook_normalized), not the sum."""
    model, ds = cached
    ad = adapter_for(model)
    h = lambda name: hook(ds, name).values.astype(np.float64)  # noqa: E731
    np.testing.assert_allclose(h("blocks.0.hook_resid_post"), h("blocks.1.hook_resid_pre"), atol=1e-6)
    total = h("blocks.0.hook_resid_pre") + h("blocks.0.hook_attn_out")
    np.testing.assert_allclose(h("blocks.0.hook_attn_add"), total, atol=1e-5)
    if ad.pre_ln:
        np.testing.assert_allclose(h("blocks.0.hook_resid_mid"), total, atol=1e-5)
        np.testing.assert_allclose(h("blocks.0.hook_resid_post"), total + h("blocks.0.hook_mlp_out"), atol=1e-5)
    else:
        n1, _ = ad.layer_norms(ad.layers(model)[0])
        np.testing.assert_allclose(h("blocks.0.hook_resid_mid"), np.asarray(n1(total)), atol=1e-4)
        np.testing.assert_array_equal(h("blocks.0.hook_resid_mid"), h("blocks.0.ln1.hook_normalized"))
        assert (
            np.abs(h("blocks.0.hook_resid_mid") - total).max() > 1e-3
        )  # negative control: not the sum (10× the tolerance)


def test_the_head_names_recombine_into_the_stages(cached):
    """z = pattern · v per sentence, Σ_h result + b_o = attn_out, W_down · mlp.hook_post (+ b) = mlp_out,
    softmax of hook_attn_scores = hook_pattern."""
    model, ds = cached
    ad = adapter_for(model)
    layer = ad.layers(model)[1]
    h = lambda name: hook(ds, name).values.astype(np.float64)  # noqa: E731
    P, V, Z = h("blocks.1.attn.hook_pattern"), h("blocks.1.attn.hook_v"), h("blocks.1.attn.hook_z")
    S = h("blocks.1.attn.hook_attn_scores")
    for s in range(ds.sizes["sentence"]):
        tok = np.flatnonzero(ds.token_sentence.values == s)
        n = tok.size
        np.testing.assert_allclose(np.matmul(P[:, s, :n, :n], V[:, tok]), Z[:, tok], atol=1e-5)
        E = np.exp(S[:, s, :n, :n] - S[:, s, :n, :n].max(-1, keepdims=True))
        np.testing.assert_allclose(E / E.sum(-1, keepdims=True), P[:, s, :n, :n], atol=1e-5)
    bo = ad.attn_output_bias(layer)
    total = h("blocks.1.attn.hook_result").sum(0) + (0 if bo is None else bo)
    np.testing.assert_allclose(total, h("blocks.1.hook_attn_out"), atol=1e-5)
    mlp = ad.mlp(model, layer)
    Wd = np.asarray(getattr(mlp, "Wd", None) if hasattr(mlp, "Wd") else mlp.W2)
    out = h("blocks.1.mlp.hook_post") @ Wd.T
    b2 = getattr(mlp, "b2", None)
    out = out if b2 is None else out + np.asarray(b2)
    np.testing.assert_allclose(out, h("blocks.1.hook_mlp_out"), atol=1e-4)


def test_unknown_names_are_refused_listing_the_valid_ones(cached):
    _, ds = cached
    with pytest.raises(
        InputError,
        match=r"name: unknown name 'blocks\.0\.attn\.hook_qq'; the valid names are .*"
        r"blocks\.\{l\}\.attn\.hook_pattern.* with l in 0 … 1",
    ):
        hook(ds, "blocks.0.attn.hook_qq")
    with pytest.raises(InputError, match="name: unknown name 'hook_embed'"):
        hook(ds, "hook_embed")
    with pytest.raises(
        InputError, match=r"name: 'blocks\.2\.hook_resid_pre' names layer 2; the cache holds layers 0 … 1"
    ):
        hook(ds, "blocks.2.hook_resid_pre")
    with pytest.raises(InputError, match="ds: not an activation cache: no resid"):
        hook(ds.drop_vars("resid"), "blocks.0.hook_resid_pre")
    with pytest.raises(InputError, match="ds: expected the Dataset of activation_cache, not a dict"):
        cache_names({})
