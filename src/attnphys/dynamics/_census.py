"""Attractor census: which attractors exist at a parameter point, how large their basins are, how stable
they are (theory: docs/theory/dynamics.md §7).

K starts from a sampler (:mod:`attnphys.dynamics.samplers`, §7.1) run vectorised (:func:`settle`, §7.2)
until each settles on an exact periodic orbit, diverges, or spends its budget. Then, per parameter point:

* **divergent** starts form one pseudo-attractor of kind ``divergent``;
* **periodic** starts are grouped by their detected cycles (same lag p, the last p fingerprints equal up to
  a phase shift within ``raw_group_tol``·max(1, max|f|)); each group's representative is refined by Newton
  (:func:`attnphys.dynamics.periodic.refine_batch`, which also reduces a lag 2p detected on a period-p
  orbit to p), and groups are merged exactly: two share an attractor when their refined orbits have the
  same minimal period and the same point set — after aligning the phase (the point of one nearest the first
  point of the other), the p fingerprints agree within ``group_tol``·max(1, max|f|) (max-norm);
* the **other** starts are judged on the fingerprint ring of their last W steps, subsampled to n points
  S (``n_recurrence``), split into an earlier half A and a later half B (§7.2):

  - *converging* (still approaching a periodic orbit): the ring repeats at some lag p ≤ P_max within
    ``converging_tol`` of its spread, but the mismatch |f_t − f_{t−p}| in the last quarter is less than
    half of that in the first quarter → unsettled;
  - *recurrent* (settled on a non-periodic attractor): the q-quantile (``recurrence_quantile``) of the
    distance from a point of B to the nearest point of A is at most ``recurrence_factor`` × the
    q-quantile of nearest-neighbour distances within A → settled, at the start of the ring (an upper
    bound on its settling step);
  - otherwise → unsettled (label −1; never forced into a class).

  Recurrent starts are grouped greedily: a start joins a representative's attractor when the q-quantile
  of the distance from each of the two point sets to the other is at most ``recurrence_factor`` × the
  larger of their internal nearest-neighbour q-quantiles. Starts are taken in index order; the first
  start of a group is its representative.

Per attractor (§7.3): kind (codes of :data:`attnphys.dynamics.classify.REGIMES`), period (0: not periodic,
−1: periodic but longer than P_max), exponents — exact, log|μ_i|/p from the Floquet multipliers, for a
periodic orbit; Benettin over ``lyap_steps`` steps from the representative otherwise, whose run is also
classified (:func:`attnphys.dynamics.classify.classify`; if that run finds an exact period the group was
still in a transient and its starts become unsettled) — representative points, and the basin fraction
k/K with its 95% Wilson interval (:func:`attnphys.dynamics.intervals.wilson_interval`); K counts every
start, so the fractions, the unsettled fraction and the unstable fraction (starts on an unstable periodic
orbit: a saddle or repeller holds them, numerically exactly or for the settle run's confirmations, but
attracts nothing; they have not failed to settle) add up to 1.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from attnphys._arguments import checked
from attnphys.dynamics import _census_geometry as geo
from attnphys.dynamics._census_settle import settle_in_chunks
from attnphys.dynamics.checks import memory_of, state_dim, warn_if_single_precision
from attnphys.dynamics.classify import REGIME_CODE, REGIMES, ClassifyOptions, classify, flag_attrs
from attnphys.dynamics.fingerprint import fingerprint
from attnphys.dynamics.intervals import wilson_interval
from attnphys.dynamics.maps import AbstractMap
from attnphys.dynamics.periodic import floquet_batch, refine_batch
from attnphys.dynamics.samplers import AbstractSampler, make_sampler
from attnphys.dynamics.settle import DIVERGENT, PERIODIC, SettleOptions, lane_params
from attnphys.errors import InputError, check_fits, find_stack_level
from attnphys.progress import step_bar
from attnphys.runtime import take_rows

OUTCOMES: tuple[str, ...] = (
    "unsettled",
    "periodic",
    "divergent",
    "recurrent",
    "converging",
    "transient",
    "unstable",
)
"""Per-start outcome codes (``ic_outcome``): unsettled (not recurrent), settled on an exact periodic orbit,
diverged, settled on a non-periodic attractor, still converging to a periodic orbit (unsettled), in a
group whose representative later settled on a periodic orbit (unsettled), or shadowing an unstable
periodic orbit (a Floquet multiplier outside the unit circle; unsettled: such an orbit is no attractor)."""


CENSUS_ATTRS: dict[str, dict] = {
    "kind": {
        "long_name": "attractor kind (regime)",
        **flag_attrs(REGIMES, fill_meaning="no_attractor"),
        "comment": "-1: no attractor (padding of the attractor dim)",
    },
    "period": {
        "long_name": "period",
        "units": "step",
        "comment": "0: not periodic (or no attractor); -1: periodic, longer than max_period",
    },
    "n_members": {"long_name": "number of starts that settled on the attractor"},
    "basin_fraction": {"long_name": "basin fraction (share of all starts)", "comment": "NaN: no attractor"},
    "basin_ci_low": {"long_name": "basin fraction, lower end of the 95% Wilson interval"},
    "basin_ci_high": {"long_name": "basin fraction, upper end of the 95% Wilson interval"},
    "exponents": {
        "long_name": "Lyapunov exponents, descending (exact from Floquet multipliers for periodic orbits)",
        "units": "1/step",
        "comment": "NaN: a multiplier the iteration did not resolve, or no attractor",
    },
    "floquet_abs": {"long_name": "Floquet multiplier modulus |mu|", "comment": "NaN: not periodic, or not resolved"},
    "floquet_angle": {
        "long_name": "Floquet multiplier argument",
        "units": "rad",
        "comment": "NaN: not periodic, or not resolved",
    },
    "stable": {
        "long_name": "all Floquet multipliers inside the unit circle",
        **flag_attrs(("no", "yes"), fill_meaning="not_applicable"),
        "comment": "-1: not periodic, or the leading multiplier not resolved",
    },
    "aux_closed": {
        "long_name": "auxiliary state returns after one period",
        **flag_attrs(("no", "yes"), fill_meaning="not_applicable"),
        "comment": "-1: not periodic",
    },
    "representative": {"long_name": "start (ic index) representing the attractor", "comment": "-1: no attractor"},
    "points": {"long_name": "representative states on the attractor"},
    "observed": {"long_name": "observable at the representative states"},
    "label": {"long_name": "attractor index of the start", "comment": "-1: unsettled (see ic_outcome)"},
    "settle_step": {
        "long_name": "step from which the start is on its attractor",
        "units": "step",
        "comment": "-1: unsettled; non-periodic attractors: the start of the verified window (an upper bound)",
    },
    "ic_outcome": {"long_name": "outcome of the start", **flag_attrs(OUTCOMES, fill=None)},
    "ic_state": {"long_name": "initial state"},
    "ic_steps": {"long_name": "steps run by the start in the settle run", "units": "step"},
    "n_attractors": {"long_name": "number of attractors found"},
    "n_dropped": {"long_name": "attractors beyond max_attractors (dropped)"},
    "unsettled_fraction": {
        "long_name": "share of starts that did not settle",
        "comment": "starts on an unstable periodic orbit are counted in unstable_fraction, not here",
    },
    "unsettled_ci_low": {"long_name": "unsettled share, lower end of the 95% Wilson interval"},
    "unsettled_ci_high": {"long_name": "unsettled share, upper end of the 95% Wilson interval"},
    "unstable_fraction": {
        "long_name": "share of starts on an unstable periodic orbit (a saddle or repeller: it attracts nothing)",
        "comment": "ic_outcome 'unstable'; basin fractions, unsettled_fraction and this add up to 1",
    },
}
"""CF attributes of every census variable (one table: :func:`census_batch` and the sweep tasks built on it)."""


RING_COPIES = 5
"""Copies of a lane's fingerprint ring alive at the peak of the settle run (the stored lanes, the working
batch, a round's carry and its updated ring, the verification; measured ≈ 4.4 on the Hénon map)."""

