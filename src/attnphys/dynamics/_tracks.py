"""Attractor continuation across a parameter grid: censuses at consecutive parameter values matched into
tracks, with births, deaths, coexistence and hysteresis windows (theory: docs/theory/dynamics.md §8).

Matching (§8): two attractors a (at grid point i) and b (at i + 1) are at distance

    d(a, b) = max( Q_q{ min_y |x − y| : x ∈ X_a },  Q_q{ min_x |x − y| : y ∈ X_b } ),

the larger of the two directed q-quantile (``quantile``, default 0.9) nearest-point distances between
their representative point sets X (the census's ``points``, full state, Euclidean norm): a symmetric,
outlier-tolerant Hausdorff distance, independent of phase and of the number of points. Pairs are chosen by
an optimal assignment (Hungarian algorithm) on d, and a pair is matched only if d ≤ tol, with
tol = ``rel_tol`` × the diameter of the union of all representative points over the grid (default), or an
absolute ``tol`` (``tol=inf``: match purely by assignment; births and deaths then only where the number
of attractors changes). Divergent
pseudo-attractors match each other only. A period doubling keeps its track when the doubled orbit is
within tol of its parent; otherwise the parent's track dies and a new one is born.

A track is born at its first grid point (``track_first`` > 0: inside the grid) and dies at its last. A
hysteresis window is a parameter interval [birth of B, death of A] where two tracks coexist such that A
exists before and dies inside the interval's right end while B is born at its left end and continues
beyond: an up-sweep follows A until it dies, a down-sweep follows B until it is born — the loop of §8.
"""

from __future__ import annotations

import numpy as np
import scipy.optimize
import xarray as xr

from attnphys._arguments import checked
from attnphys.dynamics.classify import REGIME_CODE


def _pointset(points: np.ndarray) -> np.ndarray:
    return points[np.all(np.isfinite(points), axis=-1)]


def default_tol(points: np.ndarray, kind: np.ndarray, rel_tol: float) -> float:
    """The matching tolerance when none is given: ``rel_tol`` times the diameter of every attractor point of
    a census (``points`` (B, A, P, D), ``kind`` (B, A), −1 padding), or ``rel_tol`` when they span nothing
    (theory: docs/theory/dynamics.md §8)."""
    valid = points[kind >= 0].reshape(-1, points.shape[-1])
    valid = valid[np.all(np.isfinite(valid), axis=1)]
    diam = float(np.linalg.norm(valid.max(axis=0) - valid.min(axis=0))) if valid.size else 0.0
    return rel_tol * (diam if diam > 0 else 1.0)


def set_distance(X: np.ndarray, Y: np.ndarray, quantile: float = 0.9) -> float:
    """Symmetric quantile nearest-point distance between point sets X (n, D) and Y (m, D)
    (theory: docs/theory/dynamics.md §8); NaN rows are ignored; ∞ if either set is empty."""
    X, Y = _pointset(np.asarray(X, float)), _pointset(np.asarray(Y, float))
    if X.shape[0] == 0 or Y.shape[0] == 0:
        return np.inf
    d = np.sqrt(np.maximum(np.sum(X**2, 1)[:, None] + np.sum(Y**2, 1)[None, :] - 2 * X @ Y.T, 0.0))
    return float(max(np.quantile(d.min(axis=1), quantile), np.quantile(d.min(axis=0), quantile)))


def match(points_a, kind_a, points_b, kind_b, tol: float, quantile: float = 0.9) -> list[tuple[int, int, float]]:
    """Match attractors of two neighbouring censuses (theory: docs/theory/dynamics.md §8).

    Args:
        points_a: (A, n, D) representative points; kind_a: (A,) codes (−1: padding). Same for b.
        tol: largest matched distance.

    Returns:
        [(i, j, d)]: attractor i of a continues as attractor j of b at distance d.
    """
    ia = [i for i in range(len(kind_a)) if kind_a[i] >= 0]
    jb = [j for j in range(len(kind_b)) if kind_b[j] >= 0]
    if not ia or not jb:
        return []
    div = REGIME_CODE["divergent"]
    C = np.full((len(ia), len(jb)), np.inf)
    for r, i in enumerate(ia):
        for c, j in enumerate(jb):
            if (kind_a[i] == div) != (kind_b[j] == div):
                continue
            C[r, c] = 0.0 if kind_a[i] == div else set_distance(points_a[i], points_b[j], quantile)
    big = 1e300
    rows, cols = scipy.optimize.linear_sum_assignment(np.where(C <= tol, C, big))
    return [(ia[r], jb[c], float(C[r, c])) for r, c in zip(rows, cols) if C[r, c] <= tol]


