"""Token clouds pushed through the layers of a pretrained model, sublayer by sublayer, next to
synthetic operators of the same shape (theory: docs/theory/clouds.md §7).

The model's weights are read once through its family adapter (:mod:`attnphys.probes.adapters`) and
every sublayer is applied in JAX: attention with the model's per-head W_q, W_k, W_v, W_o and biases
(β = 1/√d_h), the model's normalizations with their learned affine, and its MLP (plain or gated). An
encoder's cloud is an unordered set of tokens (no positions enter its attention). A decoder reads its
cloud as a sequence in the sampled order: causal attention (token i attends to the tokens j ≤ i) and, in
the Llama family, queries and keys rotated at the positions 0 … N−1 — exactly the model's attention on
that sequence. Three operator sets are compared on the same initial cloud:

* ``model``: the model's own weights;
* ``random``: Gaussian matrices with the same Frobenius norm as each of the model's matrices (per head
  for W_q, W_k, W_v, W_o), no biases, the model's normalizations, the same mask and positions;
* ``theory``: the probabilistic block — one head with Q = K = V = O = I and β = 1/√D, the family's
  normalization without affine, no MLP; causal for a decoder (docs/theory/particles.md §2.4), no positions.

torch is imported only to read the model.
"""

from __future__ import annotations

import time
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from attnphys._arguments import checked
from attnphys.clouds.attention import SoftmaxAttention
from attnphys.clouds.mlp import MLP, GatedMLP
from attnphys.clouds.norms import norm_class
from attnphys.clouds.stats import LONG_NAMES, STATISTICS, cloud_statistics

OPERATORS = ("model", "random", "theory")
THROUGH_INITS = ("gaussian", "tokens")


class RotaryAttention(SoftmaxAttention):
    """Softmax attention whose queries and keys are rotated at the positions 0 … N−1 of the cloud's tokens
    (rotary positions, docs/theory/probes.md §2.3): s_ij = β (R_i q_i)·(R_j k_j), with R_p rotating every
    coordinate pair (a, a + d/2) by the angle p·f_a and scaling it by ``scaling``.

    Attributes:
        inv_freq: (d/2,) angular frequencies f_a. scaling: factor on cos and sin.
    """

    inv_freq: jax.Array | None = None
    scaling: float = 1.0

    def _rotate(self, Y):
        ang = jnp.arange(Y.shape[-2], dtype=Y.dtype)[:, None] * jnp.asarray(self.inv_freq, Y.dtype)[None, :]
        cos, sin = jnp.cos(ang) * self.scaling, jnp.sin(ang) * self.scaling
        half = Y.shape[-1] // 2
        y1, y2 = Y[..., :half], Y[..., half:]
        return jnp.concatenate([y1 * cos - y2 * sin, y2 * cos + y1 * sin], axis=-1)

    def scores(self, X):
        q, k = self._rotate(self._maps(self.Q, self.bq, X)), self._rotate(self._maps(self.K, self.bk, X))
        S = self.beta * jnp.einsum("hik,hjk->hij", q, k)
        H = self.n_heads
        return jnp.broadcast_to(S, (H,) + S.shape[1:]) if S.shape[0] != H else S


class LayerOperators(eqx.Module):
    """One layer as cloud operators: attention (without residual), the two norms in stage order
    (``attn_norm``, ``mlp_norm``), and the MLP (None: no MLP sublayer)."""

    attention: Any
    norm1: Any
    norm2: Any
    mlp: Any


def _attention(like, **weights):
    """Attention of the same kind, mask and positions as ``like`` with other weights."""
    if isinstance(like, RotaryAttention):
        return RotaryAttention(causal=like.causal, inv_freq=like.inv_freq, scaling=like.scaling, **weights)
    return SoftmaxAttention(causal=like.causal, **weights)


