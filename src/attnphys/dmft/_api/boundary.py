"""Boundaries of the mean-field map's regimes in two parameters: the fold, flip or Neimark–Sacker curve of
one periodic orbit continued in a plane of parameters, with its codimension-two points (theory:
docs/theory/dmft.md §7.8; docs/theory/dynamics.md §9)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from attnphys._options import takes
from attnphys.dmft._analysis_options import BoundaryOptions, ContinuationPoint
from attnphys.dmft._api._common import Config
from attnphys.dmft._api.attractors import ContinuationPlan, orbit_continuation, plan_orbit_continuation
from attnphys.dmft.model import model_of
from attnphys.errors import InputError
from attnphys.metadata import base_attrs

CURVE_KINDS_DMFT: tuple[str, ...] = ("fold", "flip", "neimark_sacker")
"""The curves :func:`boundary` continues (those of :func:`attnphys.dynamics.bifurcation_curve`)."""


class BoundaryPlan(NamedTuple):
    """What :func:`boundary` would run, validated (:func:`plan_boundary`'s answer): the curve's kind, the two
    parameters, the second one's value at the start, the box, and the plan of the search for the starting
    bifurcation along the first parameter (theory: docs/theory/dmft.md §7.8)."""

    kind: str
    params: tuple[str, str]
    second_value: float
    box: tuple[tuple[float, float], tuple[float, float]]
    search: ContinuationPlan


def _search_options(o: BoundaryOptions) -> dict[str, Any]:
    return {k: getattr(o, k) for k in ContinuationPoint.model_fields}


def _plan(cfg: Config, kind: str, params: Sequence[str], start_value: float, stop_value: float, o: BoundaryOptions):
    if kind not in CURVE_KINDS_DMFT:
        raise InputError(f"kind must be one of {', '.join(CURVE_KINDS_DMFT)}, got {kind!r}", "kind")
    if isinstance(params, str) or len(params) != 2 or params[0] == params[1]:
        raise InputError(f"two different parameters are needed, got {params!r}", "params")
    fields = cfg.batched_fields()
    for p in params:
        if p not in fields:
            raise InputError(f"params: the boundary is continued in two of {', '.join(fields)}, got {p!r}", "params")
    p1, p2 = str(params[0]), str(params[1])
    search = plan_orbit_continuation(cfg, p1, start_value, stop_value, **_search_options(o))
    try:
        model_of(cfg).params_of(p2)
    except ValueError as e:
        raise InputError(str(e), "params") from None
    if not o.x_min < o.x_max:
        raise InputError(f"x_min ({o.x_min}) must be below x_max ({o.x_max})", "x_max")
    if not o.y_min < o.y_max:
        raise InputError(f"y_min ({o.y_min}) must be below y_max ({o.y_max})", "y_max")
    y0 = float(getattr(cfg, p2))
    if not o.y_min <= y0 <= o.y_max:
        raise InputError(
            f"the configuration's {p2} = {y0} lies outside [y_min, y_max] = [{o.y_min}, {o.y_max}]", "y_min"
        )
    for v, name in ((start_value, "start_value"), (stop_value, "stop_value")):
        if not o.x_min <= v <= o.x_max:
            raise InputError(f"{name} = {v} lies outside [x_min, x_max] = [{o.x_min}, {o.x_max}]", name)
    return BoundaryPlan(kind, (p1, p2), y0, ((o.x_min, o.x_max), (o.y_min, o.y_max)), search)


@takes(BoundaryOptions)
def plan_boundary(
    cfg: Config, kind: str, params: Sequence[str], start_value: float, stop_value: float, *, options: BoundaryOptions
) -> BoundaryPlan:
    """What :func:`boundary` with the same arguments would run, validated (the kind, the two parameters, the
    box, the search along the first one), nothing computed (theory: docs/theory/dmft.md §7.8).

    Raises:
        InputError: naming the argument or option refused.
    """
    return _plan(cfg, kind, params, start_value, stop_value, options)


def two_params_of(model, p1: str, p2: str):
    """(2,) s ↦ the map's parameters with ``p1`` = s[0] and ``p2`` = s[1], traceable (theory:
    docs/theory/dmft.md §5.4: the scalars are linear in each parameter). The scalar fields that ``p2`` sets
    are read off two concrete evaluations, so any pair of the model's continuation parameters composes."""
    f1, f2 = model.params_of(p1), model.params_of(p2)
    a, b = f2(jnp.asarray(0.5))[1], f2(jnp.asarray(1.5))[1]
    changed = [k for k in a._fields if not np.array_equal(np.asarray(getattr(a, k)), np.asarray(getattr(b, k)))]

    def params_of(s):
        cp, sc1 = f1(s[0])
        sc2 = f2(s[1])[1]
        return cp, sc1._replace(**{k: getattr(sc2, k) for k in changed})

    return params_of


