"""Running the mean-field map: transients, records, batches (theory: docs/theory/dmft.md §3.6).

Loop steps t = 0 … T−1; records exist for t ≥ T_tr at every k-th step (t − T_tr ≡ 0 mod k). The
transient is run without storing anything. A batch is any number of trajectories, each with its own
parameters (β_o, β_att, ε) and initial state; it is vectorised with ``vmap`` and split over all JAX
devices (on a CPU, see :func:`attnphys.configure`). The engine steps a :class:`State` (cached overlaps:
one new row per step); a :class:`Window` given instead is filled first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from attnphys.dmft.config import MoSeConvention
from attnphys.dmft.meanfield import OBSERVABLES, Couplings, Scalars, State, Window, advance, fill
from attnphys.errors import NonFiniteError
from attnphys.runtime import shard_batch


@dataclass(frozen=True)
class Schedule:
    """How many steps to run and what to keep.

    steps: total loop steps T. transient: the first T_tr steps are not recorded.
    record_every: k, keep every k-th step after the transient. record: which observables.
    """

    steps: int
    transient: int = 0
    record_every: int = 1
    record: tuple[str, ...] = OBSERVABLES

    def __post_init__(self) -> None:
        if self.steps < 0:
            raise ValueError(f"steps must be >= 0, got {self.steps}")
        if not 0 <= self.transient <= self.steps:
            raise ValueError(f"transient must be in [0, steps={self.steps}], got {self.transient}")
        if self.record_every < 1:
            raise ValueError(f"record_every must be >= 1, got {self.record_every}")
        unknown = set(self.record) - set(OBSERVABLES)
        if unknown:
            raise ValueError(f"unknown observables {sorted(unknown)}; choose from {OBSERVABLES}")

    @property
    def n_records(self) -> int:
        return -(-(self.steps - self.transient) // self.record_every)

    @property
    def record_steps(self) -> np.ndarray:
        return self.transient + self.record_every * np.arange(self.n_records)


def _advance(cp: Couplings, sc: Scalars, st: State, bad: jax.Array, t0, n: int, convention: MoSeConvention):
    """n steps without records; ``bad`` keeps the first step whose new state is non-finite (−1: none)."""

    def body(i, carry):
        w, b = carry
        w2, _ = advance(cp, sc, w, convention)
        return w2, _flag(b, w2, t0 + i)

    if n == 0:
        return st, bad
    return jax.lax.fori_loop(0, n, body, (st, bad))


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
    T, T_tr, k = schedule.steps, schedule.transient, schedule.record_every
    bad = jnp.asarray(-1, jnp.int32)
    st = as_state(cp, sc, start)
    st, bad = _advance(cp, sc, st, bad, 0, T_tr, convention)
    n_rec = schedule.n_records
    if n_rec == 0:
        return st, {name: jnp.zeros((0, st.A.shape[1]), st.A.dtype) for name in schedule.record}, bad

    def group(carry, t, n_after):
        w, b = carry
        w, rec = advance(cp, sc, w, convention)
        b = _flag(b, w, t)
        w, b = _advance(cp, sc, w, b, t + 1, n_after, convention)
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


_run_batch_jit = jax.jit(_run_batch, static_argnames=("schedule", "convention"))


def run_batch(cp: Couplings, sc: Scalars, start: State | Window, schedule: Schedule,
              convention: MoSeConvention = "paper", check: bool = True, labels: dict[str, np.ndarray] | None = None):
    """Run a batch of B trajectories: ``sc`` and ``start`` carry a leading batch axis of size B.

    The batch is split over the available JAX devices (padded to a multiple of their number).

    Args:
        labels: name → (B,) parameter values used to name the trajectory in a non-finite report.
        check: raise :class:`NonFiniteError` if any trajectory became non-finite.

    Returns:
        (final states (B, …), records name → (B, n_records, M), first non-finite step (B,)).
    """
    B = int(np.shape(sc.beta_o)[0])
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
    """Stack single windows into a batch."""
    return Window(*(jnp.stack(xs) for xs in zip(*wins)))