def model_operators(model, adapter, causal: bool | None = None) -> list[LayerOperators]:
    """The model's layers as cloud operators (theory: docs/theory/clouds.md §7): the family's causal mask
    (``causal``: None for the family's own, or forced on or off) and its rotary positions, if any."""
    causal = adapter.causal if causal is None else causal
    rot = adapter.rotary(model)
    ops = []
    for layer in adapter.layers(model):
        hw = adapter.heads(model, layer)
        bo = adapter.attn_output_bias(layer)
        weights = dict(
            beta=1.0 / np.sqrt(hw.head_dim),
            Q=jnp.asarray(hw.Wq),
            K=jnp.asarray(hw.Wk),
            V=jnp.asarray(hw.Wv),
            O=jnp.asarray(hw.Wo),
            bq=jnp.asarray(hw.bq),
            bk=jnp.asarray(hw.bk),
            bv=jnp.asarray(hw.bv),
            bo=None if bo is None else jnp.asarray(bo),
        )
        if rot is None:
            attn = SoftmaxAttention(causal=causal, **weights)
        else:
            attn = RotaryAttention(causal=causal, inv_freq=jnp.asarray(rot.inv_freq), scaling=rot.scaling, **weights)
        n1, n2 = adapter.layer_norms(layer)
        ops.append(LayerOperators(attn, n1, n2, adapter.mlp(model, layer)))
    return ops


def _matched(key, M):
    """Gaussian matrices with the Frobenius norm of each M[h] (leading axis = heads)."""
    M = jnp.asarray(M)
    G = jax.random.normal(key, M.shape, M.dtype)
    axes = tuple(range(1, M.ndim))
    return G * jnp.linalg.norm(M, axis=axes, keepdims=True) / jnp.linalg.norm(G, axis=axes, keepdims=True)


def random_operators(ops: list[LayerOperators], seed: int = 0) -> list[LayerOperators]:
    """Random weights of the same shapes and Frobenius norms as ``ops`` (per head, per matrix), no biases,
    the same normalizations, mask and positions (theory: docs/theory/clouds.md §6.3, §7)."""
    key = jax.random.PRNGKey(seed)
    out = []
    for op in ops:
        key, *ks = jax.random.split(key, 8)
        a = op.attention
        attn = _attention(
            a,
            beta=a.beta,
            Q=_matched(ks[0], a.Q),
            K=_matched(ks[1], a.K),
            V=_matched(ks[2], a.V),
            O=_matched(ks[3], a.O),
        )
        m = op.mlp
        if isinstance(m, GatedMLP):
            mlp = GatedMLP(
                _matched(ks[4], m.Wg[None])[0],
                _matched(ks[5], m.Wu[None])[0],
                _matched(ks[6], m.Wd[None])[0],
                activation=m.activation,
            )
        else:
            mlp = MLP(_matched(ks[4], m.W1[None])[0], _matched(ks[5], m.W2[None])[0], activation=m.activation)
        out.append(LayerOperators(attn, op.norm1, op.norm2, mlp))
    return out


def theory_operators(n_layers: int, dim: int, norm: str, causal: bool = False) -> list[LayerOperators]:
    """The probabilistic block of the same depth: identity weights, β = 1/√D, the family's norm
    without affine, no MLP; ``causal`` for a decoder (theory: docs/theory/clouds.md §2, §7,
    docs/theory/particles.md §2.4)."""
    attn = SoftmaxAttention(beta=1.0 / np.sqrt(dim), causal=causal)
    n = norm_class(norm)()
    return [LayerOperators(attn, n, n, None)] * n_layers


