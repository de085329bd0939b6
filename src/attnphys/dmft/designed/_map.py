"""The designed mean-field map (theory: docs/theory/designed.md §1).

Pure JAX functions over small arrays, batched with ``vmap``. The context window and the engine state are
those of the paper's map (:class:`~attnphys.dmft.meanfield.Window`, :class:`~attnphys.dmft.meanfield.State`,
per-trajectory :class:`~attnphys.dmft.meanfield.Scalars` β_o, γ, ε); only the overlaps differ. For a row
A (M,) of the window with position code p (P,), and each feature c::

    u_c(σ)  = tanh(β_o Σ_j T_c[σ, j] A_j)                  σ ∈ {±1}^{M_se}, σ_0 = +1
    se_c,i  = Σ_σ R_c[σ, i] u_c(σ)                          (the exact average over all 2^{M_se} σ)
    pe_c,i  = max(0, (1/P) Σ_j W^c_{i,j} p_j)
    m_c,i   = (1 − ε) se_c,i + ε pe_c,i

with T_c[σ, j] = Σ_{k: b_o(k) = j} σ_{p_c(k)} and R_c[σ, i] = 2^{−(M_se−1)} σ_{p_c(b_c(i))}. The step then
attends exactly as the paper's map: w = softmax(γ m_q · m_k,d), A^new = Σ_d w_d m_v,d.

The engine :class:`State` keeps, as for the paper's map, the value and key overlaps of every row and all
four overlaps of the newest token (``m0``); ``se0`` holds the newest token's semantic overlaps se_c before
the (1 − ε) weight, which is what the ``mo_se`` record is (theory: docs/theory/designed.md §1.4).
Features are stored in the project's family order (o, v, q, k).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnphys.dmft.correlations import FAMILIES, sign_vectors
from attnphys.dmft.designed._design import FEATURES, DesignSpec
from attnphys.dmft.initial import token_positions
from attnphys.dmft.maps import AttentionWindowMap
from attnphys.dmft.meanfield import Scalars, State, Window, attention
from attnphys.dmft.observables import observe
from attnphys.dmft.observables import records as table_records
from attnphys.dmft.simulate import Schedule, raise_if_nonfinite, run_schedule
from attnphys.runtime import shard_batch

RECORDING = "paper"
"""How the designed map's ``mo_se`` is recorded: as computed, the unweighted semantic overlap (the ``paper``
convention of :func:`~attnphys.dmft.observables.record_mo_se` rescales nothing)."""

TO_FAMILIES = np.array([FEATURES.index(f) for f in FAMILIES])
"""Rows of a design's (q, k, v, o) arrays in the project's family order (o, v, q, k)."""

O, V, Q, K = (FAMILIES.index(f) for f in ("o", "v", "q", "k"))


class DesignArrays(NamedTuple):
    """The arrays of the designed map (theory: docs/theory/designed.md §1.2–1.3); families in the order
    (o, v, q, k).

    field: (F, S, M) T_c[σ, j], the coefficient of A_j in the field on sign vector σ; F = 1 when all four
        features share one projection (one tanh table serves them all), else F = 4.
    readout: (4, S, M) R_c[σ, i] = 2^{−(M_se−1)} σ_{p_c(b_c(i))}.
    signs: (S, M_se) the sign vectors σ (σ_0 = +1), S = 2^{M_se−1}.
    W_pe: (4, M, P) ±1 position codes of the mean-field patterns.
    """

    field: jax.Array
    readout: jax.Array
    signs: jax.Array
    W_pe: jax.Array


def design_arrays(design: DesignSpec, dtype=None) -> DesignArrays:
    """Pack a design for the map (theory: docs/theory/designed.md §1.2)."""
    dtype = dtype or jnp.result_type(float)
    sig = sign_vectors(design.m_se)  # (S, M_se)
    S, M = sig.shape[0], design.M
    proj = design.array("projection")[TO_FAMILIES]  # (4, M): p_c(k)
    b_o = design.array("orders")[FEATURES.index("o")]  # (M,): b_o(k)
    decoded = design.decoded()[TO_FAMILIES]  # (4, M): p_c(b_c(i))
    field = np.zeros((4, S, M))
    for c in range(4):
        for k in range(M):
            field[c, :, b_o[k]] += sig[:, proj[c, k]]
    if all(np.array_equal(proj[0], p) for p in proj):
        field = field[:1]
    readout = sig[:, decoded].transpose(1, 0, 2) / 2 ** (design.m_se - 1)  # (4, S, M)
    W_pe = design.position_codes()[TO_FAMILIES]
    return DesignArrays(*(jnp.asarray(a, dtype=dtype) for a in (field, readout, sig, W_pe)))


def _sum(terms) -> jax.Array:
    """Σ of the terms in the order given. The map's small contractions are written as such sums of
    products, not as dot products, so that no result depends on the batch size (a dot kernel may order
    its additions differently for different batch shapes; theory: docs/theory/dmft.md §3.7)."""
    it = iter(terms)
    total = next(it)
    for t in it:
        total = total + t
    return total


def _lead(a: jax.Array, nd: int, first: int) -> jax.Array:
    """(first, X) → (first, 1, …, 1, X) with nd − 1 unit axes (to broadcast against (…, X) rows)."""
    return a.reshape((first,) + (1,) * (nd - 1) + a.shape[1:])


def tanh_table(cp: DesignArrays, beta_o, A: jax.Array) -> jax.Array:
    """u_c(σ) = tanh(β_o Σ_j T_c[σ, j] A_j) (theory: docs/theory/designed.md §1.2). A (..., M) → (F, ..., S)."""
    F, _, M = cp.field.shape
    h = _sum(_lead(cp.field[..., j], A.ndim, F) * A[None, ..., j, None] for j in range(M))
    return jnp.tanh(beta_o * h)


def semantic_overlap(cp: DesignArrays, beta_o, A: jax.Array) -> jax.Array:
    """se_c,i = Σ_σ R_c[σ, i] u_c(σ), the exact average over all sign vectors of σ_{p_c(b_c(i))} tanh(β_o h(σ))
    (theory: docs/theory/designed.md §1.2). A (..., M) → (4, ..., M)."""
    u = tanh_table(cp, beta_o, A)  # (F, ..., S): F = 1 broadcasts over the four features
    S = cp.readout.shape[1]
    return _sum(_lead(cp.readout[:, s], A.ndim, 4) * u[..., s, None] for s in range(S))


def base_overlap(cp: DesignArrays, beta_o, A: jax.Array) -> jax.Array:
    """m̃_c,μ = 2^{−(M_se−1)} Σ_σ σ_μ u_c(σ): the overlap with each base pattern μ before decoding (theory:
    docs/theory/designed.md §1.2). A (..., M) → (4, ..., M_se)."""
    u = tanh_table(cp, beta_o, A)
    S = cp.signs.shape[0]
    m = _sum(u[..., s, None] * cp.signs[s] for s in range(S)) / S
    return jnp.broadcast_to(m, (4,) + m.shape[1:])


def positional_overlap(cp: DesignArrays, pe: jax.Array) -> jax.Array:
    """pe_c,i = max(0, (1/P) Σ_j W^c_{i,j} p_j) (theory: docs/theory/designed.md §1.3). pe (..., P) → (4, ..., M).
    The codes are ±1, so every product is exact."""
    P = cp.W_pe.shape[-1]
    return jnp.maximum(0.0, _sum(_lead(cp.W_pe[..., j], pe.ndim, 4) * pe[None, ..., j, None] for j in range(P)) / P)


def overlaps(cp: DesignArrays, sc: Scalars, A: jax.Array, pe: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(m, se): the four overlaps m = (1 − ε) se + ε pe of tokens generated from rows A (..., M) with codes
    pe (..., P), and their semantic parts se, each (4, ..., M) (theory: docs/theory/designed.md §1.4)."""
    se = semantic_overlap(cp, sc.gain_o, A)
    return (1.0 - sc.eps) * se + sc.eps * positional_overlap(cp, pe), se


