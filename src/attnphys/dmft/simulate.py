"""Running the mean-field map: transients, records, batches (theory: docs/theory/dmft.md §3.6).

Loop steps t = 0 … T−1; records exist for t ≥ T_tr at every k-th step (t − T_tr ≡ 0 mod k). The
transient is run without storing anything. A batch is any number of trajectories, each with its own
parameters (β_o, β_att, ε) and initial state; it is vectorised with ``vmap`` and split over all JAX
devices (on a CPU, see :func:`attnphys.configure`). The engine steps a :class:`State` (cached overlaps:
one new row per step); a :class:`Window` given instead is filled first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from attnphys.dmft.config import MoSeConvention
from attnphys.dmft.meanfield import (
    Couplings,
    Scalars,
    State,
    Window,
    advance,
    attention,
    fill,
    push_token,
)
from attnphys.dmft.observables import observable_names
from attnphys.errors import InputError, NonFiniteError
from attnphys.runtime import shard_batch, stored_jit, take_rows


@dataclass(frozen=True)
class Schedule:
    """How many steps to run and what to keep.

    steps: total loop steps T. transient: the first T_tr steps are not recorded.
    record_every: k, keep every k-th step after the transient. record: which observables.
    """

    steps: int
    transient: int = 0
    record_every: int = 1
    record: tuple[str, ...] = field(default_factory=observable_names)

    def __post_init__(self) -> None:
        if self.steps < 0:
            raise ValueError(f"steps must be >= 0, got {self.steps}")
        if not 0 <= self.transient <= self.steps:
            raise ValueError(f"transient must be in [0, steps={self.steps}], got {self.transient}")
        if self.record_every < 1:
            raise ValueError(f"record_every must be >= 1, got {self.record_every}")
        if self.record_every > max(1, self.steps - self.transient):
            raise InputError(
                f"must be at most steps - transient = {self.steps - self.transient} (a larger interval records "
                f"the same single step), got {self.record_every}",
                "--record-every",
            )
        known = observable_names()
        unknown = set(self.record) - set(known)
        if unknown:
            raise ValueError(f"unknown observables {sorted(unknown)}; choose from {', '.join(known)}")

    @property
    def n_records(self) -> int:
        return -(-(self.steps - self.transient) // self.record_every)

    @property
    def record_steps(self) -> np.ndarray:
        return self.transient + self.record_every * np.arange(self.n_records)


UNROLL = 8
"""Steps per iteration of the compiled loop without records (fewer loop iterations and larger fused
kernels; the arithmetic of every step is unchanged). Windows of at most this many rows run a multiple
of L steps per iteration instead (:func:`_advance`)."""


def _advance(cp: Couplings, sc: Scalars, st: State, bad: jax.Array, t0, n: int, convention: MoSeConvention):
    """n steps without records; ``bad`` keeps the first step whose new state is non-finite (−1: none).

    The same arithmetic as :func:`~attnphys.dmft.meanfield.advance`, but A and pe, which the step only
    shifts (A) or rotates (pe), are kept as rings with a moving head: one row written per step instead of
    the whole window copied; the window is put back in order at the end. Bitwise the same states.

    A window of L ≤ :data:`UNROLL` rows runs U = L·⌈UNROLL/L⌉ steps per loop iteration: the head then
    returns to slot 0 after every iteration, so every step's slot is a constant of the program and the
    ring needs no index arithmetic at run time (about 8 % faster at L = 4). Longer windows run UNROLL
    steps per iteration with the head in the loop state (a constant slot per step would unroll L steps).
    """
    if n == 0:
        return st, bad
    del convention  # no records
    L = st.A.shape[0]
    static = L <= UNROLL
    U = L * -(-UNROLL // L) if static else UNROLL

    def steps(i, carry, count: int, h):
        """``count`` steps from step t0 + i·U on, the head at ``h`` (an int: static slots) before them."""
        A_r, pe_r, nn, mv, mk, m0, se0, b = carry
        for j in range(count):
            _, att = attention(sc.gamma, mk, m0[2], mv, nn)
            slot = (h - j - 1) % L  # the new row 0: the slot of the row that leaves the window
            if static:  # the slot is a constant of the program
                pe0, A_r = pe_r[slot : slot + 1], A_r.at[slot].set(att)
            else:
                pe0 = jax.lax.dynamic_index_in_dim(pe_r, slot, axis=0, keepdims=True)  # roll(pe, 1)[:1]
                A_r = jax.lax.dynamic_update_index_in_dim(A_r, att, slot, axis=0)
            mv, mk, m0, se0 = push_token(cp, sc, att, pe0, mv, mk)
            nonfinite = ~jnp.all(jnp.isfinite(att))
            b = jnp.where((b < 0) & nonfinite, t0 + i * U + j, b)
            nn = jnp.minimum(nn + 1, L)
            # each step fuses alone, as in meanfield.advance: grouped steps keep the bits of single ones
            A_r, pe_r, nn, mv, mk, m0, se0, b = jax.lax.optimization_barrier((A_r, pe_r, nn, mv, mk, m0, se0, b))
        return (A_r, pe_r, nn, mv, mk, m0, se0, b), (h - count) % L

    carry = (st.A, st.pe, st.n, st.mv, st.mk, st.m0, st.se0, bad)
    q, r = divmod(n, U)
    if static:  # the head is back at slot 0 after every U steps
        if q:
            carry = jax.lax.fori_loop(0, q, lambda i, c: steps(i, c, U, 0)[0], carry)
        carry, h = steps(q, carry, r, 0)
    else:
        h = jnp.asarray(0, jnp.int32)
        if q:
            carry, h = jax.lax.fori_loop(0, q, lambda i, c: steps(i, c[0], U, c[1]), (carry, h))
        carry, h = steps(q, carry, r, h)
    A_r, pe_r, nn, mv, mk, m0, se0, bad = carry
    A = jnp.roll(A_r, -h, axis=0)  # A[j] = A_r[(h + j) mod L]
    pe = jnp.roll(pe_r, -h, axis=0)
    return State(A, pe, nn, mv, mk, m0, se0), bad


def _flag(bad, st: State, t):
    nonfinite = ~jnp.all(jnp.isfinite(st.A[0]))
    return jnp.where((bad < 0) & nonfinite, t, bad)


def as_state(cp: Couplings, sc: Scalars, start: State | Window) -> State:
    """A state to step: a :class:`State` as it is, a :class:`Window` with its overlaps filled in."""
    return start if isinstance(start, State) else fill(cp, sc, Window(*start))


@partial(jax.jit, static_argnames=("schedule", "convention"))
def run(cp: Couplings, sc: Scalars, start: State | Window, schedule: Schedule, convention: MoSeConvention = "paper"):
    """Run one trajectory (theory: docs/theory/dmft.md §3.6).

    Returns:
        (final state, records dict name → (n_records, M), first non-finite step or −1).
    """
    return run_schedule(
        lambda w: advance(cp, sc, w, convention),
        lambda w, b, t0, n: _advance(cp, sc, w, b, t0, n, convention),
        as_state(cp, sc, start),
        schedule,
    )


def run_schedule(one: Callable, many: Callable, st, schedule: Schedule):
    """A schedule's loop on any engine (theory: docs/theory/dmft.md §3.6): ``transient`` steps, then one
    recorded step and ``record_every`` − 1 unrecorded ones per record, the last group ending at step
    ``steps``; the first step whose newest row is non-finite is kept (−1: none).

    Args:
        one: w ↦ (w', records name → (M,)): one recorded step.
        many: (w, bad, t0, n) ↦ (w', bad'): n unrecorded steps from step t0.
        st: the engine state, its newest row ``st.A[0]`` (L, M).

    Returns:
        (final state, records dict name → (n_records, M), first non-finite step or −1).
    """
    T, T_tr, k = schedule.steps, schedule.transient, schedule.record_every
    bad = jnp.asarray(-1, jnp.int32)
    st, bad = many(st, bad, 0, T_tr)
    n_rec = schedule.n_records
    if n_rec == 0:
        return st, {name: jnp.zeros((0, st.A.shape[1]), st.A.dtype) for name in schedule.record}, bad

    def group(carry, t, n_after):
        w, b = carry
        w, rec = one(w)
        b = _flag(b, w, t)
        w, b = many(w, b, t + 1, n_after)
        return (w, b), {name: rec[name] for name in schedule.record}

    full = n_rec - 1
    starts = T_tr + k * jnp.arange(full, dtype=jnp.int32)
    (st, bad), recs = jax.lax.scan(lambda c, t: group(c, t, k - 1), (st, bad), starts)
    last = T - (T_tr + k * full) - 1
    (st, bad), rec_last = group((st, bad), jnp.asarray(T_tr + k * full, jnp.int32), last)
    recs = {name: jnp.concatenate([recs[name], rec_last[name][None]], axis=0) for name in schedule.record}
    return st, recs, bad


def _run_batch(cp, sc, start, schedule, convention):
    return jax.vmap(lambda s, w: run(cp, s, w, schedule, convention))(sc, start)


_run_batch_jit = stored_jit(_run_batch, "dmft-run-batch", static_argnames=("schedule", "convention"))


def run_batch(
    cp: Couplings,
    sc: Scalars,
    start: State | Window,
    schedule: Schedule,
    convention: MoSeConvention = "paper",
    check: bool = True,
    labels: dict[str, np.ndarray] | None = None,
):
    """Run a batch of B trajectories: ``sc`` and ``start`` carry a leading batch axis of size B.

    The batch is split over the available JAX devices (padded to a multiple of their number).

    Args:
        labels: name → (B,) parameter values used to name the trajectory in a non-finite report.
        check: raise :class:`NonFiniteError` if any trajectory became non-finite.

    Returns:
        (final states (B, …), records name → (B, n_records, M), first non-finite step (B,)).
    """
    B = int(np.shape(sc.gain_o)[0])
    fn = partial(_run_batch_jit, schedule=schedule, convention=convention)
    final, recs, bad = shard_batch(lambda s, w: fn(cp, s, w), (sc, start), B)
    if check:
        raise_if_nonfinite(np.asarray(bad), labels or {"index": np.arange(B)})
    return final, recs, bad


def raise_if_nonfinite(bad: np.ndarray, labels: dict[str, np.ndarray]) -> None:
    """Raise :class:`NonFiniteError` naming the first offending step and its parameters."""
    bad = np.atleast_1d(bad)
    idx = np.flatnonzero(bad >= 0)
    if idx.size:
        i = int(idx[np.argmin(bad[idx])])
        params = {k: np.atleast_1d(v)[i].item() for k, v in labels.items()}
        raise NonFiniteError(step=int(bad[i]), params=params, count=int(idx.size))


def broadcast_batch(sc: Scalars, win: Window, B: int) -> tuple[Scalars, Window]:
    """Give scalars and window a leading batch axis of size B (broadcasting unbatched leaves)."""

    def bc(x, base_ndim):
        x = jnp.asarray(x)
        return jnp.broadcast_to(x, (B,) + x.shape[-base_ndim:] if base_ndim else (B,)) if x.ndim == base_ndim else x

    sc = Scalars(*(bc(x, 0) for x in sc))
    win = Window(A=bc(win.A, 2), pe=bc(win.pe, 2), n=bc(win.n, 0))
    return sc, win


def stack_windows(wins: Sequence[Window]) -> Window:
    """Stack single windows into a batch (on the host: a traced stack of B windows compiles for every B)."""
    return Window(*(jax.device_put(np.stack([np.asarray(x) for x in xs])) for xs in zip(*wins)))


def _bucket(n: int) -> int:
    """Padded batch size of n lanes: the next power of two, at least twice the device count (so that few
    sizes get compiled and every device gets lanes)."""
    return max(1 << max(0, n - 1).bit_length(), 2 * len(jax.local_devices()))


def run_segments(
    cp: Couplings,
    sc: Scalars,
    start: State | Window,
    steps: int,
    *,
    segment: int,
    window: int,
    stop,
    convention: MoSeConvention = "paper",
    labels: dict[str, np.ndarray] | None = None,
    runner=None,
):
    """Run a batch of B trajectories for ``steps`` steps in segments, retiring lanes that ``stop`` accepts
    (theory: docs/theory/dmft.md §3.6, §3.7; docs/theory/dynamics.md §7.2).

    After every segment of ``segment`` steps (the last one shorter) the running lanes' last ``window``
    values of A^new (the ``att`` record: the whole window A is its last L values) are handed to
    ``stop(rows, att, states, t)`` — ``rows`` (b,) lane indices, ``att`` (b, window, M), ``states`` their
    :class:`State` after t steps — which returns a (b,) bool mask of lanes to retire. Retired lanes keep
    the state at which they were retired; the others are compacted into a smaller batch (padded to a
    power of two) once they fill at most half of it, so that finished lanes hold no segment back. Every
    lane steps with the same cached step as :func:`run_batch`, so a lane that is never retired ends bitwise
    where :func:`run_batch` would.

    ``runner(sc, states, schedule)`` runs one segment like :func:`run_batch` without the non-finite check
    (default: :func:`run_batch` with ``cp`` and ``convention``); another model's map passes its own, with
    ``start`` an engine :class:`State` of that model.

    Returns:
        (states after their last step (B, …), steps run per lane (B,) int, retired (B,) bool).
    """

    def paper_runner(sc_, st_, sched):
        return run_batch(cp, sc_, st_, sched, convention, check=False)

    run_one = runner or paper_runner
    if window < 1 or segment < window:
        raise ValueError(f"need 1 <= window ({window}) <= segment ({segment})")
    B = int(np.shape(sc.gain_o)[0])
    labels = labels or {"index": np.arange(B)}
    st = (
        as_state(cp, sc, start)
        if isinstance(start, State)
        else jax.vmap(lambda s, w: fill(cp, s, w))(sc, Window(*start))
    )
    final = jax.tree_util.tree_map(np.array, st)
    done = np.zeros(B, np.int64)
    retired = np.zeros(B, bool)
    size = _bucket(B)
    sel = np.r_[np.arange(B), np.full(size - B, B - 1)]  # the lane in every slot of the working batch
    slot_live = np.arange(size) < B
    work_sc, work = take_rows(sc, sel), take_rows(st, sel)
    t = 0
    while t < steps and slot_live.any():
        n = min(segment, steps - t)
        w = min(window, n)
        sched = Schedule(steps=n, transient=n - w, record=("att",))
        work, recs, bad = run_one(work_sc, work, sched)
        t += n
        slots = np.flatnonzero(slot_live)
        rows = sel[slots]
        bad = np.asarray(bad)[slots]
        raise_if_nonfinite(np.where(bad >= 0, bad + t - n, -1), {k: np.asarray(v)[rows] for k, v in labels.items()})
        done[rows] = t
        cur = take_rows(work, slots)
        for f, c in zip(jax.tree_util.tree_leaves(final), jax.tree_util.tree_leaves(cur)):
            f[rows] = np.asarray(c)
        if t >= steps:
            break
        ret = np.asarray(stop(rows, np.asarray(recs["att"])[slots], cur, t), bool)
        retired[rows[ret]] = True
        slot_live[slots[ret]] = False
        n_live = int(slot_live.sum())
        if n_live and n_live <= size // 2 and _bucket(n_live) < size:
            live = sel[slot_live]
            size = _bucket(n_live)
            sel = np.r_[live, np.full(size - n_live, live[-1])]
            slot_live = np.arange(size) < n_live
            work_sc, work = take_rows(sc, sel), take_rows(final, sel)
    return State(*(jax.device_put(a) for a in final)), done, retired
