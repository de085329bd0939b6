"""The generic adapter on tiny random models built from transformers' configs (no download): on the
named families it reads what their named adapters read (head weights, stages, attention weights, norms,
MLPs, to 1e-6); on other families (Gemma, OLMo, StableLM, Starcoder2, OPT pre- and post-norm, ELECTRA) the
capture and the activation cache run end to end and equal the models' own eager attention; and models
outside the contract are refused naming what did not fit (negative controls)."""

import importlib
import warnings

import numpy as np
import pytest
import torch

from attnphys.errors import InputError
from attnphys.probes import activation_cache, capture
from attnphys.probes._warnings import AttentionImplementationWarning
from attnphys.probes.adapters import ADAPTERS, GenericAdapter, GenericAdapterWarning, adapter_for, generic_adapter
from attnphys.probes.metrics import head_scores
from tests.probes.test_probes import SENTENCES, CharTokenizer

transformers = pytest.importorskip("transformers")
capture_module = importlib.import_module("attnphys.probes.capture")  # the module (the package's name is the function)

COMMON = dict(
    vocab_size=100,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=64,
    max_position_embeddings=128,
)


def build(kind: str, seed: int = 0):
    """A tiny random model of ``kind``, as transformers builds it by default (sdpa attention)."""
    t = transformers
    torch.manual_seed(seed)
    gqa = dict(COMMON, num_key_value_heads=2)
    opt = dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, ffn_dim=64)
    opt.update(max_position_embeddings=128, word_embed_proj_dim=32)
    make = {
        "llama": lambda: t.LlamaForCausalLM(t.LlamaConfig(**gqa)),
        "mistral": lambda: t.MistralModel(t.MistralConfig(**gqa, sliding_window=5)),
        "qwen2": lambda: t.Qwen2Model(t.Qwen2Config(**gqa)),
        "bert": lambda: t.BertModel(t.BertConfig(**COMMON), add_pooling_layer=False),
        "gpt2": lambda: t.GPT2Model(t.GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=4, n_positions=128)),
        "gemma": lambda: t.GemmaModel(t.GemmaConfig(**gqa, head_dim=8)),
        "olmo": lambda: t.OlmoModel(t.OlmoConfig(**gqa)),
        "stablelm": lambda: t.StableLmModel(t.StableLmConfig(**gqa, partial_rotary_factor=1.0)),
        "starcoder2": lambda: t.Starcoder2Model(t.Starcoder2Config(**gqa, sliding_window=5)),
        "opt": lambda: t.OPTModel(t.OPTConfig(**opt)),
        "opt_post": lambda: t.OPTModel(t.OPTConfig(**opt, do_layer_norm_before=False)),
        "electra": lambda: t.ElectraModel(t.ElectraConfig(**COMMON, embedding_size=32)),
        # outside the contract
        "qwen3": lambda: t.Qwen3Model(t.Qwen3Config(**gqa, head_dim=8)),
        "gemma2": lambda: t.Gemma2Model(t.Gemma2Config(**gqa, head_dim=8)),
        "phi": lambda: t.PhiModel(t.PhiConfig(**COMMON)),
        "phi_full_rotary": lambda: t.PhiModel(t.PhiConfig(**COMMON, partial_rotary_factor=1.0)),
        "stablelm_partial": lambda: t.StableLmModel(t.StableLmConfig(**gqa)),
        "gpt_neox": lambda: t.GPTNeoXModel(t.GPTNeoXConfig(**COMMON)),
        "granite": lambda: t.GraniteModel(t.GraniteConfig(**gqa, attention_multiplier=0.5)),
        "distilbert": lambda: t.DistilBertModel(t.DistilBertConfig(vocab_size=100, dim=32, n_layers=2, n_heads=4)),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # transformers' notes on the tiny vocabularies' special ids
        return make[kind]().eval()


NAMED = ["llama", "mistral", "qwen2", "bert"]
OTHERS = ["gemma", "olmo", "stablelm", "starcoder2", "opt", "opt_post", "electra"]


