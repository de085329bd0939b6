"""How far an attractor can be pushed and how fast it pulls back: the minimal critical shock and the
convergence times of its basin (theory: docs/theory/dynamics.md §10.2–10.3)."""

from __future__ import annotations

import json
from typing import Any

import jax
import numpy as np
import xarray as xr

from attnphys._arguments import checked, count
from attnphys.dynamics._census import CensusOptions
from attnphys.dynamics._global_core import DIVERGED, UNRESOLVED, land, prepare
from attnphys.dynamics.checks import memory_of, state_dim
from attnphys.dynamics.maps import AbstractMap
from attnphys.dynamics.samplers import AbstractSampler
from attnphys.errors import InputError
from attnphys.metadata import base_attrs
from attnphys.progress import step_bar, subrange
from attnphys.runtime import take_rows

_LABEL_COMMENT = "attractor index of the census; -1: reached no attractor within the steps; -2: diverged"


def _directions(key, n: int, D: int) -> np.ndarray:
    """(2D + n, D) unit vectors: ±e_i, then n drawn uniformly on the sphere."""
    axes = np.concatenate([np.eye(D), -np.eye(D)])
    g = np.array(jax.random.normal(key, (n, D)), dtype=np.float64)
    g /= np.maximum(np.linalg.norm(g, axis=1, keepdims=True), 1e-300)
    return np.concatenate([axes, g])


def _shock_memory(a: dict):
    """The shocked states of one search round: origins × (directions + 2D) rays × scan radii, each a state
    with its run's working copies (theory: docs/theory/dynamics.md §10.2)."""
    D = state_dim(a["m"], a["params"])
    need = 8 * 8 * a["origins"] * (a["directions"] + 2 * D) * a["scan"] * D
    return memory_of(
        need, "the shocked states", "use fewer directions, origins or scan radii", a, "directions", "origins", "scan"
    )


def _aux_groups(aux, n: int) -> np.ndarray:
    """(n,) group ids: states with equal auxiliary states share one (all one group without auxiliary state)."""
    leaves = [np.asarray(a).reshape(n, -1) for a in jax.tree_util.tree_leaves(aux)]
    if not leaves:
        return np.zeros(n, np.int64)
    flat = np.concatenate([a.astype(np.float64) for a in leaves], axis=1)
    return np.unique(flat, axis=0, return_inverse=True)[1].reshape(n)


def _reanchor(xs, phase, o, u, hi):
    """Rays from the state nearest to each crossing point b = xs[o] + hi·u among the attractor's states with
    the same auxiliary state, where nearer than hi: (origins, directions, radii ≤ the distance to b)."""
    keep_o, keep_u, keep_r = [], [], []
    for oj, uj, hj in zip(o, u, hi):
        b = xs[oj] + hj * uj
        same = np.flatnonzero(phase == phase[oj])
        d = np.linalg.norm(xs[same] - b, axis=1)
        j = int(same[np.argmin(d)])
        dj = float(np.min(d))
        if j != oj and 0 < dj < hj:
            keep_o.append(j)
            keep_u.append((b - xs[j]) / dj)
            keep_r.append(dj)
    D = xs.shape[1]
    return np.asarray(keep_o, np.int64), np.asarray(keep_u, float).reshape(-1, D), np.asarray(keep_r, float)


