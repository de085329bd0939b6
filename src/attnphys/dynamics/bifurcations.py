"""Local bifurcations along a parameter: pseudo-arclength continuation of a fixed point or periodic orbit,
with detection and location of fold, flip and Neimark–Sacker points (theory: docs/theory/dynamics.md §6).

A branch is the solution curve u(σ) = (x(σ), s(σ)) of G(x, s) = F^p(x; params_of(s)) − x = 0, followed by
predictor–corrector steps (§6.1): predictor u + h t, corrector Newton on

    G(x, s) = 0,    tᵀ(u − u_prev) = h,

with the tangent t the normalised solution of [[G_x, G_s], [t_prevᵀ]] t = [0, 1] (Jacobians by
``jax.jacfwd``). At every accepted point the Floquet multipliers come from
:func:`attnphys.dynamics.periodic.floquet` (periodic QR: no monodromy product is formed; for a fixed point
the eigenvalues of J). Between two
consecutive points the following changes are detected (§6.2–6.4):

* ``fold`` — sign(det(M − I)) = Π_real sign(μ − 1) changes and the branch turns (t_s changes sign); with a
  μ = +1 crossing but no turn (a symmetric or transcritical crossing) the event is a ``branch_point``;
* ``flip`` (period doubling) — sign(det(M + I)) = Π_real sign(μ + 1) changes;
* ``neimark_sacker`` — the number of multipliers outside the unit circle changes by two with neither of
  the above: a complex pair crosses |μ| = 1.

Each event is located (§6.5) by Brent's method in the arclength h from the earlier point, on t_s (fold),
on μ_c − 1, μ_c + 1 (the real multiplier nearest ±1: branch point, flip) or on |μ_c| − 1 (the complex
multiplier nearest the unit circle: Neimark–Sacker), correcting the point at every trial h; the parameter
comes out to ~1e−13, and the event reports the multipliers there.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize
import xarray as xr

from attnphys._arguments import checked
from attnphys.dynamics._compiled import SameFunction
from attnphys.dynamics.checks import memory_of, state_dim, warn_if_single_precision
from attnphys.dynamics.classify import flag_names
from attnphys.dynamics.maps import AbstractMap
from attnphys.dynamics.periodic import compose_steps, floquet_one, trace_steps

EVENT_KINDS: tuple[str, ...] = ("fold", "branch_point", "flip", "neimark_sacker")
"""The kinds of bifurcation events, by name (a :class:`Branch` dataset's ``event_kind``; stores written by
0.2.0 held the index here as a code)."""


def event_kinds(ds: xr.Dataset) -> list[str]:
    """The names of a continuation dataset's events (theory: docs/theory/dynamics.md §6.5): ``event_kind``
    as written since 0.3.0 (names), or as the integer codes with CF ``flag_meanings`` of stores written
    before."""
    values = ds["event_kind"].values
    if values.dtype.kind in "iu":
        names = (
            flag_names(ds["event_kind"].attrs)
            if "flag_meanings" in ds["event_kind"].attrs
            else dict(enumerate(EVENT_KINDS))
        )
        return [names[int(v)] for v in values]
    return [str(v) for v in values]


class BifurcationEvent(NamedTuple):
    """A located bifurcation (theory: docs/theory/dynamics.md §6.5): kind (one of :data:`EVENT_KINDS`),
    parameter s, orbit point x (D,), period, multipliers (D,) complex at the event (sorted by modulus), and ``after``: index of the branch point
    after which it lies."""

    kind: str
    s: float
    x: np.ndarray
    period: int
    multipliers: np.ndarray
    after: int


class Branch(NamedTuple):
    """A continued branch (theory: docs/theory/dynamics.md §6.1).

    s: (n,) parameter values; x: (n, D) orbit point; multipliers: (n, D) complex, sorted by modulus;
    log_abs: (n, D) log|μ|; stable: (n,) all |μ| < 1; period: p; events: located bifurcations;
    status: why the continuation stopped (``end``, ``max_steps``, ``step_too_small``, ``fold``: at a turning
    point, see :func:`continue_orbit`).
    """

    s: np.ndarray
    x: np.ndarray
    multipliers: np.ndarray
    log_abs: np.ndarray
    stable: np.ndarray
    period: int
    events: list
    status: str

    def to_dataset(self, param_name: str = "param") -> xr.Dataset:
        """The branch and its events as an ``xarray.Dataset`` (dims ``point``, ``dim``, ``multiplier``,
        ``event``) with CF attributes (theory: docs/theory/dynamics.md §6)."""
        n_ev = len(self.events)
        D = self.x.shape[1]
        ev_mult = np.array([e.multipliers for e in self.events]).reshape(n_ev, D)
        ds = xr.Dataset(
            {
                "s": ("point", self.s, {"long_name": f"continuation parameter {param_name}"}),
                "x": (("point", "dim"), self.x, {"long_name": "orbit point x_0"}),
                "multiplier_abs": (
                    ("point", "multiplier"),
                    np.exp(self.log_abs),
                    {"long_name": "Floquet multiplier modulus |mu|"},
                ),
                "multiplier_angle": (
                    ("point", "multiplier"),
                    np.angle(self.multipliers),
                    {"long_name": "Floquet multiplier argument", "units": "rad"},
                ),
                "stable": ("point", self.stable, {"long_name": "all Floquet multipliers inside the unit circle"}),
                "event_kind": (
                    "event",
                    np.array([e.kind for e in self.events], dtype=f"<U{max(map(len, EVENT_KINDS))}"),
                    {"long_name": "bifurcation kind", "comment": "one of " + ", ".join(EVENT_KINDS)},
                ),
                "event_s": (
                    "event",
                    np.array([e.s for e in self.events], float),
                    {"long_name": f"bifurcation parameter {param_name}"},
                ),
                "event_x": (
                    ("event", "dim"),
                    np.array([e.x for e in self.events]).reshape(n_ev, D),
                    {"long_name": "orbit point at the bifurcation"},
                ),
                "event_multiplier_real": (
                    ("event", "multiplier"),
                    np.real(ev_mult),
                    {"long_name": "real part of the Floquet multipliers at the bifurcation"},
                ),
                "event_multiplier_imag": (
                    ("event", "multiplier"),
                    np.imag(ev_mult),
                    {"long_name": "imaginary part of the Floquet multipliers at the bifurcation"},
                ),
            },
            attrs={"period": self.period, "status": self.status, "parameter": param_name},
        )
        return ds


@functools.lru_cache(maxsize=64)
def _kernels(m: AbstractMap, params_of: Callable, p: int):
    """Jitted residual/Jacobian, corrector, tangent and multipliers for branches of (m, params_of, p);
    cached, so that continuing again with the same ``params_of`` function compiles nothing."""

    def G(x, s, aux0):
        return compose_steps(m, x, aux0, params_of(s), p)[0] - x

    def GJ(x, s, aux0):
        Jx, Js = jax.jacfwd(G, argnums=(0, 1))(x, s, aux0)
        return G(x, s, aux0), Jx, Js

    def newton_x(x, s, aux0, tol, max_it):
        eps = jnp.finfo(x.dtype).eps

        def cond(c):
            return (c[1] < max_it) & ~c[2]

        def body(c):
            x, it, _ = c
            g, Jx, _ = GJ(x, s, aux0)
            dx = jnp.linalg.solve(Jx, -g)
            x = x + dx
            return x, it + 1, jnp.max(jnp.abs(dx)) <= jnp.maximum(tol, 4 * eps) * jnp.maximum(1.0, jnp.max(jnp.abs(x)))

        x, it, ok = jax.lax.while_loop(cond, body, (x, jnp.asarray(0), jnp.asarray(False)))
        return x, ok & jnp.all(jnp.isfinite(x))

    def tangent(x, s, t_prev, aux0):
        _, Jx, Js = GJ(x, s, aux0)
        A = jnp.concatenate([jnp.concatenate([Jx, Js[:, None]], 1), t_prev[None]], 0)
        rhs = jnp.zeros(x.shape[0] + 1, x.dtype).at[-1].set(1.0)
        t = jnp.linalg.solve(A, rhs)
        return t / jnp.linalg.norm(t)

    def correct(xa, sa, t, h, aux0, tol, max_it):
        ua = jnp.concatenate([xa, sa[None]])
        u0 = ua + h * t
        eps = jnp.finfo(xa.dtype).eps

        def cond(c):
            return (c[1] < max_it) & ~c[2]

        def body(c):
            u, it, _ = c
            g, Jx, Js = GJ(u[:-1], u[-1], aux0)
            H = jnp.concatenate([g, (t @ (u - ua) - h)[None]])
            A = jnp.concatenate([jnp.concatenate([Jx, Js[:, None]], 1), t[None]], 0)
            du = jnp.linalg.solve(A, -H)
            u = u + du
            small = jnp.max(jnp.abs(du)) <= jnp.maximum(tol, 4 * eps) * jnp.maximum(1.0, jnp.max(jnp.abs(u)))
            return u, it + 1, small

        u, it, ok = jax.lax.while_loop(cond, body, (u0, jnp.asarray(0), jnp.asarray(False)))
        ok = ok & jnp.all(jnp.isfinite(u))
        return u[:-1], u[-1], it, ok

    def multipliers(x, s, aux0):
        if p == 1:  # a fixed point: the eigenvalues of J itself
            mu = jnp.linalg.eigvals(m.jacobian(x, aux0, params_of(s)))
            order = jnp.lexsort((-jnp.angle(mu), -jnp.abs(mu)))
            return mu[order], jnp.log(jnp.abs(mu[order]))
        xs, auxs = trace_steps(m, p, x, aux0, params_of(s), p, p)
        f = floquet_one(m, 500, 1e-13, xs, auxs, params_of(s), p)
        return f.multipliers, f.log_abs

    newton_x, tangent = jax.jit(newton_x, static_argnames=("max_it",)), jax.jit(tangent)
    correct, multipliers = jax.jit(correct, static_argnames=("max_it",)), jax.jit(multipliers)
    return newton_x, tangent, correct, multipliers


class _Bound(NamedTuple):
    """The kernels with a branch's aux state bound."""

    newton_x: Callable
    tangent: Callable
    correct: Callable
    multipliers: Callable