CHUNK_LANES = 2048
"""The most starts settled in one call (theory: docs/theory/dynamics.md §7.4): every step of the settle run
reads and writes each lane's state, so a batch whose states stay in the processor's caches runs fastest —
on the 500 × 500 Newton grid (one 32-step block per start), a batch of 2048 lanes took a third of the time
of one of 65,536 (``benchmarks/speed.py``). Chunks are evened out so that they share one compiled size."""

UNSTABLE_LOG_MU = 1e-8
"""A periodic orbit whose leading log|μ| per cycle exceeds this is unstable and never an attractor (a neutral
orbit, |μ| = 1 to rounding, e.g. of a rational rotation, is kept)."""


class CensusOptions(NamedTuple):
    """Schedule and criteria of a census, hashable (theory: docs/theory/dynamics.md §7).

    budget, transient, block, max_period, confirmations, period_tol, n_fingerprint, bound, round_blocks,
    compact_ratio: the settle run (:class:`attnphys.dynamics.settle.SettleOptions`).
    group_tol: relative tolerance identifying two refined periodic orbits. raw_group_tol: relative tolerance
    grouping detected cycles before refinement.
    recurrence_factor, recurrence_quantile, n_recurrence: the recurrence criterion and grouping of
    non-periodic attractors. converging_tol: relative tolerance of "still converging to a periodic orbit".
    k: exponents per attractor (None: all D). lyap_steps, lyap_align: Benettin run of non-periodic
    attractors. n_classify: window classified. max_points: representative points per attractor.
    classify: thresholds of the classification. merge_steps, merge_points, merge_coverage: the long run of
    each non-periodic representative (``merge_points`` fingerprints over ``merge_steps`` steps) and the
    share of each run that must lie near the other for two such attractors to be one (§7.2).
    memory_budget: bytes of working memory of the settle run; the starts are settled in chunks that fit
    (:meth:`lanes_per_chunk`; §7.4). n_state: the state dimension D (set by the census; 0: unknown, the
    estimate then assumes a full fingerprint).
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
    group_tol: float = 1e-7
    raw_group_tol: float = 1e-5
    recurrence_factor: float = 3.0
    recurrence_quantile: float = 0.9
    n_recurrence: int = 256
    converging_tol: float = 1e-3
    k: int | None = None
    lyap_steps: int = 10_000
    lyap_align: int = 1_000
    n_classify: int = 2_000
    max_points: int = 64
    classify: ClassifyOptions = ClassifyOptions()
    merge_steps: int = 20_000
    merge_points: int = 1_000
    merge_coverage: float = 0.9
    memory_budget: int = 1 << 28
    n_state: int = 0

    def lane_bytes(self) -> int:
        """Peak working memory of one start in the settle run: about :data:`RING_COPIES` copies of its
        fingerprint ring (W × G float64) plus its state (theory: docs/theory/dynamics.md §7.4)."""
        so = self.settle_options()
        G = self.n_fingerprint if self.n_state <= 0 else min(self.n_fingerprint, self.n_state)
        return RING_COPIES * so.window * G * 8 + 16 * max(self.n_state, 1) * 8

    def lanes_per_chunk(self) -> int:
        """Starts settled together: as many as fit ``memory_budget`` bytes of working memory, and at most
        :data:`CHUNK_LANES` (a batch whose per-step state stays in the processor's caches)."""
        return max(1, min(CHUNK_LANES, int(self.memory_budget // self.lane_bytes())))

    def settle_options(self) -> SettleOptions:
        return SettleOptions(
            budget=self.budget,
            transient=self.transient,
            block=self.block,
            max_period=self.max_period,
            confirmations=self.confirmations,
            period_tol=self.period_tol,
            n_fingerprint=self.n_fingerprint,
            bound=self.bound,
            round_blocks=self.round_blocks,
            compact_ratio=self.compact_ratio,
        ).validate()

    def validate(self) -> CensusOptions:
        so = self.settle_options()
        if self.budget < so.window:
            raise InputError(
                f"must be >= the fingerprint ring W = (confirmations + 1)·max_period + block = "
                f"{so.window} (got {self.budget})",
                field="budget",
            )
        if self.lyap_steps < 1 or self.lyap_align < 0 or self.n_classify < 20 or self.max_points < 1:
            raise InputError(
                "lyap_steps >= 1, lyap_align >= 0, n_classify >= 20 and max_points >= 1 needed", field="census"
            )
        if self.n_classify > self.lyap_steps:
            raise InputError(
                f"n_classify ({self.n_classify}) must not exceed lyap_steps ({self.lyap_steps})", field="census"
            )
        if not (1 <= self.merge_points <= self.merge_steps and 0 < self.merge_coverage <= 1):
            raise InputError("1 <= merge_points <= merge_steps and merge_coverage in (0, 1] needed", field="census")
        if self.memory_budget < 1:
            raise InputError(f"must be >= 1 byte (got {self.memory_budget})", field="memory_budget")
        if not (0 < self.recurrence_quantile <= 1 and self.recurrence_factor > 0 and self.group_tol > 0):
            raise InputError(
                "recurrence_quantile in (0, 1], recurrence_factor > 0 and group_tol > 0 needed", field="census"
            )
        return self


# ---------------------------------------------------------------- the census


def _leading(tree) -> int:
    leaves = jax.tree_util.tree_leaves(tree)
    if not leaves:
        raise InputError("params must have a leading batch axis", field="params")
    return int(np.shape(leaves[0])[0])


def _recurrent_lanes(outcome, b: int, K: int) -> np.ndarray:
    """The lanes of parameter point b whose outcome is ``recurrent``."""
    lanes_b = np.arange(b * K, (b + 1) * K)
    return lanes_b[outcome[lanes_b] == OUTCOMES.index("recurrent")]


class _Attractor(dict):
    """kind, period, members (lane indices), rep (lane index), source ('periodic' | 'recurrent' | 'divergent')."""


@checked(
    memory=lambda a: memory_of(
        8 * 16 * (a["ics"] or 0) * state_dim(a["m"], a["params"]), "the census's states", "use fewer ics", a, "ics"
    )
)
def census_batch(
    m: AbstractMap,
    params,
    sampler: str | AbstractSampler = "random",
    *,
    ics: int | None = None,
    steps: int | None = None,
    seed: int = 0,
    options: CensusOptions = CensusOptions(),
    shared=None,
    param_values=None,
    param_name: str = "param",
    max_attractors: int | None = None,
    progress: bool = False,
    n_ics: int | None = None,
) -> xr.Dataset:
    """Attractor censuses at B parameter points in one vectorised call (theory: docs/theory/dynamics.md §7).

    Args:
        m: the map. params: parameter pytree with a leading axis B (one census per row).
        sampler: a sampler or its name (``random``: :meth:`AbstractMap.sample_states`); the same key is
            used at every parameter point (common random numbers: neighbouring points see the same starts
            when the sampler does not depend on the parameters).
        ics: K starts per parameter point (default 256), as in :func:`attnphys.dmft.attractors`.
        steps: the most steps per start in the settle run (``options.budget``; default the options').
        seed: PRNG seed of the sampler.
        options: :class:`CensusOptions`. shared: unbatched parameters; the map then receives
            ``(shared, params_b)``. param_values: (B,) coordinate values of the ``param`` dim (default
            0…B−1), named ``param_name`` in the attrs. max_attractors: fixed size of the ``attractor`` dim
            (default: the largest count found); attractors beyond it are dropped and counted in
            ``n_dropped``.
        progress: show a progress bar of the settle run.
        n_ics: the former name of ``ics`` (deprecated since 0.3.0: a ``DeprecationWarning``; removed in 0.5.0).

    Returns:
        Dataset with dims ``param``, ``attractor``, ``ic``, ``exponent``, ``point``, ``dim``, ``feature``;
        variables ``kind``, ``period``, ``basin_fraction``, ``basin_ci_low``, ``basin_ci_high``,
        ``n_members``, ``exponents`` (descending), ``floquet_abs``/``floquet_angle`` (NaN when not
        periodic), ``stable``, ``aux_closed``, ``representative``, ``points``, ``observed`` (attractor,
        point, …), ``label`` (ic → attractor index, −1 unsettled), ``settle_step``, ``ic_outcome``,
        ``ic_state``, ``ic_steps``, ``n_attractors``, ``unsettled_fraction`` (+ interval), ``unstable_fraction``,
        ``n_dropped``. Padding
        attractors have kind −1. Every variable has CF ``long_name`` (and ``units`` where it has units).
    """
    if not isinstance(options, CensusOptions):
        raise InputError(f"must be a CensusOptions (e.g. CensusOptions(budget=40_000)), got {options!r}", "options")
    n_ics = _renamed_ics(ics, n_ics)
    if steps is not None:
        if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
            raise InputError(f"must be an integer >= 1 (got {steps!r})", field="steps")
        options = options._replace(budget=int(steps))
    o = options.validate()
    so = o.settle_options()
    sampler = make_sampler(sampler)
    if isinstance(n_ics, bool) or not isinstance(n_ics, (int, np.integer)) or n_ics < 1:
        raise InputError(f"must be an integer >= 1 (got {n_ics!r})", field="ics")
    for name, tree in (("params", params), ("shared", shared)):
        leaves = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(tree)]
        if any(leaf.dtype.kind in "fc" and not np.all(np.isfinite(leaf)) for leaf in leaves):
            raise InputError("parameters must be finite (NaN or infinity given)", name)
    B, K = _leading(params), int(n_ics)
    check_fits(
        64.0 * B * K,  # at least a start, a state, a label and an outcome per trajectory, 8 bytes each, twice
        f"the starts and states of {B} × {K} trajectories",
        "take fewer starts (ics) or fewer parameter points",
        "ics",
    )
    table = jax.tree_util.tree_map(jnp.asarray, params)
    key = jax.random.PRNGKey(seed)
    xs, auxs = [], []
    for b in range(B):
        x, a = sampler.sample(m, key, K, lane_params(table, shared, b))
        xs.append(np.asarray(x))
        auxs.append(jax.tree_util.tree_map(np.asarray, a))
    x0 = np.concatenate(xs)
    warn_if_single_precision(x0)
    aux0 = auxs[0]
    if jax.tree_util.tree_leaves(aux0):
        aux0 = jax.tree_util.tree_map(lambda *a: np.concatenate(a), *auxs)
    if x0.ndim != 2:
        raise InputError(f"the sampler must return states of shape (K, D), got {x0.shape}", field="start-sampler")
    N, D = x0.shape
    k = D if o.k is None else int(o.k)
    if not 1 <= k <= D:
        raise InputError(f"must be in [1, D = {D}] (got {k})", field="k")
    pidx = np.repeat(np.arange(B), K)

    chunk = o._replace(n_state=D).lanes_per_chunk()
    n_chunks = -(-N // chunk)
    chunk = -(-N // n_chunks)  # even chunks: one compiled batch size (the last no larger than the others)
    horizon = so.n_blocks * so.block
    total = horizon * (n_chunks + 1)  # the settle run, then grouping, refinement and representative runs
    with step_bar(total, "steps", enabled=progress) as report:
        lanes, tails, assessed = settle_in_chunks(m, x0, aux0, pidx, table, shared, o, chunk, report)
        ctx = _Context(
            x0, aux0, pidx, table, shared, B, K, k, D, sampler, seed, param_values, param_name, max_attractors
        )
        ds = _group(m, o, lanes, tails, assessed, ctx)
        report(total, total)
    return ds


def _renamed_ics(ics, n_ics):
    """The number of starts from ``ics`` or its former name ``n_ics`` (deprecated, with a warning)."""
    if n_ics is None:
        return 256 if ics is None else ics
    if ics is not None:
        raise InputError("give ics only (n_ics is its former name)", field="n_ics")
    import warnings

    from attnphys._deprecated import SINCE, UNTIL

    warnings.warn(
        f"census: n_ics is renamed ics (as in attnphys.dmft.attractors); n_ics is deprecated since {SINCE} and "
        f"will be removed in {UNTIL}",
        DeprecationWarning,
        stacklevel=find_stack_level(),
    )
    return n_ics


class _Context(NamedTuple):
    """What a census was asked (starts, parameters, sizes, naming), handed from the settle run to grouping."""

    x0: np.ndarray
    aux0: Any
    pidx: np.ndarray
    table: Any
    shared: Any
    B: int
    K: int
    k: int
    D: int
    sampler: AbstractSampler
    seed: int
    param_values: Any
    param_name: str
    max_attractors: int | None


def _group(m, o, lanes, tails, assessed, ctx: _Context) -> xr.Dataset:
    """Grouping, refinement, representative runs and the dataset of :func:`census_batch` (theory:
    docs/theory/dynamics.md §7.2–7.3)."""
    x0, aux0, pidx, table, shared, B, K, k, D, sampler, seed, param_values, param_name, max_attractors = ctx
    so = o.settle_options()
    N = int(x0.shape[0])
    ex_idx, rec, h, cvg, clouds = assessed
    table_np = jax.tree_util.tree_map(np.asarray, table)
    status = np.asarray(lanes.status)
    period = np.asarray(lanes.period).astype(np.int64)
    settle_step = np.asarray(lanes.settle).astype(np.int64)
    t_end = np.asarray(lanes.t).astype(np.int64)
    outcome = np.zeros(N, np.int8)
    outcome[status == PERIODIC] = OUTCOMES.index("periodic")
    outcome[status == DIVERGENT] = OUTCOMES.index("divergent")

    # ---- periodic lanes: grouped by their detected cycles, one Newton refinement per group, merged exactly
    per_idx = np.flatnonzero(status == PERIODIC)
    raw_groups: list[tuple[int, np.ndarray]] = []  # (b, members in increasing order), first = representative
    for b in range(B):
        todo = per_idx[(per_idx >= b * K) & (per_idx < (b + 1) * K)]
        while todo.size:
            p = int(period[todo[0]])
            same = todo[period[todo] == p]
            seqs = tails[p].of(same)
            tol = o.raw_group_tol * max(1.0, float(np.max(np.abs(seqs[0]))))
            ok = geo.align_match(seqs, seqs[0], tol)
            raw_groups.append((b, same[ok]))
            todo = np.setdiff1d(todo, same[ok], assume_unique=True)
    orb = None
    if raw_groups:
        reps = np.asarray([g[1][0] for g in raw_groups])
        nb = geo.pow2(reps.size)
        orb = refine_batch(
            m,
            take_rows(lanes.x, reps, nb),
            take_rows(lanes.aux, reps, nb),
            take_rows(table_np, pidx[reps], nb),
            take_rows(period, reps, nb),
            shared=shared,
        )
        orb = jax.tree_util.tree_map(lambda a: np.asarray(a)[: reps.size], orb)
        fps = np.asarray(fingerprint(orb.points, o.n_fingerprint))  # (n_groups, P, G)
    per_groups: list[list[dict]] = [[] for _ in range(B)]  # merged: dict(members, row, period)
    for g, (b, members) in enumerate(raw_groups):
        assert orb is not None  # refined above whenever there are groups
        p = int(orb.period[g])
        conv = bool(orb.converged[g])
        seq = fps[g, :p] if conv else tails[int(period[members[0]])].of(members[:1])[0]
        for grp in per_groups[b]:
            if grp["period"] == p and grp["conv"] and conv and grp["seq"].shape == seq.shape:
                tol = o.group_tol * max(1.0, float(np.max(np.abs(grp["seq"]))))
                if geo.align_match(seq[None], grp["seq"], tol)[0]:
                    grp["members"] = np.concatenate([grp["members"], members])
                    break
        else:
            per_groups[b].append(dict(members=members, row=g, period=p, conv=conv, seq=seq))
        period[members] = p

    # ---- other lanes: recurrence and convergence
    if ex_idx.size:
        outcome[ex_idx[cvg]] = OUTCOMES.index("converging")
        outcome[ex_idx[~cvg & rec]] = OUTCOMES.index("recurrent")
        settle_step[ex_idx[~cvg & rec]] = t_end[ex_idx[~cvg & rec]] - so.window + 1
    ex_pos: dict[int | np.integer, int] = {lane: j for j, lane in enumerate(ex_idx)}

    # ---- recurrent lanes: grouped around representatives, all parameter points in each pass
    rec_groups: list[list[np.ndarray]] = [[] for _ in range(B)]
    todos = {b: t for b in range(B) if (t := _recurrent_lanes(outcome, b, K)).size}
    scale = np.ones(0)
    if todos:
        assert clouds is not None  # recurrent lanes were assessed above
        scale = np.maximum(1.0, np.max(np.abs(clouds), axis=(1, 2)))
    while todos:
        rep_of = np.concatenate([np.full(t.size, ex_pos[int(t[0])]) for t in todos.values()])
        js = np.concatenate([[ex_pos[j] for j in t] for t in todos.values()]).astype(np.int64)
        # in blocks of lanes, so that the paired clouds stay within the memory budget
        block = geo.pow2(max(16, min(js.size, o.memory_budget // (4 * max(1, clouds[0].size) * 8))), 16)
        ok = np.zeros(js.size, bool)
        for lo in range(0, js.size, block):
            r, j = rep_of[lo : lo + block], js[lo : lo + block]
            nb = geo.pow2(j.size, 16)
            ok[lo : lo + j.size] = np.asarray(
                geo.same_cloud(
                    take_rows(clouds, r, nb),
                    take_rows(h, r, nb),
                    take_rows(clouds, j, nb),
                    take_rows(h, j, nb),
                    take_rows(o.period_tol * scale, r, nb),
                    o.recurrence_quantile,
                    o.recurrence_factor,
                )
            )[: j.size]
        at = 0
        for b, todo in list(todos.items()):
            ok_b = ok[at : at + todo.size]
            at += todo.size
            ok_b[0] = True
            rec_groups[b].append(todo[ok_b])
            if ok_b.all():
                del todos[b]
            else:
                todos[b] = todo[~ok_b]

    # ---- grouping per parameter point
    groups: list[list[_Attractor]] = []
    for b in range(B):
        lanes_b = np.arange(b * K, (b + 1) * K)
        atts: list[_Attractor] = []
        div = lanes_b[status[lanes_b] == DIVERGENT]
        if div.size:
            atts.append(
                _Attractor(
                    kind=REGIME_CODE["divergent"], period=0, members=list(div), rep=int(div[0]), source="divergent"
                )
            )
        for grp in per_groups[b]:
            p = grp["period"]
            atts.append(
                _Attractor(
                    kind=REGIME_CODE["fixed_point" if p == 1 else "periodic"],
                    period=p,
                    members=np.sort(grp["members"]),
                    rep=int(grp["members"][0]),
                    row=grp["row"],
                    source="periodic",
                )
            )
        for members in rec_groups[b]:
            atts.append(_Attractor(kind=-1, period=0, members=list(members), rep=int(members[0]), source="recurrent"))
        groups.append(atts)

    # ---- properties of the representatives
    all_atts = [(b, a) for b, atts in enumerate(groups) for a in atts]
    n_pts = o.max_points
    nan = np.nan
    for _, a in all_atts:
        a.update(
            exponents=np.full(k, nan),
            floquet_abs=np.full(k, nan),
            floquet_angle=np.full(k, nan),
            stable=-1,
            aux_closed=-1,
            points=np.full((n_pts, D), nan),
            observed=None,
        )
    per_atts = [a for _, a in all_atts if a["source"] == "periodic"]
    if per_atts:
        rows = np.asarray([a["row"] for a in per_atts])
        nb = geo.pow2(rows.size)
        sub = take_rows(orb, rows, nb)
        rep_rows = pidx[[a["rep"] for a in per_atts]]
        fl = floquet_batch(
            m, sub.points, sub.aux_points, take_rows(table_np, rep_rows, nb), np.asarray(sub.period), shared=shared
        )
        log_abs, ang = np.asarray(fl.log_abs), np.asarray(fl.angle)
        rep_pidx = take_rows(rep_rows, np.arange(rows.size), nb)
        obs = np.asarray(geo.observe_points(m, sub.points, sub.aux_points, table, rep_pidx, shared))
        pts = np.asarray(sub.points)
        resolved = np.asarray(fl.resolved)
        for j, a in enumerate(per_atts):
            p = a["period"]
            # only the multipliers the iteration certified (theory: docs/theory/dynamics.md §5.2)
            seen = np.arange(k) < resolved[j]
            a["exponents"] = np.where(seen, log_abs[j, :k] / p, nan)
            a["floquet_abs"] = np.where(seen, np.exp(log_abs[j, :k]), nan)
            a["floquet_angle"] = np.where(seen, ang[j, :k], nan)
            a["stable"] = int(log_abs[j, 0] < 0) if resolved[j] > 0 else -1
            if resolved[j] > 0 and log_abs[j, 0] > UNSTABLE_LOG_MU:
                # an unstable orbit is never an attractor: its starts shadowed it for a while, unsettled
                outcome[a["members"]] = OUTCOMES.index("unstable")
                settle_step[a["members"]] = -1
                a["dropped"] = True
            a["aux_closed"] = int(bool(np.asarray(sub.aux_closed)[j]))
            n = min(p, n_pts, pts.shape[1])
            a["points"][:n] = pts[j, :n]
            ob = np.full((n_pts,) + obs.shape[2:], nan)
            ob[:n] = obs[j, :n]
            a["observed"] = ob
    rec_atts = [(b, a) for b, a in all_atts if a["source"] == "recurrent"]
    if rec_atts:
        reps = np.asarray([a["rep"] for _, a in rec_atts])
        nb = geo.pow2(reps.size)
        rep_pidx = take_rows(pidx[reps], np.arange(reps.size), nb)
        ex, y, f, bad, xf, auxf, long = geo.rep_run(
            m,
            k,
            o.lyap_steps,
            o.lyap_align,
            o.n_classify,
            o.n_fingerprint,
            o.merge_points,
            geo.odd_prime_stride(o.merge_steps // o.merge_points),
            take_rows(lanes.x, reps, nb),
            take_rows(lanes.aux, reps, nb),
            table,
            rep_pidx,
            shared,
        )
        n = reps.size
        exps = -np.sort(-np.asarray(ex)[:n], axis=-1)
        ev = classify(np.asarray(y)[:n], exps, np.asarray(bad)[:n], o.classify, fingerprint=np.asarray(f)[:n])
        tr_x, tr_y = geo.trace_observe(m, n_pts, xf, auxf, table, rep_pidx, shared)
        tr_x, tr_y = np.asarray(tr_x), np.asarray(tr_y)
        for j, (_, a) in enumerate(rec_atts):
            code = int(ev["regime"][j])
            if code in (REGIME_CODE["fixed_point"], REGIME_CODE["divergent"]) or (
                code == REGIME_CODE["periodic"] and int(ev["period"][j]) > 0
            ):
                # the representative left: the group was a long transient
                outcome[a["members"]] = OUTCOMES.index("transient")
                settle_step[a["members"]] = -1
                a["dropped"] = True
                continue
            a["kind"] = code
            a["period"] = int(ev["period"][j])  # 0, or −1: periodic, longer than max_period
            a["exponents"] = exps[j]
            a["points"] = tr_x[j]
            a["observed"] = tr_y[j]
            a["long"] = np.asarray(long)[j]
    for b in range(B):
        groups[b] = [a for a in groups[b] if not a.get("dropped")]
        geo.merge_pieces(groups[b], o)
    F = None
    for _, a in all_atts:
        if a["observed"] is not None:
            F = a["observed"].shape[1:]
            break
    if F is None:  # only divergent attractors, or none: the observable's shape from one state
        F = np.shape(
            np.asarray(m.observe(x0[0], jax.tree_util.tree_map(lambda t: t[0], aux0), lane_params(table, shared, 0)))
        )
    for _, a in all_atts:
        if a["observed"] is None:
            a["observed"] = np.full((n_pts,) + tuple(F), nan)

    # ---- order, labels, dataset
    n_att = [len(g) for g in groups]
    A = max(n_att + [0]) if max_attractors is None else int(max_attractors)
    label = np.full(N, -1, np.int64)
    n_dropped = np.zeros(B, np.int64)
    for b, atts in enumerate(groups):
        atts.sort(key=lambda a: (-len(a["members"]), a["kind"] == REGIME_CODE["divergent"], a["rep"]))
        n_dropped[b] = max(0, len(atts) - A)
        for i, a in enumerate(atts[:A]):
            label[a["members"]] = i
    settled = label >= 0
    settle_step = np.where(settled, settle_step, -1)
    return _dataset(
        groups,
        A,
        B,
        K,
        k,
        D,
        n_pts,
        tuple(F),
        label,
        settle_step,
        outcome,
        np.asarray(x0),
        n_dropped,
        param_values,
        param_name,
        sampler,
        seed,
        o,
        t_end,
    )


def _dataset(
    groups,
    A,
    B,
    K,
    k,
    D,
    n_pts,
    F,
    label,
    settle_step,
    outcome,
    x0,
    n_dropped,
    param_values,
    param_name,
    sampler,
    seed,
    o,
    t_end,
) -> xr.Dataset:
    nan = np.nan
    kind = np.full((B, A), -1, np.int8)
    per = np.zeros((B, A), np.int64)
    nmem = np.zeros((B, A), np.int64)
    rep = np.full((B, A), -1, np.int64)
    exps = np.full((B, A, k), nan)
    fabs = np.full((B, A, k), nan)
    fang = np.full((B, A, k), nan)
    stable = np.full((B, A), -1, np.int8)
    aux_closed = np.full((B, A), -1, np.int8)
    pts = np.full((B, A, n_pts, D), nan)
    obs = np.full((B, A, n_pts) + F, nan)
    n_att = np.zeros(B, np.int64)
    for b, atts in enumerate(groups):
        atts = atts[:A]
        n_att[b] = len(atts)
        for i, a in enumerate(atts):
            kind[b, i], per[b, i], nmem[b, i] = a["kind"], a["period"], len(a["members"])
            rep[b, i] = a["rep"] - b * K
            exps[b, i], fabs[b, i], fang[b, i] = a["exponents"], a["floquet_abs"], a["floquet_angle"]
            stable[b, i], aux_closed[b, i] = a["stable"], a["aux_closed"]
            pts[b, i], obs[b, i] = a["points"], a["observed"]
    frac = nmem / K
    lo, hi = wilson_interval(nmem, K)
    lo, hi = np.where(kind >= 0, lo, nan), np.where(kind >= 0, hi, nan)
    frac = np.where(kind >= 0, frac, nan)
    lab = label.reshape(B, K)
    on_unstable = outcome.reshape(B, K) == OUTCOMES.index("unstable")
    n_unstable = np.sum((lab < 0) & on_unstable, axis=1)
    n_uns = np.sum((lab < 0) & ~on_unstable, axis=1)
    ulo, uhi = wilson_interval(n_uns, K)
    feat_dims = [f"feature{i}" if i else "feature" for i in range(len(F))]
    coords = {
        "param": np.arange(B) if param_values is None else np.asarray(param_values),
        "attractor": np.arange(A),
        "ic": np.arange(K),
        "exponent": np.arange(k),
        "point": np.arange(n_pts),
        "dim": np.arange(D),
    }
    for i, f in enumerate(F):
        coords[feat_dims[i]] = np.arange(f)
    PA = ("param", "attractor")
    values = {
        "kind": (PA, kind),
        "period": (PA, per),
        "n_members": (PA, nmem),
        "basin_fraction": (PA, frac),
        "basin_ci_low": (PA, lo),
        "basin_ci_high": (PA, hi),
        "exponents": (PA + ("exponent",), exps),
        "floquet_abs": (PA + ("exponent",), fabs),
        "floquet_angle": (PA + ("exponent",), fang),
        "stable": (PA, stable),
        "aux_closed": (PA, aux_closed),
        "representative": (PA, rep),
        "points": (PA + ("point", "dim"), pts),
        "observed": (PA + ("point",) + tuple(feat_dims), obs),
        "label": (("param", "ic"), lab),
        "settle_step": (("param", "ic"), settle_step.reshape(B, K)),
        "ic_outcome": (("param", "ic"), outcome.reshape(B, K)),
        "ic_state": (("param", "ic", "dim"), x0.reshape(B, K, D)),
        "ic_steps": (("param", "ic"), t_end.reshape(B, K)),
        "n_attractors": ("param", n_att),
        "n_dropped": ("param", n_dropped),
        "unsettled_fraction": ("param", n_uns / K),
        "unsettled_ci_low": ("param", ulo),
        "unsettled_ci_high": ("param", uhi),
        "unstable_fraction": ("param", n_unstable / K),
    }
    ds = xr.Dataset(
        {name: (dims, arr, dict(CENSUS_ATTRS[name])) for name, (dims, arr) in values.items()}, coords=coords
    )
    ds["param"].attrs["long_name"] = param_name
    ds.attrs.update(
        regimes=json.dumps(REGIMES),
        outcomes=json.dumps(OUTCOMES),
        sampler=sampler.describe(),
        seed=int(seed),
        n_ics=int(K),
        census_options=json.dumps(
            {k_: (v.__dict__ if isinstance(v, ClassifyOptions) else v) for k_, v in o._asdict().items()}
        ),
        exponent_method="periodic: log|mu_i|/p from Floquet multipliers (periodic QR); other: Benettin QR",
    )
    return ds


def combine(datasets: list[xr.Dataset]) -> xr.Dataset:
    """Concatenate :func:`census_batch` results (e.g. the chunks of a sweep) along ``param``, padding the
    ``attractor`` dim to the largest (padding: kind −1, NaN, −1 indices) (theory: docs/theory/dynamics.md §7)."""
    A = max(int(ds.sizes["attractor"]) for ds in datasets)
    fills: dict[Hashable, int] = {
        "kind": -1,
        "period": 0,
        "n_members": 0,
        "stable": -1,
        "aux_closed": -1,
        "representative": -1,
    }
    padded: list[xr.Dataset] = []
    for ds in datasets:
        extra = A - int(ds.sizes["attractor"])
        if extra:
            parts = {}
            for name, v in ds.data_vars.items():
                if "attractor" not in v.dims:
                    continue
                fill = fills.get(name, np.nan)
                shape = [extra if d == "attractor" else ds.sizes[d] for d in v.dims]
                pad = xr.DataArray(np.full(shape, fill, dtype=v.dtype), dims=v.dims, attrs=v.attrs)
                parts[name] = xr.concat([v, pad], dim="attractor")
            ds = ds.drop_vars(list(parts)).drop_vars("attractor").assign(parts)
            ds = ds.assign_coords(attractor=np.arange(A))
        padded.append(ds)
    out = xr.concat(
        padded, dim="param", data_vars="minimal", coords="minimal", compat="override", combine_attrs="override"
    )
    for name, v in padded[0].data_vars.items():
        out[name].attrs = v.attrs
    return out


def census(m: AbstractMap, params, sampler: str | AbstractSampler = "random", **kw) -> xr.Dataset:
    """Attractor census at one parameter point (theory: docs/theory/dynamics.md §7): :func:`census_batch`
    with B = 1, the ``param`` dim removed and the ``attractor`` dim trimmed to the attractors found.

    Args:
        m: the map. params: the parameters (no batch axis). sampler: sampler or its name. **kw: as
            :func:`census_batch` (ics, steps, seed, options, shared, progress).
    """
    batched = jax.tree_util.tree_map(lambda a: np.asarray(a)[None], params)
    ds = census_batch(m, batched, sampler, **kw).isel(param=0, drop=True)
    return ds.isel(attractor=slice(0, int(ds["n_attractors"])))