def push(ops: list[LayerOperators], X0, pre_ln: bool) -> list[dict[str, jax.Array]]:
    """Every stage of every layer for the cloud X0 (N, D) (theory: docs/theory/probes.md §1):
    per layer a dict stage → (N, D) cloud, in the family's stage order; without an MLP the
    ``mlp_out`` stage is None and the add is the identity."""
    X = jnp.asarray(X0)
    out = []
    for op in ops:
        s = {"input": X}
        if pre_ln:
            s["attn_norm"] = op.norm1(X)
            s["attn_out"] = op.attention(s["attn_norm"])
            s["attn_add"] = X + s["attn_out"]
            s["mlp_norm"] = op.norm2(s["attn_add"])
            s["mlp_out"] = None if op.mlp is None else op.mlp(s["mlp_norm"])
            s["mlp_add"] = s["attn_add"] if op.mlp is None else s["attn_add"] + s["mlp_out"]
            X = s["mlp_add"]
        else:
            s["attn_out"] = op.attention(X)
            s["attn_add"] = X + s["attn_out"]
            s["attn_norm"] = op.norm1(s["attn_add"])
            s["mlp_out"] = None if op.mlp is None else op.mlp(s["attn_norm"])
            s["mlp_add"] = s["attn_norm"] if op.mlp is None else s["attn_norm"] + s["mlp_out"]
            s["mlp_norm"] = op.norm2(s["mlp_add"])
            X = s["mlp_norm"]
        out.append(s)
    return out


def initial_model_cloud(adapter, model, init: str, tokens: int, noise: float = 0.1, seed: int = 0) -> np.ndarray:
    """A cloud in the model's input space (theory: docs/theory/clouds.md §7): ``gaussian`` samples
    N(μ, Σ) with the mean and covariance of the token-embedding matrix; ``tokens`` takes random rows of
    it plus Gaussian noise of ``noise`` times each feature's standard deviation. The family's embedding
    normalization (BERT's LayerNorm) is applied after."""
    E = adapter.embeddings(model)
    rng = np.random.default_rng(seed)
    mu, C = E.mean(0), np.cov(E, rowvar=False)
    if init == "gaussian":
        w, V = np.linalg.eigh(C)
        X = mu + (rng.standard_normal((tokens, E.shape[1])) * np.sqrt(np.maximum(w, 0))) @ V.T
    elif init == "tokens":
        X = E[rng.integers(0, E.shape[0], tokens)] + noise * np.sqrt(np.diag(C)) * rng.standard_normal(
            (tokens, E.shape[1])
        )
    else:
        raise ValueError(f"unknown init {init!r}; choose from {', '.join(THROUGH_INITS)}")
    dtype = jnp.result_type(float)
    with np.errstate(over="ignore", invalid="ignore"):
        power = np.square(X.astype(dtype)).sum(axis=1)
    if not np.all(np.isfinite(power)):
        from attnphys.errors import InputError

        raise InputError(
            f"the cloud's squared norms overflow {np.dtype(dtype).name} (largest entry {np.max(np.abs(X)):.3g}), "
            "so every statistic would be meaningless; lower it",
            "--noise",
        )
    n = adapter.embedding_norm(model)
    return np.asarray(n(jnp.asarray(X))) if n is not None else X


def _statistics(states, stages, key, out, name) -> None:
    """Cloud statistics of every stage of every layer into ``out`` (layer, stage, statistic)."""
    for layer, st in enumerate(states):
        prev = None
        for s, stage in enumerate(stages):
            X = st[stage]
            if X is None:
                continue
            if not bool(jnp.all(jnp.isfinite(X))):
                raise FloatingPointError(f"non-finite cloud at layer {layer}, stage {stage} ({name} operators)")
            X = X.astype(jnp.float32)  # statistics in single precision, as the probes
            r = cloud_statistics(X, prev, jax.random.fold_in(key, s))
            out[layer, s] = [r[k] for k in STATISTICS]
            prev = X