def _bind(m, params_of, p, aux0) -> _Bound:
    nx, tg, cr, mu = _kernels(m, SameFunction(params_of), p)  # keyed by what params_of computes (§2.6)
    return _Bound(
        lambda x, s, tol, it: nx(x, s, aux0, tol, it),
        lambda x, s, t: tg(x, s, t, aux0),
        lambda xa, sa, t, h, tol, it: cr(xa, sa, t, h, aux0, tol, it),
        lambda x, s: mu(x, s, aux0),
    )


def _signs(mu: np.ndarray, imag_tol: float = 1e-9):
    """(sign det(M − I), sign det(M + I), number outside the unit circle)."""
    real = np.abs(np.imag(mu)) <= imag_tol * np.maximum(1.0, np.abs(mu))
    r = np.real(mu)[real]
    return int(np.prod(np.sign(r - 1.0))), int(np.prod(np.sign(r + 1.0))), int(np.sum(np.abs(mu) > 1.0))


def _nearest(mu: np.ndarray, kind: str, imag_tol: float = 1e-9) -> float:
    """Test-function value: μ_c ∓ 1 for the real multiplier nearest ±1, |μ_c| − 1 for the complex one
    nearest the unit circle."""
    real = np.abs(np.imag(mu)) <= imag_tol * np.maximum(1.0, np.abs(mu))
    if kind in ("branch_point", "flip"):
        target = 1.0 if kind == "branch_point" else -1.0
        r = np.real(mu)[real]
        if r.size == 0:
            return np.nan
        return float(r[np.argmin(np.abs(r - target))] - target)
    c = mu[~real]
    if c.size == 0:
        return np.nan
    a = np.abs(c)
    return float(a[np.argmin(np.abs(a - 1.0))] - 1.0)