def capture_with(adapter, model, sentences, monkeypatch, **kw):
    """The capture of ``model`` read through ``adapter`` (instead of the one :func:`adapter_for` picks)."""
    with monkeypatch.context() as mp:
        mp.setattr(capture_module, "adapter_for", lambda m: adapter)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the switch to the eager attention, said elsewhere
            return capture(model, CharTokenizer(), sentences, **kw)


def rebuilt_patterns(ad, model, cap):
    """Per layer and sentence: softmax of the head-wise scores (R_i q_i)·(R_j k_j)/√d_h of the captured
    attention input (the adapter's weights, rotary positions, causal mask and window)."""
    rot = ad.rotary(model)
    out = []
    for layer in range(cap.n_layers):
        hw = ad.heads(model, ad.layers(model)[layer])
        X = cap.get(layer, ad.attn_input_stage).astype(np.float64)
        per = []
        for a, b in cap.sentences():
            S = head_scores(hw, X[a:b], cap.position[a:b], rot, causal=ad.causal, window=cap.windows[layer])
            P = np.exp(S - S.max(-1, keepdims=True))
            per.append(P / P.sum(-1, keepdims=True))
        out.append(per)
    return out


@torch.no_grad()
def own_eager_attentions(model, sentences):
    """Per layer, the model's own eager attention weights (output_attentions) of each sentence run alone."""
    from attnphys.probes.adapters._base import base_model

    body = base_model(model)
    loaded = model.config._attn_implementation
    model.set_attn_implementation("eager")
    try:
        out = [[] for _ in range(model.config.num_hidden_layers)]
        for s in sentences:
            enc = CharTokenizer()([s])
            att = body(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], output_attentions=True)
            for layer, a in enumerate(att.attentions):
                out[layer].append(a[0].double().numpy())
    finally:
        model.set_attn_implementation(loaded)
    return out


# --------------------------------------------------------------- the named families, read generically


@pytest.mark.parametrize("kind", NAMED)
def test_the_generic_reading_of_a_named_family_equals_its_adapter(kind, monkeypatch):
    model = build(kind)
    named = adapter_for(model)
    assert named is ADAPTERS[named.family] and named.family != "generic"
    gen = GenericAdapter(model)
    assert gen.family == "generic" and gen.model_types == (model.config.model_type,)
    for attr in ("pre_ln", "norm", "causal", "attn_input_stage", "stages"):
        assert getattr(gen, attr) == getattr(named, attr), attr
    assert gen.layers(model) == named.layers(model)
    assert gen.windows(model) == named.windows(model)
    rn, rg = named.rotary(model), gen.rotary(model)
    assert (rn is None) == (rg is None)
    if rn is not None:
        np.testing.assert_allclose(rg.inv_freq, rn.inv_freq, atol=1e-6)
        assert rg.scaling == rn.scaling
    np.testing.assert_allclose(gen.embeddings(model), named.embeddings(model), atol=1e-6)
    en, eg = named.embedding_norm(model), gen.embedding_norm(model)
    assert (en is None) == (eg is None)
    assert [n for n, _ in gen.norm_modules(model)] == [n for n, _ in named.norm_modules(model)]
    for layer in named.layers(model):
        hn, hg = named.heads(model, layer), gen.heads(model, layer)
        for f in ("Wq", "bq", "Wk", "bk", "Wv", "bv", "Wo"):
            np.testing.assert_allclose(getattr(hg, f), getattr(hn, f), atol=1e-6, err_msg=f)
        assert np.array_equal(hg.kv_heads(), hn.kv_heads())
        bn, bg = named.attn_output_bias(layer), gen.attn_output_bias(layer)
        assert (bn is None) == (bg is None) and (bn is None or np.allclose(bg, bn, atol=1e-6))
        for a, b in zip(gen.layer_norms(layer), named.layer_norms(layer)):
            assert type(a) is type(b) and a.eps == b.eps
            np.testing.assert_allclose(np.asarray(a.gamma), np.asarray(b.gamma), atol=1e-6)
        mg, mn = gen.mlp(model, layer), named.mlp(model, layer)
        assert type(mg) is type(mn) and mg.activation == mn.activation
        for f in ("W1", "W2", "b1", "b2", "Wg", "Wu", "Wd"):
            if hasattr(mn, f) and getattr(mn, f) is not None:
                np.testing.assert_allclose(np.asarray(getattr(mg, f)), np.asarray(getattr(mn, f)), atol=1e-6)
    # the stages and attention weights captured through either adapter
    ref = capture_with(named, model, SENTENCES[:3], monkeypatch)
    got = capture_with(gen, model, SENTENCES[:3], monkeypatch)
    assert set(got.stages) == set(ref.stages) and got.windows == ref.windows
    for key in ref.stages:
        np.testing.assert_allclose(got.stages[key], ref.stages[key], atol=1e-6, err_msg=str(key))
    for layer in range(ref.n_layers):
        for P, Q in zip(got.attentions[layer], ref.attentions[layer]):
            np.testing.assert_allclose(P, Q, atol=1e-6)
    for layer, (pg, pn) in enumerate(zip(rebuilt_patterns(gen, model, got), rebuilt_patterns(named, model, ref))):
        for a, b, own in zip(pg, pn, got.attentions[layer]):
            np.testing.assert_allclose(a, b, atol=1e-6)
            np.testing.assert_allclose(a, own, atol=1e-5)