@checked(
    bisections=count(1, 64, why="a float64 bracket stops shrinking after about 60 halvings"),
    rounds=count(0, 64),
    memory=_shock_memory,
)
def minimal_shock(
    m: AbstractMap,
    params,
    sampler: str | AbstractSampler = "random",
    *,
    attractors: xr.Dataset | None = None,
    ics: int = 256,
    seed: int = 0,
    options: CensusOptions = CensusOptions(),
    shared=None,
    radius: float | None = None,
    directions: int = 64,
    scan: int = 32,
    bisections: int = 40,
    rounds: int = 4,
    origins: int = 16,
    tol: float = 1e-6,
    steps: int | None = None,
    progress: bool = False,
) -> xr.Dataset:
    """The minimal critical shock of every attractor (theory: docs/theory/dynamics.md §10.2): the smallest
    perturbation δ (Euclidean norm) of a state y on the attractor A such that the run from y + δ (same
    auxiliary state) lands on another attractor,

        δ* = argmin { |δ| : y ∈ A, y + δ ∉ basin(A) },

    found by a seeded search over directions: along each ray y + r·u, r ∈ (0, R], ``scan`` equally spaced
    radii locate the first one that leaves, ``bisections`` halvings pin the crossing; then ``rounds`` rounds
    turn the 8 best rays by random angles (halved each round) and search again below the best radius, and
    search again from the state of the attractor (with the same auxiliary state) nearest to each of their
    crossing points, below the distance to it. The
    result is an upper bound on the true minimum (a ray may cross a thin tongue of another basin between
    two scan radii) whose bracket is stated (``shock_norm_low``).

    Args:
        m: the map. params: the parameters (no batch axis). sampler, ics, seed, options, shared: the census
            that finds the attractors (:func:`attnphys.dynamics.census`), unless ``attractors`` is given.
        attractors: a census of ``m`` at ``params`` (its sampler must be ``sampler``, its seed is used).
        radius: R, the largest shock searched (default: the largest distance from the attractor to a census
            start). directions: random directions per origin (beside the 2D coordinate directions ±e_i).
        scan: radii per ray. bisections: halvings of the crossing bracket. rounds: refinement rounds.
        origins: states of each attractor the shocks start from (evenly spaced over its cycle or sample).
        tol: relative radius ε of the targets (§10.1). steps: the most steps of a run after a shock (default
            the census budget); a run that reaches no attractor counts as not leaving (``n_unresolved``).
        progress: show a progress bar.

    Returns:
        Dataset with dims ``attractor`` (the census's non-divergent attractors), ``dim``, ``ray``: the
        ``shock_norm`` |δ*| (NaN: no shock up to R leaves) and its bracket ``shock_norm_low``, ``shock`` δ*
        (attractor, dim), ``origin`` y (attractor, dim), ``lands_on`` (the attractor the shocked state
        reaches), ``ray_norm`` (attractor, ray) the first crossing along each first-round ray (NaN: none up
        to R), ``search_radius`` R, ``n_unresolved``; attrs: the options, seed and package version.

    Raises:
        InputError: a bad argument, named (``radius``, ``directions``, ``scan``, ``bisections``, ``rounds``,
            ``origins``, ``tol``, ``steps``, ``attractors``, ``sampler``, ``options``, ``m``).
    """
    with step_bar(100.0, "%", enabled=progress) as report:
        with subrange(0.0, 0.3):
            pr = prepare(m, params, sampler, attractors, ics, seed, options, shared, tol, steps)
        tg, p = pr.targets, pr.params
        which = [a for a in range(len(tg.origins)) if tg.origins[a] is not None]
        D = int(pr.x0.shape[1])
        dirs = _directions(jax.random.PRNGKey(seed + 1), directions, D)
        n_dir = dirs.shape[0]
        O = origins
        rng = np.random.default_rng(seed)
        rows = []  # per attractor: origin states, their aux, R
        for a in which:
            xs, auxs = tg.origins[a]
            pick = np.unique(np.linspace(0, len(xs) - 1, min(O, len(xs))).round().astype(int))
            R = radius
            if R is None:
                R = float(np.max(np.linalg.norm(pr.x0[None, :, :] - xs[pick][:, None, :], axis=-1)))
            rows.append((a, xs, auxs, pick, max(R, 1e-300)))
        n_unres = np.zeros(len(rows), np.int64)

        def leaves(a_idx, lab):
            n_unres[a_idx] += int(np.sum(lab == UNRESOLVED))
            return (lab != which[a_idx]) & (lab != UNRESOLVED)

        def crossings(a_idx, y, yaux, u, r_hi, stage):
            """First leaving radius along rays y + r u, r ∈ (0, r_hi]: (hi, lo, label at hi); NaN if none."""
            n = y.shape[0]
            rs = r_hi[:, None] * np.arange(1, scan + 1)[None, :] / scan  # (n, scan)
            pts = (y[:, None, :] + rs[..., None] * u[:, None, :]).reshape(n * scan, D)
            aux_s = jax.tree_util.tree_map(lambda t: np.repeat(t, scan, axis=0), yaux)
            with subrange(*stage), subrange(0.0, 0.5):
                lab, _ = land(m, p, pts, aux_s, tg, pr.steps, report)
            out = leaves(a_idx, lab).reshape(n, scan)
            lab = lab.reshape(n, scan)
            has = out.any(axis=1)
            first = np.argmax(out, axis=1)
            hi = np.where(has, rs[np.arange(n), first], np.nan)
            lo = np.where(has, np.where(first > 0, rs[np.arange(n), np.maximum(first - 1, 0)], 0.0), np.nan)
            to = np.where(has, lab[np.arange(n), first], UNRESOLVED)
            sel = np.flatnonzero(has)
            for k in range(bisections):
                if sel.size == 0:
                    break
                with subrange(*stage), subrange(0.5, 1.0):
                    report(k, bisections)
                mid = 0.5 * (lo[sel] + hi[sel])
                lab_m, _ = land(m, p, y[sel] + mid[:, None] * u[sel], take_rows(yaux, sel), tg, pr.steps)
                out_m = leaves(a_idx, lab_m)
                hi[sel] = np.where(out_m, mid, hi[sel])
                to[sel] = np.where(out_m, lab_m, to[sel])
                lo[sel] = np.where(out_m, lo[sel], mid)
            return hi, lo, to

        A = len(rows)
        norm = np.full(A, np.nan)
        low = np.full(A, np.nan)
        shock = np.full((A, D), np.nan)
        origin = np.full((A, D), np.nan)
        lands = np.full(A, UNRESOLVED, np.int64)
        radii = np.full(A, np.nan)
        n_ray = O * n_dir
        ray_norm = np.full((A, n_ray), np.nan)
        for i, (_, xs, auxs, pick, R) in enumerate(rows):
            radii[i] = R
            phase = _aux_groups(auxs, xs.shape[0])
            oi = np.repeat(pick, n_dir)
            u = np.tile(dirs, (pick.size, 1))

            def span(j, i=i):  # stage j of 1 + rounds of attractor i, within 30–100 % of the bar
                w = 0.7 / (A * (1 + rounds))
                return (0.3 + w * (i * (1 + rounds) + j), 0.3 + w * (i * (1 + rounds) + j + 1))

            hi, lo, to = crossings(i, xs[oi], take_rows(auxs, oi), u, np.full(oi.size, R), span(0))
            ray_norm[i, : oi.size] = hi
            best_o, best_u, best_hi, best_lo, best_to = oi, u, hi, lo, to
            for r in range(rounds):
                ok = np.flatnonzero(np.isfinite(best_hi))
                if ok.size == 0:
                    break
                top = ok[np.argsort(best_hi[ok], kind="stable")[:8]]
                cur = float(best_hi[top[0]])
                sigma = 0.5**r
                ro = np.repeat(best_o[top], directions)
                ru = np.repeat(best_u[top], directions, axis=0)
                ru = ru + sigma * rng.standard_normal(ru.shape)
                ru /= np.maximum(np.linalg.norm(ru, axis=1, keepdims=True), 1e-300)
                rh = np.full(ro.size, cur)
                # the crossing points seen from the nearest state of the attractor with the same auxiliary state
                ao, au, ah = _reanchor(xs, phase, best_o[top], best_u[top], best_hi[top])
                ro, ru, rh = np.concatenate([ro, ao]), np.concatenate([ru, au]), np.concatenate([rh, ah])
                h2, l2, t2 = crossings(i, xs[ro], take_rows(auxs, ro), ru, rh, span(1 + r))
                best_o = np.concatenate([best_o[top], ro])
                best_u = np.concatenate([best_u[top], ru])
                best_hi = np.concatenate([best_hi[top], h2])
                best_lo = np.concatenate([best_lo[top], l2])
                best_to = np.concatenate([best_to[top], t2])
            if np.any(np.isfinite(best_hi)):
                j = int(np.nanargmin(best_hi))
                norm[i], low[i] = best_hi[j], best_lo[j]
                shock[i] = best_hi[j] * best_u[j]
                origin[i] = xs[best_o[j]]
                lands[i] = best_to[j]
            else:
                origin[i] = xs[0]
        ds = xr.Dataset(
            {
                "shock_norm": (
                    "attractor",
                    norm,
                    {
                        "long_name": "minimal critical shock |delta*|",
                        "comment": "NaN: no shock up to the radius leaves",
                    },
                ),
                "shock_norm_low": (
                    "attractor",
                    low,
                    {"long_name": "lower end of the bisection bracket of |delta*| along its ray"},
                ),
                "shock": (("attractor", "dim"), shock, {"long_name": "minimal critical shock delta*"}),
                "origin": (("attractor", "dim"), origin, {"long_name": "state on the attractor the shock starts from"}),
                "lands_on": (
                    "attractor",
                    lands,
                    {"long_name": "attractor reached after the shock", "comment": _LABEL_COMMENT},
                ),
                "ray_norm": (
                    ("attractor", "ray"),
                    ray_norm,
                    {
                        "long_name": "first leaving radius along each first-round ray",
                        "comment": "NaN: none up to the radius",
                    },
                ),
                "search_radius": ("attractor", radii, {"long_name": "largest shock searched R"}),
                "n_unresolved": (
                    "attractor",
                    n_unres,
                    {"long_name": "shocked runs that reached no attractor within the steps (counted as staying)"},
                ),
            },
            coords={
                "attractor": np.asarray([a for a, *_ in rows], np.int64),
                "dim": np.arange(D),
                "ray": np.arange(n_ray),
            },
        )
        ds.attrs.update(
            base_attrs(),
            measure="minimal critical shock",
            norm="euclidean",
            seed=int(pr.census.attrs.get("seed", seed)),
            search=json.dumps(
                dict(directions=directions, scan=scan, bisections=bisections, rounds=rounds, origins=origins, tol=tol)
            ),
            steps=int(pr.steps),
        )
        report(100.0, 100.0)
    return ds