@checked
def through_model(
    model="minilm",
    init: str = "gaussian",
    tokens: int = 1024,
    noise: float = 0.1,
    seed: int = 0,
    *,
    progress: bool = False,
    log=None,
) -> xr.Dataset:
    """Push a sampled cloud through every sublayer of a pretrained model and of the synthetic operator
    sets; statistics at every stage (theory: docs/theory/clouds.md §7).

    Args:
        model: a short name (``minilm``, ``smollm2``), a local model folder, a hub name, or a loaded
            transformers model. init: ``gaussian`` or ``tokens`` (:func:`initial_model_cloud`). tokens:
            cloud size N. noise: with ``tokens``, the noise in units of each feature's standard
            deviation. seed: seed of the cloud and of the random operators. progress: a progress bar over
            the operator sets. log: called with a line per operator set.

    Returns:
        Dataset: ``stat`` (operator, layer, stage, statistic), with coordinates and attributes
        (model, family, causal, rotary, init, tokens, timings).
    """
    from attnphys.probes.adapters import adapter_for
    from attnphys.probes.models import load_model
    from attnphys.progress import progress_bar

    t0 = time.perf_counter()
    if isinstance(model, str):
        model_name = model
        model, _ = load_model(model, progress=progress, log=log)
    else:
        model_name = str(getattr(model.config, "name_or_path", "") or type(model).__name__)
    ad = adapter_for(model)
    real = model_operators(model, ad)
    X0 = jnp.asarray(initial_model_cloud(ad, model, init, tokens, noise, seed))
    D = X0.shape[1]
    t_load = time.perf_counter() - t0
    sets = {
        "model": real,
        "random": random_operators(real, seed + 1),
        "theory": theory_operators(len(real), D, ad.norm, ad.causal),
    }
    stages = list(ad.stages)
    val = np.full((len(OPERATORS), len(real), len(stages), len(STATISTICS)), np.nan)
    key = jax.random.PRNGKey(seed)
    run = eqx.filter_jit(lambda ops, X: push(ops, X, ad.pre_ln))
    with progress_bar(len(OPERATORS), "operator sets", enabled=progress) as advance:
        for o, name in enumerate(OPERATORS):
            _statistics(run(sets[name], X0), stages, key, val[o], name)
            advance()
            if log:
                log(f"{name} operators: {len(real)} layers ({time.perf_counter() - t0:.1f} s)")
    ds = xr.Dataset(
        {"stat": (("operator", "layer", "stage", "statistic"), val)},
        coords={
            "operator": list(OPERATORS),
            "layer": np.arange(len(real)),
            "stage": stages,
            "statistic": list(STATISTICS),
        },
    )
    ds["stat"].attrs["long_name"] = "token-cloud statistic at a stage of a layer"
    ds["stat"].attrs["statistics"] = "; ".join(f"{k}: {v}" for k, v in LONG_NAMES.items())
    ds["x0_norm_mean"] = ((), float(jnp.mean(jnp.linalg.norm(X0, axis=1))))
    ds["x0_norm_mean"].attrs["long_name"] = "mean token norm of the initial cloud"
    ds.attrs.update(
        model=model_name,
        family=ad.family,
        pre_ln=int(ad.pre_ln),
        norm=ad.norm,
        causal=int(ad.causal),
        rotary=int(ad.rotary(model) is not None),
        init=init,
        tokens=tokens,
        noise=noise,
        seed=seed,
        dim=int(D),
        load_time_s=round(t_load, 2),
        wall_time_s=round(time.perf_counter() - t0, 2),
        operators="model: the model's weights; random: Gaussian weights with the model's Frobenius norms; "
        "theory: identity weights, beta = 1/sqrt(D), norm without affine, no MLP"
        + (
            "; a decoder's cloud is a sequence in the sampled order: causal mask, rotary positions 0..N-1 in the "
            "model and random sets"
            if ad.causal
            else ""
        ),
    )
    return ds


__all__ = [
    "OPERATORS",
    "THROUGH_INITS",
    "RotaryAttention",
    "LayerOperators",
    "model_operators",
    "random_operators",
    "theory_operators",
    "push",
    "initial_model_cloud",
    "through_model",
]
