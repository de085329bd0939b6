"""Llama family (pre-RMSNorm, rotary positions, grouped key/value heads; Llama, Mistral, Qwen2)
(theory: docs/theory/probes.md §2.3)."""

from __future__ import annotations

from attnphys.probes.adapters._base import (
    HF_ACTIVATIONS,
    AbstractAdapter,
    HeadWeights,
    Rotary,
    base_model,
    output_heads,
    split_heads,
    to_numpy,
)


def _rmsnorm(m):
    from attnphys.clouds.norms import RMSNorm

    return RMSNorm(to_numpy(m.weight), float(getattr(m, "variance_epsilon", getattr(m, "eps", 1e-6))))  # pyright: ignore[reportArgumentType]  (numpy weights: the modules take any array)


class LlamaAdapter(AbstractAdapter):
    """Grouped key/value heads are mapped to their query heads (query head h uses key/value head
    h // (H/H_kv)); the rotary rotation is not part of the weights (:meth:`rotary` gives it): W_qᵀW_k is
    the bilinear form at relative offset 0 (theory: docs/theory/probes.md §2.3)."""

    family = "llama"
    model_types = ("llama", "mistral", "qwen2")
    pre_ln = True
    norm = "rmsnorm"
    attn_input_stage = "attn_norm"
    causal = True

    def layers(self, model):
        return list(base_model(model).layers)

    def hooks(self, layer):
        return {
            "input": (layer, "in"),
            "attn_norm": (layer.input_layernorm, "out"),
            "attn_out": (layer.self_attn.o_proj, "out"),
            "attn_add": (layer.post_attention_layernorm, "in"),
            "mlp_norm": (layer.post_attention_layernorm, "out"),
            "mlp_out": (layer.mlp, "out"),
            "mlp_add": (layer, "out"),
        }

    def heads(self, model, layer):
        import numpy as np

        cfg = model.config
        H, Hkv = cfg.num_attention_heads, getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
        a = layer.self_attn
        bias = lambda lin: None if lin.bias is None else to_numpy(lin.bias)  # noqa: E731
        Wq, bq = split_heads(to_numpy(a.q_proj.weight), bias(a.q_proj), H)
        Wk, bk = split_heads(to_numpy(a.k_proj.weight), bias(a.k_proj), Hkv)
        Wv, bv = split_heads(to_numpy(a.v_proj.weight), bias(a.v_proj), Hkv)
        rep = H // Hkv
        Wk, bk, Wv, bv = (np.repeat(x, rep, axis=0) for x in (Wk, bk, Wv, bv))
        kv = np.arange(H) // rep
        return HeadWeights(Wq, bq, Wk, bk, Wv, bv, output_heads(to_numpy(a.o_proj.weight), H), kv_head=kv)

    def windows(self, model):
        """Mistral: one window (``sliding_window``) in every layer; Qwen2: in the layers that
        ``layer_types`` marks ``sliding_attention``; Llama: none."""
        cfg = model.config
        n = len(self.layers(model))
        w = getattr(cfg, "sliding_window", None)
        types = getattr(cfg, "layer_types", None)
        if w is None:
            return [None] * n
        if types is None:
            return [int(w)] * n
        return [int(w) if t == "sliding_attention" else None for t in types[:n]]

    def rotary(self, model):
        emb = base_model(model).rotary_emb  # a model with a head (…ForCausalLM): its base model's
        return Rotary(to_numpy(emb.inv_freq), float(getattr(emb, "attention_scaling", 1.0)))

    def attn_output_bias(self, layer):
        b = layer.self_attn.o_proj.bias
        return None if b is None else to_numpy(b)

    def norm_modules(self, model):
        return [(n, m) for n, m in model.named_modules() if type(m).__name__.endswith("RMSNorm")]

    def layer_norms(self, layer):
        return _rmsnorm(layer.input_layernorm), _rmsnorm(layer.post_attention_layernorm)

    def mlp(self, model, layer):
        from attnphys.clouds.mlp import GatedMLP

        m = layer.mlp
        act = HF_ACTIVATIONS.get(str(getattr(model.config, "hidden_act", "silu")), "silu")
        return GatedMLP(
            to_numpy(m.gate_proj.weight),  # pyright: ignore[reportArgumentType]  (numpy weights: the modules take any array)
            to_numpy(m.up_proj.weight),  # pyright: ignore[reportArgumentType]
            to_numpy(m.down_proj.weight),  # pyright: ignore[reportArgumentType]
            activation=act,
        )
