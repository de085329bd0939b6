"""Probes on tiny randomly initialised BERT, GPT-2 and Llama models built from configs (no download)."""

import numpy as np
import pytest
import torch

from attnphys.probes import ADAPTERS, adapter_for, builtin_corpus, capture

transformers = pytest.importorskip("transformers")


class CharTokenizer:
    """Minimal tokenizer: one id per character, [CLS]=1 first and [SEP]=2 last, pad 0."""

    pad_token = "[PAD]"

    @staticmethod
    def ids(text: str) -> list[int]:
        """The ids of a sentence's characters (between [CLS] and [SEP])."""
        return [3 + (ord(c) % 90) for c in text]

    def __call__(self, batch, return_tensors="pt", padding=True, truncation=True, max_length=64,
                 return_special_tokens_mask=False):
        seqs = [[1] + self.ids(s[: max_length - 2]) + [2] for s in batch]
        n = max(len(s) for s in seqs)
        ids = torch.zeros(len(seqs), n, dtype=torch.long)
        mask = torch.zeros_like(ids)
        special = torch.zeros_like(ids)
        for i, s in enumerate(seqs):
            ids[i, : len(s)] = torch.tensor(s)
            mask[i, : len(s)] = 1
            special[i, 0] = special[i, len(s) - 1] = 1
        out = {"input_ids": ids, "attention_mask": mask}
        if return_special_tokens_mask:
            out["special_tokens_mask"] = special
        return transformers.BatchEncoding(out)


def tiny(kind):
    torch.manual_seed(0)
    if kind == "bert":
        cfg = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                      intermediate_size=64, max_position_embeddings=128)
        model = transformers.BertModel(cfg, add_pooling_layer=False)
    elif kind == "gpt2":  # noqa: SIM114
        cfg = transformers.GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=4, n_positions=128)
        model = transformers.GPT2Model(cfg)
    else:
        cfg = transformers.LlamaConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                       num_key_value_heads=2, intermediate_size=64, max_position_embeddings=128)
        model = transformers.LlamaModel(cfg)
    model.config._attn_implementation = "eager"
    return model.eval()


SENTENCES = builtin_corpus()[:6]
KINDS = sorted(ADAPTERS)  # every adapter gets every test


@pytest.fixture(params=KINDS)
def captured(request):
    model = tiny(request.param)
    return request.param, model, capture(model, CharTokenizer(), SENTENCES, batch_size=4)


def test_stage_sums(captured):
    _, _, cap = captured
    for layer in range(cap.n_layers):
        np.testing.assert_allclose(cap.get(layer, "attn_add"), cap.get(layer, "input") + cap.get(layer, "attn_out"), atol=1e-5)
        mlp_in = "attn_add" if cap.adapter.pre_ln else "attn_norm"
        np.testing.assert_allclose(cap.get(layer, "mlp_add"), cap.get(layer, mlp_in) + cap.get(layer, "mlp_out"), atol=1e-5)


@torch.no_grad()
def test_captured_states_equal_the_models_own(captured):
    kind, model, cap = captured
    enc = CharTokenizer()(SENTENCES)
    hs = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], output_hidden_states=True).hidden_states
    mask = enc["attention_mask"].bool()
    for layer in range(cap.n_layers):
        np.testing.assert_allclose(cap.get(layer, "input"), hs[layer][mask].double().numpy(), atol=1e-5)
    last = "mlp_add" if cap.adapter.pre_ln else "mlp_norm"
    if kind == "bert":  # pre-LN models apply a final norm after the last layer
        np.testing.assert_allclose(cap.get(cap.n_layers - 1, last), hs[-1][mask].double().numpy(), atol=1e-5)