def test_gpt2s_fused_projection_is_refused_by_the_generic_adapter():
    """GPT-2 keeps its named adapter; read generically its fused c_attn is refused, naming it."""
    model = build("gpt2")
    assert adapter_for(model).family == "gpt2"
    with pytest.raises(InputError, match=r"no q/k/v projections in layer 0's attention \(found: attn\.c_attn"):
        GenericAdapter(model)
    with pytest.raises(InputError, match=r"c_attn maps the hidden state to three times its width: fused q/k/v"):
        GenericAdapter(model)


# --------------------------------------------------------------- other families, end to end


@pytest.mark.parametrize("kind", OTHERS)
def test_another_family_is_captured_generically_and_equals_its_own_attention(kind):
    model = build(kind)
    with pytest.warns(GenericAdapterWarning, match=f"model type '{model.config.model_type}'"):
        ad = adapter_for(model)
    assert isinstance(ad, GenericAdapter) and ad.family == "generic"
    with warnings.catch_warnings():
        warnings.simplefilter("error", GenericAdapterWarning)  # read once per model: no second warning
        assert adapter_for(model) is ad
        with pytest.warns(Warning) as caught:  # the switch to eager attention (sdpa loaded)
            cap = capture(model, CharTokenizer(), SENTENCES[:3])
    assert not [w for w in caught if w.category is GenericAdapterWarning]
    assert cap.adapter is ad and cap.n_layers == 2
    own = own_eager_attentions(model, SENTENCES[:3])
    rebuilt = rebuilt_patterns(ad, model, cap)
    for layer in range(cap.n_layers):
        for P, Q, R in zip(cap.attentions[layer], own[layer], rebuilt[layer]):
            np.testing.assert_allclose(P, Q, atol=1e-5)  # the captured pattern is the model's own
            np.testing.assert_allclose(R, Q, atol=1e-5)  # and softmax(q·k/√d_h) of the adapter's weights
    # the pieces read reproduce the captured stages: residual adds, norms, MLP, attention output
    for i, layer in enumerate(ad.layers(model)):
        g = lambda s, i=i: cap.get(i, s).astype(np.float64)  # noqa: E731
        n1, n2 = ad.layer_norms(layer)
        np.testing.assert_allclose(g("attn_add"), g("input") + g("attn_out"), atol=1e-5)
        mlp_in = g("mlp_norm") if ad.pre_ln else g("attn_norm")
        np.testing.assert_allclose(np.asarray(ad.mlp(model, layer)(mlp_in)), g("mlp_out"), atol=1e-4)
        if ad.pre_ln:
            np.testing.assert_allclose(np.asarray(n1(g("input"))), g("attn_norm"), atol=1e-4)
            np.testing.assert_allclose(np.asarray(n2(g("attn_add"))), g("mlp_norm"), atol=1e-4)
            np.testing.assert_allclose(g("mlp_add"), g("attn_add") + g("mlp_out"), atol=1e-5)
        else:
            np.testing.assert_allclose(np.asarray(n1(g("attn_add"))), g("attn_norm"), atol=1e-4)
            np.testing.assert_allclose(g("mlp_add"), g("attn_norm") + g("mlp_out"), atol=1e-5)
            np.testing.assert_allclose(np.asarray(n2(g("mlp_add"))), g("mlp_norm"), atol=1e-4)


