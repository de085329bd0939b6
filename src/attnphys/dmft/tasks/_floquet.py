"""Exponents of periodic orbits from their Floquet multipliers, and orbit runs that stop early once
confirmed periodic (theory: docs/theory/dmft.md §7.1; docs/theory/dynamics.md §4.1, §5.1–5.3, §7.2)."""

from __future__ import annotations

from functools import partial
from typing import Any, Protocol

import jax
import numpy as np

from attnphys.dmft._abstract_model import AbstractModel
from attnphys.dynamics.classify import ClassifyOptions, detect_period
from attnphys.dynamics.orbits import OrbitSpec, orbit_sweep
from attnphys.progress import report_fraction
from attnphys.runtime import take_rows


class AdaptiveTask(Protocol):
    """What an adaptive orbit run reads of its task (an :class:`~attnphys.dmft.tasks.OrbitTask`)."""

    segment: int
    """Steps between periodicity checks."""

    @property
    def options(self) -> ClassifyOptions:
        """The classification's options."""
        ...

    def starts_for(self, idx: np.ndarray) -> Any:
        """The start of the points with global indices ``idx``."""
        ...


def bucket(n: int) -> int:
    return max(1 << max(0, n - 1).bit_length(), 2 * len(jax.local_devices()))


def padded(tree, rows: np.ndarray):
    """Rows ``rows`` of every leaf, padded with copies of the last to a power of two (few compilations)."""
    return take_rows(tree, rows, bucket(rows.size))


def cut(tree, n: int):
    return jax.tree_util.tree_map(lambda a: np.array(a)[:n], tree)


LANE_BLOCK = 256
"""Lanes per call when the points of a batch that did not stop early run the rest of their schedule: a
full block has one compiled shape whatever the number of lanes, and only the last block is padded (to a
power of two), so a batch carries at most a few hundred copies instead of up to as many lanes as it has
(a power-of-two padding of the whole batch). 256 lanes keep the tangent engine at its best throughput on
two cores (``benchmarks/tangents.py --batch``)."""


def in_blocks(f, tree, rows: np.ndarray):
    """``f`` (a function of a batch pytree returning a pytree of arrays with a leading batch axis) over
    ``rows`` of ``tree`` in blocks of :data:`LANE_BLOCK` lanes (two per device where that is more), each
    padded by :func:`padded`, the results concatenated (numpy)."""
    block = bucket(LANE_BLOCK)  # the padded size of a full block: LANE_BLOCK, or two lanes per device if more
    parts = [cut(f(padded(tree, rows[i : i + block])), min(block, rows.size - i)) for i in range(0, rows.size, block)]
    return jax.tree_util.tree_map(lambda *a: np.concatenate(a), *parts)


FLOQUET_CYCLES = 100
"""Cycles of the periodic QR iteration allowed to an orbit for its leading exponents, at least; short
periods get more (:data:`FLOQUET_STEPS`)."""

FLOQUET_STEPS = 1000
"""Steps of the periodic QR iteration (cycles × period) allowed to an orbit, at least: a period-p orbit is
iterated for up to max(:data:`FLOQUET_CYCLES`, ⌈FLOQUET_STEPS / p⌉) cycles. The k-th and (k+1)-th exponents
separate by (λ_k − λ_{k+1})·p per cycle, so a short period needs more cycles for the same gap per step:
a fixed point of the paper preset seen at period L = 4 with a gap of 0.04 per step needs about 180 cycles
to resolve its leading multipliers to 1e-13: a thousand QR steps instead of the 75,000 tangent steps of
the full run it would otherwise get."""


