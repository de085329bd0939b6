"""Trajectories of the mean-field map over parameter grids, as ``xarray.Dataset`` (spec ``dmft.md`` §3.6).

>>> ds = trajectories(preset("paper"), start="token", steps=2000, sweep={"beta_o": [1.26, 2.0]})
>>> ds.mo_se.dims
('beta_o', 'step', 'feature')
"""

from __future__ import annotations

import json
from typing import Mapping, Sequence

import jax.numpy as jnp
import numpy as np
import xarray as xr

from attnphys.dmft.config import DMFTConfig
from attnphys.dmft.initial import from_token, initial_window
from attnphys.dmft.meanfield import OBSERVABLES, Window, couplings, scalars
from attnphys.dmft.simulate import Schedule, run_batch
from attnphys.metadata import base_attrs

SWEEPABLE: tuple[str, ...] = ("beta_o", "beta_att", "epsilon")
"""Parameters the batched engine varies per trajectory; other fields need a new configuration."""


def _grid(sweep: Mapping[str, Sequence[float]]) -> tuple[list[str], list[np.ndarray], dict[str, np.ndarray]]:
    names = list(sweep)
    unknown = [n for n in names if n not in SWEEPABLE]
    if unknown:
        raise ValueError(f"cannot sweep {unknown}: sweepable parameters are {SWEEPABLE}")
    values = [np.atleast_1d(np.asarray(sweep[n], dtype=np.float64)) for n in names]
    for n, v in zip(names, values):
        if v.ndim != 1 or v.size == 0:
            raise ValueError(f"sweep over {n} needs a non-empty list of values")
    mesh = np.meshgrid(*values, indexing="ij") if names else []
    flat = {n: m.ravel() for n, m in zip(names, mesh)}
    return names, values, flat


def trajectories(
    cfg: DMFTConfig,
    *,
    start: str | Window | Sequence[Window] = "token",
    steps: int,
    transient: int = 0,
    record_every: int = 1,
    sweep: Mapping[str, Sequence[float]] | None = None,
    record: Sequence[str] = OBSERVABLES,
    check: bool = True,
) -> xr.Dataset:
    """Run the mean-field map on the outer-product grid ``sweep`` (and over initial conditions).

    Args:
        cfg: the configuration; unswept parameters come from it.
        start: ``"token"``, ``"checkpoint"``, a JSON path, one :class:`Window`, or a list of windows
            (then a dimension ``ic`` is added).
        steps, transient, record_every: see :class:`Schedule`.
        sweep: parameter name → values, for names in :data:`SWEEPABLE`; dims in the given order.

    Returns:
        Dataset with variables ``att, mo, mo_se, mv, mq, mk`` (…, step, feature), the final window
        ``final_A`` (…, lag, feature) and ``final_pe`` (…, lag, bit), attrs with the full config,
        the schedule and the package version.
    """
    sweep = dict(sweep or {})
    schedule = Schedule(steps=steps, transient=transient, record_every=record_every, record=tuple(record))
    names, values, flat = _grid(sweep)
    corr = cfg.build_correlations()
    cp = couplings(corr)

    if isinstance(start, Window):
        wins, start_desc = [start], "window"
    elif isinstance(start, str):
        wins, start_desc = None, start
    else:
        wins, start_desc = list(start), f"{len(start)} windows"
    n_ic = 1 if wins is None else len(wins)
    n_par = int(np.prod([v.size for v in values])) if names else 1
    B = n_par * n_ic

    # per-trajectory parameter values: the grid varies fastest within each initial condition
    par = {n: np.tile(flat[n], n_ic) for n in names}
    eps = par.get("epsilon", np.full(B, cfg.epsilon))
    sc = scalars(cfg, **{n: par[n] for n in names}) if names else scalars(cfg)
    sc = type(sc)(*(jnp.broadcast_to(x, (B,)) for x in sc))
    if wins is None:
        if start == "token":
            # the token's overlaps depend on ε, so build one window per ε
            per = {e: from_token(cfg, corr, epsilon=float(e)) for e in np.unique(eps)}
            batch = [per[e] for e in eps]
        else:
            w0 = initial_window(cfg, start, corr)
            batch = [w0] * B
    else:
        batch = [w for w in wins for _ in range(n_par)]
    win = Window(*(jnp.stack(xs) for xs in zip(*batch)))

    labels = {n: par[n] for n in names} or {"index": np.arange(B)}
    final, recs, _ = run_batch(cp, sc, win, schedule, cfg.mo_se_convention == "paper", check=check, labels=labels)

    shape = ([n_ic] if wins is not None and n_ic > 1 else []) + [v.size for v in values]
    dims = (["ic"] if wins is not None and n_ic > 1 else []) + names
    coords: dict = {n: v for n, v in zip(names, values)}
    coords.update(step=schedule.record_steps, feature=np.arange(cfg.M), lag=np.arange(cfg.L), bit=np.arange(cfg.P))
    data = {
        name: (dims + ["step", "feature"], np.asarray(recs[name]).reshape(shape + [schedule.n_records, cfg.M]))
        for name in schedule.record
    }
    data["final_A"] = (dims + ["lag", "feature"], np.asarray(final.A).reshape(shape + [cfg.L, cfg.M]))
    data["final_pe"] = (dims + ["lag", "bit"], np.asarray(final.pe).reshape(shape + [cfg.L, cfg.P]))
    attrs = base_attrs(cfg)
    attrs.update(
        schedule=json.dumps(dict(steps=steps, transient=transient, record_every=record_every)),
        start=start_desc,
        mo_se_convention=cfg.mo_se_convention,
    )
    ds = xr.Dataset(data, coords=coords, attrs=attrs)
    for name in OBSERVABLES:
        if name in ds:
            ds[name].attrs["description"] = _DESCRIPTIONS[name]
    return ds


_DESCRIPTIONS = {
    "att": "attention output A^new of the step (spec dmft §3.4 step 5)",
    "mo": "output overlap m^o of the newest token",
    "mo_se": "semantic output overlap of the newest token (convention: attrs mo_se_convention)",
    "mv": "value overlap m^v of the newest token",
    "mq": "query overlap m^q of the newest token",
    "mk": "key overlap m^k of the newest token",
}


def final_windows(ds: xr.Dataset) -> list[Window]:
    """The final context windows of a trajectory dataset (flattened over its parameter dims)."""
    A = ds.final_A.transpose(..., "lag", "feature").values
    pe = ds.final_pe.transpose(..., "lag", "bit").values
    L, M, P = A.shape[-2], A.shape[-1], pe.shape[-1]
    A, pe = A.reshape(-1, L, M), pe.reshape(-1, L, P)
    return [Window(A=jnp.asarray(a), pe=jnp.asarray(p), n=jnp.asarray(L, jnp.int32)) for a, p in zip(A, pe)]


