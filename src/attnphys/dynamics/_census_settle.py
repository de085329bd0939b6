"""The settle run of a census in chunks within a memory budget, a pilot run first (theory:
docs/theory/dynamics.md §7.2, §7.4)."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import numpy as np

from attnphys.dynamics import _census_geometry as geo
from attnphys.dynamics.maps import AbstractMap
from attnphys.dynamics.settle import DIVERGENT, EXHAUSTED, PERIODIC, SettleOptions, settle
from attnphys.runtime import take_rows


class Tails(NamedTuple):
    """The last p fingerprints of the periodic lanes of one period p (theory: docs/theory/dynamics.md §7.2):
    lanes (n,) in increasing order, seqs (n, p, G)."""

    lanes: np.ndarray
    seqs: np.ndarray

    def of(self, lanes: np.ndarray) -> np.ndarray:
        """The (len(lanes), p, G) fingerprints of the given lanes (all of this period)."""
        return self.seqs[np.searchsorted(self.lanes, lanes)]


def settle_in_chunks(m: AbstractMap, x0, aux0, pidx, table, shared, o: Any, chunk: int, report):
    """The settle run (:func:`attnphys.dynamics.settle.settle`; ``o`` a :class:`~attnphys.dynamics.CensusOptions`) over the starts in chunks of ``chunk``
    lanes, each chunk's fingerprint rings reduced at once to what the grouping needs, so that memory is
    bounded by the chunk (theory: docs/theory/dynamics.md §7.4): a periodic lane keeps its last p
    fingerprints, a lane that spent its budget its recurrence evidence and subsampled cloud.

    Returns:
        (lanes without rings (numpy), {p: :class:`Tails`} the last p fingerprints of the periodic lanes by period,
        (ex_idx, recurrent, h, converging, clouds) of the lanes that spent their budget).
    """
    so = o.settle_options()
    N = int(np.shape(x0)[0])
    horizon = so.n_blocks * so.block
    parts, tails, assessed = [], {}, []
    for c, lo in enumerate(range(0, N, chunk)):
        hi = min(N, lo + chunk)
        sub_aux = jax.tree_util.tree_map(lambda a, lo=lo, hi=hi: a[lo:hi], aux0)

        def progress(n, c=c):
            report(c * horizon + n, horizon * (-(-N // chunk)) + horizon)

        ln = settle_with_pilot(m, x0[lo:hi], sub_aux, pidx[lo:hi], table, shared, so, progress)
        per = np.flatnonzero(ln.status == PERIODIC)
        for p in np.unique(ln.period[per]):
            js = per[ln.period[per] == p]
            tails.setdefault(int(p), []).append((lo + js, ln.ring[js, -int(p) :]))
        ex = np.flatnonzero(ln.status == EXHAUSTED)
        if ex.size:
            nb = geo.pow2(ex.size, 16)
            rec, h, cvg, S = geo.assess(
                take_rows(ln.ring, ex, nb),
                o.recurrence_quantile,
                o.recurrence_factor,
                so.max_period,
                so.confirmations,
                o.converging_tol,
                max(1, so.window // o.n_recurrence),
                o.n_recurrence,
                o.period_tol,
            )
            n = ex.size
            assessed.append((lo + ex, *(np.asarray(a)[:n] for a in (rec, h, cvg, S))))
        parts.append(ln._replace(ring=None))
    lanes = jax.tree_util.tree_map(lambda *a: np.concatenate(a), *parts) if len(parts) > 1 else parts[0]
    G = min(o.n_fingerprint, int(np.shape(x0)[1]))
    tails = {
        p: Tails(np.concatenate([a for a, _ in parts_p]), np.concatenate([b for _, b in parts_p]))
        for p, parts_p in tails.items()
    }
    if assessed:
        ex_idx, rec, h, cvg, clouds = (np.concatenate(a) for a in zip(*assessed))
    else:
        ex_idx, rec, h, cvg = np.zeros(0, np.int64), np.zeros(0, bool), np.zeros(0), np.zeros(0, bool)
        clouds = np.zeros((0, o.n_recurrence, G))
    return lanes, tails, (ex_idx, rec, h, cvg, clouds)


PILOT = dict(max_period=8, block=32, budget=2048)
"""The pilot settle run of a census (theory: docs/theory/dynamics.md §7.2): short cycles searched over a short
budget in small blocks, so that starts on fixed points and short cycles stop after a few dozen steps."""


def settle_with_pilot(m: AbstractMap, x0, aux0, pidx, table, shared, so: SettleOptions, progress):
    """The settle run of a chunk of starts, a pilot first (theory: docs/theory/dynamics.md §7.2).

    Where the options search longer cycles or run longer than :data:`PILOT` and ask for no transient (a
    pilot would run it twice for the starts it leaves), every start is first run with the pilot's cycle
    search, block and budget (the other options as given); a start it settles on a cycle
    or sees diverge keeps that outcome (a cycle of period ≤ 8 confirmed within the tolerance is the one the
    full search finds first), and only the others run again from their starts with the options given. A
    map whose starts settle on short cycles then costs a few dozen steps per start instead of the full ring
    (W = (confirmations + 1)·max_period + block steps at least)."""
    pilot = so._replace(
        max_period=min(so.max_period, PILOT["max_period"]),
        block=min(so.block, PILOT["block"]),
        budget=min(so.budget, PILOT["budget"]),
    )
    if pilot == so or so.transient > 0 or pilot.budget < pilot.window:
        ln = settle(m, x0, aux0, pidx, table, shared, so, progress=progress)
        return jax.tree_util.tree_map(np.asarray, ln)
    pilot.validate()
    first = jax.tree_util.tree_map(np.asarray, settle(m, x0, aux0, pidx, table, shared, pilot))
    again = np.flatnonzero((first.status != PERIODIC) & (first.status != DIVERGENT))
    if again.size == 0:
        progress(so.n_blocks * so.block)
        return first
    sub_aux = jax.tree_util.tree_map(lambda a: np.asarray(a)[again], aux0)
    full = jax.tree_util.tree_map(
        np.asarray, settle(m, x0[again], sub_aux, pidx[again], table, shared, so, progress=progress)
    )
    ring = np.zeros((first.status.shape[0],) + full.ring.shape[1:], full.ring.dtype)
    if again.size < first.status.shape[0]:  # the settled lanes' last p fingerprints, at the ring's end
        done = np.setdiff1d(np.arange(first.status.shape[0]), again)
        ring[done, -first.ring.shape[1] :] = first.ring[done]
    ring[again] = full.ring

    def merged(a, b):
        out = np.array(a, copy=True)
        out[again] = b
        return out

    lanes = jax.tree_util.tree_map(merged, first._replace(ring=None), full._replace(ring=None))
    return lanes._replace(ring=ring)