@checked(
    memory=lambda a: memory_of(
        8 * 16 * a["ics"] * state_dim(a["m"], a["params"]), "the starts", "use fewer ics", a, "ics"
    )
)
def convergence_times(
    m: AbstractMap,
    params,
    sampler: str | AbstractSampler = "random",
    *,
    attractors: xr.Dataset | None = None,
    ics: int = 256,
    seed: int = 0,
    options: CensusOptions = CensusOptions(),
    shared=None,
    tol: float = 1e-6,
    steps: int | None = None,
    quantiles: Any = (0.1, 0.25, 0.5, 0.75, 0.9),
    progress: bool = False,
) -> xr.Dataset:
    """Steps from each start until it is within ε_a of its attractor, and their distribution per attractor
    (theory: docs/theory/dynamics.md §10.3):

        τ(x₀) = min { n ≥ 0 : min_{y ∈ A} |x_n − y| ≤ ε_a },   ε_a = tol·max(1, max_{y∈A} |y|)

    (a non-periodic attractor's ε_a is at least 3 × the spacing of its sampled states; §10.1). For a start
    that diverges, τ is the step at which it leaves the bound.

    Args:
        m, params, sampler, ics, seed, options, shared: the census whose starts are timed
            (:func:`attnphys.dynamics.census`), unless ``attractors`` is given. attractors: a census of ``m``
            at ``params`` by ``sampler``. tol: relative radius ε. steps: the most steps per start (default
            the census budget). quantiles: the quantiles of τ reported per attractor (each in [0, 1]).
        progress: show a progress bar.

    Returns:
        Dataset with dims ``ic``, ``attractor``, ``quantile``: per start ``time`` τ (−1: unresolved) and
        ``label`` (the attractor reached), ``census_label``; per attractor ``n_starts``, ``time_mean``,
        ``time_std``, ``time_min``, ``time_max``, ``time_quantile`` (attractor, quantile), ``tolerance`` ε_a;
        ``agreement``: the share of the census's settled starts whose reached attractor is the census's.

    Raises:
        InputError: a bad argument, named (``quantiles``, ``tol``, ``steps``, ``attractors``, ``sampler``, …).
    """
    q = np.atleast_1d(np.asarray(quantiles, dtype=float))
    if q.ndim != 1 or q.size == 0 or not np.all((q >= 0) & (q <= 1)):
        raise InputError(f"must be numbers in [0, 1] (got {quantiles!r})", "quantiles")
    with step_bar(100.0, "%", enabled=progress) as report:
        with subrange(0.0, 0.5):
            pr = prepare(m, params, sampler, attractors, ics, seed, options, shared, tol, steps)
        with subrange(0.5, 1.0):
            label, time = land(m, pr.params, pr.x0, pr.aux0, pr.targets, pr.steps, report)
    A = int(pr.targets.kind.size)
    stats = np.full((5, A), np.nan)
    tq = np.full((A, q.size), np.nan)
    n = np.zeros(A, np.int64)
    for a in range(A):
        t = time[label == a].astype(float)
        n[a] = t.size
        if t.size:
            stats[:, a] = [t.mean(), t.std(), t.min(), t.max(), 0.0]
            tq[a] = np.quantile(t, q)
    census_label = pr.census["label"].values.astype(np.int64)
    settled = census_label >= 0
    agree = float(np.mean(label[settled] == census_label[settled])) if settled.any() else np.nan
    coords = {"ic": np.arange(label.size), "attractor": np.arange(A), "quantile": q}
    step_attrs = {"units": "step"}
    ds = xr.Dataset(
        {
            "time": ("ic", time, {"long_name": "convergence time tau", "units": "step", "comment": "-1: unresolved"}),
            "label": ("ic", label, {"long_name": "attractor reached", "comment": _LABEL_COMMENT}),
            "census_label": ("ic", census_label, {"long_name": "attractor index of the start in the census"}),
            "n_starts": ("attractor", n, {"long_name": "starts that reached the attractor"}),
            "time_mean": ("attractor", stats[0], {"long_name": "mean convergence time", **step_attrs}),
            "time_std": (
                "attractor",
                stats[1],
                {"long_name": "standard deviation of the convergence time", **step_attrs},
            ),
            "time_min": ("attractor", stats[2], {"long_name": "shortest convergence time", **step_attrs}),
            "time_max": ("attractor", stats[3], {"long_name": "longest convergence time", **step_attrs}),
            "time_quantile": (
                ("attractor", "quantile"),
                tq,
                {"long_name": "quantiles of the convergence time", **step_attrs},
            ),
            "tolerance": ("attractor", pr.targets.tol, {"long_name": "radius eps_a of the attractor's neighbourhood"}),
            "kind": ("attractor", pr.targets.kind, dict(pr.census["kind"].attrs)),
            "agreement": (
                (),
                agree,
                {"long_name": "share of the census's settled starts reaching the census's attractor"},
            ),
        },
        coords=coords,
    )
    ds.attrs.update(
        base_attrs(),
        measure="convergence times",
        tol=float(tol),
        steps=int(pr.steps),
        seed=int(pr.census.attrs.get("seed", seed)),
        diverged_label=DIVERGED,
    )
    return ds
