"""Edge tracking: a trajectory held on the boundary between two basins by bisection (theory:
docs/theory/dynamics.md §11.6).

Two starts that reach different attractors bracket the boundary between their basins. Bisection of the
segment between them gives a pair on either side within ``tol``; the pair is advanced by the map while it
stays within ``delta`` and re-bisected when it separates. The advanced pair still straddles the boundary
(each point keeps its fate), so the pair follows the invariant set on the boundary — the *edge state*: a
saddle fixed point or periodic orbit whose stable manifold is the boundary, or a chaotic saddle.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from attnphys._arguments import checked, count
from attnphys.dynamics._census import CensusOptions
from attnphys.dynamics._global_core import UNRESOLVED, check_int, check_positive, land, prepare
from attnphys.dynamics.checks import memory_of, params_dict, state_dim, warn_if_single_precision
from attnphys.dynamics.maps import AbstractMap
from attnphys.dynamics.orbits import check_map_call
from attnphys.dynamics.samplers import ExplicitSampler
from attnphys.errors import InputError, NonFiniteError
from attnphys.metadata import base_attrs
from attnphys.progress import step_bar

Classifier = Callable[[np.ndarray, Any], np.ndarray]
"""``classify(x (N, D), aux) -> labels (N,)``: the attractor each state reaches (an integer ≥ 0; a negative
label: undecided). ``aux`` is the auxiliary state shared by the N states (not batched)."""

CHUNK = 256
"""Steps of the pair per compiled call (the pair stops early when it separates)."""


@partial(jax.jit, static_argnames=("m", "n"))
def _advance_pair(m: AbstractMap, xa, xb, aux, params, delta, n: int):
    """Up to n steps of the pair (xa, xb) with the shared aux, stopping after the first step at which
    ‖xb − xa‖ > delta. Returns the final pair and aux, per step the A state, the distance and whether the
    step was taken, and whether the pair is still within delta."""

    def body(c, _):
        xa, xb, aux, alive = c
        ya, aux2 = m.step(xa, aux, params)
        yb, _ = m.step(xb, aux, params)
        d = jnp.linalg.norm(yb - ya)
        xa = jnp.where(alive, ya, xa)
        xb = jnp.where(alive, yb, xb)
        aux = jax.tree_util.tree_map(lambda new, old: jnp.where(alive, new, old), aux2, aux)
        return (xa, xb, aux, alive & (d <= delta)), (xa, d, alive)

    (xa, xb, aux, alive), (traj, dist, taken) = jax.lax.scan(body, (xa, xb, aux, jnp.asarray(True)), None, length=n)
    return xa, xb, aux, traj, dist, taken, alive


def _batched(aux, n: int):
    """The shared auxiliary state given to n states at once (each leaf broadcast to a leading axis n), or None
    when there is none."""
    if not jax.tree_util.tree_leaves(aux):
        return None
    return jax.tree_util.tree_map(lambda t: np.broadcast_to(np.asarray(t), (n,) + np.shape(t)), aux)


def _census_classifier(m, params, a, b, aux, census_ics, options, shared, attractor_tol, steps, seed):
    """The default classifier: the attractors of a census of ``census_ics`` states spread along [a, b]
    (§7), each state then run until it lands on one of them (§10.1)."""
    seg = a[None] + np.linspace(0.0, 1.0, census_ics)[:, None] * (b - a)[None]
    # one aux for every state, given batched: the sampler would take a leaf whose leading axis happens to
    # equal census_ics for a batch
    sampler = ExplicitSampler(x=seg, aux=_batched(aux, census_ics))
    pr = prepare(m, params, sampler, None, census_ics, seed, options, shared, attractor_tol, steps)

    def classify(x, aux_now):
        lab, _ = land(m, pr.params, x, _batched(aux_now, x.shape[0]), pr.targets, pr.steps)
        return lab

    return classify, pr.params, int(np.sum(pr.targets.kind >= 0))


def _param_dict(params) -> dict:
    try:
        return params_dict(params)
    except Exception:  # a pytree the flat reader does not take: name nothing rather than fail here
        return {}


def _labels(classify: Classifier, x: np.ndarray, aux) -> np.ndarray:
    lab = np.asarray(classify(x, aux))
    if lab.shape != (x.shape[0],) or not np.issubdtype(lab.dtype, np.integer):
        raise InputError(
            f"must return one integer label per state, shape ({x.shape[0]},) (got {lab.dtype} {lab.shape})",
            "classify",
        )
    return lab.astype(np.int64)


def _bisect(classify, xa, xb, la, aux, tol, points, max_rounds):
    """Shrink the straddling pair (xa of label la, xb of another) to ‖xb − xa‖ ≤ tol: ``points`` interior
    points per round; the new pair is the last point of label la before the first decided point of another
    label (undecided points are skipped). Returns xa, xb, lb, rounds, evaluations, undecided, ok."""
    rounds = evals = undecided = 0
    lb = -1
    s = np.linspace(0.0, 1.0, points + 2)[1:-1]
    while np.linalg.norm(xb - xa) > tol:
        if rounds == max_rounds:
            return xa, xb, lb, rounds, evals, undecided, False
        pts = xa[None] + s[:, None] * (xb - xa)[None]
        lab = _labels(classify, pts, aux)
        rounds += 1
        evals += points
        undecided += int(np.sum(lab < 0))
        other = np.flatnonzero((lab >= 0) & (lab != la))
        j = int(other[0]) if other.size else points  # index of the B end in the interior list (points: xb)
        same = np.flatnonzero(lab[:j] == la)
        i = int(same[-1]) if same.size else -1  # -1: xa
        new_a = pts[i] if i >= 0 else xa
        new_b = pts[j] if j < points else xb
        if j < points:
            lb = int(lab[j])
        if i < 0 and j == points:  # every interior point undecided: no progress possible
            return xa, xb, lb, rounds, evals, undecided, False
        xa, xb = new_a, new_b
    return xa, xb, lb, rounds, evals, undecided, True


@checked(
    points=count(2),
    memory=lambda a: memory_of(
        8 * 4 * a["steps"] * state_dim(a["m"], a["params"], a["a"]),
        "the edge trajectory",
        "use fewer steps",
        a,
        "steps",
    ),
)
def edge_track(
    m: AbstractMap,
    a,
    b,
    params,
    *,
    aux: Any = None,
    classify: Classifier | None = None,
    steps: int = 1000,
    tol: float = 1e-10,
    delta: float = 1e-6,
    points: int = 8,
    max_rounds: int = 200,
    census_ics: int = 32,
    options: CensusOptions = CensusOptions(),
    shared=None,
    attractor_tol: float = 1e-6,
    land_steps: int | None = None,
    seed: int = 0,
    progress: bool = False,
) -> xr.Dataset:
    """Edge tracking between two basins: a trajectory held on their boundary by repeated bisection (theory:
    docs/theory/dynamics.md §11.6).

    With x_a, x_b in the basins of different attractors and c(x) the attractor a state reaches, bisection of
    the segment x_a + s (x_b − x_a), s ∈ [0, 1] (``points`` interior points a round) keeps a pair with
    c(x_a) = c_a ≠ c(x_b) and shrinks it until ‖x_b − x_a‖ ≤ ``tol``. The pair is then advanced,

        (x_a, x_b) ← (F(x_a), F(x_b))   while ‖x_b − x_a‖ ≤ δ,

    which keeps it straddling (c(F(x)) = c(x)); when it separates beyond δ it is bisected again. Repeated for
    ``steps`` steps of the pair, x_a(t) follows the edge state — the invariant set on the boundary that
    attracts within it: a saddle (fixed point or periodic orbit) with one unstable direction, whose stable
    manifold is the boundary, converges to it; a chaotic saddle gives a non-periodic edge trajectory.

    Args:
        m: the map. a, b: (D,) starts reaching different attractors. params: the parameters (no batch axis).
        aux: the auxiliary state shared by both starts. classify: ``classify(x (N, D), aux) -> (N,)``
            integer labels (negative: undecided); default: the attractors of a census of ``census_ics``
            states along [a, b] (``options``, ``shared``), each state run at most ``land_steps`` steps
            (default the census budget) until it lands within ``attractor_tol`` of one (§10.1).
        steps: steps of the pair. tol: the pair's width after bisection. delta: the largest width the pair
            is advanced at (tol < delta). points: interior points per bisection round. max_rounds: most
            rounds of one bisection. seed: the census's seed. progress: a progress bar over the steps.

    Returns:
        Dataset with ``edge`` (step, component): x_a(t), t = 0..T (at a re-bisection, the state after it);
        ``pair_distance`` (step): ‖x_b − x_a‖ after step t (before a re-bisection at t);
        on dim ``bisection``: ``bisection_step``, ``rounds``, ``evaluations``, ``undecided``,
        ``label_a_side``, ``label_b_side`` (the attractor of each side; −1: no decided point of it),
        ``width_before``, ``width_after``; scalars ``label_a`` of start a and ``label_b`` of start b; attrs
        ``status`` ("done"; "stuck": a bisection could not reach ``tol``, at the last step recorded;
        "collapsed": the map sent both points of the pair to one state, at the last step recorded), the
        options and the package version.

    Raises:
        InputError: naming ``m``, ``a``, ``b`` (not a state of the map, a different shape; or both starts reach
            the same attractor, or one is undecided), ``params``, ``tol`` (the bisected pair is one state at the
            map's precision: float32), ``steps``, ``tol``, ``delta`` (not above tol), ``points``, ``max_rounds``,
            ``census_ics``, ``attractor_tol``, ``land_steps`` or ``classify`` (not callable, or a wrong return).
        NonFiniteError: the pair stopped being finite (the step is named).
    """
    try:  # the toolkit's entry checks: the map, a state of numbers, parameters and aux of numbers
        check_map_call(m, a, aux, params)
    except InputError as e:
        raise InputError(e.detail, {"x0": "a", "aux0": "aux"}.get(e.field or "", e.field)) from None
    starts = []
    for v, name in ((a, "a"), (b, "b")):
        try:
            starts.append(np.asarray(v, float))
        except (TypeError, ValueError):
            raise InputError(f"must be one finite state (D,) of numbers (got {type(v).__name__})", name) from None
    xa, xb = starts
    D = xa.size
    for v, name in ((xa, "a"), (xb, "b")):
        if v.ndim != 1 or v.size != D or not np.all(np.isfinite(v)):
            raise InputError(f"must be one finite state (D,), D = {D} as a (got shape {v.shape})", name)
    check = getattr(m, "check_args", None)  # the example maps' shapes of state and parameters
    if check is not None:
        try:
            check(jnp.asarray(xa), params)
        except InputError as e:
            raise InputError(e.detail, "a" if e.field == "x" else e.field) from None
    steps = check_int(steps, "steps")
    tol = check_positive(tol, "tol")
    delta = check_positive(delta, "delta")
    if delta <= tol:
        raise InputError(f"must exceed tol = {tol:g} (got {delta:g})", "delta")
    points = check_int(points, "points")
    max_rounds = check_int(max_rounds, "max_rounds")
    census_ics = check_int(census_ics, "census_ics")
    attractor_tol = check_positive(attractor_tol, "attractor_tol")
    if land_steps is not None:
        land_steps = check_int(land_steps, "land_steps")
    if classify is not None and not callable(classify):
        raise InputError(f"must be a function classify(x (N, D), aux) -> labels (N,) (got {classify!r})", "classify")
    warn_if_single_precision(jnp.asarray(xa))
    aux0 = aux
    n_attractors = -1
    if classify is None:
        if census_ics < 2:
            raise InputError("must be at least 2 (the two starts)", "census_ics")
        classify, full, n_attractors = _census_classifier(
            m, params, xa, xb, aux, census_ics, options, shared, attractor_tol, land_steps, seed
        )
    else:
        full = jax.tree_util.tree_map(jnp.asarray, params) if shared is None else (shared, params)
    la, lb = _labels(classify, np.stack([xa, xb]), aux0)
    if la < 0 or lb < 0:
        raise InputError("reaches no attractor within the steps allowed", "a" if la < 0 else "b")
    if la == lb:
        raise InputError(f"both starts reach attractor {la}: b must lie in another basin than a", "b")
    label_a, label_b = int(la), int(lb)

    edge = [xa.copy()]
    dist = [float(np.linalg.norm(xb - xa))]
    bis: dict[str, list] = {k: [] for k in ("step", "rounds", "evals", "undecided", "la", "lb", "before", "after")}
    t = 0
    status = "done"
    aux_t = aux0
    separated = True  # the starts: bisect first
    with step_bar(float(steps), "steps", enabled=progress) as report:
        while True:
            if separated and np.linalg.norm(xb - xa) > tol:
                before = float(np.linalg.norm(xb - xa))
                xa, xb, lb_now, r, ev, und, ok = _bisect(classify, xa, xb, label_a, aux_t, tol, points, max_rounds)
                for k, v in zip(
                    bis, (t, r, ev, und, label_a, lb_now, before, float(np.linalg.norm(xb - xa))), strict=True
                ):
                    bis[k].append(v)
                edge[-1] = xa.copy()
                if not ok:
                    status = "stuck"
                    break
            if t >= steps:
                break
            n = min(CHUNK, steps - t)
            ja, jb = jnp.asarray(xa), jnp.asarray(xb)
            if np.array_equal(np.asarray(ja), np.asarray(jb)):  # the pair is one state at the map's precision
                raise InputError(
                    f"the pair, {np.linalg.norm(xb - xa):.1e} apart, is one state in the map's precision "
                    f"({ja.dtype}): call attnphys.configure(x64=True) for float64, or raise tol",
                    "tol",
                )
            ya, yb, aux_n, traj, d, taken, alive = _advance_pair(m, ja, jb, aux_t, full, delta, n)
            k = int(np.sum(np.asarray(taken)))
            traj, d = np.asarray(traj)[:k], np.asarray(d)[:k]
            if not (np.all(np.isfinite(traj)) and np.all(np.isfinite(d))):
                bad = int(np.flatnonzero(~np.isfinite(d) | ~np.all(np.isfinite(traj), axis=1))[0])
                raise NonFiniteError(t + bad + 1, _param_dict(params), what="edge pair state")
            if np.any(d == 0.0):  # the map sent both points of the pair to one state: no boundary left to follow
                j = int(np.flatnonzero(d == 0.0)[0])
                edge.extend(traj[: j + 1])
                dist.extend(d[: j + 1].tolist())
                status = "collapsed"
                break
            edge.extend(traj)
            dist.extend(d.tolist())
            xa, xb, aux_t = np.asarray(ya), np.asarray(yb), aux_n
            separated = not bool(alive)  # a chunk that ends with the pair within delta goes on unbisected
            t += k
            report(t, steps)
    T = len(edge)
    opts = dict(
        steps=steps,
        tol=tol,
        delta=delta,
        points=points,
        max_rounds=max_rounds,
        census_ics=census_ics,
        attractor_tol=attractor_tol,
        land_steps=land_steps,
        seed=seed,
        classifier="census" if n_attractors >= 0 else "user",
    )
    ds = xr.Dataset(
        {
            "edge": (("step", "component"), np.asarray(edge), {"long_name": "edge trajectory x_a(t)"}),
            "pair_distance": ("step", np.asarray(dist), {"long_name": "distance of the pair ||x_b - x_a||"}),
            "bisection_step": ("bisection", np.asarray(bis["step"], np.int64), {"long_name": "step of the bisection"}),
            "rounds": ("bisection", np.asarray(bis["rounds"], np.int64), {"long_name": "bisection rounds"}),
            "evaluations": ("bisection", np.asarray(bis["evals"], np.int64), {"long_name": "states classified"}),
            "undecided": ("bisection", np.asarray(bis["undecided"], np.int64), {"long_name": "undecided states"}),
            "label_a_side": ("bisection", np.asarray(bis["la"], np.int64), {"long_name": "attractor of the a side"}),
            "label_b_side": (
                "bisection",
                np.asarray(bis["lb"], np.int64),
                {"long_name": "attractor of the b side", "comment": "-1: no decided point of it in this bisection"},
            ),
            "width_before": ("bisection", np.asarray(bis["before"]), {"long_name": "pair width before"}),
            "width_after": ("bisection", np.asarray(bis["after"]), {"long_name": "pair width after"}),
            "label_a": ((), label_a, {"long_name": "attractor reached from start a"}),
            "label_b": ((), label_b, {"long_name": "attractor reached from start b"}),
        },
        coords={
            "step": ("step", np.arange(T), {"long_name": "step of the edge trajectory"}),
            "component": ("component", np.arange(D)),
            "bisection": ("bisection", np.arange(len(bis["step"]))),
        },
    )
    ds.attrs.update(
        base_attrs(),
        analysis="edge tracking",
        status=status,
        options=json.dumps(opts),
        n_attractors=n_attractors,
        start_a=json.dumps(np.asarray(a, float).tolist()),
        start_b=json.dumps(np.asarray(b, float).tolist()),
        undecided_label=UNRESOLVED,
    )
    return ds