_LONG_NAMES = {
    "test": "codimension-two test function",
    "special_kind": "kind of the codimension-two point",
    "special_multiplier_real": "real part of the multipliers at the codimension-two point",
    "special_multiplier_imag": "imaginary part of the multipliers at the codimension-two point",
}


def _merge(back: xr.Dataset, fwd: xr.Dataset) -> xr.Dataset:
    """One curve from its two halves (both start at the same point): the backward half reversed, then the
    forward one; the codimension-two points of both."""
    pt = [v for v in fwd.data_vars if "point" in fwd[v].dims]
    sp = [v for v in fwd.data_vars if "special" in fwd[v].dims]
    curve = xr.concat(
        [back[pt].isel(point=slice(None, None, -1)), fwd[pt].isel(point=slice(1, None))],
        dim="point",
        data_vars="all",
    )
    special = xr.concat([back[sp], fwd[sp]], dim="special", data_vars="all")
    out = xr.merge([curve, special], combine_attrs="drop")
    for name in out.variables:
        out[name].attrs = dict(fwd[name].attrs) if name in fwd.variables else {}
        out[name].attrs.setdefault("long_name", _LONG_NAMES.get(str(name), str(name).replace("_", " ")))
    return out


def inside_box(curve: xr.Dataset, params: tuple[str, str], box) -> tuple[xr.Dataset, int]:
    """The curve's points (and codimension-two points) that lie in the box ``[x_min, x_max] × [y_min, y_max]``
    the caller asked for, and how many were dropped (theory: docs/theory/dmft.md §7.8). A half of the curve
    ends with the first step that left the box: that point solves the curve's equations but lies beyond
    the box, so it is dropped, not clipped (a clipped point would be no point of the curve)."""
    (x_lo, x_hi), (y_lo, y_hi) = box
    p1, p2 = params

    def keep(x, y):
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        return (x >= x_lo) & (x <= x_hi) & (y >= y_lo) & (y <= y_hi)

    points = keep(curve[p1].values, curve[p2].values)
    dropped = int((~points).sum())
    out = curve.isel(point=np.flatnonzero(points))
    s1, s2 = f"special_{p1}", f"special_{p2}"
    if "special" in curve.dims and s1 in curve and s2 in curve:
        special = keep(curve[s1].values, curve[s2].values)
        dropped += int((~special).sum())
        out = out.isel(special=np.flatnonzero(special))
    return out, dropped


