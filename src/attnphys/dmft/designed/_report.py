"""Does a design work? The cycle report and its figure (theory: docs/theory/designed.md §4).

:func:`cycle_report` answers, for a design and its intended cycle of emitted base patterns: whether the
trajectory from the design's start settles on the cycle and after how many steps; which fraction of random
starts does (an attractor census of the designed map); how stable the cycle is (Floquet multipliers of the
periodic orbit); and over which range of β_o, γ and ε it survives (a sweep of cold starts and, optionally,
pseudo-arclength continuation of the orbit). :func:`attnphys.plots.cycle_figure` draws the emitted sequence
against the cycle.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from attnphys.dmft.designed._design import FEATURES, DesignSpec
from attnphys.dmft.designed._model import BATCHED, DesignedConfig, DesignedModel
from attnphys.dmft.simulate import Schedule
from attnphys.dynamics.periodic import compose_steps
from attnphys.errors import InputError

DEFAULT_RANGES: dict[str, tuple[float, float]] = {
    "beta_o": (0.1, 1000.0),
    "gamma": (0.1, 1000.0),
    "epsilon": (0.0, 1.0),
}
"""Parameter ranges searched for the cycle's survival by default."""

LOG_PARAMS = ("beta_o", "gamma")
"""Parameters swept and continued on a logarithmic scale (they span orders of magnitude)."""


# ---- emitted patterns ---------------------------------------------------------------------------------------


def base_overlaps(mo_se, design: DesignSpec) -> np.ndarray:
    """The emitted token's overlap with each base pattern, (..., M) → (..., M_se), read from the ``mo_se``
    record: mean-field pattern i of the output decodes base pattern p_o(b_o(i)) (theory:
    docs/theory/designed.md §4.1); NaN for a base pattern no output pattern decodes."""
    mo_se = np.asarray(mo_se, np.float64)
    dec = design.decoded()[FEATURES.index("o")]
    out = np.full(mo_se.shape[:-1] + (design.m_se,), np.nan)
    for mu in range(design.m_se):
        sel = dec == mu
        if sel.any():
            out[..., mu] = np.max(mo_se[..., sel], axis=-1)
    return out


def emitted_patterns(mo_se, design: DesignSpec, margin: float = 0.1) -> np.ndarray:
    """The base pattern emitted at each step (theory: docs/theory/designed.md §4.1): the one whose overlap
    with the token is largest, by at least ``margin`` over every other base pattern; −1 where no pattern
    leads by that much. (..., M) → (...,) int."""
    base = base_overlaps(mo_se, design)
    filled = np.where(np.isnan(base), -np.inf, base)
    top = np.argmax(filled, axis=-1)
    srt = np.sort(filled, axis=-1)
    lead = srt[..., -1] - (srt[..., -2] if design.m_se > 1 else -np.inf)
    return np.where(np.isfinite(srt[..., -1]) & (lead >= margin), top, -1).astype(np.int64)


def follows_cycle(emitted, cycle: Sequence[int], tail: int | None = None) -> tuple[int, int]:
    """(since, phase): the first step from which the emitted sequence follows ``cycle`` to its end,
    e_t = cycle[(t + phase) mod ℓ], and that phase; (−1, −1) if its last ``tail`` steps (default 2ℓ) do not
    (theory: docs/theory/designed.md §4.1)."""
    e = np.asarray(emitted).reshape(-1)
    c = np.asarray(cycle)
    ell, T = c.size, e.size
    tail = 2 * ell if tail is None else tail
    best = (-1, -1)
    for phase in range(ell):
        ok = e == c[(np.arange(T) + phase) % ell]
        bad = np.flatnonzero(~ok)
        since = int(bad[-1]) + 1 if bad.size else 0
        if T - since >= min(tail, T) and (best[0] < 0 or since < best[0]):
            best = (since, phase)
    return best


def is_cycle(sequence, cycle: Sequence[int]) -> bool:
    """Whether one period of emitted patterns is the cycle repeated, up to a rotation."""
    s = np.asarray(sequence).reshape(-1)
    ell = len(cycle)
    if s.size == 0 or s.size % ell:
        return False
    return follows_cycle(np.tile(s, 2), cycle, tail=2 * s.size)[0] == 0


