"""The N→∞ mean-field map of the simplified self-attention network (spec ``dmft.md`` §3).

Pure JAX functions over small arrays; batch them with ``jax.vmap``. The state is the context window
``(A, pe, n)``: the last L attention outputs (row 0 newest), their positional codes, and how many rows
are filled (spec §3.3). One step (spec §3.4)::

    u_{d,s}   = tanh(β_o s_o s·A_d)
    m^α_d     = (1-ε) 2^{-(M-1)} Σ_s K^α_{s,·} u_{d,s} + (ε'/P) W^{α,pe} pe_d
    w_d       = softmax_d(γ m^q_0 · m^k_d)          over the filled rows d < n
    A^new     = Σ_d w_d m^v_d
    A'        = [A^new; A_0; …; A_{L-2}],  pe' = roll(pe, +1),  n' = min(n+1, L)
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnphys.dmft.config import DMFTConfig, gamma_of
from attnphys.dmft.correlations import Correlations, sign_vectors

OBSERVABLES: tuple[str, ...] = ("att", "mo", "mo_se", "mv", "mq", "mk")
"""Per-step records (spec §3.4 step 3 and 5), each an M-vector."""


class Couplings(NamedTuple):
    """Fixed arrays of the map (spec §3.1).

    signs: (S, M) sign vectors s ∈ 𝒮_M; S = 2^{M-1}.
    K: (4, S, M) signed moments K^α = Σ C^α times 2^{-(M-1)}, family order (o, v, q, k).
    W_pe: (4, M, P) positional weights.
    """

    signs: jax.Array
    K: jax.Array
    W_pe: jax.Array


class Scalars(NamedTuple):
    """Parameters that can be swept (each a scalar, or a batch axis under ``vmap``).

    beta_o: β_o s_o, the output gain (the output multiplier folded in).
    gamma: attention gain γ = β_att s_att / √M.
    eps: positional weight ε of the semantic factor (1 - ε).
    """

    beta_o: jax.Array
    gamma: jax.Array
    eps: jax.Array


class Window(NamedTuple):
    """Context window state (spec §3.3).

    A: (L, M) attention outputs, row 0 newest.
    pe: (L, P) positional codes (±1) of the tokens generated from the rows of A.
    n: () int, number of filled rows (1 ≤ n ≤ L).
    """

    A: jax.Array
    pe: jax.Array
    n: jax.Array


def couplings(corr: Correlations, dtype=None) -> Couplings:
    """Pack :class:`Correlations` for the map; the 2^{-(M-1)} is folded into K."""
    dtype = dtype or jnp.result_type(float)
    M = corr.M
    return Couplings(
        signs=jnp.asarray(sign_vectors(M), dtype=dtype),
        K=jnp.asarray(corr.K / 2 ** (M - 1), dtype=dtype),
        W_pe=jnp.asarray(corr.W_pe, dtype=dtype),
    )


def scalars(cfg: DMFTConfig, *, beta_o=None, beta_att=None, epsilon=None, dtype=None) -> Scalars:
    """Sweepable scalars from a config, with optional overrides (floats or arrays: a batch).

    γ is recomputed from the (possibly overridden) β_att, and ε is passed through, so sweeps of
    β_att and ε really change the map (unlike the reference's setters, spec §8 item 4).
    """
    dtype = dtype or jnp.result_type(float)
    bo = cfg.beta_o if beta_o is None else beta_o
    ba = cfg.beta_att if beta_att is None else beta_att
    ep = cfg.epsilon if epsilon is None else epsilon
    bo, ba, ep = (np.asarray(x, dtype=np.float64) for x in (bo, ba, ep))
    return Scalars(
        beta_o=jnp.asarray(bo * cfg.scaling_o, dtype=dtype),
        gamma=jnp.asarray(gamma_of(ba, cfg.scaling_att, cfg.M), dtype=dtype),
        eps=jnp.asarray(ep, dtype=dtype),
    )


def positional_overlap(cp: Couplings, eps: jax.Array, pe: jax.Array) -> jax.Array:
    """m^α_{pe} = (ε'/P) W^{α,pe} p with ε' = 1 - (1 - ε) (spec §3.2).

    Args:
        pe: (..., P) positional codes. Returns (4, ..., M); zeros when P = 0.
    """
    P = cp.W_pe.shape[-1]
    if P == 0:
        return jnp.zeros((4,) + pe.shape[:-1] + (cp.W_pe.shape[1],), dtype=cp.W_pe.dtype)
    eps_pe = 1.0 - (1.0 - eps)
    return (eps_pe / P) * jnp.einsum("xap,...p->x...a", cp.W_pe, pe)


def semantic_overlap(cp: Couplings, sc: Scalars, A: jax.Array) -> jax.Array:
    """m^α_{se}(A) = (1-ε) 2^{-(M-1)} Σ_s K^α_s tanh(β_o s_o s·A) (spec §3.1).

    Args:
        A: (..., M) attention outputs. Returns (4, ..., M).
    """
    u = jnp.tanh(sc.beta_o * jnp.einsum("sm,...m->...s", cp.signs, A))
    return (1.0 - sc.eps) * jnp.einsum("xsa,...s->x...a", cp.K, u)


def overlaps(cp: Couplings, sc: Scalars, A: jax.Array, pe: jax.Array) -> jax.Array:
    """All four overlaps m^α = m^α_se + m^α_pe of tokens generated from A with codes pe: (4, ..., M)."""
    return semantic_overlap(cp, sc, A) + positional_overlap(cp, sc.eps, pe)


def step(cp: Couplings, sc: Scalars, win: Window, mo_se_paper: bool = True) -> tuple[Window, dict]:
    """One step z_t ↦ z_{t+1} of the mean-field map and the step's records (spec §3.4).

    ``mo_se_paper`` selects the recording convention of ``mo_se``: with the factor (1-ε) (the
    reference's mean-field records, spec §3.4) or without it (spec §2.3).

    Returns:
        (new window, records) with records ``att, mo, mo_se, mv, mq, mk`` each of shape (M,).
    """
    L = win.A.shape[0]
    m_se = semantic_overlap(cp, sc, win.A)  # (4, L, M)
    m = m_se + positional_overlap(cp, sc.eps, win.pe)
    mo, mv, mq, mk = m[0, 0], m[1], m[2, 0], m[3]
    valid = jnp.arange(L) < win.n
    scores = jnp.where(valid, sc.gamma * (mk @ mq), -jnp.inf)
    w = jax.nn.softmax(scores)
    att = w @ mv
    new = Window(
        A=jnp.concatenate([att[None], win.A[:-1]], axis=0),
        pe=jnp.roll(win.pe, 1, axis=0),
        n=jnp.minimum(win.n + 1, L),
    )
    mo_se = m_se[0, 0] if mo_se_paper else m_se[0, 0] / (1.0 - sc.eps)
    return new, dict(att=att, mo=mo, mo_se=mo_se, mv=mv[0], mq=mq, mk=mk[0])