def check_continuation(start_value, stop_value, step, max_step, max_points) -> tuple[float, float]:
    """The rules of a continuation's arguments, in one place (theory: docs/theory/dynamics.md §6.1): finite,
    different ends; a positive arclength ``step`` (the direction is from ``start_value`` to ``stop_value``)
    no larger than ``max_step``; at least one point. Returns the ends as floats.

    Raises:
        InputError: naming the argument.
    """
    from attnphys.errors import InputError

    def number(v, name: str) -> float:
        if isinstance(v, (bool, str)):
            raise InputError(f"must be a number, got {v!r}", name)
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise InputError(f"must be a number, got {v!r}", name) from None
        if not np.isfinite(x):
            raise InputError(f"must be a finite number, got {v!r}", name)
        return x

    start, stop = number(start_value, "start_value"), number(stop_value, "stop_value")
    if start == stop:
        raise InputError("`start_value` and `stop_value` must differ", "stop_value")
    for name, v in (("step", step), ("max_step", max_step)):
        if number(v, name) <= 0:
            raise InputError(
                f"the arclength step must be positive (the direction is from start_value to stop_value), got {v!r}",
                name,
            )
    if step > max_step:
        raise InputError(f"{step:g} is larger than the largest step `max_step` {max_step:g}", "step")
    if isinstance(max_points, bool) or not isinstance(max_points, (int, np.integer)) or max_points < 1:
        raise InputError(f"must be an integer >= 1, got {max_points!r}", "max_points")
    return start, stop