# ---- pieces of the report ----------------------------------------------------------------------------------


def _settle_step(y: np.ndarray, period: int, tol: float) -> int:
    """First step t from which y_{t'+p} = y_{t'} (within tol·max(1, max|y|)) for every later t'."""
    if period < 1 or y.shape[0] <= period:
        return -1
    d = np.max(np.abs(y[period:] - y[:-period]), axis=-1)
    bad = np.flatnonzero(d > tol * max(1.0, float(np.max(np.abs(y)))))
    return int(bad[-1]) + 1 if bad.size else 0


def _orbit_verdict(att, mo_se, design, cycle, margin, max_period, tol=1e-8):
    """Per trajectory: (period, settle_step, cycle_step, phase, on_cycle) from its records (T, M)."""
    from attnphys.dynamics.classify import detect_period

    T = att.shape[0]
    tail = min(T, max(4 * max_period, 64))
    p = int(detect_period(att[-tail:], tol=tol, max_period=max_period))
    settle = _settle_step(att, p, tol) if p else -1
    e = emitted_patterns(mo_se, design, margin)
    since, phase = follows_cycle(e, cycle, tail=max(2 * len(cycle), p))
    on = bool(p > 0 and p % len(cycle) == 0 and since >= 0 and is_cycle(e[T - p :], cycle))
    return p, settle, since if on else -1, phase if on else -1, on


@partial(jax.jit, static_argnames=("m", "p"))
def _orbit_records(m, p, x, aux, params):
    """The observable at the p points of the orbit through (x, aux): (p, F)."""

    def body(c, _):
        y = m.observe(c[0], c[1], params)
        return m.step(c[0], c[1], params), y

    _, ys = jax.lax.scan(body, (x, aux), None, length=p)
    return ys


@partial(jax.jit, static_argnames=("m", "p", "periods"))
def _perturbed(m, p, periods, x, aux, params, dx):
    """Distances ‖F^{kp}(x + δ) − x‖ (k = 1..periods) for a batch of perturbations δ (n, D): (n, periods)."""

    def one(d):
        def body(c, _):
            y, a = compose_steps(m, c[0], c[1], params, p)
            return (y, a), jnp.max(jnp.abs(y - x))

        return jax.lax.scan(body, (x + d, aux), None, length=periods)[1]

    return jax.vmap(one)(dx)


PERTURBATION_SIZE = 1e-7
"""Relative size of the perturbations whose decay decides an orbit's stability when its multipliers are not
resolved and no bound on them is below one (theory: docs/theory/designed.md §4.2)."""


