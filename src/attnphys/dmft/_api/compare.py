"""What changed between two stored orbit diagrams of the same grid: the leading exponents' difference, the
regime and the period at every point (theory: docs/theory/dmft.md §7.6)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import xarray as xr

from attnphys.errors import InputError

CHANGES: tuple[str, ...] = ("unchanged", "exponents", "period", "regime")
"""Codes of ``change`` (theory: docs/theory/dmft.md §7.6), each outranking the ones before it: the same
regime and period with |Δλ₁| ≤ tol; |Δλ₁| > tol only; the same regime with another exact period; another
regime. −1: not comparable (a point not computed in either diagram)."""

_GRID_RTOL = 1e-9
_NOT_GRID = {"exponent", "sample", "feature", "pair", "crossing", "window", "component"}


def open_diagram(d: xr.Dataset | str | Path, name: str) -> tuple[xr.Dataset, str]:
    """The dataset ``d`` or the result stored at the path ``d``, and where it came from; an InputError naming
    ``name`` for another type, nothing there, a folder or file that is no result store. A store that is
    incomplete or damaged raises :func:`attnphys.io.load`'s errors (they say how to repair it)."""
    if isinstance(d, xr.Dataset):
        return d, "<memory>"
    if not isinstance(d, (str, Path)):
        raise InputError(f"must be a dataset or the path of a stored diagram, not {type(d).__name__}", name)
    from attnphys.io import load

    p = Path(d)
    if p.is_dir() and not any((p / m).exists() for m in ("zarr.json", ".zgroup", ".zattrs")):
        raise InputError(f"{p} is a folder that is not a result store", name)
    if p.exists() and not p.is_dir() and p.suffix != ".nc":
        raise InputError(f"{p} is a file, not a result store (a .zarr folder or a .nc file)", name)
    try:
        return load(d), str(d)
    except FileNotFoundError as e:
        raise InputError(str(e), name) from None


def _grid(ds: xr.Dataset, name: str) -> tuple[str, ...]:
    if "regime" not in ds or "period" not in ds or ("exponents" not in ds and "lambda1" not in ds):
        raise InputError(
            f"is not an orbit diagram (a bifurcation or phase diagram: it needs `regime`, `period` and the "
            f"exponents; it has {sorted(map(str, ds.data_vars))})",
            name,
        )
    return tuple(str(d) for d in ds["regime"].dims if d not in _NOT_GRID)


def _check_grids(a: xr.Dataset, b: xr.Dataset) -> tuple[str, ...]:
    """The common grid of two diagrams, or an InputError naming the first difference."""
    ga, gb = _grid(a, "a"), _grid(b, "b")
    if ga != gb:
        raise InputError(f"the diagrams are not comparable: their axes differ ({list(ga)} and {list(gb)})", "b")
    for dim in ga:
        va, vb = np.asarray(a[dim].values), np.asarray(b[dim].values)
        if va.shape != vb.shape:
            raise InputError(
                f"the diagrams are not comparable: axis {dim} has {va.size} values in a and {vb.size} in b", "b"
            )
        if va.dtype.kind in "fiu" and vb.dtype.kind in "fiu":
            bad = ~np.isclose(va, vb, rtol=_GRID_RTOL, atol=0.0)
        else:
            bad = va != vb
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            raise InputError(
                f"the diagrams are not comparable: axis {dim} differs at index {i} ({va[i].item()!r} in a, {vb[i].item()!r} in b)",
                "b",
            )
    return ga


def _exponents(ds: xr.Dataset) -> xr.DataArray:
    if "exponents" in ds:
        return ds["exponents"]
    return ds["lambda1"].expand_dims(exponent=[0], axis=-1)


def _difference(xa: np.ndarray, xb: np.ndarray) -> np.ndarray:
    """b − a, 0 where both are the same infinity (superstable points: λ = −∞ in both)."""
    with np.errstate(invalid="ignore"):
        d = xb - xa
    return np.where((xa == xb) & np.isinf(xa), 0.0, d)


def _config_changes(a: xr.Dataset, b: xr.Dataset) -> dict[str, list]:
    def flat(ds: xr.Dataset) -> dict:
        try:
            cfg = json.loads(str(ds.attrs.get("config", "{}")))
        except ValueError:
            return {}
        out = {}
        for k, v in cfg.items():
            if isinstance(v, dict):
                out.update({f"{k}.{kk}": vv for kk, vv in v.items()})
            else:
                out[k] = v
        return out

    fa, fb = flat(a), flat(b)
    return {k: [fa.get(k), fb.get(k)] for k in sorted(set(fa) | set(fb)) if fa.get(k) != fb.get(k)}


_NOT_RUN = {"config", "kind", "point_starts"}


