"""Models loaded the way transformers loads them by default (``sdpa`` attention, which returns no
attention weights): tiny random Llama, GPT-2, Mistral with a sliding window and BERT built from configs, with
no ``attn_implementation`` argument, probed end to end; their captured attention weights are those of the same
model in eager mode. Plus the refusals and warnings around ``max_length``."""

import copy
import warnings

import numpy as np
import pytest
import torch

from attnphys.errors import InputError
from attnphys.probes import activation_cache, capture, probe
from attnphys.probes._warnings import AttentionImplementationWarning, TruncationWarning
from tests.probes.test_probes import SENTENCES, CharTokenizer

transformers = pytest.importorskip("transformers")


def default_loaded(kind: str):
    """A tiny random model of ``kind`` as transformers builds it by default (no attention argument)."""
    torch.manual_seed(0)
    common = dict(vocab_size=100, max_position_embeddings=128)
    if kind == "bert":
        cfg = transformers.BertConfig(
            hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, **common
        )
        model = transformers.BertModel(cfg, add_pooling_layer=False)
    elif kind == "gpt2":
        cfg = transformers.GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=4, n_positions=128)
        model = transformers.GPT2LMHeadModel(cfg)
    else:
        cls = {"llama": transformers.LlamaConfig, "mistral": transformers.MistralConfig}[kind]
        extra = {"sliding_window": 5} if kind == "mistral" else {}
        cfg = cls(
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            intermediate_size=64,
            **common,
            **extra,
        )
        model = (transformers.LlamaForCausalLM if kind == "llama" else transformers.MistralModel)(cfg)
    return model.eval()


