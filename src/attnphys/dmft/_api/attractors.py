"""Attractors of the mean-field map: the census at one parameter point, basins along a parameter (censuses
matched into tracks), and the continuation of one periodic orbit with its local bifurcations (theory:
docs/theory/dmft.md §7.5; docs/theory/dynamics.md §5–§8)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from attnphys._messages import validated
from attnphys._options import takes
from attnphys.dmft._abstract_model import AbstractModel
from attnphys.dmft._analysis_options import AttractorsOptions, BasinsOptions, ContinuationOptions
from attnphys.dmft._api._common import Config, Sweep, sweep_axes, sweep_where
from attnphys.dmft.config import DMFTConfig
from attnphys.dmft.model import model_of
from attnphys.dmft.starts import as_start
from attnphys.metadata import base_attrs
from attnphys.sweeps.engine import run_task

if TYPE_CHECKING:
    from attnphys.sweeps import Sweep as SweepPlan


class ContinuationPlan(NamedTuple):
    """What :func:`orbit_continuation` would run, validated (:func:`plan_orbit_continuation`'s answer): the configuration,
    the parameter and its range, the start (typed) and the run's settings (theory: docs/theory/dmft.md §7.5)."""

    config: Any
    param: str
    start_value: float
    stop_value: float
    start: Any
    transient: int
    max_period: int
    step: float
    max_step: float
    max_points: int


AMPLITUDE_MAX = 1.0
"""The largest ``amplitude`` of the random starts: the attention outputs A are means of ±1 values, so every
state of the map lies in the cube [−1, 1]^{LM} (theory: docs/theory/dmft.md §7.5)."""


def check_amplitude(sampler: str, amplitude: float) -> None:
    """Refuse random starts outside the map's domain (theory: docs/theory/dmft.md §7.5): the random sampler
    draws every entry of A uniform in [−a, a], and every state the map produces has its entries in
    [−1, 1]; a start with a > :data:`AMPLITUDE_MAX` is no state of the network (from a ≈ 1e10 on its first
    steps overflow, and a census would count every start as one divergent attractor).

    Raises:
        InputError: naming ``--amplitude`` (``amplitude`` for a Python caller).
    """
    from attnphys.errors import InputError

    if sampler == "random" and not amplitude <= AMPLITUDE_MAX:
        raise InputError(
            f"must be at most {AMPLITUDE_MAX:g} (got {amplitude:g}): the random starts draw every attention "
            "output uniform in [-a, a], and attention outputs are means of ±1 values, so every state of the "
            f"map lies in [-{AMPLITUDE_MAX:g}, {AMPLITUDE_MAX:g}]; a larger a starts outside the map's domain",
            "--amplitude",
        )


def _census_task(cfg, o: AttractorsOptions | BasinsOptions):
    from attnphys.dmft.tasks import AttractorTask

    check_amplitude(o.sampler, o.amplitude)
    starts = tuple(o.starts)
    start = o.start
    if o.sampler != "perturb" and not isinstance(cfg, DMFTConfig):
        start = "token"  # unused by this sampler; the paper's checkpoint is no other model's start
    return validated(
        AttractorTask,
        arguments={"k": "exponents", "n_ics": "ics"},
        config=cfg,
        start=start,
        n_ics=len(starts) if o.sampler == "explicit" and starts else o.ics,
        steps=o.steps,
        transient=o.transient,
        k=o.exponents,
        sampler=o.sampler,
        amplitude=o.amplitude,
        radius=o.radius,
        starts=starts,
        seed=o.seed,
        max_attractors=o.max_attractors,
        max_period=o.max_period,
        observable=o.observable,
    )


@takes(AttractorsOptions)
def plan_attractors(cfg: Config, *, options: AttractorsOptions) -> SweepPlan:
    """The sweep that :func:`attractors` with the same arguments would run (its task), validated, nothing
    computed (theory: docs/theory/sweeps.md §5).

    Raises:
        InputError: naming the argument or option refused.
    """
    return run_task(_census_task(cfg, options), (), dry_run=True)


@takes(AttractorsOptions, plan=plan_attractors)
def attractors(cfg: Config, *, options: AttractorsOptions) -> xr.Dataset:
    """The attractor census at the configuration's parameter point (theory: docs/theory/dmft.md §7.5;
    docs/theory/dynamics.md §7): ``ics`` starts run vectorised for at most ``steps`` steps, the first
    ``transient`` without period checks; the settled ones are grouped into attractors with kinds, periods,
    exponents (Floquet for periodic orbits, Benettin otherwise) and basin fractions with 95 % Wilson
    intervals; the others are counted as unsettled, never forced into a class.

    The options (each a keyword; :class:`~attnphys.dmft.AttractorsOptions`): ``sampler`` ``random`` (full
    windows with A uniform in [−amplitude, amplitude]), ``perturb`` (``start`` plus a uniform perturbation of
    radius ``radius``) or ``explicit`` (the windows of ``starts``); ``seed``, the sampler's seed;
    ``max_attractors``, the size of the ``attractor`` dim (more are counted in ``n_dropped``);
    :func:`plan_attractors` validates them and returns the sweep that would run.

    Returns:
        Dataset with dims ``attractor``, ``ic``, ``exponent``, ``sample``, ``dim``, ``feature``: ``kind``,
        ``period``, ``basin_fraction`` (+ interval), ``exponents``, ``floquet_abs``, ``stable``, ``points``,
        ``observed``, per start ``label``, ``settle_step``, ``ic_outcome``; ``n_attractors``,
        ``unsettled_fraction`` (+ interval); attribute ``observable``.
    """
    ds = run_task(_census_task(cfg, options), (), progress=options.progress)
    ds.attrs["observable"] = options.observable
    return ds


def _basin_axes(sweep: Sweep):
    return sweep_axes(sweep, count=1, what="a basin diagram")


@takes(BasinsOptions)
def plan_basins(cfg: Config, sweep: Sweep, *, options: BasinsOptions) -> SweepPlan:
    """The sweep that :func:`basins` with the same arguments would run, validated, nothing computed
    (theory: docs/theory/sweeps.md §5).

    Raises:
        InputError: naming the argument or option refused.
    """
    return run_task(_census_task(cfg, options), _basin_axes(sweep), dry_run=True, **sweep_where(options))


@takes(BasinsOptions, plan=plan_basins)
def basins(cfg: Config, sweep: Sweep, *, options: BasinsOptions) -> xr.Dataset:
    """Attractor censuses along one parameter, matched into tracks: births, deaths, coexistence and
    hysteresis windows (theory: docs/theory/dmft.md §7.5; docs/theory/dynamics.md §8). Every value uses the
    same starts (common random numbers), so basin fractions vary smoothly along the parameter.

    Args:
        sweep: ``{field: values}``, one sweepable field.

    The options (each a keyword; :class:`~attnphys.dmft.BasinsOptions`): those of :func:`attractors`
    (128 starts by default), ``chunk`` (parameter values per vectorised batch, times ``ics`` lanes) and
    where the sweep runs and is stored, as :func:`bifurcation`; :func:`plan_basins` validates them and
    returns the sweep that would run.

    Returns:
        The census variables of :func:`attractors` over the parameter and, with two or more values, the
        tracks (``track_id``, ``n_coexisting``, ``window_low``/``window_high`` …, matched by the distance of
        the attractors' points) and the continued ids (``continued_id``, ``matched_by``, ``match_distance``
        per attractor, ``continued_label`` per start), matched first by the overlap of the basins over the
        common starts, as :func:`attnphys.dynamics.global_continuation` does (theory:
        docs/theory/dynamics.md §8.1).
    """
    ds = run_task(
        _census_task(cfg, options),
        _basin_axes(sweep),
        store_attrs=options.store_attrs,
        progress=options.progress,
        **sweep_where(options),
    )
    ds.attrs["observable"] = options.observable
    return ds


def exact_period(model: AbstractModel, window, sc, max_period: int, confirmations: int = 3) -> int:
    """The exact period of the orbit through an (unbatched) window: the classifier's rule
    (:func:`attnphys.dynamics.classify.detect_period`) applied to the next (confirmations + 1)·max_period
    states (A and the positional window together, so that the codes return too); 0 when none
    (theory: docs/theory/dynamics.md §4.1)."""
    from attnphys.dynamics.classify import detect_period

    m = model.map()
    par = (model.couplings, sc)

    def body(carry, _):
        x, aux = m.step(carry[0], carry[1], par)
        return (x, aux), jnp.concatenate([x, aux[0].reshape(-1)])

    _, ys = jax.lax.scan(body, m.state(window), None, length=(confirmations + 1) * max_period)
    return int(detect_period(np.asarray(ys), max_period=max_period, confirmations=confirmations))


def _continuation_plan(cfg: Config, param: str, start_value: float, stop_value: float, o: ContinuationOptions):
    from attnphys.dynamics.bifurcations import check_continuation
    from attnphys.errors import InputError

    if param not in cfg.batched_fields():
        raise InputError(f"continuation runs along one of {', '.join(cfg.batched_fields())}, got {param!r}", "param")
    start_value, stop_value = check_continuation(start_value, stop_value, o.step, o.max_step, o.max_points)
    for v, name in ((start_value, "start_value"), (stop_value, "stop_value")):
        try:
            cfg.check_axis(param, (v,))
        except ValueError as e:
            raise InputError(str(e), name) from None
    model = model_of(cfg)
    try:
        model.params_of(param)
    except ValueError as e:
        raise InputError(str(e), "param") from None
    model.check_start(o.start)
    return ContinuationPlan(
        cfg,
        param,
        start_value,
        stop_value,
        as_start(o.start),
        o.transient,
        o.max_period,
        o.step,
        o.max_step,
        o.max_points,
    )


@takes(ContinuationOptions)
def plan_orbit_continuation(
    cfg: Config, param: str, start_value: float, stop_value: float, *, options: ContinuationOptions
) -> ContinuationPlan:
    """What :func:`orbit_continuation` with the same arguments would run, validated (the parameter, its
    range, the start), nothing computed (theory: docs/theory/dmft.md §7.5).

    Raises:
        InputError: an invalid parameter, range, option or start.
    """
    return _continuation_plan(cfg, param, start_value, stop_value, options)


@takes(ContinuationOptions, plan=plan_orbit_continuation)
def orbit_continuation(
    cfg: Config, param: str, start_value: float, stop_value: float, *, options: ContinuationOptions
) -> xr.Dataset:
    """Continue the periodic orbit that ``start`` settles on at ``param`` = ``start_value`` towards
    ``stop_value`` by pseudo-arclength continuation of F^p(x) = x, locating folds, flips and Neimark–Sacker
    points from its Floquet multipliers (theory: docs/theory/dmft.md §7.5; docs/theory/dynamics.md §6).

    Args:
        param: one of β_o, β_att, ε; start_value, stop_value: the range.

    The options (each a keyword; :class:`~attnphys.dmft.ContinuationOptions`): ``start``, the initial
    condition; ``transient``, steps run at ``start_value`` before the exact period is read (at most
    ``max_period``); ``step``, ``max_step``: the initial and largest arclength steps; ``max_points``;
    :func:`plan_orbit_continuation` validates them and returns the :class:`ContinuationPlan`.

    Returns:
        Dataset over the branch points: the parameter, the orbit, its multipliers and stability, the events
        (kind, parameter value, multipliers); attributes ``period``, ``status`` and the configuration.

    Raises:
        InputError: the start is not on a periodic orbit of period ≤ ``max_period`` after the transient,
            or an invalid parameter or range.
    """
    from attnphys.dynamics.bifurcations import continue_orbit
    from attnphys.errors import InputError

    plan = _continuation_plan(cfg, param, start_value, stop_value, options)
    start_value, stop_value, start, transient, max_period = (
        plan.start_value,
        plan.stop_value,
        options.start,
        options.transient,
        options.max_period,
    )
    model = model_of(cfg)
    pf = model.params_of(param)
    sc = pf(jnp.asarray(start_value, jnp.result_type(float)))[1]
    sc_b = jax.tree_util.tree_map(lambda a: jnp.asarray(a)[None], sc)
    win = jax.tree_util.tree_map(lambda a: a[0], model.windows_after(start, sc_b, transient))
    p = exact_period(model, win, sc, max_period)
    if not p:
        raise InputError(
            f"after {transient} steps at {param} = {start_value} the start is not on a periodic orbit of period "
            f"<= {max_period}; raise the transient, or start elsewhere",
            "transient",
        )
    m = model.map()
    x0, aux0 = m.state(win)
    branch = continue_orbit(
        m,
        x0,
        aux0,
        pf,
        start_value,
        stop_value,
        period=p,
        ds=plan.step,
        ds_max=plan.max_step,
        max_steps=plan.max_points,
    )
    ds = branch.to_dataset(param)
    ds.attrs.update(base_attrs(cfg, start=as_start(start).describe(), transient=transient))
    return ds
