"""GPT-2 family (pre-LN, fused Conv1D projections) (theory: docs/theory/probes.md §2.2)."""

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


class GPT2Adapter(AbstractAdapter):
    """``Conv1D`` weights are stored (in, out), i.e. transposed, and q/k/v are fused in ``c_attn``
    = [q | k | v]; they are split and transposed here (theory: docs/theory/probes.md §2.2)."""

    family = "gpt2"
    model_types = ("gpt2",)
    pre_ln = True
    norm = "layernorm"
    attn_input_stage = "attn_norm"
    causal = True

    def layers(self, model):
        return list(base_model(model).h)

    def hooks(self, block):
        return {
            "input": (block, "in"),
            "attn_norm": (block.ln_1, "out"),
            "attn_out": (block.attn.c_proj, "out"),
            "attn_add": (block.ln_2, "in"),
            "mlp_norm": (block.ln_2, "out"),
            "mlp_out": (block.mlp, "out"),
            "mlp_add": (block, "out"),
        }

    def heads(self, model, block):
        H = model.config.n_head
        W = to_numpy(block.attn.c_attn.weight).T  # (3D, D)
        b = to_numpy(block.attn.c_attn.bias)
        D = W.shape[1]
        Wq, bq = split_heads(W[:D], b[:D], H)
        Wk, bk = split_heads(W[D : 2 * D], b[D : 2 * D], H)
        Wv, bv = split_heads(W[2 * D :], b[2 * D :], H)
        return HeadWeights(Wq, bq, Wk, bk, Wv, bv, output_heads(to_numpy(block.attn.c_proj.weight).T, H))

    def attn_output_bias(self, block):
        return to_numpy(block.attn.c_proj.bias)

    def norm_modules(self, model):
        return [(n, m) for n, m in model.named_modules() if type(m).__name__ == "LayerNorm"]

    def layer_norms(self, block):
        return _layernorm(block.ln_1), _layernorm(block.ln_2)

    def mlp(self, model, block):
        from attnphys.clouds.mlp import MLP

        act = HF_ACTIVATIONS.get(str(model.config.activation_function), "gelu_tanh")
        return MLP(
            to_numpy(block.mlp.c_fc.weight).T,  # pyright: ignore[reportArgumentType]  (numpy weights: the modules take any array)
            to_numpy(block.mlp.c_proj.weight).T,  # pyright: ignore[reportArgumentType]
            to_numpy(block.mlp.c_fc.bias),  # pyright: ignore[reportArgumentType]
            to_numpy(block.mlp.c_proj.bias),  # pyright: ignore[reportArgumentType]
            activation=act,
        )