def _run_changes(a: xr.Dataset, b: xr.Dataset) -> dict[str, list]:
    """The options of the runs that differ beyond the configuration: the schedule (``steps``, ``transient``,
    ``n_orbit``), the start, the classifier's options, the number of exponents, the seeds (``base_seed``,
    ``point_starts``) and the precision (``x64``); a diagram without a sweep record lists ``sweep``."""

    def flat(ds: xr.Dataset) -> dict | None:
        try:
            sw = json.loads(str(ds.attrs["sweep"]))
            task = dict(sw["task"])
        except (KeyError, ValueError, TypeError):
            return None
        out = {k: v for k, v in task.items() if k not in _NOT_RUN}
        out["point_starts"] = json.dumps(task.get("point_starts"), sort_keys=True)
        out["base_seed"] = sw.get("base_seed")
        out["x64"] = ds.attrs.get("x64")
        return out

    fa, fb = flat(a), flat(b)
    if fa is None or fb is None:
        return {} if fa is None and fb is None else {"sweep": [fa is not None, fb is not None]}
    diff = {}
    for k in sorted(set(fa) | set(fb)):
        va, vb = fa.get(k), fb.get(k)
        if va != vb:
            diff[k] = ["differs", "differs"] if k == "point_starts" else [va, vb]
    return diff


def compare_diagrams(
    a: xr.Dataset | str | Path,
    b: xr.Dataset | str | Path,
    *,
    tol: float = 1e-3,
) -> xr.Dataset:
    """What changed from diagram ``a`` to diagram ``b`` at every point of their common grid (theory:
    docs/theory/dmft.md §7.6): Δλ_i = λ_i(b) − λ_i(a) of the leading exponents both hold, the regimes and
    exact periods of both, and one code per point,

        change = regime   if regime_a ≠ regime_b,
                 period   else if period_a ≠ period_b,
                 exponents else if |Δλ₁| > tol (or λ₁ is finite in one diagram only),
                 unchanged otherwise,

    with −1 where either point was not computed. Equal infinite exponents (superstable points) differ by 0.

    Args:
        a, b: two bifurcation or phase diagrams (results of :func:`bifurcation` / :func:`phase_diagram`,
            or paths of their stores); their grids must be the same axes with the same values (relative
            1e-9), in the same order. Their configurations may differ (that is what one compares): the
            differences are listed in the ``config_changes`` attribute.
        tol: |Δλ₁| above which the leading exponent counts as changed (≥ 0).

    Returns:
        Dataset over the grid dims (e.g. ``beta_o`` or ``direction, beta_o`` or ``x, y``): ``change``
        (codes of :data:`CHANGES`), ``regime_a``, ``regime_b``, ``period_a``, ``period_b``, ``lambda1_a``,
        ``lambda1_b``, ``d_lambda1``; ``d_exponents`` (…, exponent) over the exponents both hold;
        ``transitions`` (regime_from, regime_to): the number of points going from each regime to each;
        attributes ``store_a``, ``store_b``, ``config_a``, ``config_b``, ``config_changes`` (JSON
        ``{field: [a, b]}``), ``run_changes`` (JSON ``{option: [a, b]}``: the options of the runs beyond the
        configuration that differ, e.g. ``steps``, ``transient``, ``n_orbit``, ``start``, ``base_seed``,
        ``x64``; a regime change between diagrams of other schedules may be the schedule's), ``tol``,
        ``max_abs_d_lambda1`` and ``changes`` (JSON counts per code).

    Raises:
        InputError: ``tol`` is not a number ≥ 0; either input is not a dataset or path of an orbit diagram
            (naming ``a`` or ``b``); the grids differ (naming the axis and the first differing value).
    """
    from attnphys.dynamics.classify import CLASSIFY_ATTRS, REGIME_ATTRS, REGIMES
    from attnphys.metadata import base_attrs

    if isinstance(tol, (bool, np.bool_)) or not isinstance(tol, (int, float, np.integer, np.floating)):
        raise InputError(f"must be a finite number ≥ 0, not {tol!r}", "tol")
    if not np.isfinite(tol) or tol < 0:
        raise InputError(f"must be a finite number ≥ 0, not {tol}", "tol")
    da, where_a = open_diagram(a, "a")
    db, where_b = open_diagram(b, "b")
    grid = _check_grids(da, db)
    coords = {d: da[d].values for d in grid}

    def on_grid(v: xr.DataArray) -> np.ndarray:
        return np.asarray(v.transpose(*grid, ...).values)

    reg_a, reg_b = on_grid(da["regime"]).astype(np.int8), on_grid(db["regime"]).astype(np.int8)
    per_a, per_b = on_grid(da["period"]).astype(np.int64), on_grid(db["period"]).astype(np.int64)
    for name, reg in (("a", reg_a), ("b", reg_b)):
        if np.any((reg < -1) | (reg >= len(REGIMES))):
            raise InputError(f"holds regime codes outside -1…{len(REGIMES) - 1} (not a diagram of this version?)", name)
    ea, eb = on_grid(_exponents(da)).astype(float), on_grid(_exponents(db)).astype(float)
    k = min(ea.shape[-1], eb.shape[-1])
    d_exp = _difference(ea[..., :k], eb[..., :k])
    l1a, l1b, d1 = ea[..., 0], eb[..., 0], d_exp[..., 0]

    change = np.zeros(reg_a.shape, dtype=np.int8)
    one_finite = np.isfinite(l1a) != np.isfinite(l1b)
    with np.errstate(invalid="ignore"):
        change[(np.abs(d1) > tol) | one_finite] = CHANGES.index("exponents")
    change[per_a != per_b] = CHANGES.index("period")
    change[reg_a != reg_b] = CHANGES.index("regime")
    change[(reg_a < 0) | (reg_b < 0)] = -1

    ok = change >= 0
    trans = np.zeros((len(REGIMES), len(REGIMES)), dtype=np.int64)
    np.add.at(trans, (reg_a[ok], reg_b[ok]), 1)
    finite = np.isfinite(d1) & ok
    max_d = float(np.max(np.abs(d1[finite]))) if finite.any() else float("nan")
    counts = {name: int((change == i).sum()) for i, name in enumerate(CHANGES)}
    counts["not_comparable"] = int((~ok).sum())

    from attnphys.dynamics.classify import flag_attrs

    dims = grid
    exp_dim = (*dims, "exponent")
    ds = xr.Dataset(
        {
            "change": (dims, change, {"long_name": "what changed from a to b", **flag_attrs(CHANGES)}),
            "regime_a": (dims, reg_a, {"long_name": "attractor type in a", **REGIME_ATTRS}),
            "regime_b": (dims, reg_b, {"long_name": "attractor type in b", **REGIME_ATTRS}),
            "period_a": (dims, per_a, {**CLASSIFY_ATTRS["period"], "long_name": "exact period in a"}),
            "period_b": (dims, per_b, {**CLASSIFY_ATTRS["period"], "long_name": "exact period in b"}),
            "lambda1_a": (dims, l1a, {"long_name": "leading Lyapunov exponent in a", "units": "1/step"}),
            "lambda1_b": (dims, l1b, {"long_name": "leading Lyapunov exponent in b", "units": "1/step"}),
            "d_lambda1": (dims, d1, {"long_name": "λ₁(b) − λ₁(a)", "units": "1/step"}),
            "d_exponents": (exp_dim, d_exp, {"long_name": "λ_i(b) − λ_i(a)", "units": "1/step"}),
            "transitions": (
                ("regime_from", "regime_to"),
                trans,
                {"long_name": "points going from a regime in a to a regime in b"},
            ),
        },
        coords={**coords, "exponent": np.arange(k), "regime_from": list(REGIMES), "regime_to": list(REGIMES)},
    )
    for d in dims:
        ds[d].attrs.update(da[d].attrs)
    ds.attrs.update(
        base_attrs(
            None,
            store_a=where_a,
            store_b=where_b,
            config_a=str(da.attrs.get("config", "")),
            config_b=str(db.attrs.get("config", "")),
            config_changes=_config_changes(da, db),
            run_changes=_run_changes(da, db),
            tol=float(tol),
            max_abs_d_lambda1=max_d,
            changes=counts,
        )
    )
    return ds


