"""Lyapunov spectra, orbit/bifurcation diagrams and regimes of the DMFT map (spec ``dmft.md`` §5–6).

:func:`analyse` runs any batch of parameter points (cold start or continuation along one swept
parameter) in chunks, and returns one ``xarray.Dataset`` with, per point, the leading Lyapunov
exponents (descending) and their round-off evidence, the last ``n_orbit`` observations, the zero-plane
section points, and the regime with its evidence (λ₁, λ₂, period, 0–1 K).
"""

from __future__ import annotations

import json
from functools import partial
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
from attnphys.dynamics.lyapunov import advance, lyapunov
from attnphys.dynamics.classify import REGIMES, ClassifyOptions, classify
from attnphys.dynamics.orbits import OrbitSpec, continuation, orbit_sweep
from attnphys.errors import NonFiniteError
from attnphys.metadata import base_attrs
from attnphys.runtime import shard_batch
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


def _model(cfg: DMFTConfig, observable: str, full_state: bool):
    """(couplings, map) of a configuration."""
    paper = cfg.mo_se_convention == "paper"
    cp = couplings(cfg.build_correlations())
    m = full_map(cfg.L, cfg.M, cfg.P, observable, paper) if full_state else attention_map(cfg.L, cfg.M, observable, paper)
    return cp, m


def _windows(cfg: DMFTConfig, start, flat, idx) -> Window:
    """Initial windows of the points ``idx`` (a token start depends on each point's ε)."""
    if isinstance(start, Window):
        ws = [start] * len(idx)
    elif start == "token":
        eps = flat.get("epsilon", np.full(int(np.max(idx)) + 1, cfg.epsilon))[idx]
        ws = [from_token(cfg, epsilon=float(e)) for e in eps]
    else:
        ws = [initial_window(cfg, start)] * len(idx)
    return Window(*(jnp.stack(x) for x in zip(*ws)))


def _params(cfg: DMFTConfig, names, flat, idx):
    """Batched :class:`Scalars` of the points ``idx``."""
    sc = scalars(cfg, **{n: flat[n][idx] for n in names})
    return type(sc)(*(jnp.broadcast_to(x, (len(idx),)) for x in sc))


def orbit_points(cfg: DMFTConfig, names, flat, idx, spec: OrbitSpec, start="checkpoint", observable="mo_se",
                 full_state=False) -> dict[str, np.ndarray]:
    """Cold-start orbits of the points ``idx`` of a flat grid (one vectorised batch).

    Returns:
        numpy arrays with a leading point axis: ``orbit``, ``section``, ``section_count``,
        ``nonfinite_step`` (recorded-step index, −1: none) and, if ``spec.k``, ``exponents`` (QR order),
        ``roundoff``, ``zero_hits``.
    """
    cp, m = _model(cfg, observable, full_state)
    x0, aux0 = _state(cfg, _windows(cfg, start, flat, idx), full_state)
    out = orbit_sweep(m, spec, x0, aux0, _params(cfg, names, flat, idx), shared=cp)
    return {k: np.asarray(v) for k, v in out.items() if k not in ("x", "aux")}


def evidence(spec: OrbitSpec, res: Mapping[str, np.ndarray], options: ClassifyOptions = ClassifyOptions()) -> dict:
    """Exponents sorted descending with their round-off evidence, and the regime with its evidence
    (``regime``, ``period``, ``lambda1``, ``lambda2``, ``K``, ``agree``), per point (leading axes kept)."""
    out = {}
    exps = None
    if spec.k:
        order = np.argsort(-res["exponents"], axis=-1)
        out["exponents"] = np.take_along_axis(res["exponents"], order, -1)
        out["roundoff_fraction"] = np.take_along_axis(res["roundoff"], order, -1)
        out["below_roundoff"] = out["roundoff_fraction"] > 0
        out["zero_hits"] = np.take_along_axis(res["zero_hits"], order, -1).astype(np.int64)
        exps = out["exponents"]
    out.update(classify(res["orbit"], exps, res["nonfinite_step"], options))
    return out


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
    if directions is None:
        outs = []
        with progress_bar(n_points, "points", enabled=progress) as advance:
            for lo in range(0, n_points, chunk):
                idx = np.arange(lo, min(lo + chunk, n_points))
                outs.append(orbit_points(cfg, names, flat, idx, spec, start, observable, full_state))
                advance(len(idx))
        res = {k: np.concatenate([o[k] for o in outs]) for k in outs[0]}
        lead_dims, lead_shape = names, [v.size for v in values]
    else:
        if len(names) != 1:
            raise ValueError("continuation needs exactly one swept parameter")
        idx = np.arange(n_points)
        cp, m = _model(cfg, observable, full_state)
        w = _windows(cfg, start, flat, idx[:1])
        x0, aux0 = _state(cfg, Window(*(a[0] for a in w)), full_state)
        with progress_bar(1, "continuation chains", enabled=progress) as advance:
            out = continuation(m, spec, x0, aux0, _params(cfg, names, flat, idx), tuple(directions), shared=cp)
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
        "section": (lead_dims + ["pair", "crossing"], shaped(res["section"])),
        "section_count": (lead_dims + ["pair"], shaped(res["section_count"])),
    }
    ev = evidence(spec, res, options)
    for key, v in ev.items():
        data[key] = (lead_dims + (["exponent"] if v.ndim == 2 else []), shaped(v))
    if spec.k:
        coords["exponent"] = np.arange(spec.k)
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


