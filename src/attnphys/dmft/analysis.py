"""Lyapunov spectra, orbit/bifurcation diagrams and regimes of the DMFT map (spec ``dmft.md`` §5–6).

:func:`analyse` runs any batch of parameter points (cold start or continuation along one swept
parameter) in chunks, and returns one ``xarray.Dataset`` with, per point, the leading Lyapunov
exponents (descending) and their round-off evidence, the last ``n_orbit`` observations, the zero-plane
section points, and the regime with its evidence (λ₁, λ₂, period, 0–1 K).
"""

from __future__ import annotations

import json
from typing import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from attnphys.dmft.config import DMFTConfig
from attnphys.dmft.initial import from_token, initial_window
from attnphys.dmft.maps import attention_map, full_map
from attnphys.dmft.meanfield import Window, couplings, scalars
from attnphys.dmft.simulate import raise_if_nonfinite
from attnphys.dmft.trajectory import SWEEPABLE
from attnphys.dynamics.classify import REGIMES, ClassifyOptions, classify
from attnphys.dynamics.orbits import OrbitSpec, continuation, orbit_sweep
from attnphys.metadata import base_attrs
from attnphys.progress import progress_bar

PAPER_SECTION_PAIRS: tuple[tuple[int, int], ...] = ((0, 1), (0, 2), (1, 0), (2, 0))
"""(plotted component, filtering component) pairs of the paper's zero-plane sections (spec §6.1)."""


def orbit_spec(cfg: DMFTConfig, *, steps: int, transient: int, k: int, n_orbit: int = 1000, align: int = 0,
               reortho_every: int = 1, section_tol: float = 1e-3, max_section: int = 1000,
               full_state: bool = False, start_filled: bool = True) -> OrbitSpec:
    """Translate the command-line schedule (T total steps, T_tr transient) into an :class:`OrbitSpec`."""
    if transient > steps:
        raise ValueError(f"transient ({transient}) must not exceed steps ({steps})")
    recorded = steps - transient
    if recorded < 1:
        raise ValueError(f"steps - transient must be >= 1 (recorded steps), got {recorded}")
    D = cfg.L * (cfg.M + (cfg.P if full_state else 0))
    if not 0 <= k <= D:
        raise ValueError(f"lyapunov k must be in [0, {D}] (L·M{' + L·P' if full_state else ''}), got {k}")
    if k and not start_filled and transient < cfg.L - 1:
        raise ValueError(f"Lyapunov exponents from a token start need transient >= L - 1 = {cfg.L - 1} (spec §5)")
    pairs = tuple(p for p in PAPER_SECTION_PAIRS if max(p) < cfg.M)
    return OrbitSpec(steps=recorded, transient=transient, k=k, align=min(align, transient), reortho_every=reortho_every,
                     n_orbit=min(n_orbit, recorded), section=pairs, section_tol=section_tol, max_section=max_section,
                     init="identity").validate()


def _point_grid(cfg: DMFTConfig, sweep: Mapping[str, Sequence[float]]):
    names = list(sweep)
    bad = [n for n in names if n not in SWEEPABLE]
    if bad:
        raise ValueError(f"cannot sweep {bad}: sweepable parameters are {SWEEPABLE}")
    values = [np.asarray(sweep[n], dtype=np.float64).ravel() for n in names]
    for n, v in zip(names, values):
        if v.size == 0:
            raise ValueError(f"sweep over {n} needs at least one value")
    mesh = np.meshgrid(*values, indexing="ij")
    flat = {n: m.ravel() for n, m in zip(names, mesh)}
    return names, values, flat


def _state(cfg: DMFTConfig, win: Window, full_state: bool):
    if full_state:
        return jnp.concatenate([win.A.reshape(win.A.shape[:-2] + (-1,)), win.pe.reshape(win.pe.shape[:-2] + (-1,))], -1), win.n
    return win.A.reshape(win.A.shape[:-2] + (-1,)), (win.pe, win.n)


