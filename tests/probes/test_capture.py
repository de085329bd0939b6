"""Models as researchers hold them, tiny and random, built here from transformers' configs: a
LlamaForCausalLM object, a model saved to a local folder and loaded by path, a Mistral with a sliding
window — each rebuilt attention equal to transformers' eager attention to 1e-5 — plus truncation warned
about and the token ids kept."""

import numpy as np
import pytest
import torch

from attnphys.probes import adapter_for, capture
from attnphys.probes.metrics import head_scores
from tests.probes.test_probes import SENTENCES, CharTokenizer

transformers = pytest.importorskip("transformers")


def _config(cls, **extra):
    return cls(
        vocab_size=100,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        **extra,
    )


def _eager(model):
    model.config._attn_implementation = "eager"
    return model.eval()


def assert_attention_rebuilt(model, cap, atol=1e-5):
    """Softmax of the scores rebuilt from the captured attention input and the weights (rotary positions,
    causal mask, sliding window) equals the model's own eager attention weights, in every layer and sentence."""
    ad = adapter_for(model)
    rot = ad.rotary(model)
    for layer in range(cap.n_layers):
        hw = ad.heads(model, ad.layers(model)[layer])
        X = cap.get(layer, ad.attn_input_stage).astype(np.float64)
        for P_model, (a, b) in zip(cap.attentions[layer], cap.sentences()):
            S = head_scores(hw, X[a:b], cap.position[a:b], rot, causal=ad.causal, window=cap.windows[layer])
            P = np.exp(S - S.max(-1, keepdims=True))
            P /= P.sum(-1, keepdims=True)
            np.testing.assert_allclose(P, P_model, atol=atol)


@pytest.mark.slow
def test_a_causal_lm_object_is_read_through_its_base_model():
    torch.manual_seed(0)
    model = _eager(transformers.LlamaForCausalLM(_config(transformers.LlamaConfig)))
    cap = capture(model, CharTokenizer(), SENTENCES[:3])
    assert cap.n_layers == 2 and cap.windows == [None, None]
    assert_attention_rebuilt(model, cap)
    assert adapter_for(model).rotary(model) is not None


def test_a_model_in_a_local_folder_is_loaded_by_path(tmp_path):
    """A LlamaForCausalLM saved with a word-level tokenizer, loaded by the folder's path like any model."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    from attnphys.probes import load_model

    words = sorted({w for s in SENTENCES[:3] for w in s.split()})
    vocab = {"[UNK]": 0, "[PAD]": 1, **{w: i + 2 for i, w in enumerate(words)}}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", pad_token="[PAD]")
    torch.manual_seed(1)
    cfg = _config(transformers.LlamaConfig)
    cfg.vocab_size = len(vocab)
    transformers.LlamaForCausalLM(cfg).save_pretrained(tmp_path / "tiny")
    tok.save_pretrained(tmp_path / "tiny")
    model, tokenizer = load_model(str(tmp_path / "tiny"))
    cap = capture(model, tokenizer, SENTENCES[:3])
    assert np.array_equal(np.unique(cap.sentence), [0, 1, 2]) and cap.token_ids.max() < len(vocab)
    assert_attention_rebuilt(model, cap)


def test_a_sliding_window_is_applied_where_the_model_applies_it():
    """Mistral with a window of 5 tokens on sentences of about 60: the rebuilt attention with the window is
    the model's; without it, it is not (what ignoring the window would give)."""
    torch.manual_seed(2)
    model = _eager(transformers.MistralModel(_config(transformers.MistralConfig, sliding_window=5)))
    cap = capture(model, CharTokenizer(), SENTENCES[:2])
    assert cap.windows == [5, 5]
    assert_attention_rebuilt(model, cap)
    ad = adapter_for(model)
    hw = ad.heads(model, ad.layers(model)[0])
    a, b = cap.sentences()[0]
    S = head_scores(hw, cap.get(0, "attn_norm")[a:b].astype(np.float64), cap.position[a:b], ad.rotary(model), True)
    P = np.exp(S - S.max(-1, keepdims=True))
    assert np.abs(P / P.sum(-1, keepdims=True) - cap.attentions[0][0]).max() > 0.05