@checked(
    memory=lambda a: memory_of(
        8 * 4 * a["max_steps"] * a["period"] * state_dim(a["m"], None, a["x0"]),
        "the branch's orbits",
        "use fewer max_steps",
        a,
        "max_steps",
        "period",
    )
)
def continue_orbit(
    m: AbstractMap,
    x0,
    aux0,
    params_of: Callable[[Any], Any],
    s0: float,
    s_end: float,
    *,
    period: int = 1,
    ds: float = 1e-2,
    ds_min: float = 1e-10,
    ds_max: float = 5e-2,
    max_steps: int = 2000,
    tol: float = 1e-13,
    max_newton: int = 12,
    locate: bool = True,
    locate_tol: float = 1e-14,
    past_folds: bool = False,
) -> Branch:
    """Continue a fixed point (period 1) or periodic orbit in the parameter s from s0 towards s_end,
    detecting and locating folds, branch points, flips and Neimark–Sacker points
    (theory: docs/theory/dynamics.md §6.1–6.5).

    Args:
        m: the map. x0: (D,) a point on (or near: it is refined at s0) the orbit. aux0: its aux state
            (must return to itself after ``period`` steps).
        params_of: s ↦ params (traceable), e.g. ``lambda r: r`` or ``lambda a: jnp.array([a, 0.3])``; the
            compiled kernels are cached per (map, params_of, period), ``params_of`` keyed by its code and closure
            values (docs/theory/dynamics.md §2.6): the same lambda made anew compiles nothing.
        s0, s_end: start and end of the parameter range (either order); the continuation stops on an end
            of [min, max] (a step that would cross it is shortened to land on it), after ``max_steps``
            points, if the step falls below ``ds_min``, or at the first fold (turning point) unless
            ``past_folds``.
        period: p. ds, ds_min, ds_max: initial, smallest and largest arclength steps.
        tol: Newton tolerance (relative, max-norm). locate: locate events (else they are reported at the
            later bracketing point). locate_tol: arclength tolerance of the location.
        past_folds: go on past a fold, back along the other side of the branch (which then runs towards
            s0 again, often until ``max_steps``); by default the continuation stops there (status ``fold``),
            the last point being the first one past the turning point.

    Returns:
        :class:`Branch` with the points, their multipliers and the located events.
    """
    warn_if_single_precision(x0)
    x0 = jnp.asarray(x0, dtype=jnp.result_type(float))
    direction = 1.0 if s_end >= s0 else -1.0
    lo, hi = min(s0, s_end), max(s0, s_end)
    newton_x, tangent, correct, multipliers = _bind(m, params_of, int(period), aux0)
    dtype = x0.dtype
    s = jnp.asarray(s0, dtype)
    x, ok = newton_x(x0, s, tol, max_newton)
    if not bool(ok):
        raise ValueError(f"no orbit of period {period} near x0 at s = {s0} (Newton did not converge)")
    D = x0.shape[0]
    t = tangent(x, s, jnp.zeros(D + 1, dtype).at[-1].set(direction))
    mu, la = (np.asarray(a) for a in multipliers(x, s))
    pts_s, pts_x, pts_mu, pts_la, tangents = [float(s)], [np.asarray(x)], [mu], [la], [np.asarray(t)]
    events: list[BifurcationEvent] = []
    h, status = ds, "max_steps"
    span = 1e-12 * max(1.0, abs(lo), abs(hi))  # how close to an end of the range counts as on it
    for _ in range(max_steps):
        xn, sn, it, ok = correct(x, s, t, h, tol, max_newton)
        if not bool(ok):
            h /= 2
            if h < ds_min:
                status = "step_too_small"
                break
            continue
        if not lo - span <= float(sn) <= hi + span:  # past an end: land on it instead
            xn, sn, it, ok, h = _land(correct, x, s, t, h, float(sn), lo if float(sn) < lo else hi, tol, max_newton)
        tn = tangent(xn, sn, t)
        mun, lan = (np.asarray(a) for a in multipliers(xn, sn))
        events += _detect(
            m,
            correct,
            tangent,
            multipliers,
            (x, s, t, mu),
            (xn, sn, tn, mun),
            h,
            len(pts_s) - 1,
            int(period),
            tol,
            max_newton,
            locate,
            locate_tol,
        )
        x, s, t, mu = xn, sn, tn, mun
        pts_s.append(float(s))
        pts_x.append(np.asarray(x))
        pts_mu.append(mu)
        pts_la.append(lan)
        tangents.append(np.asarray(t))
        if not lo + span < float(s) < hi - span and len(pts_s) > 1:
            status = "end"
            break
        if not past_folds and any(e.kind == "fold" for e in events):
            status = "fold"
            break
        h = min(h * (1.5 if int(it) <= 4 else 1.0), ds_max)
    pts_la = np.array(pts_la)
    events = [e for e in events if lo - span <= e.s <= hi + span or not np.isfinite(e.s)]
    return Branch(
        s=np.array(pts_s),
        x=np.array(pts_x),
        multipliers=np.array(pts_mu),
        log_abs=pts_la,
        stable=np.all(pts_la < 0, axis=1),
        period=int(period),
        events=events,
        status=status,
    )