def _rotary(model, X, n):
    """Llama: apply the model's rotary embedding to per-head queries/keys (H, n, dh)."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    pos = torch.arange(n)[None]
    cos, sin = model.rotary_emb(torch.zeros(1, n, 1), pos)
    return lambda q, k: apply_rotary_pos_emb(torch.tensor(q)[None], torch.tensor(k)[None], cos.double(), sin.double())


def test_head_weights_reproduce_attention_probabilities_and_output(captured):
    kind, model, cap = captured
    ad = adapter_for(model)
    layers = ad.layers(model)
    for layer in range(cap.n_layers):
        hw = ad.heads(model, layers[layer])
        X_all = cap.get(layer, ad.attn_input_stage)
        start = 0
        for P_model in cap.attentions[layer]:
            n = P_model.shape[1]
            X = X_all[start:start + n]
            start += n
            Q = np.einsum("hcd,nd->hnc", hw.Wq, X) + hw.bq[:, None]
            K = np.einsum("hcd,nd->hnc", hw.Wk, X) + hw.bk[:, None]
            if kind == "llama":
                q, k = _rotary(model, X, n)(Q, K)
                Q, K = q[0].numpy(), k[0].numpy()
            S = np.einsum("hic,hjc->hij", Q, K) / np.sqrt(hw.head_dim)
            if ad.pre_ln:
                S = np.where(np.tril(np.ones((n, n), bool)), S, -np.inf)
            P = np.exp(S - S.max(-1, keepdims=True))
            P /= P.sum(-1, keepdims=True)
            np.testing.assert_allclose(P, P_model, atol=1e-5)
            # attention output: heads' W_o W_v E_p[x] (+ output bias) = the captured sublayer output
            V = np.einsum("hcd,nd->hnc", hw.Wv, X) + hw.bv[:, None]
            out = np.einsum("hdc,hnc->nd", hw.Wo, np.einsum("hij,hjc->hic", P, V))
            lay = layers[layer]
            bias = (lay.attention.output.dense.bias if kind == "bert" else
                    lay.attn.c_proj.bias if kind == "gpt2" else lay.self_attn.o_proj.bias)
            if bias is not None:
                out = out + bias.detach().double().numpy()
            np.testing.assert_allclose(out, cap.get(layer, "attn_out")[start - n:start], atol=1e-5)


def test_attention_average_is_the_gradient_of_log_sum_exp(captured):
    """E_p[k] = ∇_q log Σ_j exp(q·k_j/√d)·√d for the captured keys of one head (spec §1, Prop. 1a)."""
    kind, model, cap = captured
    ad = adapter_for(model)
    hw = ad.heads(model, ad.layers(model)[0])
    n = cap.attentions[0][0].shape[1]
    X = torch.tensor(cap.get(0, ad.attn_input_stage)[:n].astype(np.float64))
    K = X @ torch.tensor(hw.Wk[0]).T + torch.tensor(hw.bk[0])
    q = (X[-1] @ torch.tensor(hw.Wq[0]).T + torch.tensor(hw.bq[0])).requires_grad_(True)
    d = hw.head_dim
    torch.logsumexp(K @ q / d**0.5, 0).backward()
    p = torch.softmax(K @ q.detach() / d**0.5, 0)
    np.testing.assert_allclose((q.grad * d**0.5).numpy(), (p @ K).numpy(), atol=1e-10)


def test_unsupported_family_is_a_clear_error():
    cfg = transformers.DistilBertConfig(vocab_size=50, dim=16, n_layers=1, n_heads=2, hidden_dim=32)
    with pytest.raises(ValueError, match="not supported"):
        adapter_for(transformers.DistilBertModel(cfg))


@pytest.mark.slow
@pytest.mark.long
def test_full_probe_on_minilm(tmp_path):
    from attnphys.probes import probe, write_outputs

    ds = probe("minilm", max_sentences=60, log=lambda *a: None)
    paths = write_outputs(ds, tmp_path)
    assert (tmp_path / "report.md").exists() and (tmp_path / "summary.json").exists() and len(paths) >= 6
    assert ds.qk_similarity.dims == ("layer", "head", "lam") and ds.sizes["layer"] == 6 and ds.sizes["attn_head"] == 12
    assert np.all(np.isfinite(ds.mlp_r2_affine.values)) and np.all(ds.swap_token_cosine.values <= 1 + 1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("n_sentences", [2, 6])
def test_standard_errors_exist_or_are_reported_missing(n_sentences, tmp_path):
    """With two sentences there are no sentence folds: the standard errors are NaN, the run says so, and the
    report does not claim folds; with six they are finite. The energy distance to the fitted Gaussian is
    finite at every stage, LayerNorm outputs (a singular covariance) included."""
    from attnphys.probes import probe
    from attnphys.probes.report import report
    from attnphys.probes.run import summary

    logged = []
    ds = probe(tiny("bert"), SENTENCES[:n_sentences], tokenizer=CharTokenizer(), log=logged.append)
    warned = any("no standard error" in line for line in logged)
    assert np.all(np.isfinite(ds.stat.sel(statistic="energy_distance_gaussian").values))
    text = report(ds, summary(ds), [])
    if n_sentences == 2:
        assert warned and ds.attrs["stat_se_folds_all"] == 0 and ds.attrs["mlp_se_splits"] <= 2
        assert np.all(np.isnan(ds.stat_se.values))
        # two held-out splits at most (one degree of freedom): the MLP claim is not tested, and says why
        assert np.isnan(ds.claim_p.sel(claim="mlp_affine").values).all()
        assert all("degrees of freedom" in str(r) or "splits" in str(r) for r in ds.claim_reason.sel(claim="mlp_affine").values)
        assert "no standard errors of the cloud statistics" in text and "4 sentence folds" not in text
        import json

        from attnphys.probes import write_outputs

        write_outputs(ds, tmp_path)
        json.loads((tmp_path / "summary.json").read_text(), parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
    else:
        assert not warned and ds.attrs["stat_se_folds_all"] == 4 and ds.attrs["mlp_se_splits"] >= 2
        assert np.isfinite(ds.stat_se.sel(statistic="cov_trace").values).all()
        assert np.all(np.isfinite(ds.mlp_r2_affine_se.values)) and np.all(ds.mlp_r2_affine_se.values > 0)
        assert "standard errors from 4 sentence folds" in text