def test_truncation_is_warned_and_token_ids_are_kept():
    torch.manual_seed(0)
    model = _eager(transformers.LlamaModel(_config(transformers.LlamaConfig)))
    logged = []
    with pytest.warns(UserWarning, match="longer than max_length"):  # a warning as well as the log line
        cap = capture(model, CharTokenizer(), ["a short one", "x" * 40], max_length=16, log=logged.append)
    assert any("1 of 2 sentences are longer than max_length = 16" in line for line in logged)
    assert cap.truncated == 1 and cap.lengths.tolist() == [13, 16]
    want = [1] + [3 + (ord(c) % 90) for c in "a short one"] + [2]
    assert cap.token_ids[:13].tolist() == want
    with pytest.warns(UserWarning, match="longer than max_length"):
        capture(model, CharTokenizer(), ["a short one", "x" * 40], max_length=16)


@pytest.mark.parametrize("kind", ["llama", "bert"])
def test_the_activation_cache_adds_up_to_the_models_own_stages(kind):
    """Σ_h head_out + b_o is the captured attention output, softmax of the cached scores is the cached
    pattern, the MLP hidden layer mapped down is the captured MLP output, and the rotated queries are the
    queries turned by the rotary code."""
    from attnphys.probes import activation_cache
    from tests.probes.test_probes import tiny

    model = tiny(kind)
    ds = activation_cache(model, SENTENCES[:3], tokenizer=CharTokenizer())
    ad = adapter_for(model)
    layer = ad.layers(model)[1]
    b_o = ad.attn_output_bias(layer)
    attn = ds.head_out.sel(layer=1).sum("head").values + (0 if b_o is None else b_o)
    np.testing.assert_allclose(attn, ds.resid.sel(layer=1, stage="attn_out").values, atol=1e-5)
    S = ds.scores.sel(layer=1).values
    n0 = int((ds.token_sentence == 0).sum())
    s0 = S[:, 0, :n0, :n0].astype(np.float64)
    P = np.exp(s0 - s0.max(-1, keepdims=True))
    np.testing.assert_allclose(P / P.sum(-1, keepdims=True), ds.pattern.values[1, :, 0, :n0, :n0], atol=1e-5)
    assert np.isnan(ds.pattern.values[1, :, 0, n0:, :]).all()  # padding of the shorter sentence
    mlp = ad.mlp(model, layer)
    down = np.asarray(mlp.Wd if kind == "llama" else mlp.W2)
    Y = ds.mlp_hidden.sel(layer=1).values @ down.T + (0 if kind == "llama" else np.asarray(mlp.b2))
    np.testing.assert_allclose(Y, ds.resid.sel(layer=1, stage="mlp_out").values, atol=1e-5)
    rot = ad.rotary(model)
    q = ds.q.sel(layer=1).values.astype(np.float64)
    want = q if rot is None else rot.apply(q, ds.token_position.values)
    np.testing.assert_allclose(ds.q_rot.sel(layer=1).values, want, atol=1e-5)
    assert (rot is None) == np.allclose(ds.q_rot.values, ds.q.values)


def test_bad_control_and_max_length_are_refused_by_name():
    from attnphys.errors import InputError
    from attnphys.probes import control_model, probe
    from tests.probes.test_probes import tiny

    model = tiny("llama")
    with pytest.raises(InputError, match="unknown control 'weird'.*random, shuffled"):
        probe(model, SENTENCES, tokenizer=CharTokenizer(), control="weird")
    with pytest.raises(InputError, match="max_length must be at least 2"):
        capture(model, CharTokenizer(), SENTENCES, max_length=1)
    twin = control_model(model, "shuffled", seed=3)
    for (name, p), (_, q) in zip(model.named_parameters(), twin.named_parameters()):
        assert torch.equal(torch.sort(p.flatten()).values, torch.sort(q.flatten()).values), name  # same values
    assert not torch.equal(model.layers[0].self_attn.q_proj.weight, twin.layers[0].self_attn.q_proj.weight)
