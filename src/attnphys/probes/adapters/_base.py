"""The architecture-adapter interface: hook points and per-head weights from raw checkpoints
(theory: docs/theory/probes.md §1, §2).

Stages captured per layer (names shared by all families; order = order of computation):

* post-LN (BERT family): ``input → attn_out → attn_add → attn_norm → mlp_out → mlp_add → mlp_norm``
  (``attn_out`` is the attention sublayer output W_o·context + b_o before the residual add; ``attn_add``
  = input + attn_out; ``attn_norm`` its LayerNorm, the MLP input; ``mlp_norm`` the layer output);
* pre-LN (GPT-2, Llama family): ``input → attn_norm → attn_out → attn_add → mlp_norm → mlp_out → mlp_add``
  (``attn_norm`` is the norm before attention — the attention input; ``mlp_add`` the layer output).

Nothing here imports torch: the adapters only call methods of the model's own tensors.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

POST_LN_STAGES = ("input", "attn_out", "attn_add", "attn_norm", "mlp_out", "mlp_add", "mlp_norm")
PRE_LN_STAGES = ("input", "attn_norm", "attn_out", "attn_add", "mlp_norm", "mlp_out", "mlp_add")

HF_ACTIVATIONS = {
    "gelu": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
    "relu": "relu",
    "silu": "silu",
    "swish": "silu",
}
"""Hugging Face activation names → :data:`attnphys.clouds.mlp.ACTIVATIONS`."""


@dataclass(frozen=True)
class HeadWeights:
    """Per-head weights of one attention sublayer (theory: docs/theory/probes.md §2).

    The score of query token x and key token y in head h is (W_q,h x + b_q,h)·(W_k,h y + b_k,h)/√d_h and
    the head's contribution to the sublayer output is W_o,h Σ_y softmax(·) (W_v,h y + b_v,h).

    Attributes:
        Wq, Wk, Wv: (H, d_h, D). bq, bk, bv: (H, d_h). Wo: (H, D, d_h). kv_head: (H,) the key/value head
            each query head reads (grouped-query attention: several query heads share one; W_k, W_v, b_k,
            b_v are already repeated per query head); None: head h reads key/value head h.
    """

    Wq: np.ndarray
    bq: np.ndarray
    Wk: np.ndarray
    bk: np.ndarray
    Wv: np.ndarray
    bv: np.ndarray
    Wo: np.ndarray
    kv_head: np.ndarray | None = None

    @property
    def n_heads(self) -> int:
        return self.Wq.shape[0]

    @property
    def head_dim(self) -> int:
        return self.Wq.shape[1]

    def bilinear(self, rotation: np.ndarray | None = None) -> np.ndarray:
        """W_q,hᵀ R W_k,h / √d_h per head: (H, D, D), the score form x ↦ xᵀ A y (biases aside); R (d_h, d_h)
        is the identity (offset 0, or no rotary positions) or a rotary rotation averaged over offsets
        (:meth:`Rotary.offset_average`) (theory: docs/theory/probes.md §2.3, §3.3)."""
        Wk = self.Wk if rotation is None else np.einsum("ce,hed->hcd", rotation, self.Wk)
        return np.einsum("hcd,hce->hde", self.Wq, Wk) / np.sqrt(self.head_dim)

    def kv_heads(self) -> np.ndarray:
        """(H,) the key/value head of every query head."""
        return np.arange(self.n_heads) if self.kv_head is None else np.asarray(self.kv_head)


@dataclass(frozen=True)
class Rotary:
    """Rotary positions (theory: docs/theory/probes.md §2.3): at position p, every pair of coordinates
    (a, a + d_h/2) of a query or key is rotated by the angle p·f_a and scaled by ``scaling`` (the
    transformers convention, ``rotate_half``), so the score of query position i on key position j is
    qᵀ R(j − i) k with R(r) = scaling² [[cos rf, −sin rf], [sin rf, cos rf]] blockwise.

    Attributes:
        inv_freq: (d_h/2,) angular frequencies f_a. scaling: factor on cos and sin (1 for plain rotary).
    """

    inv_freq: np.ndarray
    scaling: float = 1.0

    def apply(self, X: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """X (..., n, d_h) rotated at ``positions`` (n,)."""
        ang = np.asarray(positions, float)[:, None] * np.asarray(self.inv_freq, float)[None, :]
        cos, sin = np.cos(ang) * self.scaling, np.sin(ang) * self.scaling
        half = X.shape[-1] // 2
        x1, x2 = X[..., :half], X[..., half:]
        return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)

    def matrix(self, offset: float) -> np.ndarray:
        """(d_h, d_h) R(offset): the rotation between a query and a key ``offset`` positions apart."""
        return self.offset_average(np.array([offset]), np.array([1.0]))

    def offset_average(self, offsets: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """(d_h, d_h) Σ_r w_r R(r) over key-minus-query ``offsets`` r with weights w (summing to 1)."""
        ang = np.asarray(offsets, float)[:, None] * np.asarray(self.inv_freq, float)[None, :]
        w = np.asarray(weights, float)[:, None]
        c, s = (w * np.cos(ang)).sum(0), (w * np.sin(ang)).sum(0)
        half = c.size
        R = np.zeros((2 * half, 2 * half))
        i = np.arange(half)
        R[i, i] = R[i + half, i + half] = c
        R[i, i + half], R[i + half, i] = -s, s
        return R * self.scaling**2


def base_model(model):
    """The transformer body of a loaded model: the model itself for a base model (``LlamaModel``,
    ``BertModel``, ``GPT2Model``), the body inside a model with a head (``LlamaForCausalLM``,
    ``GPT2LMHeadModel``, ``BertForMaskedLM``: transformers' ``base_model``)."""
    return getattr(model, "base_model", model)


def to_numpy(t) -> np.ndarray:
    """A torch tensor (or parameter) as a float64 numpy array."""
    return t.detach().double().cpu().numpy()


def split_heads(W: np.ndarray, b: np.ndarray | None, H: int):
    """(H·d_h, D) weight and (H·d_h,) bias → (H, d_h, D), (H, d_h)."""
    dh = W.shape[0] // H
    return W.reshape(H, dh, W.shape[1]), (np.zeros((H, dh)) if b is None else b.reshape(H, dh))


def output_heads(Wo: np.ndarray, H: int) -> np.ndarray:
    """(D, H·d_h) output projection → (H, D, d_h)."""
    return Wo.reshape(Wo.shape[0], H, -1).transpose(1, 0, 2)


class AbstractAdapter(abc.ABC):
    """How to read one architecture family (theory: docs/theory/probes.md §1, §2).

    Class attributes:
        family: ``bert``, ``gpt2``, ``llama``. model_types: the ``config.model_type`` values served.
        pre_ln: norms before the sublayers (GPT-2, Llama) rather than after the residual adds (BERT).
        norm: the name of the family's normalization in :data:`attnphys.clouds.norms.NORMS`.
        attn_input_stage: the stage that feeds the attention. causal: the attention is causal (a token
            attends to itself and the tokens before it).
    """

    family: ClassVar[str]
    model_types: ClassVar[tuple[str, ...]]
    pre_ln: ClassVar[bool]
    norm: ClassVar[str]
    attn_input_stage: ClassVar[str]
    causal: ClassVar[bool]

    @property
    def stages(self) -> tuple[str, ...]:
        return PRE_LN_STAGES if self.pre_ln else POST_LN_STAGES

    @abc.abstractmethod
    def layers(self, model) -> list:
        """The model's transformer layers, in order."""

    @abc.abstractmethod
    def hooks(self, layer) -> dict[str, tuple[Any, str]]:
        """stage → (module, ``"in"`` or ``"out"``): where each stage is read in one layer."""

    @abc.abstractmethod
    def heads(self, model, layer) -> HeadWeights:
        """Per-head weights of the layer's attention, from the raw parameters."""

    @abc.abstractmethod
    def attn_output_bias(self, layer) -> np.ndarray | None:
        """(D,) bias b_o of the attention output projection, or None."""

    @abc.abstractmethod
    def norm_modules(self, model) -> list[tuple[str, Any]]:
        """(name, module) of every normalization whose forward may be swapped."""

    @abc.abstractmethod
    def layer_norms(self, layer) -> tuple[Any, Any]:
        """The layer's two normalizations (the ``attn_norm`` and ``mlp_norm`` stages) as
        :class:`attnphys.clouds.norms.AbstractNorm` objects with their learned affine parameters."""

    @abc.abstractmethod
    def mlp(self, model, layer):
        """The layer's MLP as an :class:`attnphys.clouds.mlp.MLP` or :class:`~attnphys.clouds.mlp.GatedMLP`."""

    def embeddings(self, model) -> np.ndarray:
        """(V, D) token embedding matrix."""
        return to_numpy(model.get_input_embeddings().weight)

    def embedding_norm(self, model):
        """The normalization applied to the embeddings before the first layer (a norm object), or None."""
        return None

    def windows(self, model) -> list[int | None]:
        """Per layer, the sliding window W of its attention (a query at position i attends to the keys at
        i − W < j ≤ i) or None (full attention: causal or bidirectional)."""
        return [None] * len(self.layers(model))

    def max_positions(self, model) -> int | None:
        """The most token positions the model embeds (``max_position_embeddings``, GPT-2's ``n_positions``): a
        longer sentence does not fit its position table (BERT, GPT-2) or lies beyond the context it was
        trained on (rotary models); None when the config does not say (theory: docs/theory/probes.md §1.1)."""
        cfg = model.config
        n = getattr(cfg, "max_position_embeddings", None) or getattr(cfg, "n_positions", None)
        return None if n is None else int(n)

    def rotary(self, model) -> Rotary | None:
        """The rotary positions of the scores, or None (positions enter through the embeddings)."""
        return None


def project(W: np.ndarray, b: np.ndarray, X: np.ndarray) -> np.ndarray:
    """(H, n, d) per-head projections W_h x + b_h of the tokens X (n, D), W (H, d, D), b (H, d)."""
    return np.matmul(W, X.T).transpose(0, 2, 1) + b[:, None, :]


def set_attn_implementation(model, impl: str) -> None:
    """Switch the model (and every submodule sharing or copying its config) to the attention ``impl``."""
    setter = getattr(model, "set_attn_implementation", None)
    if callable(setter):
        try:
            setter(impl)
            return
        except (ValueError, ImportError, TypeError, AttributeError):  # older transformers: set the config
            pass
    for mod in model.modules() if hasattr(model, "modules") else [model]:
        cfg = getattr(mod, "config", None)
        if cfg is not None and hasattr(cfg, "_attn_implementation"):
            cfg._attn_implementation = impl