def analyse(
    cfg: DMFTConfig,
    sweep: Mapping[str, Sequence[float]],
    spec: OrbitSpec,
    *,
    start: str | Window = "checkpoint",
    observable: str = "mo_se",
    full_state: bool = False,
    directions: Sequence[str] | None = None,
    chunk: int = 1024,
    options: ClassifyOptions = ClassifyOptions(),
    progress: bool = False,
) -> xr.Dataset:
    """Orbits, exponents and regimes at every point of ``sweep`` (outer-product grid).

    Args:
        directions: ``None`` for cold starts (every point from ``start``); else continuation along the
            single swept parameter in the given directions (``up``, ``down``), adding a ``direction`` dim.
        chunk: points per vectorised batch (bounds memory; each chunk is one call).
    """
    names, values, flat = _point_grid(cfg, sweep)
    n_points = int(np.prod([v.size for v in values]))
    paper = cfg.mo_se_convention == "paper"
    cp = couplings(cfg.build_correlations())
    m = full_map(cfg.L, cfg.M, cfg.P, observable, paper) if full_state else attention_map(cfg.L, cfg.M, observable, paper)
    win0 = start if isinstance(start, Window) else None

    def windows(idx):
        eps = flat.get("epsilon", np.full(n_points, cfg.epsilon))[idx]
        if win0 is not None:
            ws = [win0] * len(idx)
        elif start == "token":
            ws = [from_token(cfg, epsilon=float(e)) for e in eps]
        else:
            ws = [initial_window(cfg, start)] * len(idx)
        return Window(*(jnp.stack(x) for x in zip(*ws)))

    def params(idx):
        sc = scalars(cfg, **{n: flat[n][idx] for n in names})
        return type(sc)(*(jnp.broadcast_to(x, (len(idx),)) for x in sc))

    if directions is None:
        outs = []
        with progress_bar(n_points, "points", enabled=progress) as advance:
            for lo in range(0, n_points, chunk):
                idx = np.arange(lo, min(lo + chunk, n_points))
                x0, aux0 = _state(cfg, windows(idx), full_state)
                out = orbit_sweep(m, spec, x0, aux0, params(idx), shared=cp)
                outs.append(jax.tree_util.tree_map(np.asarray, {k: v for k, v in out.items() if k not in ("x", "aux")}))
                advance(len(idx))
        res = {k: np.concatenate([o[k] for o in outs]) for k in outs[0]}
        lead_dims, lead_shape = names, [v.size for v in values]
    else:
        if len(names) != 1:
            raise ValueError("continuation needs exactly one swept parameter")
        idx = np.arange(n_points)
        w = windows(idx[:1])
        x0, aux0 = _state(cfg, Window(*(a[0] for a in w)), full_state)
        with progress_bar(1, "continuation chains", enabled=progress) as advance:
            out = continuation(m, spec, x0, aux0, params(idx), tuple(directions), shared=cp)
            advance(1)
        res = jax.tree_util.tree_map(np.asarray, {k: v for k, v in out.items() if k not in ("x", "aux")})
        res = {k: v.reshape((-1,) + v.shape[2:]) for k, v in res.items()}
        lead_dims, lead_shape = ["direction"] + names, [len(directions)] + [values[0].size]

    labels = {n: np.broadcast_to(flat[n], (int(np.prod(lead_shape)) // n_points, n_points)).ravel() for n in names}
    raise_if_nonfinite(res["nonfinite_step"].ravel() + np.where(res["nonfinite_step"].ravel() >= 0, spec.transient, 0), labels)
    return _dataset(cfg, spec, res, lead_dims, lead_shape, names, values, directions, observable, options, start, full_state)


def _dataset(cfg, spec, res, lead_dims, lead_shape, names, values, directions, observable, options, start, full_state):
    def shaped(a):
        return a.reshape(list(lead_shape) + list(a.shape[1:]))

    coords = {n: v for n, v in zip(names, values)}
    if directions is not None:
        coords["direction"] = list(directions)
    data = {
        "orbit": (lead_dims + ["sample", "feature"], shaped(res["orbit"])),
        "section": (lead_dims + ["pair", "point"], shaped(res["section"])),
        "section_count": (lead_dims + ["pair"], shaped(res["section_count"])),
    }
    exps = None
    if spec.k:
        exps = shaped(res["exponents"])
        order = np.argsort(-exps, axis=-1)
        data["exponents"] = (lead_dims + ["exponent"], np.take_along_axis(exps, order, -1))
        data["roundoff_fraction"] = (lead_dims + ["exponent"], np.take_along_axis(shaped(res["roundoff"]), order, -1))
        data["below_roundoff"] = data["roundoff_fraction"][0], data["roundoff_fraction"][1] > 0
        data["zero_hits"] = (lead_dims + ["exponent"], np.take_along_axis(shaped(res["zero_hits"]), order, -1).astype(np.int64))
        exps = data["exponents"][1]
        coords["exponent"] = np.arange(spec.k)
    ev = classify(data["orbit"][1], exps, None, options)
    for key in ("regime", "period", "lambda1", "lambda2", "K", "agree"):
        data[key] = (lead_dims, ev[key])
    coords.update(feature=np.arange(data["orbit"][1].shape[-1]), pair=[f"{f}|{g}" for f, g in spec.section] or [])
    ds = xr.Dataset(data, coords=coords)
    ds["regime"].attrs.update(labels=json.dumps(REGIMES), description="attractor type code; labels in attrs")
    ds["section"].attrs["description"] = (f"zero-plane section: {observable}[f] where |{observable}[g]| <= "
                                          f"{spec.section_tol} (pair 'f|g'), NaN-padded; see section_count")
    ds["orbit"].attrs["description"] = f"last {spec.n_orbit} recorded values of {observable}"
    ds.attrs.update(base_attrs(cfg))
    ds.attrs.update(
        orbit_spec=json.dumps(spec._asdict()),
        observable=observable,
        start=start if isinstance(start, str) else "window",
        mode="cold" if directions is None else "continuation",
        classify_options=json.dumps(options.__dict__),
        regimes=json.dumps(REGIMES),
        positional_exponents=("included in exponents (full state)" if full_state else
                              f"{cfg.L * cfg.P} positional exponents are exactly 0 (the positional window is a permutation)"),
    )
    return ds
