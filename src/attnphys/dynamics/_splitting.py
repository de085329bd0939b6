"""Rare transitions of noisy maps: adaptive multilevel splitting, direct simulation beside it, and mean
first-passage times (theory: docs/theory/rare_events.md §5–7) of a map of the toolkit (theory:
docs/theory/dynamics.md §1).

A reaction coordinate ξ (default ξ = d(x, A)/(d(x, A) + d(x, B)), the distances to the two attractors' orbits)
defines the sets A = {ξ ≤ a_level} and B = {ξ ≥ b_level}. A *trial* starts where a trajectory leaves A (the exit
states of a long run from the attractor, §6) and ends in A or in B; p is the probability that it ends in B. The
splitting keeps N replicas of trials, kills the k whose largest ξ is lowest and branches each from a survivor at
the step where the survivor first passed that level, until the k-th lowest maximum lies in B; the product of the
survival fractions times the fraction in B is an unbiased estimate of p (Cérou & Guyader 2007; Bréhier, Lelièvre &
Rousset 2016 for its unbiasedness with ties). Noise is counter-based (η of step s of a replica drawn from its own
key and s), so a survivor's path is replayed from its branch point instead of stored.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr
from scipy import stats

from attnphys._arguments import checked, count, number, state
from attnphys.dynamics._noisy import check_start, noise_at, noise_function, orbit_points
from attnphys.dynamics.checks import memory_of, params_dict, state_dim, warn_if_single_precision
from attnphys.dynamics.maps import AbstractMap
from attnphys.dynamics.periodic import refine
from attnphys.errors import InputError, NonFiniteError
from attnphys.metadata import base_attrs
from attnphys.progress import step_bar

THEORY = "docs/theory/rare_events.md"

RUN, IN_A, IN_B, CROSSED, TIMEOUT = 0, 1, 2, 3, 4
"""Status of a trajectory: running, ended in A, ended in B, passed the stop level, out of steps."""

MFPT_FORMULA = "tau = (1/p - 1) E[t_in + t_out] + E[t_in] + E[t_reactive]  (steps)"
"""The mean first-passage time from the attractor to B by cycles (theory: docs/theory/rare_events.md §6)."""

# ---------------------------------------------------------------------------------------------------------------
# the reaction coordinate and the noisy step


@dataclass(frozen=True)
class _Coordinate:
    """ξ(x) = d_A/(d_A + d_B) with d_A, d_B the Euclidean distances to the nearest point of each orbit."""

    a_points: tuple[tuple[float, ...], ...]
    b_points: tuple[tuple[float, ...], ...]

    def __call__(self, x, aux, params):
        A = jnp.asarray(self.a_points, dtype=x.dtype)
        B = jnp.asarray(self.b_points, dtype=x.dtype)
        da = jnp.min(jnp.linalg.norm(x[None] - A, axis=1))
        db = jnp.min(jnp.linalg.norm(x[None] - B, axis=1))
        return da / (da + db)


def _noisy_step(m, noise, x, aux, params, sq, key, s):
    """One step x_{t+1} = F(x_t) + d_t with the increment drawn by the law at scale √ε = sq (theory:
    docs/theory/rare_events.md §1, §1.3)."""
    y, aux2 = m.step(x, aux, params)
    return y + noise.sample(x, aux, params, jax.random.fold_in(key, s), sq).astype(y.dtype), aux2


def _axes(aux):
    return None if aux is None else 0


@partial(jax.jit, static_argnames=("m", "noise", "coord"))
def _run(m, noise, coord, x, aux, keys, s0, stop, params, sq, a_level, b_level, max_steps):
    """Run each trajectory from (x, aux) with its key, noise counters from s0, until ξ > stop (CROSSED), ξ ≥ b_level
    (IN_B), ξ ≤ a_level (IN_A) or max_steps steps (TIMEOUT). Returns the final (x, aux), the counter, the largest ξ
    (the start's included) and the status."""

    def status(z, stop):
        return jnp.where(z > stop, CROSSED, jnp.where(z >= b_level, IN_B, jnp.where(z <= a_level, IN_A, RUN)))

    def one(x, aux, key, s0, stop):
        z0 = coord(x, aux, params)

        def cond(c):
            return (c[4] == RUN) & (c[2] - s0 < max_steps)

        def body(c):
            x, aux, s, zmax, _ = c
            y, aux2 = _noisy_step(m, noise, x, aux, params, sq, key, s)
            z = coord(y, aux2, params)
            return y, aux2, s + 1, jnp.maximum(zmax, z), status(z, stop)

        x, aux, s, zmax, st = jax.lax.while_loop(cond, body, (x, aux, s0, z0, status(z0, stop)))
        return x, aux, s, zmax, jnp.where(st == RUN, TIMEOUT, st)

    return jax.vmap(one, in_axes=(0, _axes(aux), 0, 0, 0))(x, aux, keys, s0, stop)


CYCLES_PER_CALL = 16
"""Cycles each walker completes per compiled call of the runs from the attractor (the buffers stay small)."""


@partial(jax.jit, static_argnames=("m", "noise", "coord", "C"))
def _cycles(m, noise, coord, a, aux0, walker, keys, params, sq, a_level, b_level, C, max_steps):
    """Each walker (its key and its state: x, aux, noise counter, whether in A, steps since its last event) runs
    on until it has completed C more cycles: a sojourn in A ended by an exit (the exit state and its aux recorded,
    t_in its steps) and an excursion ended by a return to A or by B (t_out its steps; after B the walker restarts at
    a). Returns the walkers' states, the cycles completed and the records."""
    D = a.shape[0]

    def one(key, x, aux, s, inside, tc):
        ex = jnp.zeros((C, D), a.dtype)
        eaux = jax.tree_util.tree_map(lambda leaf: jnp.zeros((C,) + jnp.shape(leaf), jnp.result_type(leaf)), aux0)
        z = jnp.zeros(C, jnp.int32)
        c0 = (x, aux, s, inside, tc, jnp.int32(0), ex, eaux, z, z, z > 0)

        def cond(c):
            return (c[5] < C) & (c[2] - s < max_steps)

        def body(c):
            x, aux, s, inside, tc, n, ex, eaux, tin, tout, reac = c
            y, aux2 = _noisy_step(m, noise, x, aux, params, sq, key, s)
            zz = coord(y, aux2, params)
            tc = tc + 1
            exited = inside & (zz > a_level)
            returned = (~inside) & (zz <= a_level)
            reacted = ((~inside) | exited) & (zz >= b_level)
            i = jnp.minimum(n, C - 1)  # one row of each buffer written, the others kept
            ex = ex.at[i].set(jnp.where(exited, y, ex[i]))
            eaux = jax.tree_util.tree_map(lambda buf, v: buf.at[i].set(jnp.where(exited, v, buf[i])), eaux, aux2)
            tin = tin.at[i].set(jnp.where(exited, tc, tin[i]))
            close = returned | reacted
            tout = tout.at[i].set(jnp.where(close, jnp.where(exited, 0, tc), tout[i]))
            reac = reac.at[i].set(jnp.where(close, reacted, reac[i]))
            inside = jnp.where(close, True, jnp.where(exited, False, inside))
            tc = jnp.where(exited | close, 0, tc)
            y = jnp.where(reacted, a, y)
            aux2 = jax.tree_util.tree_map(lambda u, v: jnp.where(reacted, u, v), aux0, aux2)
            return y, aux2, s + 1, inside, tc, n + close, ex, eaux, tin, tout, reac

        out = jax.lax.while_loop(cond, body, c0)
        return out[:5], out[5:]

    x, aux, s, inside, tc = walker
    return jax.vmap(one, in_axes=(0, 0, _axes(aux), 0, 0, 0))(keys, x, aux, s, inside, tc)


# ---------------------------------------------------------------------------------------------------------------
# the setting shared by the analyses


@dataclass
class _Setting:
    m: AbstractMap
    noise: Callable
    coord: Callable
    params: Any
    xa: np.ndarray
    aux0: Any
    sq: float
    a_level: float
    b_level: float
    D: int
    has_aux: bool


def _setup(m, noise, a, b, params, aux0, a_period, b_period, b_aux, coordinate, a_level, b_level, epsilon) -> _Setting:
    xa = check_start(m, a, aux0, params, "a")
    D = xa.size
    xb = np.asarray(b, dtype=float)
    if xb.shape != (D,):
        raise InputError(f"must be a state (D,) with D = {D} as a, got shape {xb.shape}", "b")
    if not b_level > a_level:
        raise InputError(f"must exceed a_level = {a_level:g}, got {b_level:g}", "b_level")
    noise_fn = noise_function(noise)
    noise_at(noise_fn, xa, aux0, params, D)
    warn_if_single_precision(jnp.asarray(xa))
    baux = aux0 if b_aux is None else b_aux
    xa, xb = _refined(m, xa, aux0, params, a_period), _refined(m, xb, baux, params, b_period)
    a_pts, _ = orbit_points(m, xa, aux0, params, a_period, "a_period", closure=1e-6)
    b_pts, _ = orbit_points(m, xb, baux, params, b_period, "b_period", closure=1e-6)
    if coordinate is None:
        coord = _Coordinate(tuple(map(tuple, a_pts.tolist())), tuple(map(tuple, b_pts.tolist())))
    elif callable(coordinate):
        coord = coordinate
    else:
        raise InputError(
            f"must be a function xi(x, aux, params) -> scalar, got {type(coordinate).__name__}", "coordinate"
        )
    pj = jax.tree_util.tree_map(jnp.asarray, params)
    try:
        za = float(np.asarray(coord(jnp.asarray(xa), aux0, pj)))
        zb = float(np.asarray(coord(jnp.asarray(xb), baux, pj)))
    except Exception as e:  # noqa: BLE001 - a user coordinate that fails on a state
        raise InputError(f"could not be evaluated ({type(e).__name__}: {e})", "coordinate") from None
    if not za <= a_level:
        raise InputError(f"must hold the attractor a in A: xi(a) = {za:.4g} > a_level", "a_level")
    if not zb >= b_level:
        raise InputError(f"must hold b in B: xi(b) = {zb:.4g} < b_level", "b_level")
    return _Setting(
        m, noise_fn, coord, pj, xa, aux0, math.sqrt(epsilon), float(a_level), float(b_level), D,
        bool(jax.tree_util.tree_leaves(aux0)),
    )  # fmt: skip


def _refined(m, x, aux, params, period: int) -> np.ndarray:
    """x refined by Newton to a point of a period-``period`` orbit when that converges, else x."""
    orb = refine(m, jnp.asarray(x), aux, params, period)
    return np.asarray(orb.x, dtype=float) if bool(orb.converged) else x


def _pad(n: int) -> int:
    """The compiled batch size for n trajectories: a power of two, at least 8."""
    return max(8, 1 << max(n - 1, 1).bit_length())


def _take(tree, idx):
    return None if tree is None else jax.tree_util.tree_map(lambda leaf: np.asarray(leaf)[idx], tree)


def _put(tree, idx, values):
    if tree is None:
        return None

    def put(leaf, v):
        leaf = np.array(leaf)
        leaf[idx] = np.asarray(v)
        return leaf

    return jax.tree_util.tree_map(put, tree, values)


def _batch_aux(aux, n: int):
    if not jax.tree_util.tree_leaves(aux):
        return None
    return jax.tree_util.tree_map(lambda leaf: np.broadcast_to(np.asarray(leaf), (n,) + np.shape(leaf)).copy(), aux)


def _simulate(st: _Setting, x, aux, keys, s0, stop, a_level=None, max_steps=10**6):
    """:func:`_run` on n trajectories (host arrays), padded to a compiled size; returns host arrays."""
    n = x.shape[0]
    npad = _pad(n)
    idx = np.minimum(np.arange(npad), n - 1)
    aux_p = _take(aux, idx)
    out = _run(
        st.m,
        st.noise,
        st.coord,
        jnp.asarray(x[idx]),
        None if aux_p is None else jax.tree_util.tree_map(jnp.asarray, aux_p),
        jnp.asarray(keys[idx]),
        jnp.asarray(np.asarray(s0)[idx], dtype=jnp.int32),
        jnp.asarray(np.asarray(stop, dtype=float)[idx]),
        st.params,
        st.sq,
        st.a_level if a_level is None else a_level,
        st.b_level,
        int(max_steps),
    )
    xe, auxe, s, zmax, status = out
    xe = np.array(xe)[:n]
    if not np.all(np.isfinite(xe)):
        bad = int(np.flatnonzero(~np.all(np.isfinite(xe), axis=1))[0])
        raise NonFiniteError(int(np.asarray(s)[bad]), params_dict(st.params), what="noisy trajectory")
    auxe = None if auxe is None else jax.tree_util.tree_map(lambda leaf: np.asarray(leaf)[:n], auxe)
    return xe, auxe, np.array(s)[:n], np.array(zmax)[:n], np.array(status)[:n]


def _keys(root, tag: int, n: int) -> np.ndarray:
    return np.array(jax.random.split(jax.random.fold_in(root, tag), n))


def _cycle_stage(st: _Setting, root, walkers: int, exits: int, max_steps: int) -> dict:
    """The exit states (pooled: exit c of walker w at c·W + w, so that more cycles keep the first ones) and the
    cycle statistics of ``walkers`` runs from the attractor that together complete at least ``exits`` cycles, in
    calls of :data:`CYCLES_PER_CALL` cycles a walker."""
    W, C = walkers, CYCLES_PER_CALL
    rounds = max(1, math.ceil(exits / (W * C)))
    keys = jnp.asarray(_keys(root, 1, W))
    a = jnp.asarray(st.xa)
    aux_w = _batch_aux(st.aux0, W)
    walker = (
        jnp.broadcast_to(a, (W, st.D)),
        None if aux_w is None else jax.tree_util.tree_map(jnp.asarray, aux_w),
        jnp.zeros(W, jnp.int32),
        jnp.ones(W, bool),
        jnp.zeros(W, jnp.int32),
    )
    xs, auxs, tins, touts, reacs = [], [], [], [], []
    for _ in range(rounds):
        walker, (n, ex, eaux, tin, tout, reac) = _cycles(
            st.m, st.noise, st.coord, a, st.aux0, walker, keys, st.params, st.sq, st.a_level, st.b_level, C,
            int(max_steps),
        )  # fmt: skip
        n = np.asarray(n)
        if np.any(n < C):
            raise InputError(
                f"a run from the attractor completed only {int(n.min())} of {C} cycles in {max_steps} steps: "
                "choose a larger A (a_level) or raise max_steps",
                "a_level",
            )
        xs.append(np.swapaxes(np.asarray(ex), 0, 1).reshape(C * W, st.D))
        if st.has_aux:
            auxs.append(
                jax.tree_util.tree_map(
                    lambda leaf: np.swapaxes(np.asarray(leaf), 0, 1).reshape((C * W,) + np.shape(leaf)[2:]), eaux
                )
            )
        tins.append(np.asarray(tin).T.ravel())
        touts.append(np.asarray(tout).T.ravel())
        reacs.append(np.asarray(reac).T.ravel())
    pool_x = np.concatenate(xs)
    if not np.all(np.isfinite(pool_x)):
        raise NonFiniteError(int(np.max(np.asarray(walker[2]))), params_dict(st.params), what="run from the attractor")
    pool_aux = None if not st.has_aux else jax.tree_util.tree_map(lambda *v: np.concatenate(v), *auxs)
    tin, tout, reac = np.concatenate(tins), np.concatenate(touts), np.concatenate(reacs)
    fail = ~reac
    cyc = (tin + tout)[fail]
    return dict(
        x=pool_x,
        aux=pool_aux,
        t_in=float(np.mean(tin)),
        t_out=float(np.mean(tout[fail])) if fail.any() else float("nan"),
        t_reactive=float(np.mean(tout[reac])) if reac.any() else float("nan"),
        cycle=float(np.mean(cyc)) if cyc.size else float("nan"),
        cycle_se=float(np.std(cyc, ddof=1) / math.sqrt(cyc.size)) if cyc.size > 1 else 0.0,
        cycles=int(tin.size),
        reactions=int(reac.sum()),
        cost=float(np.sum(np.asarray(walker[2]))),
    )


def _starts(st: _Setting, x0, n: int):
    X = np.asarray(x0, dtype=float)
    X = X[None] if X.ndim == 1 else X
    if X.ndim != 2 or X.shape[1] != st.D:
        raise InputError(f"must be a state (D,) or states (n, D) with D = {st.D}, got shape {X.shape}", "x0")
    idx = np.arange(n) % X.shape[0]
    return X[idx], _batch_aux(st.aux0, n)


def _summary_mfpt(p, p_se, cyc: dict | None, reactive_mean: float, q: float):
    """τ (the cycle formula) and its half-width at quantile q from the errors of p and of the cycle length."""
    if cyc is None or not np.isfinite(cyc["cycle"]) or not p > 0:
        return float("nan"), float("nan"), float("nan")
    A = cyc["cycle"]
    tau = (1.0 / p - 1.0) * A + cyc["t_in"] + (reactive_mean if np.isfinite(reactive_mean) else 0.0)
    sd = math.sqrt((A * p_se / p**2) ** 2 + ((1.0 / p - 1.0) * cyc["cycle_se"]) ** 2)
    return tau, tau - q * sd, tau + q * sd


def _memory(size: str, hint: str):
    """The entry check's memory rule: the trajectories of ``size`` (replicas, trials or walkers) at once."""

    def rule(a: dict):
        D = state_dim(a["m"], a["params"], a["a"])
        n = max(int(a[size]), int(a.get("walkers") or 1))
        return memory_of(8.0 * 16 * n * (D + 8), "the trajectories", hint, a, size)

    return rule


# ---------------------------------------------------------------------------------------------------------------
# adaptive multilevel splitting


def _ams_run(st: _Setting, x, aux, N: int, k: int, run_key, rng, max_steps: int, max_iterations: int, report):
    keys = _keys(run_key, 0, N)
    bt = np.zeros(N, dtype=np.int64)
    _, _, s, zmax, status = _simulate(st, x, aux, keys, np.zeros(N), np.full(N, np.inf), max_steps=max_steps)
    zmax, status = np.array(zmax), np.array(status)
    bx, baux = np.array(x), None if aux is None else jax.tree_util.tree_map(np.array, aux)
    tend = s.astype(np.int64)
    cost = float(np.sum(s))
    trial_steps = cost / N  # the initial replicas are N direct trials: their mean length
    log_w, iterations, mismatches, complete = 0.0, 0, 0, False
    span = st.b_level - st.a_level
    for it in range(1, max_iterations + 1):
        Z = float(np.partition(zmax, k - 1)[k - 1])
        if Z >= st.b_level:
            complete = True
            break
        killed = np.flatnonzero(zmax <= Z)
        K = killed.size
        if K == N:  # every replica at the level: extinction, the estimate is 0
            log_w, complete = -math.inf, True
            break
        log_w += math.log1p(-K / N)
        iterations = it
        surv = np.flatnonzero(zmax > Z)
        parents = rng.choice(surv, size=K, replace=True)
        # replay each parent from its branch point with its own noise until it first passes Z
        for _attempt in range(8):
            cx, caux, cs, _, cst = _simulate(
                st, bx[parents], _take(baux, parents), keys[parents], np.zeros(K), np.full(K, Z), max_steps=max_steps
            )
            cost += float(np.sum(cs))
            miss = cst != CROSSED
            if not miss.any():
                break
            mismatches += int(miss.sum())
            parents = np.where(miss, rng.choice(surv, size=K, replace=True), parents)
        else:  # pragma: no cover - the replay reproduces the parent's path bit for bit
            raise RuntimeError("the replay of the survivors did not pass the level")
        new_keys = _keys(run_key, it, K)
        _, _, s2, zm, st2 = _simulate(st, cx, caux, new_keys, np.zeros(K), np.full(K, np.inf), max_steps=max_steps)
        cost += float(np.sum(s2))
        t_branch = bt[parents] + cs.astype(np.int64)
        bx[killed] = cx
        baux = _put(baux, killed, caux)
        bt[killed] = t_branch
        keys[killed] = new_keys
        zmax[killed] = zm
        status[killed] = st2
        tend[killed] = t_branch + s2.astype(np.int64)
        report(min(max((Z - st.a_level) / span, 0.0), 1.0))
    reached = status == IN_B
    p = math.exp(log_w) * float(np.mean(reached)) if np.isfinite(log_w) else 0.0
    return dict(
        p=p,
        iterations=iterations,
        cost=cost,
        reached=int(reached.sum()),
        reactive_sum=float(np.sum(tend[reached])),
        timeouts=int(np.sum(status == TIMEOUT)),
        mismatches=mismatches,
        complete=complete,
        trial_steps=trial_steps,
    )


RUN_FIELDS = ("p", "iterations", "cost", "reached", "reactive_sum", "timeouts", "mismatches", "complete", "trial_steps")
CONFIG_KEYS = (
    "epsilon", "a_period", "b_period", "a_level", "b_level", "replicas", "kill", "walkers", "max_steps",
    "max_iterations", "seed", "coordinate", "starts", "map",
)  # fmt: skip


@checked(
    a=state(),
    b=state(),
    epsilon=number(0.0),
    kill=count(1, optional=True),
    max_iterations=count(1),
    memory=_memory("replicas", "use fewer replicas"),
)
def splitting(
    m: AbstractMap,
    noise: Any,
    a,
    b,
    params,
    *,
    epsilon: float,
    aux0: Any = None,
    a_period: int = 1,
    b_period: int = 1,
    b_aux: Any = None,
    coordinate: Callable | None = None,
    a_level: float = 0.1,
    b_level: float = 0.9,
    replicas: int = 200,
    kill: int | None = None,
    runs: int = 4,
    x0: Any = None,
    walkers: int = 64,
    max_steps: int = 1_000_000,
    max_iterations: int = 1_000_000,
    seed: int = 0,
    resume: xr.Dataset | None = None,
    progress: bool = False,
) -> xr.Dataset:
    """The probability of a rare transition of a noisy map by adaptive multilevel splitting, with its interval,
    the mean first-passage time and the cost beside direct simulation's (theory: docs/theory/rare_events.md §5–6)
    (theory: docs/theory/dynamics.md §1).

    x_{t+1} = F(x_t) + √ε B(x_t) η_t; A = {ξ ≤ a_level}, B = {ξ ≥ b_level}. A trial starts at an exit state of
    A (from ``walkers`` runs of the attractor, §6; or at ``x0``) and ends in A or B. Each run keeps N = ``replicas``
    trials; at iteration j the level Z_j is the k-th lowest of their maxima of ξ, the K_j ≥ k trials with maximum
    ≤ Z_j are replaced by copies of survivors (chosen uniformly) up to their first step above Z_j, continued with
    new noise; it stops when Z_j ≥ b_level. The estimate

        p̂ = Π_j (1 − K_j/N) · (number of trials in B)/N

    is unbiased; the runs are independent, their mean p̄ has the interval p̄ ± t_{0.975, R−1} s/√R. The mean
    first-passage time from the attractor to B, in steps (§6),

        τ = (1/p − 1) E[t_in + t_out] + E[t_in] + E[t_reactive],

    t_in the steps in A before an exit, t_out those of a failed trial, t_reactive those of a trial that reaches B
    (from the final replicas in B). Direct simulation reaches the same relative error r with about
    t̄ (1 − p)/(p r²) steps (t̄ the mean length of a trial, from each run's N initial replicas, which are direct
    trials), printed beside the splitting's own cost.

    Args:
        m: the map. noise: ``noise(x, aux, params) -> B (D, K)`` or a constant (D, K) array. a: (D,) a point of
            the first attractor (period ``a_period``). b: (D,) a point of the second (period ``b_period``, with
            ``b_aux``). params: the parameters. epsilon: ε > 0. aux0: the auxiliary state of a.
        coordinate: ξ(x, aux, params) -> scalar (JAX-traceable); default the distance ratio above.
        a_level, b_level: the levels of A and B. replicas: N. kill: k (default N/10). runs: R independent runs.
        x0: (D,) or (n, D) given starts (the trials start there, in turn; no mean first-passage time).
        walkers: runs from the attractor that collect the exit states and cycles. max_steps: the most steps of
            one trajectory (a trial that runs out counts as not reaching B). max_iterations: of one run.
        seed: the seed of everything. resume: a result of this function with the same configuration: its runs
            are kept and ``runs`` more added (run i always draws the same noise, so a resumed result equals the
            one computed at once). progress: a progress bar over the runs.

    Returns:
        Dataset with, on dim ``run``: ``probability`` p̂_r, ``cost`` (steps simulated, replays included),
        ``iterations``, ``reached``, ``timeouts``; scalars ``probability_mean``, ``probability_low``,
        ``probability_high``, ``relative_error`` (s/√R/p̄), ``ideal_relative_error`` (the asymptotic one of an
        ideal coordinate), ``mean_first_passage`` with ``mean_first_passage_low``/``_high`` (steps), ``t_in``,
        ``t_out``, ``cycle_steps``, ``reactive_steps``, ``trial_steps``, ``cost_splitting``, ``cost_cycles``,
        ``cost_direct_same_error``; attrs the configuration (JSON), the formula and the package version.

    Raises:
        InputError: naming ``m``, ``a``, ``b``, ``params``, ``aux0``, ``noise``, ``a_period``/``b_period`` (the
            orbit does not close), ``coordinate``, ``a_level`` (a not in A, or runs that never leave A),
            ``b_level`` (b not in B, or not above a_level), ``epsilon``, ``replicas``, ``kill`` (not below
            replicas), ``runs``, ``x0``, ``walkers``, ``max_steps``, ``max_iterations``, ``seed`` or ``resume``
            (another configuration).
        NonFiniteError: a trajectory left the finite numbers.
    """
    N = replicas
    if N < 2:
        raise InputError(f"must be at least 2, got {N}", "replicas")
    k = max(1, N // 10) if kill is None else kill
    if k >= N:
        raise InputError(f"must be below replicas = {N}, got {k}", "kill")
    st = _setup(m, noise, a, b, params, aux0, a_period, b_period, b_aux, coordinate, a_level, b_level, epsilon)
    config = dict(
        epsilon=float(epsilon),
        a_period=a_period,
        b_period=b_period,
        a_level=float(a_level),
        b_level=float(b_level),
        replicas=N,
        kill=k,
        walkers=walkers,
        max_steps=max_steps,
        max_iterations=max_iterations,
        seed=seed,
        coordinate="distance ratio" if coordinate is None else getattr(coordinate, "__name__", "user"),
        starts="exits of A" if x0 is None else "given",
        map=type(m).__name__,
    )
    previous: dict[str, list] = {f: [] for f in RUN_FIELDS}
    if resume is not None:
        if not isinstance(resume, xr.Dataset) or resume.attrs.get("analysis") != "adaptive multilevel splitting":
            raise InputError("must be a result of splitting()", "resume")
        old = json.loads(resume.attrs["config"])
        diff = [key for key in CONFIG_KEYS if old.get(key) != json.loads(json.dumps(config))[key]]
        if diff:
            raise InputError(f"was computed with another configuration ({', '.join(diff)} differ)", "resume")
        for f in RUN_FIELDS:
            previous[f] = resume[f"run_{f}"].values.tolist()
    R0 = len(previous["p"])
    R = R0 + runs
    root = jax.random.PRNGKey(seed)
    cyc = None
    if x0 is None:
        cyc = _cycle_stage(st, root, walkers, R * N, max_steps)
    rows = {f: list(v) for f, v in previous.items()}
    with step_bar(float(runs), "runs", enabled=progress) as bar:
        for r in range(R0, R):
            if cyc is None:
                xs, auxs = _starts(st, x0, N)
            else:
                idx = np.arange(r * N, (r + 1) * N)
                xs, auxs = cyc["x"][idx], _take(cyc["aux"], idx)
            rng = np.random.default_rng([seed, r])
            done = r - R0
            out = _ams_run(
                st, xs, auxs, N, k, jax.random.fold_in(jax.random.fold_in(root, 2), r), rng, max_steps,
                max_iterations, lambda f, done=done: bar(done + f, float(runs)),
            )  # fmt: skip
            for f in RUN_FIELDS:
                rows[f].append(out[f])
            bar(done + 1.0, float(runs))
    p_r = np.asarray(rows["p"], dtype=float)
    p_mean = float(np.mean(p_r))
    q = float(stats.t.ppf(0.975, R - 1)) if R > 1 else float("nan")
    se = float(np.std(p_r, ddof=1) / math.sqrt(R)) if R > 1 else float("nan")
    rel = se / p_mean if p_mean > 0 else float("nan")
    frac = k / N
    levels = math.log(1.0 / p_mean) / -math.log1p(-frac) if 0 < p_mean < 1 else float("nan")
    ideal = math.sqrt(levels * frac / ((1.0 - frac) * N) / R) if np.isfinite(levels) else float("nan")
    reached = float(np.sum(rows["reached"]))
    reactive = float(np.sum(rows["reactive_sum"]) / reached) if reached > 0 else float("nan")
    tau, tau_lo, tau_hi = _summary_mfpt(p_mean, se if np.isfinite(se) else 0.0, cyc, reactive, q if R > 1 else 0.0)
    cost_split = float(np.sum(rows["cost"]))
    t_out = cyc["t_out"] if cyc is not None else float("nan")
    trial = float(np.mean(rows["trial_steps"]))
    direct = trial * (1.0 - p_mean) / (p_mean * rel**2) if p_mean > 0 and np.isfinite(rel) and rel > 0 else np.nan
    run_vars = {
        f"run_{f}": (
            "run",
            np.asarray(rows[f], dtype=float if f in ("p", "cost", "reactive_sum", "trial_steps") else np.int64),
        )
        for f in RUN_FIELDS
    }
    ds = xr.Dataset(
        {
            "probability": ("run", p_r, {"long_name": "splitting estimate of p (one run)"}),
            "cost": ("run", np.asarray(rows["cost"], float), {"long_name": "steps simulated", "units": "steps"}),
            "iterations": ("run", np.asarray(rows["iterations"], np.int64), {"long_name": "levels"}),
            "reached": ("run", np.asarray(rows["reached"], np.int64), {"long_name": "final replicas in B"}),
            "timeouts": ("run", np.asarray(rows["timeouts"], np.int64), {"long_name": "replicas out of steps"}),
            **run_vars,
            "probability_mean": ((), p_mean, {"long_name": "mean of the runs' estimates of p"}),
            "probability_low": ((), p_mean - q * se, {"long_name": "95% interval of p, low"}),
            "probability_high": ((), p_mean + q * se, {"long_name": "95% interval of p, high"}),
            "relative_error": ((), rel, {"long_name": "standard error of the mean / mean"}),
            "ideal_relative_error": ((), ideal, {"long_name": "asymptotic relative error, ideal coordinate"}),
            "mean_first_passage": ((), tau, {"long_name": "mean first-passage time A to B", "units": "steps"}),
            "mean_first_passage_low": ((), tau_lo, {"units": "steps"}),
            "mean_first_passage_high": ((), tau_hi, {"units": "steps"}),
            "t_in": ((), cyc["t_in"] if cyc else np.nan, {"long_name": "mean steps in A before an exit"}),
            "t_out": ((), t_out, {"long_name": "mean steps of a failed trial"}),
            "cycle_steps": ((), cyc["cycle"] if cyc else np.nan, {"long_name": "mean steps of a cycle"}),
            "reactive_steps": ((), reactive, {"long_name": "mean steps of a trial that reaches B"}),
            "cost_splitting": ((), cost_split, {"long_name": "steps simulated by the runs", "units": "steps"}),
            "cost_cycles": ((), cyc["cost"] if cyc else 0.0, {"long_name": "steps of the runs from the attractor"}),
            "trial_steps": ((), trial, {"long_name": "mean steps of a trial (the initial replicas)"}),
            "cost_direct_same_error": ((), float(direct), {"long_name": "direct simulation's steps, same error"}),
        },
        coords={"run": np.arange(R)},
        attrs=base_attrs(
            config,
            analysis="adaptive multilevel splitting",
            formula=MFPT_FORMULA,
            cycles=cyc["cycles"] if cyc else 0,
            cycle_reactions=cyc["reactions"] if cyc else 0,
            complete=int(all(rows["complete"])),
            replay_mismatches=int(np.sum(rows["mismatches"])),
            params=params_dict(params),
            theory=f"{THEORY} §5",
        ),
    )
    return ds


# ---------------------------------------------------------------------------------------------------------------
# direct simulation


def _wilson(n_b: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    ph = n_b / n
    den = 1.0 + z * z / n
    mid = (ph + z * z / (2 * n)) / den
    half = z * math.sqrt(ph * (1 - ph) / n + z * z / (4 * n * n)) / den
    return max(mid - half, 0.0), min(mid + half, 1.0)


@checked(a=state(), b=state(), epsilon=number(0.0), memory=_memory("walkers", "use fewer walkers"))
def direct_transition(
    m: AbstractMap,
    noise: Any,
    a,
    b,
    params,
    *,
    epsilon: float,
    aux0: Any = None,
    a_period: int = 1,
    b_period: int = 1,
    b_aux: Any = None,
    coordinate: Callable | None = None,
    a_level: float = 0.1,
    b_level: float = 0.9,
    trials: int = 10_000,
    x0: Any = None,
    walkers: int = 1024,
    max_steps: int = 1_000_000,
    seed: int = 0,
    progress: bool = False,
) -> xr.Dataset:
    """The probability of a rare transition of a noisy map by direct simulation of its trials, with its interval
    and the mean first-passage time (theory: docs/theory/rare_events.md §7) (theory: docs/theory/dynamics.md §1).

    The trials of :func:`splitting`, simulated as they come: ``walkers`` runs from the attractor, each a sequence of
    cycles (a sojourn in A, then a trial from the exit state to A or B; after B the walker restarts at a), until
    ``trials`` cycles are done; with ``x0``, the trials start at the given states instead. Then p̂ = n_B/n with the
    Wilson 95% interval and relative error √((1 − p̂)/(n p̂)), and (from the cycles) τ = (1/p − 1) E[t_in + t_out] +
    E[t_in] + E[t_reactive] (§6). The cost counts every step simulated, the sojourns in A included.

    Args:
        m: the map; with noise, a, b, params, epsilon, aux0, a_period, b_period, b_aux, coordinate, a_level,
            b_level, x0, max_steps and seed as for :func:`splitting`.
        trials: n (rounded up to whole calls of the walkers).
        walkers: the trajectories simulated together.
        progress: a progress bar over the trials.

    Returns:
        Dataset with scalars ``probability``, ``probability_low``, ``probability_high``, ``relative_error``,
        ``reached`` (n_B), ``trials`` (n), ``timeouts``, ``mean_first_passage`` (with ``_low``/``_high``, steps),
        ``t_in``, ``t_out``, ``cycle_steps``, ``reactive_steps``, ``cost`` (steps); attrs the configuration and
        the package version.

    Raises:
        InputError: as :func:`splitting`; naming ``trials`` or ``walkers``.
        NonFiniteError: a trajectory left the finite numbers.
    """
    st = _setup(m, noise, a, b, params, aux0, a_period, b_period, b_aux, coordinate, a_level, b_level, epsilon)
    root = jax.random.fold_in(jax.random.PRNGKey(seed), 7)
    cyc, timeouts = None, 0
    with step_bar(float(trials), "trials", enabled=progress) as report:
        if x0 is None:
            cyc = _cycle_stage(st, root, walkers, trials, max_steps)
            n, n_b, react, cost = cyc["cycles"], cyc["reactions"], cyc["t_reactive"], cyc["cost"]
        else:
            n, n_b, react_sum, cost = 0, 0, 0.0, 0.0
            for lo in range(0, trials, walkers):
                k = min(walkers, trials - lo)
                xs, auxs = _starts(st, x0, k)
                keys = np.asarray(jax.random.split(jax.random.fold_in(jax.random.fold_in(root, 2), lo), k))
                _, _, s, _, status = _simulate(st, xs, auxs, keys, np.zeros(k), np.full(k, np.inf), max_steps=max_steps)
                inb = status == IN_B
                n, n_b = n + k, n_b + int(inb.sum())
                react_sum += float(np.sum(s[inb]))
                cost += float(np.sum(s))
                timeouts += int(np.sum(status == TIMEOUT))
                report(float(lo + k), float(trials))
            react = react_sum / n_b if n_b else float("nan")
        report(float(trials), float(trials))
    p = n_b / n
    lo_p, hi_p = _wilson(n_b, n)
    rel = math.sqrt((1.0 - p) / (n * p)) if p > 0 else float("nan")
    tau, tau_lo, tau_hi = _summary_mfpt(p, p * rel if p > 0 else 0.0, cyc, react, 1.959963984540054)
    config = dict(
        epsilon=float(epsilon), a_period=a_period, b_period=b_period, a_level=float(a_level), b_level=float(b_level),
        trials=trials, walkers=walkers, max_steps=max_steps, seed=seed,
        starts="exits of A" if x0 is None else "given", map=type(m).__name__,
    )  # fmt: skip
    return xr.Dataset(
        {
            "probability": ((), p, {"long_name": "direct estimate of p"}),
            "probability_low": ((), lo_p, {"long_name": "Wilson 95% interval, low"}),
            "probability_high": ((), hi_p, {"long_name": "Wilson 95% interval, high"}),
            "relative_error": ((), rel, {"long_name": "sqrt((1 - p)/(n p))"}),
            "reached": ((), n_b),
            "trials": ((), n),
            "timeouts": ((), timeouts),
            "mean_first_passage": ((), tau, {"units": "steps"}),
            "mean_first_passage_low": ((), tau_lo, {"units": "steps"}),
            "mean_first_passage_high": ((), tau_hi, {"units": "steps"}),
            "t_in": ((), cyc["t_in"] if cyc else np.nan),
            "t_out": ((), cyc["t_out"] if cyc else np.nan),
            "cycle_steps": ((), cyc["cycle"] if cyc else np.nan),
            "reactive_steps": ((), react),
            "cost": ((), float(cost), {"units": "steps"}),
        },
        attrs=base_attrs(
            config,
            analysis="direct simulation of trials",
            formula=MFPT_FORMULA,
            params=params_dict(params),
            theory=f"{THEORY} §7",
        ),
    )


@checked(a=state(), b=state(), epsilon=number(0.0), memory=_memory("walkers", "use fewer walkers"))
def first_passage_time(
    m: AbstractMap,
    noise: Any,
    a,
    b,
    params,
    *,
    epsilon: float,
    aux0: Any = None,
    a_period: int = 1,
    b_period: int = 1,
    b_aux: Any = None,
    coordinate: Callable | None = None,
    a_level: float = 0.1,
    b_level: float = 0.9,
    walkers: int = 256,
    max_steps: int = 10_000_000,
    chunk: int = 100_000,
    seed: int = 0,
    progress: bool = False,
) -> xr.Dataset:
    """The mean first-passage time of a noisy map from an attractor to B by direct simulation (theory:
    docs/theory/rare_events.md §7) (theory: docs/theory/dynamics.md §1).

    ``walkers`` independent trajectories from the attractor point a, each run until ξ ≥ b_level (A plays no
    part); τ̂ = the mean of their first-passage steps, with the interval τ̂ ± t_{0.975, n−1} s/√n. Walkers still
    running after ``max_steps`` are censored: the mean is then a lower bound (attr ``status``).

    Args:
        m: the map; with noise, a, b, params, epsilon, aux0, a_period, b_period, b_aux, coordinate, a_level,
            b_level and seed as for :func:`splitting` (a_level only checks that a lies in A).
        walkers: n.
        max_steps: the most steps of a walker.
        chunk: steps per compiled call (the progress bar moves between them).
        progress: a progress bar.

    Returns:
        Dataset with ``passage_steps`` (walker) (NaN: censored); scalars ``mean_first_passage``,
        ``mean_first_passage_low``, ``mean_first_passage_high``, ``relative_error``, ``censored``, ``cost``;
        attrs ``status`` ("complete" or "censored"), the configuration and the package version.

    Raises:
        InputError: as :func:`splitting`; naming ``walkers``, ``max_steps`` or ``chunk``.
        NonFiniteError: a trajectory left the finite numbers.
    """
    st = _setup(m, noise, a, b, params, aux0, a_period, b_period, b_aux, coordinate, a_level, b_level, epsilon)
    n = walkers
    keys = _keys(jax.random.fold_in(jax.random.PRNGKey(seed), 11), 0, n)
    x = np.broadcast_to(st.xa, (n, st.D)).copy()
    aux = _batch_aux(st.aux0, n)
    s = np.zeros(n, dtype=np.int64)
    passage = np.full(n, np.nan)
    alive = np.ones(n, dtype=bool)
    with step_bar(float(n), "walkers", enabled=progress) as report:
        while np.any(alive & (s < max_steps)):
            idx = np.flatnonzero(alive & (s < max_steps))
            todo = int(min(chunk, max_steps - s[idx].min()))
            xe, auxe, se, _, status = _simulate(
                st, x[idx], _take(aux, idx), keys[idx], s[idx], np.full(idx.size, np.inf), a_level=-np.inf,
                max_steps=todo,
            )  # fmt: skip
            x[idx], s[idx] = xe, se
            aux = _put(aux, idx, auxe)
            hit = status == IN_B
            passage[idx[hit]] = se[hit]
            alive[idx[hit]] = False
            report(float(n - alive.sum()), float(n))
    done = np.isfinite(passage)
    nd = int(done.sum())
    tau = float(np.mean(passage[done])) if nd else float("nan")
    sd = float(np.std(passage[done], ddof=1)) if nd > 1 else float("nan")
    q = float(stats.t.ppf(0.975, nd - 1)) if nd > 1 else float("nan")
    half = q * sd / math.sqrt(nd) if nd > 1 else float("nan")
    config = dict(
        epsilon=float(epsilon), a_period=a_period, b_period=b_period, a_level=float(a_level), b_level=float(b_level),
        walkers=walkers, max_steps=max_steps, chunk=chunk, seed=seed, map=type(m).__name__,
    )  # fmt: skip
    return xr.Dataset(
        {
            "passage_steps": ("walker", passage, {"long_name": "first-passage steps to B", "units": "steps"}),
            "mean_first_passage": ((), tau, {"units": "steps"}),
            "mean_first_passage_low": ((), tau - half, {"units": "steps"}),
            "mean_first_passage_high": ((), tau + half, {"units": "steps"}),
            "relative_error": ((), sd / math.sqrt(nd) / tau if nd > 1 else np.nan),
            "censored": ((), int(n - nd)),
            "cost": ((), float(np.sum(s)), {"units": "steps"}),
        },
        coords={"walker": np.arange(n)},
        attrs=base_attrs(
            config,
            analysis="direct first-passage times",
            status="complete" if nd == n else "censored",
            params=params_dict(params),
            theory=f"{THEORY} §7",
        ),
    )


__all__ = ["MFPT_FORMULA", "direct_transition", "first_passage_time", "splitting"]
