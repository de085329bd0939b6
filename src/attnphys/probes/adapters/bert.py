"""BERT family (post-LN; BERT, RoBERTa) (theory: docs/theory/probes.md §2.1)."""

from __future__ import annotations

from attnphys.probes.adapters._base import (
    HF_ACTIVATIONS,
    AbstractAdapter,
    HeadWeights,
    base_model,
    output_heads,
    split_heads,
    to_numpy,
)


def _layernorm(m):
    from attnphys.clouds.norms import LayerNorm

    return LayerNorm(to_numpy(m.weight), to_numpy(m.bias), float(m.eps))  # pyright: ignore[reportArgumentType]  (numpy weights: the modules take any array)


class BertAdapter(AbstractAdapter):
    """Separate q/k/v ``Linear`` maps with biases, LayerNorm after each residual add
    (theory: docs/theory/probes.md §2.1)."""

    family = "bert"
    model_types = ("bert", "roberta")
    pre_ln = False
    norm = "layernorm"
    attn_input_stage = "input"
    causal = False

    def layers(self, model):
        return list(base_model(model).encoder.layer)

    def hooks(self, layer):
        return {
            "input": (layer, "in"),
            "attn_out": (layer.attention.output.dense, "out"),
            "attn_add": (layer.attention.output.LayerNorm, "in"),
            "attn_norm": (layer.attention.output.LayerNorm, "out"),
            "mlp_out": (layer.output.dense, "out"),
            "mlp_add": (layer.output.LayerNorm, "in"),
            "mlp_norm": (layer.output.LayerNorm, "out"),
        }

    def heads(self, model, layer):
        H = model.config.num_attention_heads
        s = layer.attention.self
        Wq, bq = split_heads(to_numpy(s.query.weight), to_numpy(s.query.bias), H)
        Wk, bk = split_heads(to_numpy(s.key.weight), to_numpy(s.key.bias), H)
        Wv, bv = split_heads(to_numpy(s.value.weight), to_numpy(s.value.bias), H)
        return HeadWeights(Wq, bq, Wk, bk, Wv, bv, output_heads(to_numpy(layer.attention.output.dense.weight), H))

    def attn_output_bias(self, layer):
        return to_numpy(layer.attention.output.dense.bias)

    def norm_modules(self, model):
        return [(n, m) for n, m in model.named_modules() if type(m).__name__ == "LayerNorm" and ".encoder." in f".{n}."]

    def layer_norms(self, layer):
        return _layernorm(layer.attention.output.LayerNorm), _layernorm(layer.output.LayerNorm)

    def mlp(self, model, layer):
        from attnphys.clouds.mlp import MLP

        act = HF_ACTIVATIONS.get(str(model.config.hidden_act), "gelu")
        return MLP(
            to_numpy(layer.intermediate.dense.weight),  # pyright: ignore[reportArgumentType]  (numpy weights: the modules take any array)
            to_numpy(layer.output.dense.weight),  # pyright: ignore[reportArgumentType]
            to_numpy(layer.intermediate.dense.bias),  # pyright: ignore[reportArgumentType]
            to_numpy(layer.output.dense.bias),  # pyright: ignore[reportArgumentType]
            activation=act,
        )

    def max_positions(self, model):
        """BERT: ``max_position_embeddings``; RoBERTa numbers its positions from ``pad_token_id`` + 1, so two
        fewer fit (514 → 512)."""
        n = super().max_positions(model)
        if n is not None and model.config.model_type == "roberta":
            n -= int(getattr(model.config, "pad_token_id", 1) or 0) + 1
        return n

    def embedding_norm(self, model):
        return _layernorm(base_model(model).embeddings.LayerNorm)