def fill(cp: DesignArrays, sc: Scalars, win: Window) -> State:
    """The engine :class:`State` of a window: the overlaps of every row (theory: docs/theory/designed.md §1.4)."""
    m, se = overlaps(cp, sc, win.A, win.pe)
    return State(win.A, win.pe, win.n, m[V], m[K], m[:, 0], se[:, 0])


def records(before: State, after: State, eps, names=None) -> dict:
    """The records of one step: the observables' one table read on the designed map's states, ``mo_se``
    recorded as the map computes it (theory: docs/theory/designed.md §1.5; docs/theory/dmft.md §3.6)."""
    return table_records(before, after, eps, RECORDING, names)


def advance(cp: DesignArrays, sc: Scalars, st: State) -> tuple[State, dict]:
    """One step on a state with cached overlaps: attend, then compute the overlaps of the one new row
    (theory: docs/theory/designed.md §1.4).

    Returns:
        (new state, records: one per observable of the registry (:mod:`attnphys.dmft.observables`),
        each (M,)).
    """
    L = st.A.shape[0]
    st = jax.lax.optimization_barrier(st)  # every step fuses alone: the same bits in every path
    _, att = attention(sc.gamma, st.mk, st.m0[Q], st.mv, st.n)
    pe = jnp.roll(st.pe, 1, axis=0)
    m_new, se_new = overlaps(cp, sc, att, pe[0])
    new = State(
        A=jnp.concatenate([att[None], st.A[:-1]], axis=0),
        pe=pe,
        n=jnp.minimum(st.n + 1, L),
        mv=jnp.concatenate([m_new[V][None], st.mv[:-1]], axis=0),
        mk=jnp.concatenate([m_new[K][None], st.mk[:-1]], axis=0),
        m0=m_new,
        se0=se_new,
    )
    new = jax.lax.optimization_barrier(new)
    return new, records(st, new, sc.eps)