@pytest.mark.parametrize("kind", ["gemma", "opt_post"])
def test_the_activation_cache_of_another_family(kind):
    """activation_cache end to end: the pattern is the model's own, softmax of the stored scores is the
    pattern, and the heads' outputs sum to the attention output stage (b_o added)."""
    model = build(kind, seed=1)
    with pytest.warns(GenericAdapterWarning), pytest.warns(AttentionImplementationWarning):
        ds = activation_cache(model, SENTENCES[:3], tokenizer=CharTokenizer())
    assert ds.attrs["family"] == "generic" and ds.attrs["attn_captured"] == "eager"
    ad = adapter_for(model)
    own = own_eager_attentions(model, SENTENCES[:3])
    for s in range(3):
        n = int((ds.token_sentence == s).sum())
        for layer in range(2):
            P = ds.pattern.values[layer, :, s, :n, :n].astype(np.float64)
            np.testing.assert_allclose(P, own[layer][s], atol=1e-5)
            S = ds.scores.values[layer, :, s, :n, :n].astype(np.float64)
            Q = np.exp(S - S.max(-1, keepdims=True))
            np.testing.assert_allclose(Q / Q.sum(-1, keepdims=True), P, atol=1e-5)
    for layer in range(2):
        bo = ad.attn_output_bias(ad.layers(model)[layer])
        total = ds.head_out.values[layer].sum(0) + (0 if bo is None else bo)
        np.testing.assert_allclose(total, ds.resid.sel(layer=layer, stage="attn_out").values, atol=1e-5)


def test_gemmas_norms_and_embedding_scale_are_read_from_the_forward_pass():
    """Gemma's RMSNorm scales by 1 + γ and its embeddings are multiplied by √D: both read, not assumed."""
    model = build("gemma")
    ad = generic_adapter(model, warn=False)
    layer = ad.layers(model)[0]
    n1, _ = ad.layer_norms(layer)
    np.testing.assert_allclose(np.asarray(n1.gamma), 1.0 + layer.input_layernorm.weight.detach().double().numpy())
    E = model.get_input_embeddings().weight.detach().double().numpy()
    np.testing.assert_allclose(ad.embeddings(model), E * np.sqrt(32), rtol=1e-6)
    d = ad.describe()
    assert (d["norm"], d["activation"], d["pre_ln"], d["causal"]) == ("rmsnorm", "gelu_tanh", True, True)


def test_post_norm_placement_is_read_from_the_calls_not_the_module_order():
    """OPT registers its norms in the same order for both placements; do_layer_norm_before decides."""
    pre, post = generic_adapter(build("opt"), warn=False), generic_adapter(build("opt_post"), warn=False)
    assert pre.pre_ln and not post.pre_ln
    assert pre.stages[1] == "attn_norm" and post.stages[1] == "attn_out"
    assert pre.attn_input_stage == "attn_norm" and post.attn_input_stage == "input"


# --------------------------------------------------------------- outside the contract: refused, by name

