"""Global stability of the mean-field map's attractors at one parameter point: the census, the minimal
critical shock of each attractor and the convergence times of its basin (theory: docs/theory/dmft.md §7.5;
docs/theory/dynamics.md §10)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jax
import numpy as np
import xarray as xr

from attnphys._options import takes
from attnphys.dmft._analysis_options import AttractorsOptions, StabilityOptions
from attnphys.dmft._api._common import Config
from attnphys.dmft._api.attractors import plan_attractors
from attnphys.dmft.model import model_of
from attnphys.metadata import base_attrs
from attnphys.progress import step_bar, subrange

if TYPE_CHECKING:
    from attnphys.sweeps import Sweep as SweepPlan

_CENSUS_VARS = ("kind", "period", "basin_fraction", "basin_ci_low", "basin_ci_high", "exponents", "stable")


def _census_options(o: StabilityOptions) -> dict:
    return {k: getattr(o, k) for k in AttractorsOptions.model_fields if k != "progress"}


@takes(StabilityOptions)
def plan_stability(cfg: Config, *, options: StabilityOptions) -> SweepPlan:
    """The census that :func:`stability` with the same arguments would run (its sweep), validated with
    the search's options, nothing computed (theory: docs/theory/sweeps.md §5).

    Raises:
        InputError: naming the argument or option refused.
    """
    return plan_attractors(cfg, **_census_options(options))


@takes(StabilityOptions, plan=plan_stability)
def stability(cfg: Config, *, options: StabilityOptions) -> xr.Dataset:
    """Global stability of the attractors at the configuration's parameter point (theory:
    docs/theory/dmft.md §7.5; docs/theory/dynamics.md §10): the census of :func:`attnphys.dmft.attractors`
    (same options), then for every attractor its minimal critical shock δ* — the smallest change of the
    attention state A (Euclidean norm over its L·M entries, positional window kept) whose run lands on
    another attractor (:func:`attnphys.dynamics.minimal_shock`) — and the convergence times τ of the census's
    starts, steps until within ε = tol·max(1, max|A|) of their attractor
    (:func:`attnphys.dynamics.convergence_times`).

    The options (each a keyword; :class:`~attnphys.dmft.StabilityOptions`): the census's, as
    :func:`attnphys.dmft.attractors` (64 starts by default); ``tol``, the relative radius of the attractors;
    ``directions``, ``origins``, ``scan``, ``bisections``, ``rounds``, the shock search
    (:func:`attnphys.dynamics.minimal_shock`); :func:`plan_stability` validates them.

    Returns:
        Dataset with dims ``attractor``, ``exponent``, ``dim``, ``ray``, ``ic``, ``quantile``: the census's
        ``kind``, ``period``, ``basin_fraction`` (+ interval), ``exponents``, ``stable``; ``shock_norm``,
        ``shock_norm_low``, ``shock``, ``origin``, ``lands_on``, ``ray_norm``, ``search_radius``,
        ``n_unresolved``; ``time``, ``label``, ``census_label`` per start, ``time_mean``, ``time_std``,
        ``time_min``, ``time_max``, ``time_quantile``, ``tolerance``, ``agreement``; attrs: the
        configuration, options and package version.
    """
    from attnphys.dynamics import census, convergence_times, minimal_shock

    task = plan_attractors(cfg, **_census_options(options)).task
    model = model_of(task.config)
    m = model.map(options.observable)
    sc = jax.tree_util.tree_map(lambda a: a[0], model.scalars(n=1))
    chosen = task.sampler_for(model)
    o = task.options()
    shock_options: dict[str, Any] = dict(
        directions=options.directions,
        origins=options.origins,
        scan=options.scan,
        bisections=options.bisections,
        rounds=options.rounds,
        seed=options.seed,
        progress=options.progress,
        options=o,
        shared=model.couplings,
        tol=options.tol,
    )
    minimal_shock.check(m, sc, chosen, **shock_options)  # sizes refused before the census runs
    with step_bar(100.0, "%", enabled=options.progress):
        with subrange(0.0, 0.3):
            ds = census(m, sc, chosen, ics=task.n_ics, seed=options.seed, options=o, shared=model.couplings)
        with subrange(0.3, 0.9):
            ms = minimal_shock(m, sc, chosen, attractors=ds, **shock_options)
        with subrange(0.9, 1.0):
            ct = convergence_times(
                m,
                sc,
                chosen,
                attractors=ds,
                progress=options.progress,
                options=o,
                shared=model.couplings,
                tol=options.tol,
            )
    A = int(ds.sizes["attractor"])
    full = np.arange(A)
    fills = {"lands_on": -1, "n_unresolved": 0}
    ms = ms.reindex(attractor=full, fill_value=np.nan)
    for name, fill in fills.items():
        ms[name] = ms[name].fillna(fill).astype(np.int64)
    out = xr.merge(
        [ds[list(_CENSUS_VARS)], ms, ct.drop_vars("kind")], compat="override", combine_attrs="drop_conflicts"
    )
    out.attrs.update(
        base_attrs(task.config),
        measure="global stability: minimal critical shock and convergence times",
        observable=options.observable,
        seed=int(options.seed),
        tol=float(options.tol),
        shock_search=ms.attrs["search"],
    )
    return out
