"""Rare switching of the finite network between the coexisting attractors of its mean field (theory:
docs/theory/switching.md).

:func:`switching` takes the attractors of the census (:func:`attnphys.dmft.attractors`), writes each as an orbit
of the finite network's noisy map on class means (:mod:`attnphys.dmft._switching_map`), and gives per attractor
the least action to the nearest other attractor under the Gaussian (linear-noise) and the binomial (Cramér)
rate (:func:`attnphys.dynamics.least_action_path`), and escape times of the finite network measured by direct
simulation (:func:`attnphys.dynamics.first_passage_time` with the binomial law) at a few sizes N, with the slope
of ln τ against N beside the predicted barriers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr
from scipy import stats

from attnphys._checks import check_count
from attnphys._options import takes
from attnphys.dmft._analysis_options import SwitchingOptions
from attnphys.errors import InputError
from attnphys.metadata import base_attrs

THEORY = "docs/theory/switching.md"
LAWS = ("gaussian", "binomial")


LIMITS = {"walkers": 10**6, "max_steps": 10**9, "ics": 10**5, "census_steps": 10**7, "max_horizon": 10**4}
"""The largest counts :func:`switching` takes: walkers and census points each hold a network state, a horizon
is the length of a path the action is minimised over (its Hessian has about (horizon · L · C)² entries)."""


def _integer(value: Any, name: str, low: int) -> int:
    """A count of at least ``low`` (:func:`attnphys._checks.check_count`) and at most its :data:`LIMITS` entry."""
    value = check_count(value, name, low)
    if name in LIMITS and value > LIMITS[name]:
        raise InputError(f"must be at most {LIMITS[name]:,}, got {value:,}", name)
    return int(value)


def _real(value: Any, name: str, low: float, high: float = math.inf, *, open_low: bool = True) -> float:
    if isinstance(value, (str, bytes, bool)) or np.ndim(value) != 0:
        raise InputError(f"must be a real number, got {value!r}", name)
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"must be a number, got {value!r}", name) from None
    if isinstance(value, bool) or not math.isfinite(v) or v < low or (open_low and v == low) or v >= high:
        bound = f"({low:g}, {high:g})" if open_low else f"[{low:g}, {high:g})"
        raise InputError(f"must be a finite number in {bound}, got {value!r}", name)
    return v


def _check(cfg, beta_o, sizes, laws, o: dict) -> tuple[Any, float, tuple[int, ...], tuple[str, ...]]:
    from attnphys.dmft.finite import check_finite_model, network_size

    try:
        check_finite_model(cfg)
    except ValueError as e:
        raise InputError(str(e), "cfg") from None
    b = float(cfg.beta_o) if beta_o is None else _real(beta_o, "beta_o", 0.0)
    try:
        ns = tuple(sizes)
    except TypeError:
        raise InputError(f"must be a sequence of network sizes, got {sizes!r}", "sizes") from None
    for n in ns:
        try:
            network_size(cfg, n)
        except InputError as e:
            raise InputError(e.detail, "sizes") from None
    if len(set(ns)) != len(ns):
        raise InputError(f"must be distinct sizes, got {ns}", "sizes")
    if isinstance(laws, str):
        laws = (laws,)
    try:
        law_list = tuple(laws)
    except TypeError:
        raise InputError(f"must be a subset of {LAWS}, got {laws!r}", "laws") from None
    if not law_list or any(w not in LAWS for w in law_list) or len(set(law_list)) != len(law_list):
        raise InputError(f"must be a non-empty subset of {LAWS}, got {laws!r}", "laws")
    for name, low in (
        ("walkers", 1), ("max_steps", 1), ("ics", 1), ("census_steps", 1), ("census_transient", 0),
        ("screen_steps", 1), ("max_horizon", 1), ("keep", 1), ("phase_stride", 1), ("max_iterations", 1),
        ("seed", 0),
    ):  # fmt: skip
        _integer(o[name], name, low)
    if o["census_transient"] >= o["census_steps"]:
        raise InputError(
            f"must be below census_steps = {o['census_steps']}, got {o['census_transient']}", "census_transient"
        )
    if o["max_horizon"] < o["screen_steps"]:
        raise InputError(f"must be at least screen_steps = {o['screen_steps']}, got {o['max_horizon']}", "max_horizon")
    _real(o["tol"], "tol", 0.0, 1.0)
    _real(o["b_level"], "b_level", 0.1, 1.0 + 1e-12)
    return cfg, b, tuple(sorted(int(n) for n in ns)), law_list


def class_orbit(net, sc, points: np.ndarray, L: int) -> tuple[np.ndarray, int, float]:
    """The orbit of a census attractor as class states, with its phase (theory: docs/theory/switching.md §1).

    A census point is the window of attention outputs A (L, M) of the mean-field map; the token of row k has the
    class means z_k = tanh(β_o s_o W^o · A_k). The loop step of the orbit's first point is the t₀ ∈ {0 … L − 1} at
    which the noiseless map of class means carries every point to the next one.

    Returns:
        (Z (p, L·C) the orbit, t₀, the largest residual |F(z_k; t₀ + k) − z_{k+1}| at that phase).
    """
    from attnphys.dmft import _linear_noise as ln
    from attnphys.dmft._switching_map import NetworkMap

    p = points.shape[0]
    M = points.shape[1] // L
    C = int(net.W.shape[-1])
    A = jnp.asarray(points.reshape(p, L, M))
    Z = np.tanh(np.asarray(jax.vmap(lambda w: ln.class_fields(net, sc, w))(A))).reshape(p, L * C)
    m = NetworkMap(L, C)
    step = jax.jit(jax.vmap(lambda x, t: m.step(x, t, (net, sc))[0]))
    nxt = np.roll(Z, -1, axis=0)
    res = []
    for t0 in range(L):
        ts = jnp.asarray((t0 + np.arange(p)) % L, jnp.int32)
        res.append(float(np.max(np.abs(np.asarray(step(jnp.asarray(Z), ts)) - nxt))))
    t0 = int(np.argmin(res))
    return Z, t0, res[t0]


def _least_action(m, law, params, A, B, o: dict, phases: Sequence[int] | None, steps: int, max_steps: int):
    """:func:`attnphys.dynamics.least_action_path` from the orbit A = (Z, t₀, p) to the first point of B."""
    from attnphys.dynamics import least_action_path

    Za, ta, pa = A
    Zb, tb, pb = B
    return least_action_path(
        m,
        law,
        Za[0],
        Zb[0],
        params,
        aux0=jnp.asarray(ta, jnp.int32),
        period=pa,
        b_aux=jnp.asarray(tb, jnp.int32),
        b_period=pb,
        steps=steps,
        steps_increment=steps,
        max_steps=max_steps,
        tol=o["tol"],
        phases=phases,
        refine_a=False,
        max_iterations=o["max_iterations"],
        seed=o["seed"],
    )


def _barrier(m, laws: dict, params, A, B, o: dict, phases_screened: list[int]) -> dict:
    """Phase selection (§2): every screened phase at the short horizon (Gaussian law), the ``keep`` best with a
    growing horizon under each law."""
    screen = _least_action(m, laws["gaussian"], params, A, B, o, phases_screened, o["screen_steps"], o["screen_steps"])
    S0 = screen["action_by_horizon"].values[0]
    order = np.argsort(np.where(np.isfinite(S0), S0, np.inf))
    kept = sorted(int(screen["phase"].values[i]) for i in order[: o["keep"]])
    out = {"screen_best": float(np.nanmin(S0)), "kept": kept}
    for name, law in laws.items():
        r = _least_action(m, law, params, A, B, o, kept, o["screen_steps"], o["max_horizon"])
        out[name] = (
            float(r["action"]),
            int(r["steps"]),
            int(r["best_phase"]),
            r.attrs["status"] == "converged",
            float(r.attrs["constraint_violation"]),
        )
        out[f"{name} path"] = (np.asarray(r["path"].values, float), np.asarray(r["step_action"].values, float))
    return out


LAND_STEPS = 10_000
"""Noiseless steps after which a state is labelled by the attractor it has reached (the basin boundary along a
least-action path, docs/theory/switching.md §2.1)."""


def _lander(m, params, orbits: Sequence[np.ndarray], L: int):
    """classify(x (n, D), aux) → labels (n,): the orbit (0 or 1 of ``orbits``) that each state reaches after
    :data:`LAND_STEPS` noiseless steps, −1 where the state is then farther than 10⁻³ of the distance between the
    orbits from both (theory: docs/theory/switching.md §2.1)."""
    Za, Zb = (jnp.asarray(Z) for Z in orbits)
    gap = float(np.min(np.linalg.norm(orbits[0][:, None] - orbits[1][None], axis=-1)))

    def land(x, aux):
        y = jax.lax.fori_loop(0, LAND_STEPS, lambda _, c: m.step(c[0], c[1], params), (x, aux))[0]
        return jnp.stack([jnp.min(jnp.linalg.norm(Z - y[None], axis=-1)) for Z in (Za, Zb)])

    run = jax.jit(jax.vmap(land, in_axes=(0, 0)))

    def classify(x, aux):
        x = np.asarray(x, float)
        a = np.broadcast_to(np.asarray(aux, np.int32), (x.shape[0],))
        d = np.asarray(run(jnp.asarray(x), jnp.asarray(a, jnp.int32)))
        lab = np.argmin(d, axis=1)
        return np.where(np.min(d, axis=1) <= 1e-3 * gap, lab, -1)

    return classify


def _boundary(m, params, X: np.ndarray, aux0: int, A, B, L: int) -> tuple[int, np.ndarray, np.ndarray, int]:
    """Where the least-action path X (T + 1, D) from orbit A (aux0 the loop step of X_0) leaves A's basin, and the
    saddle on the boundary there (theory: docs/theory/switching.md §2.1).

    Every point of the path is labelled by the orbit it reaches (:func:`_lander`); with k the first point that
    reaches B, all before it reaching A, the step x_{k−1} → x_k is F(x_{k−1}) + B η: its noiseless part reaches A,
    the whole step B. :func:`attnphys.dynamics.edge_track` from the pair (F(x_{k−1}), x_k) bisects the kick to the
    boundary (its first state, the crossing) and follows the edge state from there.

    Returns:
        (k, or −1 when the path's labels do not switch once from A to B; the crossing (D,); the edge
        trajectory's last max(p_A, p_B) states (q, D) with q its period, or all of them with q = −1 when
        they do not repeat to 10⁻⁶; q). NaN states where there is no crossing or edge tracking fails.
    """
    from attnphys.dynamics import edge_track

    D = X.shape[1]
    pmax = max(A[2], B[2])
    none = (-1, np.full(D, np.nan), np.full((pmax, D), np.nan), -1)
    classify = _lander(m, params, (A[0][: A[2]], B[0][: B[2]]), L)
    auxs = (aux0 + np.arange(X.shape[0])) % L
    lab = classify(X, auxs)
    hits = np.flatnonzero(lab == 1)
    if hits.size == 0 or hits[0] == 0 or np.any(lab[: hits[0]] != 0):
        return none
    k = int(hits[0])
    a_k = jnp.asarray(auxs[k], jnp.int32)
    start = np.asarray(m.step(jnp.asarray(X[k - 1]), jnp.asarray(auxs[k - 1], jnp.int32), params)[0], float)
    try:
        e = edge_track(
            m, start, X[k], params, aux=a_k, classify=classify, steps=min(20 * pmax, 2000), tol=1e-10, delta=1e-6
        )
    except InputError:
        return none
    E = np.asarray(e["edge"].values, float)
    for q in range(1, pmax + 1):
        if 2 * q < E.shape[0] and np.max(np.linalg.norm(E[-q:] - E[-2 * q : -q], axis=1)) <= 1e-6:
            return k - 1, E[0], E[-q:], q
    return k - 1, E[0], E[-pmax:], -1


def _escape(passage: np.ndarray, max_steps: int) -> tuple[float, float, float, int, int]:
    """(τ̂, low, high, escapes k, censored) of exponential escape times with censoring at ``max_steps``
    (theory: docs/theory/switching.md §5): τ̂ = Σ t_i / k with the exact chi-squared interval."""
    done = np.isfinite(passage)
    k = int(done.sum())
    cens = int(passage.size - k)
    total = float(np.sum(passage[done]) + cens * max_steps)
    low = 2.0 * total / float(stats.chi2.ppf(0.975, 2 * k + 2))
    if k == 0:
        return math.nan, low, math.inf, 0, cens
    return total / k, low, 2.0 * total / float(stats.chi2.ppf(0.025, 2 * k)), k, cens


def _slope(N: np.ndarray, tau: np.ndarray, k: np.ndarray) -> tuple[float, float, float]:
    """The slope of ln τ̂ against N, weighted by the escape counts (Var ln τ̂ ≈ 1/k), with its 95 % interval
    (theory: docs/theory/switching.md §5); NaN below two sizes with escapes."""
    ok = np.isfinite(tau) & (k > 0)
    if ok.sum() < 2:
        return math.nan, math.nan, math.nan
    x, y, w = N[ok].astype(float), np.log(tau[ok]), k[ok].astype(float)
    xm = np.sum(w * x) / np.sum(w)
    sxx = float(np.sum(w * (x - xm) ** 2))
    b = float(np.sum(w * (x - xm) * (y - np.sum(w * y) / np.sum(w))) / sxx)
    half = 1.959963984540054 / math.sqrt(sxx)
    return b, b - half, b + half


@takes(SwitchingOptions)
def switching(cfg, *, options: SwitchingOptions) -> xr.Dataset:
    """Least actions and escape times of the finite network between the attractors of its mean field (theory:
    docs/theory/switching.md §1–§5).

    The finite network of N semantic bits is the noisy map z' = F(z) + N^{−1/2} B(z) η on the class means z of its
    window (§1). For each periodic attractor a of the census (:func:`attnphys.dmft.attractors` with ``ics``,
    ``census_steps``, ``census_transient`` and ``seed``) and the nearest other attractor b:

    * the barrier ΔS = lim_T min_j S_j(T), the least action from phase j of a to b in T steps (§2), under the
      Gaussian rate ℓ(η) = ½|η|² and the binomial one ℓ(η) = Σ_c f_c I(μ_c + s_c η_c; μ_c) (§3): the phases
      0, ``phase_stride``, … screened at the horizon ``screen_steps`` (Gaussian), the ``keep`` best continued
      with horizons growing by ``screen_steps`` up to ``max_horizon`` until the relative decrease is below
      ``tol``;
    * for each N of ``sizes``: ``walkers`` runs of the finite network (the binomial law) from a at the best phase,
      each until ξ = d_a/(d_a + d_b) ≥ ``b_level`` or ``max_steps`` steps; τ̂ = Σ t_i / k over all runs' steps
      (the censored ones count ``max_steps``) and k escapes, with its chi-squared 95 % interval (§5);
    * the slope of ln τ̂ against N (weights k) and its 95 % interval, the estimate of ΔS where τ ≈ K e^{N ΔS}.

    The run of attractor i at size index s has the seed SeedSequence([seed, i, s]).

    Args:
        cfg: a :class:`~attnphys.dmft.DMFTConfig` (the paper model: its finite network).
        beta_o: the output gain (default the configuration's). sizes: the network sizes N (multiples of n_se).
        laws: the rates of the least actions ("gaussian", "binomial"). walkers, max_steps, b_level: the direct
        simulation. ics, census_steps, census_transient: the census. screen_steps, max_horizon, keep,
        phase_stride, tol, max_iterations: the least actions. seed: the census's and the simulations' seed.

    Returns:
        Dataset on dims ``attractor``, ``law``, ``size``: ``period``, ``basin_fraction``, ``target`` (the other
        attractor), ``distance`` (between the orbits, class means), ``phase_residual``; ``action`` (attractor,
        law) ΔS with ``horizon``, ``phase``, ``action_converged``, ``constraint_violation``; ``screen_action``;
        ``escape_time``, ``escape_time_low``, ``escape_time_high``, ``escapes``, ``censored`` (attractor, size);
        ``slope``, ``slope_low``, ``slope_high`` (attractor); the geometry of the switch (§2.1): ``orbit``
        (attractor, orbit_point, component) the orbit's class states from its first point, entered at loop step
        ``loop_step``; ``path`` (attractor, law, step, component) the least-action path x_0 … x_T (T =
        ``horizon``, x_0 the orbit's point ``phase``, NaN past T) and ``step_action`` (attractor, law, step) ℓ
        of its steps, summing to ``action``; ``crossing_step`` and ``crossing`` (attractor, law, component) the
        step whose kick crosses the basin boundary and the boundary state on that kick; ``saddle`` (attractor,
        law, orbit_point, component) the edge state tracked from there with its ``saddle_period``; attrs the
        configuration, the options and the package version.

    Raises:
        InputError: naming ``cfg`` (not the paper model), ``beta_o``, ``sizes`` (not multiples of n_se, repeated),
            ``laws``, ``walkers``, ``max_steps``, ``b_level``, ``ics``, ``census_steps``, ``census_transient``,
            ``screen_steps``, ``max_horizon``, ``keep``, ``phase_stride``, ``tol``, ``max_iterations``, ``seed``;
            or ``cfg`` when the census finds fewer than two periodic attractors.
    """
    o = options.model_dump(exclude={"beta_o", "sizes", "laws"})
    cfg, b, ns, law_names = _check(cfg, options.beta_o, options.sizes, options.laws, o)
    o["tol"], o["b_level"] = float(o["tol"]), float(o["b_level"])
    with jax.enable_x64(True):  # the least actions need float64; the process's setting is left as it is
        return _switching(cfg.with_field("beta_o", b), b, ns, law_names, o)


def _switching(cfg, b: float, ns: tuple[int, ...], law_names: tuple[str, ...], o: dict) -> xr.Dataset:
    from attnphys.dmft import attractors
    from attnphys.dmft._switching_map import BinomialNoise, ClassNoise, NetworkMap, network_params
    from attnphys.dynamics import first_passage_time

    census = attractors(
        cfg, ics=o["ics"], steps=o["census_steps"], transient=o["census_transient"], exponents=1, seed=o["seed"]
    )
    kinds = census["kind"].values
    periods = census["period"].values
    stable = census["stable"].values
    idx = [i for i in range(kinds.size) if periods[i] > 0 and stable[i] == 1]
    if len(idx) < 2:
        raise InputError(
            f"the census at beta_o = {b:g} finds {len(idx)} stable periodic attractor(s): switching needs two",
            "cfg",
        )
    net, sc = network_params(cfg)
    L, C = cfg.L, int(net.W.shape[-1])
    m = NetworkMap(L, C)
    params = (net, sc)
    orbits, resid = [], []
    for i in idx:
        p = int(periods[i])
        Z, t0, r = class_orbit(net, sc, census["points"].values[i, :p], L)
        orbits.append((Z, t0, p))
        resid.append(r)
    n_a = len(idx)
    dist = np.full((n_a, n_a), np.inf)
    for i in range(n_a):
        for j in range(n_a):
            if i != j:
                d = orbits[i][0][:, None] - orbits[j][0][None]
                dist[i, j] = float(np.min(np.linalg.norm(d, axis=-1)))
    target = np.argmin(dist, axis=1)
    all_laws = {"gaussian": ClassNoise(L, C), "binomial": BinomialNoise(L, C)}
    laws = {"gaussian": all_laws["gaussian"]} | {w: all_laws[w] for w in law_names}
    nl, nn = len(law_names), len(ns)
    act = np.full((n_a, nl), np.nan)
    hor = np.full((n_a, nl), -1, np.int64)
    pha = np.full((n_a, nl), -1, np.int64)
    conv = np.zeros((n_a, nl), np.int8)
    viol = np.full((n_a, nl), np.nan)
    screen = np.full(n_a, np.nan)
    tau = np.full((n_a, nn), np.nan)
    lo, hi = np.full((n_a, nn), np.nan), np.full((n_a, nn), np.nan)
    k = np.zeros((n_a, nn), np.int64)
    cens = np.zeros((n_a, nn), np.int64)
    slope = np.full((n_a, 3), np.nan)
    start_phase = np.zeros(n_a, np.int64)
    D, pmax = L * C, max(orb[2] for orb in orbits)
    paths: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
    cross_step = np.full((n_a, nl), -1, np.int64)
    cross = np.full((n_a, nl, D), np.nan)
    saddle = np.full((n_a, nl, pmax, D), np.nan)
    saddle_q = np.full((n_a, nl), -1, np.int64)
    for i in range(n_a):
        A, B = orbits[i], orbits[int(target[i])]
        screened = list(range(0, A[2], o["phase_stride"]))
        res = _barrier(m, laws, params, A, B, o, screened)
        screen[i] = res["screen_best"]
        for c, w in enumerate(law_names):
            act[i, c], hor[i, c], pha[i, c], conv[i, c], viol[i, c] = res[w]
            paths[i, c] = res[f"{w} path"]
            kc, cross[i, c], sad, saddle_q[i, c] = _boundary(
                m, params, paths[i, c][0], (A[1] + int(pha[i, c])) % L, A, B, L
            )
            cross_step[i, c] = kc
            saddle[i, c, : sad.shape[0]] = sad
        j = int(res["gaussian"][2])
        start_phase[i] = j
        Za, ta, pa = A
        Zb, tb, pb = B
        for s, n in enumerate(ns):
            run_seed = int(np.random.SeedSequence([o["seed"], i, s]).generate_state(1)[0] >> 1)
            fp = first_passage_time(
                m,
                all_laws["binomial"],
                Za[j],
                Zb[0],
                params,
                epsilon=1.0 / n,
                aux0=jnp.asarray((ta + j) % L, jnp.int32),
                a_period=pa,
                b_period=pb,
                b_aux=jnp.asarray(tb, jnp.int32),
                b_level=o["b_level"],
                walkers=o["walkers"],
                max_steps=o["max_steps"],
                seed=run_seed,
            )
            tau[i, s], lo[i, s], hi[i, s], k[i, s], cens[i, s] = _escape(fp["passage_steps"].values, o["max_steps"])
        slope[i] = _slope(np.asarray(ns), tau[i], k[i])
    n_step = 1 + max(X.shape[0] - 1 for X, _ in paths.values())
    path = np.full((n_a, nl, n_step, D), np.nan)
    step_action = np.full((n_a, nl, n_step), np.nan)
    for (i, c), (X, r) in paths.items():
        path[i, c, : X.shape[0]] = X
        step_action[i, c, : X.shape[0] - 1] = r[:-1]
    orbit = np.full((n_a, pmax, D), np.nan)
    for i, (Z, _, p) in enumerate(orbits):
        orbit[i, :p] = Z
    coords = {
        "attractor": np.arange(n_a),
        "law": list(law_names),
        "size": np.asarray(ns),
        "step": np.arange(n_step),
        "orbit_point": np.arange(pmax),
        "component": np.arange(D),
    }
    ap, alp, alc = ("attractor", "orbit_point", "component"), ("attractor", "law", "step"), ("attractor", "law")
    a, al, asz = ("attractor",), ("attractor", "law"), ("attractor", "size")
    data = {
        "census_index": (a, np.asarray(idx), {"long_name": "index of the attractor in the census"}),
        "period": (a, periods[idx].astype(np.int64), {"long_name": "period of the attractor", "units": "step"}),
        "basin_fraction": (a, census["basin_fraction"].values[idx], {"long_name": "census basin fraction"}),
        "target": (a, target.astype(np.int64), {"long_name": "the nearest other attractor"}),
        "distance": (a, dist[np.arange(n_a), target], {"long_name": "least distance between the orbits"}),
        "phase_residual": (a, np.asarray(resid), {"long_name": "largest |F(z_k) - z_(k+1)| of the class orbit"}),
        "start_phase": (a, start_phase, {"long_name": "phase of the least-action path (simulations start there)"}),
        "screen_action": (a, screen, {"long_name": "least Gaussian action at the screening horizon"}),
        "action": (al, act, {"long_name": "least action Delta S (units of 1/N)"}),
        "horizon": (al, hor, {"long_name": "steps of the least-action path"}),
        "phase": (al, pha, {"long_name": "start phase of the least-action path"}),
        "action_converged": (al, conv, {"long_name": "the horizon's growth met tol"}),
        "constraint_violation": (al, viol, {"long_name": "largest part of a step outside the range of B"}),
        "escape_time": (asz, tau, {"long_name": "mean escape time (exponential estimate)", "units": "steps"}),
        "escape_time_low": (asz, lo, {"long_name": "lower end of the 95 % interval of tau", "units": "steps"}),
        "escape_time_high": (asz, hi, {"long_name": "upper end of the 95 % interval of tau", "units": "steps"}),
        "escapes": (asz, k, {"long_name": "runs that escaped"}),
        "censored": (asz, cens, {"long_name": "runs still on the attractor after max_steps"}),
        "slope": (a, slope[:, 0], {"long_name": "d ln(tau) / dN"}),
        "slope_low": (a, slope[:, 1], {"long_name": "lower end of the 95 % interval of the slope"}),
        "slope_high": (a, slope[:, 2], {"long_name": "upper end of the 95 % interval of the slope"}),
        "loop_step": (
            a,
            np.asarray([t0 for _, t0, _ in orbits], np.int64),
            {"long_name": "loop step mod L at which the orbit's first point is entered"},
        ),
        "orbit": (ap, orbit, {"long_name": "class means of the window along the orbit (NaN past its period)"}),
        "path": (
            alp + ("component",),
            path,
            {"long_name": "least-action path x_0 ... x_T, class means of the window (T = horizon; NaN past it)"},
        ),
        "step_action": (alp, step_action, {"long_name": "action of step t of the path (units of 1/N)"}),
        "crossing_step": (
            alc,
            cross_step,
            {
                "long_name": "step t whose kick x_t -> x_(t+1) crosses the basin boundary (-1: not found)",
                "units": "step",
            },
        ),
        "crossing": (alc + ("component",), cross, {"long_name": "state where the path crosses the basin boundary"}),
        "saddle": (
            ("attractor", "law", "orbit_point", "component"),
            saddle,
            {"long_name": "edge state on the basin boundary, tracked from the crossing (NaN past its period)"},
        ),
        "saddle_period": (
            alc,
            saddle_q,
            {"long_name": "period of the edge state (-1: not periodic within max period)", "units": "step"},
        ),
    }
    return xr.Dataset(
        data,
        coords=coords,
        attrs=base_attrs(
            cfg,
            analysis="switching",
            beta_o=b,
            sizes=list(ns),
            laws=list(law_names),
            options=o,
            theory=f"{THEORY} §1-5",
        ),
    )


__all__ = ["switching"]