def _land(correct, x, s, t, h: float, s_new: float, end: float, tol, max_newton):
    """The corrected point at the arclength where the branch meets the end ``end`` of the range, by secant
    steps in h from the step (h, s_new) that went past it (theory: docs/theory/dynamics.md §6.1); the point
    past the end is kept if that fails. Returns (x, s, iterations, ok, h)."""
    s0 = float(s)
    h0, f0, h1, f1 = 0.0, s0 - end, h, s_new - end
    best = correct(x, s, t, h, tol, max_newton), h
    for _ in range(8):
        if f1 == f0:
            break
        hh = h1 - f1 * (h1 - h0) / (f1 - f0)
        if not 0.0 < hh <= h:
            break
        xc, sc, it, ok = correct(x, s, t, hh, tol, max_newton)
        if not bool(ok):
            break
        best = (xc, sc, it, ok), hh
        h0, f0, h1, f1 = h1, f1, hh, float(sc) - end
        if abs(f1) <= 1e-12 * max(1.0, abs(end)):
            break
    (xc, sc, it, ok), hh = best
    return xc, sc, it, ok, hh


class _Unusable(Exception):
    """A trial point of an event's location where the corrector does not converge (at the event itself, for a
    branch point, whose augmented Jacobian is singular)."""


def _locate(phi, h: float, locate_tol: float) -> tuple[float, float, float] | None:
    """Bracket of the root of the test function phi(h) on [0, h] (theory: docs/theory/dynamics.md §6.5):
    (a, b, w) with the event at a + w (b − a). Brent's method where every trial point is usable and its
    root checked (|phi| ≤ 1e−6 of the ends'); otherwise bisection that steps around unusable points
    (NaN) and ends with linear interpolation between the last usable bracket. None: no sign change."""
    f0, f1 = phi(0.0), phi(h)
    if not (np.isfinite(f0) and np.isfinite(f1)) or np.sign(f0) == np.sign(f1):
        return None

    def strict(hh):
        v = phi(hh)
        if not np.isfinite(v):
            raise _Unusable
        return v

    try:
        root: Any = scipy.optimize.brentq(strict, 0.0, h, xtol=locate_tol, rtol=4 * np.finfo(float).eps, maxiter=200)
        hs = float(root)
        if abs(strict(hs)) <= 1e-6 * max(abs(f0), abs(f1)):
            return hs, hs, 0.0
    except _Unusable:
        pass
    a, b, fa, fb = 0.0, h, f0, f1
    for _ in range(200):
        if b - a <= locate_tol:
            break
        for frac in (0.5, 0.25, 0.75):
            c = a + frac * (b - a)
            fc = phi(c)
            if np.isfinite(fc):
                break
        else:
            break  # no usable point left inside the bracket: interpolate across it
        if fc == 0.0:
            return c, c, 0.0
        if np.sign(fc) == np.sign(fa):
            a, fa = c, fc
        else:
            b, fb = c, fc
    return a, b, fa / (fa - fb)