KINDS = ["llama", "gpt2", "mistral", "bert"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_default_loaded_model_gives_the_eager_models_attention_weights(kind):
    model = default_loaded(kind)
    loaded = model.config._attn_implementation
    assert loaded != "eager"  # what transformers picks when not told (sdpa)
    eager = copy.deepcopy(model)
    eager.set_attn_implementation("eager")
    with pytest.warns(AttentionImplementationWarning, match="eager"):
        cap = capture(model, CharTokenizer(), SENTENCES[:3])
    assert model.config._attn_implementation == loaded  # switched back
    assert (cap.attn_implementation, cap.attn_captured) == (loaded, "eager")
    ref = capture(eager, CharTokenizer(), SENTENCES[:3])
    assert ref.attn_captured == "eager"
    assert len(cap.attentions) == cap.n_layers == 2
    for layer in range(cap.n_layers):
        assert len(cap.attentions[layer]) == 3
        for P, Q in zip(cap.attentions[layer], ref.attentions[layer]):
            np.testing.assert_allclose(P, Q, atol=1e-5)
            np.testing.assert_allclose(P.sum(-1), 1.0, atol=1e-5)  # weights, not zeros
    for key in cap.stages:
        np.testing.assert_allclose(cap.stages[key], ref.stages[key], atol=1e-5)


def _check_probe(ds, model):
    assert ds.attrs["attn_implementation"] == model.config._attn_implementation != "eager"
    assert ds.attrs["attn_captured"] == "eager"
    assert np.isfinite(ds.sink_attention_uniform.values).all()
    assert np.isfinite(ds.grad_cosine.values).all() and np.abs(ds.grad_cosine.values).max() <= 1 + 1e-9
    assert np.isfinite(ds.claim_statistic.values).any() and ds.claim_p.shape[1] == 2


def _check_cache(model, **kw):
    with pytest.warns(AttentionImplementationWarning):
        cache = activation_cache(model, SENTENCES[:3], tokenizer=CharTokenizer(), **kw)
    n0 = int((cache.token_sentence == 0).sum())
    np.testing.assert_allclose(np.nansum(cache.pattern.values[:, :, 0, :n0, :n0], -1), 1.0, atol=1e-5)
    assert cache.attrs["attn_captured"] == "eager"
    return cache


@pytest.mark.parametrize("kind", KINDS)
def test_the_activation_cache_of_a_default_loaded_model_holds_its_weights(kind):
    _check_cache(default_loaded(kind))


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_a_default_loaded_model_is_probed_end_to_end(kind):
    model = default_loaded(kind)
    with pytest.warns(AttentionImplementationWarning):
        ds = probe(model, SENTENCES, tokenizer=CharTokenizer(), max_tokens=64)
    _check_probe(ds, model)


def test_a_default_loaded_gpt2_is_probed_with_truncation_warned(monkeypatch):
    """GPT-2 loaded by default, probed with max_length = 8: the attention switch, the cut sentences (a Python
    warning pointing at this line, the report, the summary) and the affine fits with fewer training tokens
    than parameters (4 sentences × 8 tokens for D + 1 = 33) are all said. The temperatures step (particle
    flows, compiled once: most of the time) is left out here; the slow test above runs every step."""
    from attnphys.probes import run
    from attnphys.probes._warnings import UnderdeterminedFitWarning
    from attnphys.probes.report import report
    from attnphys.probes.run import summary

    monkeypatch.setattr(run, "temperature_variables", lambda cap, heads, rotary: ({}, {}))
    model = default_loaded("gpt2")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = probe(model, SENTENCES, tokenizer=CharTokenizer(), max_tokens=32, max_length=8)
    kinds = {w.category for w in caught}
    assert {AttentionImplementationWarning, TruncationWarning, UnderdeterminedFitWarning} <= kinds
    cut = [w for w in caught if w.category is TruncationWarning]
    assert len(cut) == 1 and "6 of 6 sentences are longer than max_length = 8" in str(cut[0].message)
    assert cut[0].filename == __file__  # the warning points at the caller's line
    _check_probe(ds, model)
    assert ds.attrs["n_truncated"] == 6 and (ds.token_position.values < 8).all()
    s = summary(ds)
    assert s["truncated_sentences"] == 6 and s["max_length"] == 8
    text = report(ds, s, [])
    assert "6 of 6 sentences were cut at max_length = 8 tokens" in text
    assert "loaded with the `sdpa` attention" in text
    assert ds.mlp_underdetermined.values.all() and s["mlp_underdetermined_layers"] == [0, 1]
    assert "underdetermined fits" in text
    assert (ds.claim_reason.sel(claim="mlp_affine").values != "").all()  # not tested, with the reason
    assert np.isnan(ds.claim_p.sel(claim="mlp_affine").values).all()
    with pytest.warns(TruncationWarning, match="3 of 3 sentences"):
        cache = _check_cache(model, max_length=8)
    assert cache.attrs["n_truncated"] == 3


@pytest.mark.parametrize("kind", ["bert", "gpt2", "llama"])
def test_a_max_length_beyond_the_models_positions_is_refused_up_front(kind):
    model = default_loaded(kind)
    with pytest.raises(InputError, match=r"max_length: max_length = 200 tokens is beyond the 128 positions"):
        capture(model, CharTokenizer(), ["x" * 150, "short"], max_length=200)
    with pytest.raises(InputError, match="max_length: .*128 positions"):
        probe(model, SENTENCES, tokenizer=CharTokenizer(), max_length=200)
    with pytest.raises(InputError, match="max_length: .*128 positions"):
        activation_cache(model, SENTENCES, tokenizer=CharTokenizer(), max_length=129)


@pytest.mark.slow
def test_minilm_refuses_a_max_length_beyond_512():
    """MiniLM (512 positions): a 715-token sentence with max_length 1000 is refused by name before the model
    runs, not a tensor-size error inside the embeddings."""
    from attnphys.probes import load_model

    model, tok = load_model("minilm")
    long = " ".join(["word"] * 713)
    assert len(tok(long)["input_ids"]) == 715
    with pytest.raises(InputError, match="max_length: .*beyond the 512 positions"):
        probe(model, [long, "a short sentence"], tokenizer=tok, max_length=1000)
