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
        Wq, Wk, Wv: (H, d_h, D). bq, bk, bv: (H, d_h). Wo: (H, D, d_h).
    """

    Wq: np.ndarray
    bq: np.ndarray
    Wk: np.ndarray
    bk: np.ndarray
    Wv: np.ndarray
    bv: np.ndarray
    Wo: np.ndarray

    @property
    def n_heads(self) -> int:
        return self.Wq.shape[0]

    @property
    def head_dim(self) -> int:
        return self.Wq.shape[1]

    def bilinear(self) -> np.ndarray:
        """W_q,hᵀ W_k,h / √d_h per head: (H, D, D), the score form x ↦ xᵀ A y (biases aside)
        (theory: docs/theory/probes.md §3.3)."""
        return np.einsum("hcd,hce->hde", self.Wq, self.Wk) / np.sqrt(self.head_dim)


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
        attn_input_stage: the stage that feeds the attention. causal: the attention is causal.
        rotary: the scores carry rotary position rotations.
    """

    family: ClassVar[str]
    model_types: ClassVar[tuple[str, ...]]
    pre_ln: ClassVar[bool]
    norm: ClassVar[str]
    attn_input_stage: ClassVar[str]
    causal: ClassVar[bool]
    rotary: ClassVar[bool] = False

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
