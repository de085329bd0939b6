"""Vectorised settling: many starts run in blocks until each has settled on a periodic orbit, diverged, or
spent its budget (theory: docs/theory/dynamics.md §7.2).

Every lane (one start at one parameter point) keeps a ring of the last W = (c + 1)·P_max + b fingerprints
f(x_t) of its full state (:mod:`attnphys.dynamics.fingerprint`; b = ``block``, c = ``confirmations``).
After each block of b steps:

* **divergence** — a non-finite state or |x|_∞ > ``bound`` during the block: the lane stops, settled at
  that step;
* **exact period** — (only after ``transient`` steps) the smallest lag p ≤ P_max at which the last
  (c + 1)·p fingerprints repeat, |f_t − f_{t−p}|_∞ ≤ tol·max(1, max|f|): the lag candidates are those at
  which the last fingerprint recurs, the ``n_candidates`` smallest are verified over the whole stretch.
  The lane stops; its settling step is the first step of the longest p-periodic stretch at the end of the
  ring (the ring holds it: at the previous check the stretch was shorter than (c + 1)·p).

The lanes step the map's cached form (:meth:`~attnphys.dynamics.maps.AbstractMap.step_cached`, theory:
docs/theory/dynamics.md §1.1) and are handed back with plain auxiliary states.

Work balance: lanes run in rounds of up to ``round_blocks`` blocks inside one jitted, vmapped call (stopped
lanes are frozen by selects and cost a block each; a round ends early once every lane of the batch has
stopped); between rounds the still-running lanes are compacted
into a smaller batch, padded to a power of two, once they fill at most ``compact_ratio`` of it — so at
most log₂(N) batch sizes are compiled, and a finished lane costs at most one round plus the slack of
the ratio.
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnphys.dynamics.fingerprint import fingerprint
from attnphys.dynamics.maps import AbstractMap
from attnphys.runtime import shard_batch

RUNNING, PERIODIC, DIVERGENT, EXHAUSTED = 0, 1, 2, 3
"""Lane status codes."""


class SettleOptions(NamedTuple):
    """The settle run's schedule and criteria, hashable (theory: docs/theory/dynamics.md §7.2).

    budget: most steps per start (rounded up to whole blocks). transient: steps before the first period
    check. block: steps between checks. max_period, confirmations, period_tol: exact periods. n_fingerprint:
    numbers per fingerprint. bound: divergence threshold on |x|_∞. round_blocks: blocks per jitted round.
    compact_ratio: compact the batch once running lanes fill at most this fraction of it.
    n_candidates: recurrence lags verified per check.
    """

    budget: int = 20_000
    transient: int = 0
    block: int = 256
    max_period: int = 256
    confirmations: int = 3
    period_tol: float = 1e-8
    n_fingerprint: int = 4
    bound: float = 1e6
    round_blocks: int = 8
    compact_ratio: float = 0.5
    n_candidates: int = 3

    @property
    def window(self) -> int:
        """W, the ring length."""
        return (self.confirmations + 1) * self.max_period + self.block

    @property
    def n_blocks(self) -> int:
        return -(-self.budget // self.block)

    def validate(self) -> SettleOptions:
        from attnphys.errors import InputError

        if self.budget < 1:
            raise InputError(f"must be >= 1 (got {self.budget})", field="budget")
        if not 0 <= self.transient <= self.budget:
            raise InputError(f"must be in [0, budget = {self.budget}] (got {self.transient})", field="transient")
        if self.block < 1 or self.round_blocks < 1 or self.max_period < 1 or self.confirmations < 1:
            raise InputError("block, round_blocks, max_period and confirmations must be >= 1", field="census")
        if not (self.period_tol > 0 and self.bound > 0 and 0 < self.compact_ratio <= 1):
            raise InputError("period_tol and bound must be > 0 and compact_ratio in (0, 1]", field="census")
        return self


class Lanes(NamedTuple):
    """The state of N lanes (theory: docs/theory/dynamics.md §7.2), leading axis N: x (N, D), aux,
    ring (N, W, G) of fingerprints, t, status, period, settle (N,)."""

    x: Any
    aux: Any
    ring: Any
    t: Any
    status: Any
    period: Any
    settle: Any


def _candidates(ring, n_valid, o: SettleOptions):
    """The cheap part of the period test of one ring (W, G) whose last ``n_valid`` entries are filled:
    the lags p ≤ P_max at which the last fingerprint recurs, (P_max,) bool, and the threshold. Validity is
    tracked explicitly (never through NaN: vectorised max/min on CPU may drop NaNs)."""
    W = ring.shape[0]
    P = o.max_period
    valid = jnp.arange(W) >= W - n_valid
    scale = jnp.maximum(1.0, jnp.max(jnp.where(valid[:, None] & jnp.isfinite(ring), jnp.abs(ring), 0.0)))
    thr = o.period_tol * scale
    lags = jnp.arange(1, P + 1)
    d = jnp.max(jnp.abs(ring[W - 1 - lags] - ring[-1]), axis=-1)
    return (d <= thr) & (lags <= n_valid - 1), thr


def _verify(ring, n_valid, cand, thr, o: SettleOptions):
    """(found, p, first index of the periodic stretch): the ``n_candidates`` smallest candidate lags
    verified over the last (c + 1)·p fingerprints; the smallest that holds wins."""
    W = ring.shape[0]
    P = o.max_period
    idx = jnp.arange(W)
    lags = jnp.arange(1, P + 1)
    key = jnp.where(cand, lags, P + 1 + lags)
    nc = min(o.n_candidates, P)
    cands = -jax.lax.top_k(-key, nc)[0]

    def verify(c):
        usable = (c <= P) & ((o.confirmations + 1) * c <= n_valid)
        c = jnp.minimum(c, P)
        e = jnp.max(jnp.abs(ring - jnp.roll(ring, c, axis=0)), axis=-1)
        paired = idx >= W - n_valid + c  # both ring[i] and ring[i − c] are filled
        good = (e <= thr) & paired
        need = idx >= W - o.confirmations * c
        ok = usable & jnp.all(jnp.where(need, good, True))
        last_bad = jnp.max(jnp.where((idx >= c) & ~good, idx, -1))
        first_ok = jnp.maximum(last_bad + 1, c)
        return ok, c, first_ok - c

    oks, cs, starts = jax.vmap(verify)(cands)
    j = jnp.argmax(oks)
    return oks[j], cs[j].astype(jnp.int32), starts[j].astype(jnp.int32)


UNROLL = 8
"""Steps per iteration of the compiled stepping loop (fewer loop iterations, larger fused kernels)."""


def _steps(m: AbstractMap, o: SettleOptions, x, aux, params):
    """One block of b steps of one lane: (x, aux, fingerprints (b, G), out-of-bounds flags (b,))."""

    def one(c, _):
        x, aux = c
        x2, aux2 = m.step_cached(x, aux, params)
        bad = ~jnp.all(jnp.isfinite(x2)) | (jnp.max(jnp.abs(x2)) > o.bound)
        return (x2, aux2), (fingerprint(x2, o.n_fingerprint), bad)

    (x2, aux2), (fps, bads) = jax.lax.scan(one, (x, aux), None, length=o.block, unroll=min(UNROLL, o.block))
    return x2, aux2, fps, bads


def _tree_where(c, a, b):
    """Per lane: a where c else b (c: (N,); leaves with a leading axis N)."""
    return jax.tree_util.tree_map(lambda u, v: jnp.where(c.reshape(c.shape + (1,) * (u.ndim - 1)), u, v), a, b)


def _blocks(m: AbstractMap, o: SettleOptions, check: bool, lanes: Lanes, pidx, table, shared) -> Lanes:
    """One block of b steps for a batch of lanes (leading axis N), then, when ``check``, the period test,
    whose verification runs only when the last fingerprint of some active lane recurs."""
    x, aux, ring, t, status, period, settle = lanes
    N, W = ring.shape[0], ring.shape[1]
    active = (status == RUNNING) & (t < o.n_blocks * o.block)
    x2, aux2, fps, bads = jax.vmap(lambda x, a, i: _steps(m, o, x, a, lane_params(table, shared, i)))(x, aux, pidx)
    ring2 = jnp.concatenate([ring[:, o.block :], fps], axis=1)
    t2 = t + o.block
    div = jnp.any(bads, axis=1)
    settle_div = t + jnp.argmax(bads, axis=1) + 1
    periodic = jnp.zeros(N, bool)
    p = start = jnp.zeros(N, jnp.int32)
    if check:
        n_valid = jnp.minimum(t2, W)
        cand, thr = jax.vmap(lambda r, n: _candidates(r, n, o))(ring2, n_valid)
        want = active & ~div & (t2 >= o.transient) & jnp.any(cand, axis=1)
        found, p, start = jax.lax.cond(
            jnp.any(want),
            lambda: jax.vmap(lambda r, n, c, h: _verify(r, n, c, h, o))(ring2, n_valid, cand, thr),
            lambda: (jnp.zeros(N, bool), jnp.zeros(N, jnp.int32), jnp.zeros(N, jnp.int32)),
        )
        periodic = want & found
    settle_per = t2 - (W - 1 - start)
    new_status = jnp.where(div, DIVERGENT, jnp.where(periodic, PERIODIC, RUNNING)).astype(status.dtype)
    return Lanes(
        x=_tree_where(active, x2, x),
        aux=_tree_where(active, aux2, aux),
        ring=_tree_where(active, ring2, ring),
        t=jnp.where(active, t2, t),
        status=jnp.where(active, new_status, status),
        period=jnp.where(active & periodic, p, period).astype(period.dtype),
        settle=jnp.where(active & div, settle_div, jnp.where(active & periodic, settle_per, settle)).astype(
            settle.dtype
        ),
    )


def lane_params(table, shared, i):
    """The parameters of a lane: row i of ``table`` (leading axis B), paired with ``shared`` when given
    (theory: docs/theory/dynamics.md §7.2)."""
    p = jax.tree_util.tree_map(lambda a: a[i], table)
    return p if shared is None else (shared, p)


@partial(jax.jit, static_argnames=("m", "o", "check"))
def _round(m, o, check, lanes, pidx, table, shared):
    """Up to ``round_blocks`` blocks of a batch of lanes, stopping early once no lane of the batch runs (a
    stopped lane is frozen, so the early exit changes no result); ``check``: whether the period test can be
    due."""
    horizon = o.n_blocks * o.block

    def more(c):
        i, ln = c
        return (i < o.round_blocks) & jnp.any((ln.status == RUNNING) & (ln.t < horizon))

    def block(c):
        i, ln = c
        return i + 1, _blocks(m, o, check, ln, pidx, table, shared)

    return jax.lax.while_loop(more, block, (jnp.int32(0), lanes))[1]


@partial(jax.jit, static_argnames=("m",))
def _cache(m, x0, aux0, pidx, table, shared):
    """The cached auxiliary states of the starts (theory: docs/theory/dynamics.md §1.1)."""
    return jax.vmap(lambda x, a, i: m.cache_aux(x, a, lane_params(table, shared, i)))(x0, aux0, pidx)


def init_lanes(x0, aux0, o: SettleOptions) -> Lanes:
    """Fresh lanes (numpy) from starts x0 (N, D), aux0 (leading axis N); the ring starts empty (zeros; the
    last min(t, W) entries are filled) (theory: docs/theory/dynamics.md §7.2)."""
    x0 = np.array(x0)  # copies: the lanes are updated in place
    N, D = x0.shape
    G = min(o.n_fingerprint, D)
    ring = np.zeros((N, o.window, G), x0.dtype)  # filled entries are tracked by the step count t
    z = np.zeros(N, np.int32)
    aux = jax.tree_util.tree_map(np.array, aux0)
    return Lanes(x0, aux, ring, z, np.zeros(N, np.int8), z.copy(), np.full(N, -1, np.int32))


def _take(tree, idx):
    return jax.tree_util.tree_map(lambda a: a[idx], tree)


def _store(full: Lanes, work: Lanes, sel: np.ndarray, n_live: int) -> None:
    """Write the first n_live lanes of the working batch back into the full (numpy) lanes, in place."""
    for f, w in zip(jax.tree_util.tree_leaves(full), jax.tree_util.tree_leaves(work)):
        f[sel[:n_live]] = np.asarray(w)[:n_live]


def _bucket(n: int, n_dev: int) -> int:
    b = 1 << max(0, n - 1).bit_length()
    return max(b, 2 * n_dev)


def settle(
    m: AbstractMap, x0, aux0, pidx, table, shared=None, options: SettleOptions = SettleOptions(), progress=None
) -> Lanes:
    """Run N starts until each settles, diverges or spends the budget (theory: docs/theory/dynamics.md §7.2).

    Args:
        m: the map. x0: (N, D) starts; aux0: their aux (leading axis N). pidx: (N,) row of ``table`` holding
            each lane's parameters; table: parameter pytree with a leading axis B. shared: unbatched
            parameters (the map then receives ``(shared, table[i])``). options: :class:`SettleOptions`.
        progress: optional callable(steps_done_by_all_lanes) for progress reporting.

    Returns:
        :class:`Lanes` (numpy) with status ∈ {PERIODIC, DIVERGENT, EXHAUSTED}, period (PERIODIC), settle
        step (PERIODIC, DIVERGENT; −1 otherwise), the final (for PERIODIC: at detection, on the orbit)
        state and the fingerprint ring.
    """
    o = options.validate()
    pidx = np.asarray(pidx, dtype=np.int32)
    full = init_lanes(x0, _cache(m, x0, aux0, pidx, table, shared), o)
    N = int(full.x.shape[0])
    n_dev = len(jax.local_devices())
    horizon = o.n_blocks * o.block
    size = _bucket(N, n_dev)
    sel = np.r_[np.arange(N), np.full(size - N, N - 1)]  # lanes of the working batch (padded)
    n_live = N

    def load(sel, n_live):
        work = _take(full, sel)
        status = work.status.copy()
        status[n_live:] = EXHAUSTED  # padding: frozen copies
        return work._replace(status=status)

    def run(lanes, pi, check):
        return shard_batch(lambda ln, q: _round(m, o, check, ln, q, table, shared), (lanes, pi), int(pi.shape[0]))

    work = load(sel, n_live)
    done_steps = 0
    while True:
        # all running lanes have run done_steps steps: no test is due before the transient
        work = run(work, pidx[sel], done_steps + o.round_blocks * o.block >= o.transient)
        done_steps += o.round_blocks * o.block
        if progress is not None:
            progress(min(done_steps, horizon))
        status, t = np.asarray(work.status)[:n_live], np.asarray(work.t)[:n_live]
        running = (status == RUNNING) & (t < horizon)
        n_run = int(running.sum())
        if n_run == 0:
            break
        new_size = _bucket(n_run, n_dev)
        if n_run <= o.compact_ratio * size and new_size < size:
            _store(full, work, sel, n_live)
            keep = sel[:n_live][running]
            sel = np.r_[keep, np.full(new_size - n_run, keep[-1])]
            n_live, size = n_run, new_size
            work = load(sel, n_live)
    _store(full, work, sel, n_live)
    status = np.where(full.status == RUNNING, EXHAUSTED, full.status).astype(np.int8)
    aux = full.aux
    if jax.tree_util.tree_leaves(aux):
        aux = jax.tree_util.tree_map(np.asarray, jax.vmap(m.uncache_aux)(aux))
    return full._replace(status=status, aux=aux)