def _by_perturbation(m, orb, par, period: int, seed: int = 0, n: int = 8, periods: int = 200) -> str:
    """'stable' if n random perturbations of size δ = 10⁻⁷·max(1, ‖x‖∞) of an orbit point all shrink below
    δ/1000 within ``periods`` periods (and stay there), 'unstable' if one grows above 1000 δ, else 'unknown'
    (theory: docs/theory/designed.md §4.2)."""
    x = jnp.asarray(orb.x)
    delta = PERTURBATION_SIZE * max(1.0, float(jnp.max(jnp.abs(x))))
    u = np.random.default_rng(seed).standard_normal((n, x.shape[-1]))
    u *= delta / np.max(np.abs(u), axis=1, keepdims=True)
    d = np.asarray(_perturbed(m, int(period), periods, x, orb.aux, par, jnp.asarray(u, x.dtype)))
    if not np.all(np.isfinite(d)) or np.any(d > 1e3 * delta):
        return "unstable"
    if np.all(d[:, -periods // 4 :] < 1e-3 * delta):
        return "stable"
    return "unknown"


def _floquet(model: DesignedModel, win, sc1, period: int, k: int) -> dict[str, Any]:
    """Floquet multipliers of the orbit of the given period through a window, and its stability (theory:
    docs/theory/designed.md §4.2): the periodic QR iteration for the k leading ones, LAPACK on the monodromy
    where that leaves them unresolved. Where neither resolves them (a superstable orbit whose multipliers
    lie below round-off), the stability is decided, in this order, by ‖M‖₂ < 1, by Gelfand's bound
    ρ(M) ≤ ‖Mⁿ‖₂^{1/n} < 1 (:func:`attnphys.dynamics.blocks.radius_bound`), or by the decay of small
    perturbations; a norm above one alone decides nothing."""
    from attnphys.dynamics.blocks import radius_bound
    from attnphys.dynamics.periodic import floquet_batch, floquet_direct, monodromy, refine

    m = model.map()
    par = (model.couplings, sc1)
    x0, aux0 = m.state(win)
    orb = refine(m, x0, aux0, par, period)

    def b1(t):
        return jax.tree_util.tree_map(lambda a: np.asarray(a)[None], t)

    fl = floquet_batch(m, b1(orb.points), b1(orb.aux_points), b1(par), [int(orb.period)], leading=k)
    resolved = int(np.asarray(fl.resolved)[0])
    log_abs, angle = np.asarray(fl.log_abs)[0], np.asarray(fl.angle)[0]
    if resolved < k:
        fd = floquet_direct(m, b1(orb.points), b1(orb.aux_points), b1(par), [int(orb.period)], leading=k)
        if bool(np.asarray(fd.converged)[0]):
            resolved, log_abs, angle = k, np.asarray(fd.log_abs)[0], np.asarray(fd.angle)[0]
    Mm = np.asarray(monodromy(m, orb.x, orb.aux, par, int(orb.period)))
    norm = float(np.linalg.norm(Mm, 2)) if np.all(np.isfinite(Mm)) else np.inf
    seen = np.arange(k) < resolved
    log_radius, power = radius_bound(Mm)
    if resolved:
        verdict, method = ("stable" if log_abs[0] < 0 else "unstable"), "multipliers"
    elif norm < 1.0:
        verdict, method = "stable", "monodromy_norm"
    elif log_radius < 0:
        verdict, method = "stable", f"monodromy_power_{power}"
    else:
        verdict, method = _by_perturbation(m, orb, par, int(orb.period)), "perturbation"
    return {
        "period": int(orb.period),
        "converged": bool(np.asarray(orb.converged)),
        "log_abs": np.where(seen, log_abs[:k], np.nan),
        "angle": np.where(seen, angle[:k], np.nan),
        "resolved": resolved,
        "norm": norm,
        "radius_bound": float(np.exp(min(log_radius, np.log(norm) if norm > 0 else -np.inf))),
        "stable": verdict == "stable",
        "stability": verdict,
        "method": method,
    }


def _census(model: DesignedModel, sc1, cycle, margin, n_ics, seed, options) -> dict[str, Any]:
    """Census of the designed map from random windows; which attractors emit the cycle (theory:
    docs/theory/designed.md §4.3)."""
    from attnphys.dynamics import census
    from attnphys.dynamics.intervals import wilson_interval

    m = model.map()
    ds = census(m, sc1, "random", ics=n_ics, seed=seed, options=options, shared=model.couplings)
    A = int(ds["n_attractors"])
    periods = ds["period"].values.astype(int)
    on = np.zeros(A, bool)
    emitted = np.full((A, options.max_points), -2, np.int64)
    for a in range(A):
        p = int(periods[a])
        if 0 < p <= options.max_points:
            e = emitted_patterns(ds["observed"].values[a, :p], model.design, margin)
            emitted[a, :p] = e
            on[a] = is_cycle(e, cycle)
    n_on = int(ds["n_members"].values[on].sum()) if A else 0
    lo, hi = wilson_interval(n_on, n_ics)
    return {
        "fraction": n_on / n_ics,
        "ci": (float(lo), float(hi)),
        "unsettled": float(ds["unsettled_fraction"]),
        "periods": periods,
        "basins": ds["basin_fraction"].values,
        "stable": ds["stable"].values.astype(np.int8),
        "on": on,
        "emitted": emitted,
    }


def _grid(param: str, lo: float, hi: float, n: int, s0: float) -> np.ndarray:
    """n values from lo to hi (log-spaced for β_o and γ) and the configuration's value s0."""
    if not lo < hi:
        raise InputError(f"the range of {param} must have low < high (got [{lo}, {hi}])", "ranges")
    if param in LOG_PARAMS:
        if lo <= 0:
            raise InputError(f"the range of {param} must be positive for a logarithmic grid (got {lo})", "ranges")
        g = np.geomspace(lo, hi, n)
    else:
        g = np.linspace(lo, hi, n)
    return np.unique(np.r_[g, s0]) if lo <= s0 <= hi else g


def _contiguous(values: np.ndarray, ok: np.ndarray, s0: float) -> tuple[float, float]:
    """The range of the run of ``ok`` grid values that contains s0 (or the value nearest it; NaN if that one
    fails)."""
    i = int(np.argmin(np.abs(values - s0)))
    if not ok[i]:
        return np.nan, np.nan
    a = i
    while a > 0 and ok[a - 1]:
        a -= 1
    b = i
    while b < len(ok) - 1 and ok[b + 1]:
        b += 1
    return float(values[a]), float(values[b])


def _sweep(model: DesignedModel, start, cycle, margin, steps, max_period, grids) -> dict[str, np.ndarray]:
    """Cold starts at every grid value of every parameter, one batch (theory: docs/theory/designed.md §4.4)."""
    names = list(grids)
    sizes = [len(grids[n]) for n in names]
    at = np.r_[0, np.cumsum(sizes)]
    pts = {k: np.full(at[-1], getattr(model.config, k), np.float64) for k in BATCHED}
    for j, name in enumerate(names):
        pts[name][at[j] : at[j + 1]] = grids[name]
    sc = model.scalars(pts)
    tail = min(steps, max(4 * max_period, 64, 2 * len(cycle)))
    sched = Schedule(steps=steps, transient=steps - tail, record=("att", "mo_se"))
    _, recs, _ = model.run_batch(sc, start, sched, labels=pts)
    att, mo = np.asarray(recs["att"]), np.asarray(recs["mo_se"])
    ok = np.array([_orbit_verdict(a, y, model.design, cycle, margin, max_period)[4] for a, y in zip(att, mo)])
    return {name: ok[at[j] : at[j + 1]] for j, name in enumerate(names)}


def _padded(rows: list[np.ndarray], fill) -> np.ndarray:
    n = max(len(r) for r in rows)
    return np.stack([np.r_[r, np.full(n - len(r), fill, dtype=np.asarray(r).dtype)] for r in rows])


def _continuation(model: DesignedModel, win, period, cycle, margin, param, lo, hi, **kw) -> dict[str, Any]:
    """Follow the orbit in ``param`` both ways from the configuration's value; the cycle survives while the
    orbit is stable and emits the cycle (theory: docs/theory/designed.md §4.4)."""
    from attnphys.dynamics.bifurcations import continue_orbit

    log = param in LOG_PARAMS
    pf = model.params_of(param, "log" if log else "linear")
    m = model.map()
    x0, aux0 = m.state(win)
    s0 = float(getattr(model.config, param))
    fwd = np.log if log else (lambda v: v)
    back = np.exp if log else (lambda v: v)
    out: dict[str, Any] = {}
    for end, target in (("low", lo), ("high", hi)):
        if (end == "low" and target >= s0) or (end == "high" and target <= s0):
            out[end], out[f"{end}_reason"] = s0, "range_end"
            continue
        br = continue_orbit(m, x0, aux0, pf, float(fwd(s0)), float(fwd(target)), period=period, **kw)
        svals = back(np.asarray(br.s))
        obs = np.asarray(
            jax.vmap(lambda x, s, p=br.period: _orbit_records(m, p, x, aux0, pf(s)))(
                jnp.asarray(br.x), jnp.asarray(br.s)
            )
        )
        good = np.array(
            [bool(st) and is_cycle(emitted_patterns(o, model.design, margin), cycle) for st, o in zip(br.stable, obs)]
        )
        bad = np.flatnonzero(~good)
        if bad.size == 0:
            inside = np.clip(svals[-1], min(lo, hi), max(lo, hi))
            out[end], out[f"{end}_reason"] = float(inside), ("range_end" if br.status == "end" else br.status)
            continue
        i = int(bad[0])
        if i == 0:
            out[end], out[f"{end}_reason"] = np.nan, "not_on_cycle"
            continue
        events = [e for e in br.events if e.after == i - 1]
        if events:
            out[end], out[f"{end}_reason"] = float(back(events[0].s)), events[0].kind
        else:
            reason = "unstable" if not br.stable[i] else "emission"
            out[end], out[f"{end}_reason"] = float(svals[i - 1]), reason
    return out


# ---- the report -------------------------------------------------------------------------------------------


def cycle_report(
    cfg: DesignedConfig | DesignedModel,
    cycle: Sequence[int] | None = None,
    *,
    start: Any = "token",
    steps: int = 3000,
    margin: float = 0.1,
    max_period: int = 32,
    ics: int = 64,
    seed: int = 0,
    census_steps: int = 2000,
    multipliers: int = 4,
    params: Sequence[str] = BATCHED,
    ranges: Mapping[str, tuple[float, float]] | None = None,
    grid: int = 25,
    continuation: bool = True,
    continuation_options: Mapping[str, Any] | None = None,
    progress: bool = False,
) -> xr.Dataset:
    """Whether a design produces its intended cycle of emitted base patterns (theory: docs/theory/designed.md §4).

    Args:
        cfg: the configuration (or its model). cycle: the intended cycle (default: the design's ``cycle``).
        start: the start of the trajectory and of the sweep (default the token start, pattern 0).
        steps: steps of the trajectory and of every sweep run. margin: lead of the emitted pattern's overlap
            over every other (§4.1). max_period: longest period detected.
        ics, seed, census_steps: the census of random starts (ics = 0: no census).
        multipliers: leading Floquet multipliers reported.
        params, ranges, grid: the parameters whose survival range is measured, their ranges (default
            :data:`DEFAULT_RANGES`) and the sweep's grid size (log-spaced for β_o and γ); ``params=()``: none.
        continuation: also follow the orbit by pseudo-arclength continuation (slower; the sweep is always run).
        continuation_options: passed to :func:`attnphys.dynamics.bifurcations.continue_orbit`.
        progress: show a progress bar over the report's parts (trajectory, multipliers, census, sweep,
            continuation).

    Returns:
        Dataset: the trajectory's ``mo_se`` (step, pattern), ``base_overlap`` (step, base) and ``emitted``
        (step); scalars ``on_cycle``, ``period``, ``settle_step`` (state periodic to 1e−8), ``cycle_step``
        (emission follows the cycle from here on), ``cycle_phase``; Floquet ``floquet_abs``,
        ``floquet_angle``, ``floquet_exponent`` (exponent; NaN where unresolved), ``floquet_resolved``,
        ``monodromy_norm`` (≥ every |μ|), ``radius_bound`` (a bound on every |μ| that holds under
        round-off), ``stability`` ("stable", "unstable" or "unknown": a norm above one decides nothing, §4.2)
        with ``stability_method``, ``stable`` (stability is "stable"); census ``basin_fraction`` (of the cycle) with
        ``basin_ci_low``/``basin_ci_high``, ``unsettled_fraction`` and per attractor ``attractor_period``,
        ``attractor_basin``, ``attractor_on_cycle``, ``attractor_stable``, ``attractor_emitted``; survival
        ``sweep_value``/``sweep_on_cycle`` (param, grid), ``sweep_low``/``sweep_high`` and, with continuation,
        ``continuation_low``/``continuation_high`` with their ``*_reason`` (param). The attributes carry the
        configuration, the cycle and the settings.

    Raises:
        InputError: no cycle given and none in the design, an unknown parameter, a bad range.
    """
    from attnphys.dynamics import CensusOptions
    from attnphys.metadata import base_attrs

    model = cfg if isinstance(cfg, DesignedModel) else DesignedModel.of(cfg)
    cfg, design = model.config, model.design
    cycle = tuple(int(c) for c in ((design.cycle or ()) if cycle is None else cycle))
    if not cycle:
        raise InputError("the design names no intended cycle; give one (a list of base patterns)", "cycle")
    if any(not 0 <= c < design.m_se for c in cycle):
        raise InputError(f"base patterns run over 0..{design.m_se - 1}, got {list(cycle)}", "cycle")
    for p in params:
        if p not in BATCHED:
            raise InputError(f"unknown parameter {p!r}; choose from {BATCHED}", "params")
    ranges = {**DEFAULT_RANGES, **dict(ranges or {})}
    if steps < 4 * max_period:
        raise InputError(f"must be at least 4·max_period = {4 * max_period} to detect a period (got {steps})", "steps")
    from attnphys.progress import progress_bar

    parts = 3 + (ics > 0) + (1 if params else 0) + (len(params) if continuation else 0)
    with progress_bar(parts, "parts", enabled=progress) as advance:
        sc = model.scalars(n=1)
        sc1 = jax.tree_util.tree_map(lambda a: a[0], sc)

        # the trajectory from the start
        final, recs, _ = model.run_batch(sc, start, Schedule(steps=steps, record=("att", "mo_se")))
        att, mo = np.asarray(recs["att"])[0], np.asarray(recs["mo_se"])[0]
        p, settle, since, phase, on = _orbit_verdict(att, mo, design, cycle, margin, max_period)
        emitted = emitted_patterns(mo, design, margin)
        win = jax.tree_util.tree_map(lambda a: a[0], final.window)
        advance(1)

        nan_k = np.full(multipliers, np.nan)
        fl = {
            "log_abs": nan_k,
            "angle": nan_k,
            "resolved": 0,
            "norm": np.nan,
            "radius_bound": np.nan,
            "stable": False,
            "stability": "unknown",
            "method": "no_orbit",
        }
        if p:
            fl = _floquet(model, win, sc1, p, multipliers)
        advance(2)

        cen = None
        if ics > 0:
            opts = CensusOptions(
                budget=census_steps,
                block=64,
                max_period=max_period,
                k=multipliers,
                lyap_steps=500,
                n_classify=200,
                max_points=max_period,
            )
            cen = _census(model, sc1, cycle, margin, ics, seed, opts)
            advance(1)

        grids = {name: _grid(name, *ranges[name], grid, float(getattr(cfg, name))) for name in params}
        swept = _sweep(model, start, cycle, margin, steps, max_period, grids) if params else {}
        advance(1 if params else 0)
        cont = {}
        if continuation and params and p and on:
            kw = {"ds": 0.02, "ds_max": 0.1, "max_steps": 400, **dict(continuation_options or {})}
            for name in params:
                cont[name] = _continuation(model, win, p, cycle, margin, name, *ranges[name], **kw)
                advance(1)
    T = steps
    data: dict[str, Any] = {
        "mo_se": (("step", "pattern"), mo, {"long_name": "semantic output overlap of the newest token"}),
        "base_overlap": (
            ("step", "base"),
            base_overlaps(mo, design),
            {"long_name": "overlap of the emitted token with each base pattern"},
        ),
        "emitted": (("step",), emitted, {"long_name": "emitted base pattern (-1: none leads by the margin)"}),
        "on_cycle": ((), on, {"long_name": "the trajectory from the start settles on the intended cycle"}),
        "period": ((), p, {"long_name": "period of the settled orbit (0: none detected)", "units": "step"}),
        "settle_step": ((), settle, {"long_name": "first step of the periodic orbit (to 1e-8)", "units": "step"}),
        "cycle_step": (
            (),
            since,
            {"long_name": "first step from which the emission follows the cycle", "units": "step"},
        ),
        "cycle_phase": ((), phase, {"long_name": "phase of the cycle at step 0: e_t = cycle[(t + phase) mod len]"}),
        "floquet_abs": (
            ("exponent",),
            np.exp(fl["log_abs"]),
            {"long_name": "Floquet multiplier modulus (NaN: not resolved)"},
        ),
        "floquet_angle": (("exponent",), fl["angle"], {"long_name": "Floquet multiplier argument", "units": "rad"}),
        "floquet_exponent": (
            ("exponent",),
            fl["log_abs"] / max(p, 1),
            {"long_name": "Lyapunov exponent log|mu|/p of the orbit", "units": "1/step"},
        ),
        "floquet_resolved": ((), fl["resolved"], {"long_name": "leading multipliers resolved"}),
        "monodromy_norm": ((), fl["norm"], {"long_name": "spectral norm of the monodromy (>= every |mu|)"}),
        "radius_bound": (
            (),
            fl["radius_bound"],
            {"long_name": "upper bound on the spectral radius of the monodromy (>= every |mu|)"},
        ),
        "stability": ((), fl["stability"], {"long_name": "the orbit's stability: stable, unstable or unknown"}),
        "stability_method": (
            (),
            fl["method"],
            {"long_name": "what decided the stability (multipliers, monodromy_norm, monodromy_power_n, perturbation)"},
        ),
        "stable": ((), fl["stable"], {"long_name": "the orbit is stable (stability == 'stable')"}),
    }
    coords: dict[str, Any] = {"step": np.arange(T), "pattern": np.arange(design.M), "base": np.arange(design.m_se)}
    if cen is not None:
        lo, hi = cen["ci"]
        data |= {
            "basin_fraction": ((), cen["fraction"], {"long_name": "share of random starts that settle on the cycle"}),
            "basin_ci_low": ((), lo, {"long_name": "basin fraction, lower end of the 95% Wilson interval"}),
            "basin_ci_high": ((), hi, {"long_name": "basin fraction, upper end of the 95% Wilson interval"}),
            "unsettled_fraction": ((), cen["unsettled"], {"long_name": "share of random starts that did not settle"}),
            "attractor_period": (("attractor",), cen["periods"], {"long_name": "period (0: not periodic)"}),
            "attractor_basin": (("attractor",), cen["basins"], {"long_name": "basin fraction"}),
            "attractor_on_cycle": (("attractor",), cen["on"], {"long_name": "the attractor emits the cycle"}),
            "attractor_stable": (("attractor",), cen["stable"], {"long_name": "stable (1/0; -1: not resolved)"}),
            "attractor_emitted": (
                ("attractor", "phase"),
                cen["emitted"],
                {"long_name": "emitted base patterns over one period (-2: beyond the period)"},
            ),
        }
    if params:
        names = list(params)
        data |= {
            "sweep_value": (
                ("param", "grid"),
                _padded([grids[n] for n in names], np.nan),
                {"long_name": "parameter value (NaN: padding)"},
            ),
            "sweep_on_cycle": (
                ("param", "grid"),
                _padded([swept[n] for n in names], False),
                {"long_name": f"a cold start settles on the cycle within {steps} steps"},
            ),
        }
        rng = [_contiguous(grids[n], swept[n], float(getattr(cfg, n))) for n in names]
        data["sweep_low"] = (("param",), [r[0] for r in rng], {"long_name": "lowest grid value of the surviving range"})
        data["sweep_high"] = (
            ("param",),
            [r[1] for r in rng],
            {"long_name": "highest grid value of the surviving range"},
        )
        coords["param"] = names
        if cont:
            for end in ("low", "high"):
                data[f"continuation_{end}"] = (
                    ("param",),
                    [cont[n][end] if n in cont else np.nan for n in names],
                    {"long_name": f"{end} end of the range where the continued orbit is stable and emits the cycle"},
                )
                data[f"continuation_{end}_reason"] = (
                    ("param",),
                    np.array([cont[n][f"{end}_reason"] if n in cont else "" for n in names], dtype=str),
                    {"long_name": "why the range ends (fold, flip, neimark_sacker, unstable, emission, range_end)"},
                )
    return xr.Dataset(
        data,
        coords=coords,
        attrs=base_attrs(
            cfg,
            design=design.name or "",
            cycle=json.dumps(list(cycle)),
            start=str(start),
            steps=steps,
            margin=margin,
            ics=ics,
            seed=seed,
            census_steps=census_steps,
            ranges=json.dumps({n: list(ranges[n]) for n in params}),
        ),
    )