def periodic_exponents(m, couplings, x, aux, sc, periods, k: int, theta: float):
    """Exponents of periodic orbits from their Floquet multipliers, λ_i = log|μ_i| / p (theory:
    docs/theory/dynamics.md §5.1–5.3): Newton refinement of F^p(x) = x from states x (b, D) on or near the
    orbits, then the periodic QR iteration on the leading k + 2 dimensions (at most
    max(:data:`FLOQUET_CYCLES`, ⌈:data:`FLOQUET_STEPS` / p⌉) cycles, fewer once the k leading multipliers
    are resolved). An orbit is accepted when the refinement converged, the auxiliary state closed, the k
    leading exponents are resolved (``Floquet.resolved``: an invariant subspace of the iteration certifies
    them; where the iteration's cycles did not, the eigenvalues of the monodromy,
    :func:`~attnphys.dynamics.periodic.floquet_direct`, if those are resolved) and the leading exponent is
    at most ``theta`` (an attractor).

    Returns:
        (accepted (b,) bool, refined :class:`~attnphys.dynamics.periodic.PeriodicOrbit` (numpy), top-k
        exponents (b, k), descending).
    """
    from attnphys.dynamics.periodic import floquet_batch, floquet_direct, refine_batch

    b = int(np.shape(periods)[0])
    rows = np.arange(b)
    xp, auxp, scp = padded(x, rows), padded(aux, rows), padded(sc, rows)
    pp = np.asarray(periods)[np.r_[rows, np.full(bucket(b) - b, b - 1)]]
    orb = refine_batch(m, xp, auxp, scp, pp, shared=couplings)
    fq = cut(
        floquet_batch(
            m,
            orb.points,
            orb.aux_points,
            scp,
            orb.period,
            shared=couplings,
            max_cycles=np.maximum(FLOQUET_CYCLES, -(-FLOQUET_STEPS // np.maximum(np.asarray(orb.period), 1))),
            leading=max(k, 1),
        ),
        b,
    )
    orb = cut(orb, b)
    ex = np.array(fq.exponents[:, :k])
    lead = np.array(fq.exponents[:, 0])
    top = np.asarray(fq.resolved) >= max(k, 1)
    # multipliers too clustered for the iteration's cycles: the eigenvalues of the monodromy, where resolved
    slow = np.flatnonzero(np.asarray(orb.converged) & np.asarray(orb.aux_closed) & ~top)
    if slow.size:
        take = partial(jax.tree_util.tree_map, lambda a: np.asarray(a)[slow])
        fd = floquet_direct(
            m,
            take(orb.points),
            take(orb.aux_points),
            take(sc),
            np.asarray(orb.period)[slow],
            shared=couplings,
            leading=max(k, 1),
        )
        good = slow[fd.converged]
        ex[good] = fd.exponents[fd.converged, :k]
        top[good] = True
        lead[good] = fd.exponents[fd.converged, 0]
    ok = (
        np.asarray(orb.converged)
        & np.asarray(orb.aux_closed)
        & top
        & np.all(np.isfinite(ex), axis=-1)
        & (lead <= theta)
    )
    return ok, orb, ex


FLOQUET_EVIDENCE = {"roundoff": np.nan, "parallel": np.nan, "zero_hits": 0}
"""The QR evidence of exponents taken from Floquet multipliers: none (NaN fractions, no annihilations;
theory: docs/theory/dynamics.md §5.3), keyed as :func:`~attnphys.dynamics.orbits.orbit_sweep` returns it."""


def adaptive_orbits(task: AdaptiveTask, model: AbstractModel, m, spec: OrbitSpec, sc, idx, labels) -> dict:
    """Orbits of a batch with early stopping (theory: docs/theory/dmft.md §7.1; docs/theory/dynamics.md
    §4.1, §5.3, §7.2). The unrecorded part of the schedule runs on the cached engine in segments; after
    each, a lane whose last (c + 1)·P_max values of A^new recur exactly (the classifier's rule,
    :func:`~attnphys.dynamics.classify.detect_period`) is refined to its periodic orbit; if the orbit is an
    attractor (leading Floquet exponent ≤ θ) the lane stops, its exponents are the Floquet exponents and its
    recorded window is the one the full run would record, taken on the refined orbit at the same phase. The
    other lanes run the full schedule, exactly as without ``adaptive``; those whose recorded window is then
    periodic (fingerprints of the full state) also get Floquet exponents. Returns the keys of
    :func:`~attnphys.dynamics.orbits.orbit_sweep` plus ``stopped_early``, ``stop_step``, ``floquet``."""
    o = task.options
    cp = model.couplings
    n = int(np.shape(sc.gain_o)[0])
    k = spec.k
    pre = spec.transient - spec.align
    T = spec.transient + spec.steps
    inner = spec._replace(transient=spec.align)
    window = (o.confirmations + 1) * o.max_period
    hits: dict[int, tuple] = {}
    refused = np.zeros(n, np.int64)  # period at which a lane's orbit was refused (not an attractor, unresolved)

    def stop(rows, att, states, t):
        report_fraction(t, T)
        per = detect_period(att, o.period_tol, o.max_period, o.confirmations)
        cand = np.flatnonzero((per > 0) & (per != refused[rows]))  # the same orbit is not examined twice
        ret = np.zeros(rows.size, bool)
        if cand.size == 0:
            return ret
        x, aux = m.state(jax.tree_util.tree_map(lambda a: np.asarray(a)[cand], states.window))
        # the positional codes return after L steps: the window's period is a multiple of lcm(p, L) at most
        ok, orb, ex = periodic_exponents(
            m,
            cp,
            x,
            aux,
            jax.tree_util.tree_map(lambda a: np.asarray(a)[rows[cand]], sc),
            np.lcm(per[cand], model.config.L),
            k,
            o.theta,
        )
        for j in np.flatnonzero(ok):
            hits[int(rows[cand[j]])] = (
                t,
                jax.tree_util.tree_map(lambda a, j=j: a[j], (orb.x, orb.aux)),
                int(orb.period[j]),
                ex[j],
            )
        ret[cand[ok]] = True
        refused[rows[cand[~ok]]] = per[cand[~ok]]
        return ret

    st = model.initial_states(task.starts_for(idx), sc)
    if pre > 0:
        st, done, stopped = model.run_segments(
            sc,
            st,
            pre,
            segment=max(task.segment, window),
            window=window,
            stop=stop,
            labels=labels,
        )
    else:
        stopped = np.zeros(n, bool)
    S, C = np.flatnonzero(stopped), np.flatnonzero(~stopped)
    out: dict[str, Any] = {}

    def put(name, rows, val, fill, dtype=None):
        val = np.asarray(val)
        if name not in out:
            out[name] = np.full((n,) + val.shape[1:], fill, dtype or val.dtype)
        out[name][rows] = val

    x_all, aux_all = m.state(jax.tree_util.tree_map(np.asarray, st.window))
    x_all = np.array(x_all)
    aux_all = jax.tree_util.tree_map(np.array, aux_all)
    floq = np.zeros(n, bool)
    if C.size:
        res = in_blocks(lambda b: orbit_sweep(m, inner, *b, shared=cp), (x_all, aux_all, sc), C)
        if k:
            # transient-aware: a lane that settled on a periodic orbit within its budget gets Floquet exponents
            per = detect_period(res["fingerprint"], o.period_tol, o.max_period, o.confirmations)
            cand = np.flatnonzero(per > 0)
            if cand.size:
                ok, _, ex = periodic_exponents(
                    m,
                    cp,
                    res["x"][cand],
                    cut(jax.tree_util.tree_map(lambda a: a[cand], res["aux"]), cand.size),
                    jax.tree_util.tree_map(lambda a: np.asarray(a)[C[cand]], sc),
                    np.lcm(per[cand], model.config.L),
                    k,
                    o.theta,
                )
                good = cand[ok]
                res["exponents"][good] = ex[ok]
                for name, none in FLOQUET_EVIDENCE.items():
                    res[name][good] = none
                floq[C[good]] = True
        for name in ("orbit", "section", "section_count", "nonfinite_step") + (
            ("exponents", *FLOQUET_EVIDENCE) if k else ()
        ):
            put(name, C, res[name], np.nan if np.issubdtype(np.asarray(res[name]).dtype, np.floating) else 0)
        x_all[C] = res["x"]
        for a, r in zip(jax.tree_util.tree_leaves(aux_all), jax.tree_util.tree_leaves(res["aux"])):
            a[C] = r
    if S.size:
        t_s = np.asarray([hits[i][0] for i in S.tolist()])
        p_s = np.asarray([hits[i][2] for i in S.tolist()])
        xs = np.stack([np.asarray(hits[i][1][0]) for i in S.tolist()])
        auxs = jax.tree_util.tree_map(lambda *a: np.stack(a), *[hits[i][1][1] for i in S.tolist()])
        pad = int(2 ** int(np.ceil(np.log2(max(2, p_s.max())))))
        gen = spec._replace(transient=0, align=0, k=0, steps=spec.n_orbit + pad, n_orbit=spec.n_orbit + pad)
        rows = np.arange(S.size)
        res = cut(
            orbit_sweep(
                m, gen, *padded((xs, auxs, jax.tree_util.tree_map(lambda a: np.asarray(a)[S], sc)), rows), shared=cp
            ),
            S.size,
        )
        # the full run records the states T − n_orbit + 1 … T; observation j of this run is the state t + j + 1
        j0 = np.mod(T - spec.n_orbit - t_s, p_s)
        win = np.stack([res["orbit"][i, j0[i] : j0[i] + spec.n_orbit] for i in rows])
        put("orbit", S, win, np.nan)
        put("section", S, res["section"], np.nan)
        put("section_count", S, res["section_count"], 0)
        put("nonfinite_step", S, res["nonfinite_step"], -1)
        if k:
            put("exponents", S, np.stack([hits[i][3] for i in S.tolist()]), np.nan)
            for name, none in FLOQUET_EVIDENCE.items():
                put(name, S, np.full((S.size, k), none), none)
        x_all[S] = xs
        for a, r in zip(jax.tree_util.tree_leaves(aux_all), jax.tree_util.tree_leaves(auxs)):
            a[S] = r
        floq[S] = True
    stop_step = np.full(n, T, np.int64)
    if S.size:
        stop_step[S] = t_s
    out.update(x=x_all, aux=aux_all, stopped_early=stopped, stop_step=stop_step, floquet=floq)
    return out