@takes(BoundaryOptions, plan=plan_boundary)
def boundary(
    cfg: Config, kind: str, params: Sequence[str], start_value: float, stop_value: float, *, options: BoundaryOptions
) -> xr.Dataset:
    """The fold, flip or Neimark–Sacker curve of a periodic orbit of the mean-field map in two parameters, with
    its codimension-two points and normal-form coefficients (theory: docs/theory/dmft.md §7.8;
    docs/theory/dynamics.md §9): a boundary of the phase diagram drawn by continuation instead of a grid.

    The orbit that ``start`` settles on at ``params[0]`` = ``start_value`` (``params[1]`` at the
    configuration's value) is continued towards ``stop_value`` (:func:`attnphys.dmft.orbit_continuation`);
    at its first bifurcation of ``kind`` the curve F^p(x; s) = x, g(x; s) = 0 (g the minimally augmented
    test function: det-like in A − I, A + I or A^{[2]} − I, A the monodromy matrix) is continued both ways
    in s = (params[0], params[1]) by :func:`attnphys.dynamics.bifurcation_curve` until it leaves the box
    [x_min, x_max] × [y_min, y_max] or has ``curve_points`` points each way. Every point returned lies in
    the box: the step that left it is dropped (:func:`inside_box`; attribute ``outside_box`` counts the
    points dropped).

    Args:
        cfg: the configuration (its model variant and every parameter not continued).
        kind: ``fold``, ``flip`` or ``neimark_sacker``.
        params: two of the configuration's continuation parameters (β_o, β_att, ε).
        start_value: where the search along params[0] starts.
        stop_value: where the search along params[0] ends.

    The options (each a keyword; :class:`~attnphys.dmft.BoundaryOptions`): the search's, as
    :func:`attnphys.dmft.orbit_continuation`; ``period``, the period the orbit must have; ``curve_points``,
    ``curve_step``, the box; :func:`plan_boundary` validates them.

    Returns:
        xarray.Dataset: with dims ``point`` (along the curve), ``dim`` (D = L·M), ``multiplier``,
        ``test`` and ``special``; variables the two parameters (named), ``x``, ``multiplier_real`` and
        ``multiplier_imag``, ``test_function``, ``coefficient`` (a, c or d), the codimension-two points
        (``special_kind``, ``special_<param>``, ``special_x``, ``special_coefficient``,
        ``special_multiplier_*``); attributes the kind, period, params, the starting bifurcation, the status
        of each half, ``evaluations`` (Newton evaluations of F^p with its Jacobian), the configuration and
        the package version.

    Raises:
        InputError: a bad argument (named); no periodic orbit at the start, an orbit of another period than
            ``period``, or no bifurcation of ``kind`` in the range searched.
    """
    from attnphys.dynamics import bifurcation_curve
    from attnphys.progress import step_bar, subrange

    plan = _plan(cfg, kind, params, start_value, stop_value, options)
    (p1, p2), y0 = plan.params, plan.second_value
    with step_bar(100.0, "%", enabled=options.progress):
        with subrange(0.0, 0.2):
            branch = orbit_continuation(cfg, p1, start_value, stop_value, **_search_options(options))
        period = int(branch.attrs["period"])
        if options.period is not None and period != options.period:
            raise InputError(
                f"the start settles on a period-{period} orbit at {p1} = {start_value}, not on one of period "
                f"{options.period}; choose another start_value or start",
                "period",
            )
        hits = np.flatnonzero(branch.event_kind.values == kind)
        if not hits.size:
            found = ", ".join(
                f"{k} at {s:.6g}" for k, s in zip(branch.event_kind.values, branch.event_s.values, strict=True)
            )
            raise InputError(
                f"no {kind} point on the period-{period} branch from {p1} = {start_value} towards {stop_value} "
                f"(found: {found or 'none'}); change kind or the range",
                "kind",
            )
        x_start, s_start = branch.event_x.values[hits[0]], float(branch.event_s.values[hits[0]])
        model = model_of(cfg)
        sc = model.params_of(p1)(jnp.asarray(start_value, jnp.result_type(float)))[1]
        sc_b = jax.tree_util.tree_map(lambda a: jnp.asarray(a)[None], sc)
        win = jax.tree_util.tree_map(lambda a: a[0], model.windows_after(options.start, sc_b, options.transient))
        m = model.map()
        _, aux0 = m.state(win)
        params_of = two_params_of(model, p1, p2)
        halves = []
        for i, direction in enumerate((-1, 1)):
            with subrange(0.2 + 0.4 * i, 0.6 + 0.4 * i):
                halves.append(
                    bifurcation_curve(
                        m,
                        kind,
                        x_start,
                        [s_start, y0],
                        params_of,
                        aux0=aux0,
                        period=period,
                        direction=direction,
                        ds_max=options.curve_step,
                        max_points=options.curve_points,
                        bounds=plan.box,
                        param_names=(p1, p2),
                        progress=options.progress,
                    )
                )
    out, outside = inside_box(_merge(*halves), (p1, p2), plan.box)
    back, fwd = halves
    out.attrs.update(
        base_attrs(cfg, start=str(branch.attrs.get("start", "")), transient=options.transient),
        measure=f"{kind} curve of a period-{period} orbit in ({p1}, {p2})",
        kind=kind,
        period=period,
        params=f"{p1},{p2}",
        coefficient=str(fwd.attrs["coefficient"]),
        start_value=float(start_value),
        stop_value=float(stop_value),
        **{f"start_{p1}": s_start, f"start_{p2}": y0},
        status_backward=str(back.attrs["status"]),
        status_forward=str(fwd.attrs["status"]),
        evaluations=int(back.attrs["evaluations"]) + int(fwd.attrs["evaluations"]),
        box=f"[{plan.box[0][0]}, {plan.box[0][1]}] x [{plan.box[1][0]}, {plan.box[1][1]}]",
        outside_box=outside,
        theory="docs/theory/dmft.md §7.8; docs/theory/dynamics.md §9",
    )
    return out
