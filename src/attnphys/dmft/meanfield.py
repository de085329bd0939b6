"""The N→∞ mean-field map of the simplified self-attention network (theory: docs/theory/dmft.md §3).

Pure JAX functions over small arrays; batch them with ``jax.vmap``. The context window ``(A, pe, n)``
holds the last L attention outputs (row 0 newest), their positional codes and how many rows are filled
(theory: docs/theory/dmft.md §3.3). One step (§3.4)::

    u_{d,s}   = tanh(β_o s_o s·A_d)
    m^α_d     = (1-ε) 2^{-(M-1)} Σ_s K^α_{s,·} u_{d,s} + (ε'/P) W^{α,pe} pe_d
    w_d       = softmax_d(γ m^q_0 · m^k_d)          over the filled rows d < n
    A^new     = Σ_d w_d m^v_d
    A'        = [A^new; A_0; …; A_{L-2}],  pe' = roll(pe, +1),  n' = min(n+1, L)

The overlaps of the rows d ≥ 1 are last step's overlaps of rows d − 1 (rows and codes shift together),
so the engine carries them in a :class:`State` and computes one new row per step (§3.7):
:func:`advance` is that cached step, :func:`fill` builds the cache from a window, and :func:`step` —
``fill`` then ``advance`` — is the map on windows that Newton and Floquet differentiate. Tangent
dynamics uses the closed-form Jacobian row of §6.1 with the overlaps' slopes cached the same way (§6.3)
(:class:`Slopes`, :func:`advance_tangent`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnphys import _deprecated
from attnphys.dmft.config import DMFTConfig, MoSeConvention, gamma_of
from attnphys.dmft.correlations import Correlations, sign_vectors
from attnphys.dmft.observables import records


class Couplings(NamedTuple):
    """Fixed arrays of the map (theory: docs/theory/dmft.md §3.1).

    signs: (S, M) sign vectors s ∈ 𝒮_M; S = 2^{M-1}.
    K: (4, S, M) signed moments K^α = Σ C^α times 2^{-(M-1)}, family order (o, v, q, k).
    W_pe: (4, M, P) positional weights.
    """

    signs: jax.Array
    K: jax.Array
    W_pe: jax.Array


class Scalars(NamedTuple):
    """Parameters that vary per trajectory (each a scalar, or a batch axis under ``vmap``).

    gain_o: the output gain β_o·s_o (the output inverse temperature times its multiplier).
    gamma: attention gain γ = β_att s_att / √M.
    eps: positional weight ε of the semantic factor (1 - ε).
    """

    gain_o: jax.Array
    gamma: jax.Array
    eps: jax.Array


class Window(NamedTuple):
    """Context window (theory: docs/theory/dmft.md §3.3).

    A: (L, M) attention outputs, row 0 newest.
    pe: (L, P) positional codes (±1) of the tokens generated from the rows of A.
    n: () int, number of filled rows (1 ≤ n ≤ L).
    """

    A: jax.Array
    pe: jax.Array
    n: jax.Array


class State(NamedTuple):
    """A window with the overlaps of its tokens (theory: docs/theory/dmft.md §3.7).

    A, pe, n: the window. mv, mk: (L, M) value and key overlaps of the token of every row.
    m0: (4, M) all four overlaps of the newest token (row 0). se0: (4, M) their semantic parts.
    """

    A: jax.Array
    pe: jax.Array
    n: jax.Array
    mv: jax.Array
    mk: jax.Array
    m0: jax.Array
    se0: jax.Array

    @property
    def window(self) -> Window:
        return Window(self.A, self.pe, self.n)


class Slopes(NamedTuple):
    """Derivatives of the overlaps of every row's token with respect to its row of A (theory:
    docs/theory/dmft.md §6.1, §6.3): like the overlaps, they move down the window with their row.

    gv, gk: (L, M, M) G^v_d = ∂m^v_d/∂A_d and G^k_d = ∂m^k_d/∂A_d. gq0: (M, M) G^q_0 of the newest token.
    """

    gv: jax.Array
    gk: jax.Array
    gq0: jax.Array


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
    """Per-trajectory scalars from a config, with optional overrides (floats or arrays: a batch).

    γ is recomputed from the (possibly overridden) β_att, and ε is passed through, so sweeps of
    β_att and ε really change the map (theory: docs/theory/dmft.md §5.4).
    """
    dtype = dtype or jnp.result_type(float)
    bo = cfg.beta_o if beta_o is None else beta_o
    ba = cfg.beta_att if beta_att is None else beta_att
    ep = cfg.epsilon if epsilon is None else epsilon
    bo, ba, ep = (np.asarray(x, dtype=np.float64) for x in (bo, ba, ep))
    return Scalars(
        gain_o=jnp.asarray(bo * cfg.scaling_o, dtype=dtype),
        gamma=jnp.asarray(gamma_of(ba, cfg.scaling_att, cfg.M), dtype=dtype),
        eps=jnp.asarray(ep, dtype=dtype),
    )


def positional_overlap(cp: Couplings, eps: jax.Array, pe: jax.Array) -> jax.Array:
    """m^α_{pe} = (ε'/P) W^{α,pe} p with ε' = 1 - (1 - ε) (theory: docs/theory/dmft.md §3.2, §5.3).

    Args:
        pe: (..., P) positional codes. Returns (4, ..., M); zeros when P = 0.

    The contraction is a sum of products over p, not a matrix product: the codes are ±1, so every product
    is exact and the sum has the same bits however XLA fuses it, and the step needs no matrix kernel for
    it (docs/theory/dmft.md §3.7).
    """
    P = cp.W_pe.shape[-1]
    if P == 0:
        return jnp.zeros((4,) + pe.shape[:-1] + (cp.W_pe.shape[1],), dtype=cp.W_pe.dtype)
    eps_pe = 1.0 - (1.0 - eps)
    W = cp.W_pe.reshape((4,) + (1,) * (pe.ndim - 1) + cp.W_pe.shape[1:])  # (4, 1…, M, P)
    return (eps_pe / P) * _sum(W[..., p] * pe[None, ..., p, None] for p in range(P))


def semantic_overlap(cp: Couplings, sc: Scalars, A: jax.Array) -> jax.Array:
    """m^α_{se}(A) = (1-ε) 2^{-(M-1)} Σ_s K^α_s tanh(β_o s_o s·A) (theory: docs/theory/dmft.md §3.1).

    Args:
        A: (..., M) attention outputs. Returns (4, ..., M).
    """
    u = jnp.tanh(sc.gain_o * jnp.einsum("sm,...m->...s", cp.signs, A))
    return (1.0 - sc.eps) * jnp.einsum("xsa,...s->x...a", cp.K, u)


def _sum(terms) -> jax.Array:
    """Σ of the terms in the order given: the small contractions of the tangent step are written as such
    sums of products, not as dot products, so that no result depends on the batch size (XLA's dot kernels
    may order the additions differently for different batch shapes)."""
    it = iter(terms)
    total = next(it)
    for t in it:
        total = total + t
    return total


def semantic_slopes(cp: Couplings, sc: Scalars, A: jax.Array) -> jax.Array:
    """G^α(A) = ∂m^α_se/∂A = (1-ε) 2^{-(M-1)} β_o s_o Σ_s (1 - u_s²) K^α_s s^T with u_s = tanh(β_o s_o s·A)
    (theory: docs/theory/dmft.md §6.1).

    Args:
        A: (..., M) attention outputs. Returns (4, ..., M, M): [α, …, a, b] = ∂m^α_a/∂A_b.
    """
    u = jnp.tanh(sc.gain_o * jnp.einsum("sm,...m->...s", cp.signs, A))
    g = ((1.0 - sc.eps) * sc.gain_o) * (1.0 - u * u)  # (..., S)
    lead = (1,) * (A.ndim - 1)
    return _sum(
        cp.K[:, s].reshape((4,) + lead + (-1, 1)) * (g[..., s, None] * cp.signs[s])[None, ..., None, :]
        for s in range(cp.signs.shape[0])
    )


def slopes(cp: Couplings, sc: Scalars, A: jax.Array) -> Slopes:
    """The :class:`Slopes` of a window's rows A (L, M) (theory: docs/theory/dmft.md §6.1)."""
    G = semantic_slopes(cp, sc, A)
    return Slopes(G[1], G[3], G[2, 0])


def overlaps(cp: Couplings, sc: Scalars, A: jax.Array, pe: jax.Array) -> jax.Array:
    """All four overlaps m^α = m^α_se + m^α_pe of tokens generated from A with codes pe: (4, ..., M)."""
    return semantic_overlap(cp, sc, A) + positional_overlap(cp, sc.eps, pe)


def fill(cp: Couplings, sc: Scalars, win: Window) -> State:
    """The :class:`State` of a window: the overlaps of every row (theory: docs/theory/dmft.md §3.7)."""
    se = semantic_overlap(cp, sc, win.A)  # (4, L, M)
    m = se + positional_overlap(cp, sc.eps, win.pe)
    return State(win.A, win.pe, win.n, m[1], m[3], m[:, 0], se[:, 0])


def token_state(win: Window, m_token: jax.Array, se_token: jax.Array) -> State:
    """A state whose newest row is a token with given overlaps (x₀ kept in the window, the 2024 era;
    theory: docs/theory/dmft.md §5.2): row 0 of ``win`` is x₀, its overlaps are exact, not mean fields."""
    L, M = win.A.shape
    z = jnp.zeros((L, M), win.A.dtype)
    return State(win.A, win.pe, win.n, z.at[0].set(m_token[1]), z.at[0].set(m_token[3]), m_token, se_token)


def attention(
    gamma: jax.Array, mk: jax.Array, mq: jax.Array, mv: jax.Array, n: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """w_d = softmax_d(γ m^k_d · m^q) over the filled rows d < n and A^new = Σ_d w_d m^v_d (theory:
    docs/theory/dmft.md §3.4): the one place where a step attends.

    Shapes: mk and mv (L, M), the key and value overlaps of the window's rows; mq (M,), the query
    overlap; n (), the number of filled rows. Returns w (L,) and A^new (M,).

    The logits and A^new are explicit sums of products (rows in order), not matrix products: under
    ``vmap`` they are elementwise over the batch and need no matrix kernel per step (docs/theory/dmft.md
    §3.7). Their last bit depends on how XLA fuses them, so the steps that use them are fenced by
    optimisation barriers (:func:`advance`, the engine's loop) and fuse alike in every path.
    """
    L, M = mk.shape
    valid = jnp.arange(L) < n
    w = jax.nn.softmax(jnp.where(valid, gamma * _sum(mk[:, a] * mq[a] for a in range(M)), -jnp.inf))
    return w, _sum(w[d] * mv[d] for d in range(L))


def attend(gamma: jax.Array, st: State) -> tuple[jax.Array, jax.Array]:
    """:func:`attention` of a state's rows against the query of its newest token (theory:
    docs/theory/dmft.md §3.4). Returns w (L,), A^new (M,)."""
    return attention(gamma, st.mk, st.m0[2], st.mv, st.n)


def jacobian_row(gamma: jax.Array, st: State, sl: Slopes) -> jax.Array:
    """∂A^new/∂A: the only non-trivial block row of the Jacobian (theory: docs/theory/dmft.md §6.1)::

        ∂A^new/∂A_d = w_d G^v_d + γ c_d (G^k_d^T m^q_0)^T + δ_{d0} γ (Σ_f c_f m^k_f^T) G^q_0,
        c_f = w_f (m^v_f - A^new)

    (rows f ≥ n have w_f = 0 and drop out). Returns (M, L, M): [a, d, b] = ∂A^new_a/∂A_{d,b}.
    """
    w, att = attend(gamma, st)
    L, M = st.A.shape
    mq = st.m0[2]
    c = w[:, None] * (st.mv - att)  # (L, M)
    r = _sum(sl.gk[:, a, :] * mq[a] for a in range(M))  # (L, M): G^k_d^T m^q_0
    J = w[:, None, None] * sl.gv + gamma * (c[:, :, None] * r[:, None, :])  # (L, M, M): [d, a, b]
    C = _sum(c[d][:, None] * st.mk[d][None, :] for d in range(L))  # Σ_f c_f m^k_f^T
    J = J.at[0].add(gamma * _sum(C[:, e][:, None] * sl.gq0[e][None, :] for e in range(M)))
    return jnp.transpose(J, (1, 0, 2))


def advance_tangent(
    cp: Couplings, sc: Scalars, st: State, sl: Slopes, Q: jax.Array, convention: MoSeConvention = "paper"
) -> tuple[State, Slopes, jax.Array]:
    """One cached step with tangent vectors (theory: docs/theory/dmft.md §6.1, §6.3): the state as
    :func:`advance` steps it, the slopes of the one new row, and J Q with J the Jacobian of the step
    on vec(A): the new block row ∂A^new/∂A times Q, the other rows Q shifted down by one row of A.

    Args:
        Q: (L·M, k) tangent vectors on vec(A) (row-major: row d of A is entries d·M … d·M + M − 1).

    Returns:
        (new state, new slopes, J Q (L·M, k)).
    """
    L, M = st.A.shape
    J = jacobian_row(sc.gamma, st, sl).reshape(M, L * M)
    JQ = _sum(J[:, i, None] * Q[i][None, :] for i in range(L * M))  # (M, k)
    new, _ = advance(cp, sc, st, convention)
    G = semantic_slopes(cp, sc, new.A[0])  # (4, M, M)
    sl2 = Slopes(
        gv=jnp.concatenate([G[1][None], sl.gv[:-1]], axis=0),
        gk=jnp.concatenate([G[3][None], sl.gk[:-1]], axis=0),
        gq0=G[2],
    )
    return new, sl2, jnp.concatenate([JQ, Q[: (L - 1) * M]], axis=0)


def push_token(
    cp: Couplings, sc: Scalars, att: jax.Array, pe0: jax.Array, mv: jax.Array, mk: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """The overlaps of the token generated from A^new, pushed onto the window's cached overlaps (theory:
    docs/theory/dmft.md §3.4, §3.7): the one new row a step computes, as a one-row window (the same
    products as for a whole window), and the value and key overlaps shifted down by one row.

    Shapes: att (M,), the step's A^new; pe0 (1, P), its positional code; mv and mk (L, M). Returns the new
    mv and mk (L, M), and the token's four overlaps m (4, M) and their semantic parts se (4, M).
    """
    se_new = semantic_overlap(cp, sc, att[None])[:, 0]
    m_new = se_new + positional_overlap(cp, sc.eps, pe0)[:, 0]
    mv = jnp.concatenate([m_new[1][None], mv[:-1]], axis=0)
    mk = jnp.concatenate([m_new[3][None], mk[:-1]], axis=0)
    return mv, mk, m_new, se_new


def advance(cp: Couplings, sc: Scalars, st: State, convention: MoSeConvention) -> tuple[State, dict]:
    """One step of the map on a state with cached overlaps: one new row of overlaps per step
    (theory: docs/theory/dmft.md §3.4, §3.7).

    Returns:
        (new state, records) with one record per observable of
        the registry :mod:`attnphys.dmft.observables`, each of shape (M,): those recorded after the
        step (``att``, the step's A^new) from the new state, the others from the newest token of the state
        the step started from.
    """
    L = st.A.shape[0]
    st = jax.lax.optimization_barrier(st)  # the step fuses alone: the same bits in every path (§3.7)
    w, att = attend(sc.gamma, st)
    pe = jnp.roll(st.pe, 1, axis=0)
    mv, mk, m_new, se_new = push_token(cp, sc, att, pe[:1], st.mv, st.mk)
    new = State(
        A=jnp.concatenate([att[None], st.A[:-1]], axis=0),
        pe=pe,
        n=jnp.minimum(st.n + 1, L),
        mv=mv,
        mk=mk,
        m0=m_new,
        se0=se_new,
    )
    new = jax.lax.optimization_barrier(new)
    return new, records(st, new, sc.eps, convention)


def step(cp: Couplings, sc: Scalars, win: Window, convention: MoSeConvention = "paper") -> tuple[Window, dict]:
    """One step z_t ↦ z_{t+1} on a window, every row's overlaps computed from A (theory:
    docs/theory/dmft.md §3.4): the map whose Jacobian the Lyapunov spectrum uses.

    Returns:
        (new window, records) with one record per observable of
        the registry :mod:`attnphys.dmft.observables`, each of shape (M,).
    """
    new, rec = advance(cp, sc, fill(cp, sc, win), convention)
    return new.window, rec


if not TYPE_CHECKING:  # the names of 0.2.0 that moved, with a deprecation warning
    __getattr__ = _deprecated.module_getattr(__name__)