@checked
def tracks(ds: xr.Dataset, *, tol: float | None = None, rel_tol: float = 0.1, quantile: float = 0.9) -> xr.Dataset:
    """Attractor tracks over the ``param`` dim of a census (theory: docs/theory/dynamics.md §8).

    Args:
        ds: a :func:`attnphys.dynamics._census.census_batch` result (dims ``param``, ``attractor``, …), the
            ``param`` coordinate in increasing order.
        tol: absolute matching distance; default ``rel_tol`` × the diameter of all representative points.
        quantile: of the nearest-point distances (see the module doc).

    Returns:
        ``ds`` with ``track`` (param, attractor: the attractor's track id; −1 padding) and, on a ``track_id``
        dim: ``track_first``,
        ``track_last`` (grid indices), ``track_birth``, ``track_death`` (parameter values),
        ``track_born_inside``, ``track_dies_inside``, ``track_kind`` (kind at birth),
        ``track_basin_fraction`` (param, track), ``n_coexisting`` (param: non-divergent tracks alive), and
        hysteresis windows on a ``window`` dim: ``window_low``, ``window_high``, ``window_track_up``
        (followed upwards, dies at the high end), ``window_track_down`` (born at the low end).
    """
    from attnphys.errors import InputError

    missing = [v for v in ("kind", "points", "basin_fraction") if v not in ds] + (
        ["param"] if "param" not in ds.dims else []
    )
    if missing:
        raise InputError(
            f"needs a census along a parameter (census_batch); this dataset lacks {', '.join(missing)}", "ds"
        )
    pv = ds["param"].values
    if pv.size > 1 and not np.all(np.diff(pv.astype(float)) >= 0):
        raise InputError("the param coordinate must be in increasing order (sort the census by it first)", "ds")
    if tol is not None and not (np.isfinite(tol) and tol > 0):
        raise InputError(f"must be a positive number, got {tol!r}", "tol")
    if not (np.isfinite(rel_tol) and rel_tol > 0):
        raise InputError(f"must be a positive number, got {rel_tol!r}", "rel_tol")
    if not (0 <= quantile <= 1):
        raise InputError(f"must be in [0, 1], got {quantile!r}", "quantile")
    kind = ds["kind"].values
    pts = ds["points"].values
    frac = ds["basin_fraction"].values
    B, A = kind.shape
    if tol is None:
        tol = default_tol(pts, kind, rel_tol)
    track = np.full((B, A), -1, np.int64)
    n_tracks = 0
    for a in range(A):
        if kind[0, a] >= 0:
            track[0, a] = n_tracks
            n_tracks += 1
    for b in range(1, B):
        for i, j, _ in match(pts[b - 1], kind[b - 1], pts[b], kind[b], tol, quantile):
            track[b, j] = track[b - 1, i]
        for j in range(A):
            if kind[b, j] >= 0 and track[b, j] < 0:
                track[b, j] = n_tracks
                n_tracks += 1
    first = np.full(n_tracks, -1, np.int64)
    last = np.full(n_tracks, -1, np.int64)
    tkind = np.full(n_tracks, -1, np.int8)
    tfrac = np.full((B, n_tracks), np.nan)
    for b in range(B):
        for a in range(A):
            t = track[b, a]
            if t < 0:
                continue
            if first[t] < 0:
                first[t], tkind[t] = b, kind[b, a]
            last[t] = b
            tfrac[b, t] = frac[b, a]
    div = REGIME_CODE["divergent"]
    alive = np.isfinite(tfrac) & (tkind[None, :] != div)
    windows = []
    for ta in range(n_tracks):
        for tb in range(n_tracks):
            if ta == tb or div in (tkind[ta], tkind[tb]):
                continue
            lo, hi = first[tb], last[ta]
            if 0 < lo <= hi < B - 1 and first[ta] < lo and last[tb] > hi:
                windows.append((pv[lo], pv[hi], ta, tb))
    out = ds.copy()
    out["track"] = (
        ("param", "attractor"),
        track,
        {"long_name": "track id of the attractor", "comment": "-1: no attractor"},
    )
    out = out.assign_coords(track_id=np.arange(n_tracks))
    out["track_first"] = ("track_id", first, {"long_name": "first grid index of the track"})
    out["track_last"] = ("track_id", last, {"long_name": "last grid index of the track"})
    out["track_birth"] = (
        "track_id",
        pv[first] if n_tracks else pv[:0],
        {"long_name": "parameter value where the track appears"},
    )
    out["track_death"] = (
        "track_id",
        pv[last] if n_tracks else pv[:0],
        {"long_name": "parameter value where the track is last seen"},
    )
    out["track_born_inside"] = ("track_id", first > 0, {"long_name": "the track is born inside the grid"})
    out["track_dies_inside"] = ("track_id", last < B - 1, {"long_name": "the track dies inside the grid"})
    out["track_kind"] = (
        "track_id",
        tkind,
        {
            **{k: v for k, v in ds["kind"].attrs.items() if k.startswith("flag_")},
            "long_name": "attractor kind at birth",
        },
    )
    out["track_basin_fraction"] = (("param", "track_id"), tfrac, {"long_name": "basin fraction of the track"})
    out["n_coexisting"] = ("param", alive.sum(axis=1), {"long_name": "number of coexisting non-divergent attractors"})
    w = np.array(windows, dtype=object).reshape(-1, 4)
    out["window_low"] = ("window", w[:, 0].astype(float), {"long_name": "hysteresis window, low end (a birth)"})
    out["window_high"] = ("window", w[:, 1].astype(float), {"long_name": "hysteresis window, high end (a death)"})
    out["window_track_up"] = (
        "window",
        w[:, 2].astype(np.int64),
        {"long_name": "track followed upwards (dies at the high end)"},
    )
    out["window_track_down"] = (
        "window",
        w[:, 3].astype(np.int64),
        {"long_name": "track followed downwards (born at the low end)"},
    )
    out.attrs.update(track_tol=float(tol), track_quantile=float(quantile))
    return out