@partial(jax.jit, static_argnames=("m", "transient", "steps", "k", "align", "reortho_every", "history_every"))
def _spectra(m, cp, x0, aux0, sc, *, transient, steps, k, align, reortho_every, history_every):
    def one(x, aux, p):
        params = (cp, p)
        x, aux, _, _, _ = advance(m, params, transient - align, 1, x, aux)
        return lyapunov(m, x, aux, params, steps=steps, k=k, reortho_every=reortho_every, align=align,
                        history_every=history_every, init="identity")

    return jax.vmap(one)(x0, aux0, sc)


def lyapunov_spectrum(
    cfg: DMFTConfig,
    sweep: Mapping[str, Sequence[float]] | None = None,
    *,
    steps: int,
    transient: int,
    k: int | None = None,
    start: str | Window = "token",
    full_state: bool = False,
    align: int = 0,
    reortho_every: int = 1,
    history_every: int = 0,
) -> xr.Dataset:
    """Lyapunov exponents of the DMFT map at every point of ``sweep`` (spec ``dmft.md`` §5).

    Loop steps t < ``transient`` are discarded (the last ``align`` of them rotate the tangent
    vectors), the exponents are averages over the remaining ``steps − transient`` steps, starting from
    identity tangent vectors as the reference. With ``full_state`` the state is the reference's
    L(M+P)-dimensional one; otherwise the L·M attention block (the L·P positional exponents are 0).

    Returns:
        Dataset with ``exponents`` (sweep…, exponent) sorted descending, ``roundoff_fraction``,
        ``below_roundoff``, ``zero_hits`` and, if ``history_every``, ``history`` (sweep…, checkpoint,
        exponent): the running estimates in QR order.
    """
    spec = orbit_spec(cfg, steps=steps, transient=transient, k=k if k is not None else
                      cfg.L * (cfg.M + (cfg.P if full_state else 0)), full_state=full_state, align=align,
                      reortho_every=reortho_every, start_filled=start != "token")
    if history_every < 0 or history_every > spec.steps:
        raise ValueError(f"history_every must be in [0, steps - transient = {spec.steps}], got {history_every}")
    names, values, flat = _point_grid(cfg, sweep or {})
    n_points = int(np.prod([v.size for v in values]))
    cp, m = _model(cfg, "att", full_state)
    idx = np.arange(n_points)
    x0, aux0 = _state(cfg, _windows(cfg, start, flat, idx), full_state)
    sc = _params(cfg, names, flat, idx)
    res = shard_batch(
        lambda x, a, p: _spectra(m, cp, x, a, p, transient=spec.transient, steps=spec.steps, k=spec.k,
                                 align=spec.align, reortho_every=reortho_every, history_every=history_every),
        (x0, aux0, sc), n_points)
    bad = np.flatnonzero(~np.all(np.isfinite(np.asarray(res.exponents)), axis=-1))
    if bad.size:
        point = {n: float(flat[n][bad[0]]) for n in names}
        # locate the step on the plain trajectory (raises NonFiniteError with it)
        from attnphys.dmft.trajectory import trajectories

        trajectories(cfg.replace(**point), start=start, steps=steps, transient=steps)
        raise NonFiniteError(step=-1, params=point, count=bad.size)  # finite orbit, non-finite tangent dynamics
    shape = [v.size for v in values]

    def shaped(a):
        return np.asarray(a).reshape(shape + list(np.shape(a)[1:]))

    ex = shaped(res.exponents)
    order = np.argsort(-ex, axis=-1)
    dims = names + ["exponent"]
    ro = np.take_along_axis(shaped(res.roundoff), order, -1)
    data = {
        "exponents": (dims, np.take_along_axis(ex, order, -1)),
        "roundoff_fraction": (dims, ro),
        "below_roundoff": (dims, ro > 0),
        "zero_hits": (dims, np.take_along_axis(shaped(res.zero_hits), order, -1).astype(np.int64)),
    }
    coords = {n: v for n, v in zip(names, values)}
    coords["exponent"] = np.arange(spec.k)
    if history_every:
        data["history"] = (names + ["checkpoint", "qr_column"], shaped(res.history))
        coords["checkpoint"] = transient + history_every * np.arange(1, shaped(res.history).shape[-2] + 1)
    ds = xr.Dataset(data, coords=coords)
    ds["exponents"].attrs["description"] = "Lyapunov exponents, natural log per step, sorted descending"
    ds["below_roundoff"].attrs["description"] = ("the direction was contracted below machine precision relative "
                                                 "to the leading one in at least one QR step (round-off limited)")
    ds.attrs.update(base_attrs(cfg))
    ds.attrs.update(steps=steps, transient=transient, align=align, reortho_every=reortho_every,
                    start=start if isinstance(start, str) else "window", state="full" if full_state else "attention",
                    positional_exponents=("included (full state)" if full_state else
                                          f"{cfg.L * cfg.P} positional exponents are exactly 0 (not listed)"))
    return ds