def _detect(m, correct, tangent, multipliers, a, b, h, index, period, tol, max_newton, locate, locate_tol):
    xa, sa, ta, mua = a
    xb, sb, tb, mub = b
    fa, pa, na = _signs(mua)
    fb, pb, nb = _signs(mub)
    turned = np.sign(float(ta[-1])) != np.sign(float(tb[-1])) and float(ta[-1]) != 0.0
    kinds = []
    if fa != fb or turned:
        kinds.append("fold" if turned else "branch_point")
    if pa != pb:
        kinds.append("flip")
    if fa == fb and pa == pb and not turned and abs(na - nb) >= 2:
        kinds.append("neimark_sacker")
    out = []
    for kind in kinds:

        def point(hh):
            # exactly at a branch point the augmented Jacobian is singular: step off it by a hair
            for k in range(5):
                x, s, _, ok = correct(xa, sa, ta, hh + (1e-12 * max(h, 1e-300)) * (-1) ** k * k, tol, max_newton)
                if bool(ok):
                    return x, s, True
            return x, s, False

        def phi(hh, kind=kind):
            x, s, ok = point(hh)
            if not ok:
                return np.nan
            if kind == "fold":
                return float(tangent(x, s, ta)[-1])
            return _nearest(np.asarray(multipliers(x, s)[0]), kind)

        x, s = xb, sb
        found = _locate(phi, h, locate_tol) if locate else None
        if found is not None and kind == "branch_point":
            # the corrector is ill-conditioned near a branch point (both branches cross there: a point within
            # √ε of it passes Newton's test): interpolate phi linearly between two points a thousandth of the
            # step to either side instead, O(δ²) off
            hs = found[0] + found[2] * (found[1] - found[0])
            a_h, b_h = max(0.0, hs - 1e-3 * h), min(h, hs + 1e-3 * h)
            fa, fb = phi(a_h), phi(b_h)
            if np.isfinite(fa) and np.isfinite(fb) and np.sign(fa) != np.sign(fb):
                found = (a_h, b_h, fa / (fa - fb))
        if found is not None:
            lo_h, hi_h, w = found
            x, s, ok = point(lo_h + w * (hi_h - lo_h))
            if not ok or kind == "branch_point":  # interpolate between the bracket's corrected ends
                xl, sl, _ = point(lo_h)
                xh, sh, _ = point(hi_h)
                x, s = xl + w * (xh - xl), sl + w * (sh - sl)
        out.append(
            BifurcationEvent(
                kind=kind,
                s=float(s),
                x=np.asarray(x),
                period=period,
                multipliers=np.asarray(multipliers(x, s)[0]),
                after=index,
            )
        )
    return out