def step(cp: DesignArrays, sc: Scalars, win: Window) -> tuple[Window, dict]:
    """One step z_t ↦ z_{t+1} on a window, every row's overlaps computed from A: the map that Newton,
    Floquet and the tangent dynamics differentiate (theory: docs/theory/designed.md §1.4)."""
    new, rec = advance(cp, sc, fill(cp, sc, win))
    return new.window, rec


# ---- running ------------------------------------------------------------------------------------------


def _steps(cp: DesignArrays, sc: Scalars, st: State, bad, t0, n: int):
    """n steps without records; ``bad`` keeps the first step whose new state is non-finite (−1: none)."""
    if n == 0:
        return st, bad

    def body(i, c):
        s, b = c
        s, _ = advance(cp, sc, s)
        return s, jnp.where((b < 0) & ~jnp.all(jnp.isfinite(s.A[0])), t0 + i, b)

    return jax.lax.fori_loop(0, n, body, (st, bad))


@partial(jax.jit, static_argnames=("schedule",))
def run(cp: DesignArrays, sc: Scalars, st: State, schedule: Schedule):
    """One trajectory from an engine state (theory: docs/theory/designed.md §1.5; schedule as for the
    paper's map, docs/theory/dmft.md §3.6).

    Returns:
        (final state, records name → (n_records, M), first non-finite step or −1).
    """
    return run_schedule(lambda w: advance(cp, sc, w), lambda w, b, t0, n: _steps(cp, sc, w, b, t0, n), st, schedule)


@partial(jax.jit, static_argnames=("schedule",))
def _run_many(cp, sc, st, schedule):
    return jax.vmap(lambda s, w: run(cp, s, w, schedule))(sc, st)


def run_batch(
    cp: DesignArrays,
    sc: Scalars,
    start: State,
    schedule: Schedule,
    *,
    check: bool = True,
    labels: dict[str, np.ndarray] | None = None,
):
    """A batch of B trajectories (``sc`` and ``start`` with a leading axis B), split over the JAX devices
    (theory: docs/theory/designed.md §1.5).

    Args:
        labels: name → (B,) parameter values naming a trajectory in a non-finite report.
        check: raise :class:`~attnphys.errors.NonFiniteError` (naming the first step and the parameters)
            if a trajectory became non-finite.

    Returns:
        (final states (B, …), records name → (B, n_records, M), first non-finite step (B,)).
    """
    B = int(np.shape(sc.gain_o)[0])
    final, recs, bad = shard_batch(lambda s, w: _run_many(cp, s, w, schedule), (sc, start), B)
    if check:
        raise_if_nonfinite(np.asarray(bad), labels or {"index": np.arange(B)})
    return final, recs, bad


# ---- the map of the dynamics toolkit ---------------------------------------------------------------------


@dataclass(frozen=True)
class DesignedMap(AttentionWindowMap):
    """The designed map for the dynamics toolkit (theory: docs/theory/designed.md §3): state x = vec(A)
    (L·M), auxiliary state (pe, n), parameters (:class:`DesignArrays`, :class:`Scalars`).

    The positional window is a fixed cyclic permutation that does not depend on A, so the tangent dynamics
    of A alone gives the L·M attention exponents (the positional ones are exactly 0). Tangents are
    forward-mode products through :meth:`step` (all rows' overlaps recomputed from A); long forward runs
    use the cached step. :meth:`sample_states` draws full windows with A uniform in [−a, a]
    (a = ``amplitude``) and the positional window of a token start.
    """

    L: int
    M: int
    P: int
    observable: str = "mo_se"
    amplitude: float = 1.0

    def step(self, x, aux, params):
        cp, sc = params
        new, _ = step(cp, sc, self.window(x, aux))
        return new.A.reshape(-1), (new.pe, new.n)

    def cache_aux(self, x, aux, params):
        """(pe, n, mv, mk, m0, se0): the window's overlaps (a :class:`State` without A)."""
        cp, sc = params
        return tuple(fill(cp, sc, self.window(x, aux)))[1:]

    def step_cached(self, x, caux, params):
        cp, sc = params
        new, _ = advance(cp, sc, State(x.reshape(self.L, self.M), *caux))
        return new.A.reshape(-1), tuple(new)[1:]

    def observe_cached(self, x, caux, params):
        _, sc = params
        return observe(self.observable, State(x.reshape(self.L, self.M), *caux[:6]), sc.eps, RECORDING)

    def observe(self, x, aux, params):
        cp, sc = params
        return observe(self.observable, fill(cp, sc, self.window(x, aux)), sc.eps, RECORDING)

    def sample_states(self, key, n, params):
        dtype = jnp.result_type(float)
        A = jax.random.uniform(key, (n, self.L * self.M), dtype, -self.amplitude, self.amplitude)
        pe = jnp.broadcast_to(jnp.asarray(token_positions(self.L, self.P), dtype), (n, self.L, self.P))
        return A, (pe, jnp.full((n,), self.L, jnp.int32))