def changed_intervals(ds: xr.Dataset, code: str = "regime", limit: int = 10) -> list[str]:
    """Runs of consecutive values along the last grid axis whose ``change`` is ``code`` or a higher code
    and whose regimes in a and b are the same along the run, as text (``"1.2–1.35 (periodic → chaotic)"``);
    at most ``limit`` (theory:
    docs/theory/dmft.md §7.6)."""
    from attnphys.dynamics.classify import REGIMES

    lowest = CHANGES.index(code)
    grid = [d for d in ds["change"].dims]
    param = grid[-1]
    rows: list[str] = []
    lead = [d for d in grid if d != param]
    sel = ds.stack(_lead=lead) if lead else ds.expand_dims(_lead=[0])
    for j in range(sel.sizes["_lead"]):
        s = sel.isel(_lead=j)
        prefix = (
            "" if not lead else f"{', '.join(f'{d}={v}' for d, v in zip(lead, np.atleast_1d(s['_lead'].item())))}: "
        )
        hit = np.asarray(s["change"].values) >= lowest
        ra, rb = np.asarray(s["regime_a"].values), np.asarray(s["regime_b"].values)
        x = np.asarray(s[param].values)
        i = 0
        while i < hit.size:
            if not hit[i]:
                i += 1
                continue
            e = i
            while e + 1 < hit.size and hit[e + 1] and ra[e + 1] == ra[i] and rb[e + 1] == rb[i]:
                e += 1
            what = f"{REGIMES[ra[i]]} → {REGIMES[rb[i]]}" if ra[i] >= 0 and rb[i] >= 0 else "not computed"
            span = f"{x[i]:g}" if e == i else f"{x[i]:g}–{x[e]:g}"
            rows.append(f"{prefix}{span} ({what})")
            if len(rows) >= limit:
                return rows
            i = e + 1
    return rows


__all__ = ["CHANGES", "changed_intervals", "compare_diagrams"]