REFUSED = {
    "qwen3": r"normalizations inside layer 0's attention \(self_attn\.q_norm, self_attn\.k_norm\)",
    "gemma2": r"layer 0 runs 4 normalizations \(input_layernorm, .*pre_feedforward_layernorm",
    "phi": r"rotates 4 of the 8 coordinates of a head \(partial rotary\)",
    "phi_full_rotary": r"layer 0 runs 1 normalization \(input_layernorm\).*parallel",
    "stablelm_partial": r"rotates 2 of the 8 coordinates",
    "gpt_neox": r"no q/k/v projections .*attention\.query_key_value maps the hidden state to three times its width",
    "granite": r"layer 0's attention weights rebuilt as softmax\(q·k/√d_h\) .* differ from the model's own",
}


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_a_model_outside_the_contract_is_refused_naming_what_did_not_fit(kind):
    model = build(kind)
    with pytest.raises(InputError, match=REFUSED[kind]):
        GenericAdapter(model)
    with pytest.raises(ValueError, match=rf"model type '{model.config.model_type}' is not supported .*{REFUSED[kind]}"):
        adapter_for(model)


def test_distilberts_differently_named_projections_are_refused():
    with pytest.raises(
        ValueError, match=r"not supported.*no q/k/v projections in layer 0's attention \(found: attention\.q_lin"
    ):
        adapter_for(build("distilbert"))


def test_a_wrong_scale_is_caught_by_the_check_not_read_wrongly(monkeypatch):
    """Negative control: the same Llama with its attention's score scale doubled (a scale the weights do not
    show) is refused by the forward-pass check, while the untouched model is read."""
    model = build("llama")
    GenericAdapter(model)
    for layer in model.model.layers:
        monkeypatch.setattr(layer.self_attn, "scaling", 2 * layer.self_attn.scaling)
    with pytest.raises(InputError, match=r"attention weights rebuilt .* differ from the model's own"):
        GenericAdapter(model)


def test_a_swapped_gate_is_read_from_the_hidden_state():
    """The gate of a three-map MLP is the map inside the activation, found from the hidden state: a Llama
    whose MLP computes φ(W_u x) ⊙ W_g x (the roles swapped in forward) is read with the roles swapped."""
    model = build("llama")
    ref = GenericAdapter(model)
    for layer in model.model.layers:
        m = layer.mlp
        m.forward = lambda x, m=m: m.down_proj(m.act_fn(m.up_proj(x)) * m.gate_proj(x))
    got = GenericAdapter(model)
    layer = model.model.layers[0]
    a, b = ref.mlp(model, layer), got.mlp(model, layer)
    np.testing.assert_array_equal(np.asarray(a.Wg), np.asarray(b.Wu))
    np.testing.assert_array_equal(np.asarray(a.Wu), np.asarray(b.Wg))


def test_a_model_in_training_mode_is_read_and_left_in_training_mode():
    """Dropout would break the forward-pass check: it runs in eval mode and the model's modes are restored."""
    model = build("electra").train()
    ad = GenericAdapter(model)
    assert not ad.pre_ln and all(m.training for m in model.modules())


def test_roberta_style_positions_are_counted_from_after_the_padding_index():
    """XLM-RoBERTa (no named adapter) numbers positions from padding_idx + 1: two fewer fit, as for RoBERTa."""
    torch.manual_seed(0)
    model = transformers.XLMRobertaModel(transformers.XLMRobertaConfig(**COMMON)).eval()
    assert (
        GenericAdapter(model).max_positions(model)
        == 126
        == ADAPTERS["bert"].max_positions(transformers.RobertaModel(transformers.RobertaConfig(**COMMON)))
    )


def test_embeddings_of_another_width_are_refused_by_name():
    """ELECTRA with 128-wide embeddings projected to 32: the model is read, its embedding table refused."""
    torch.manual_seed(0)
    cfg = transformers.ElectraConfig(**COMMON, embedding_size=128)
    model = transformers.ElectraModel(cfg).eval()
    ad = GenericAdapter(model)
    assert ad.embedding_norm(model) is None  # its LayerNorm acts before the projection
    with pytest.raises(InputError, match="model: the token embeddings are 128 wide and mapped to the model's width 32"):
        ad.embeddings(model)
