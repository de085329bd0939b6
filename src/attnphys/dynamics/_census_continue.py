"""Global continuation of attractors across a parameter: censuses at every parameter value, attractors
matched from one value to the next by basin overlap (and by distance where overlap cannot decide),
attractors lost by the starts recovered from the previous value's attractors as seeds, and any user
quantity tracked along each matched attractor (theory: docs/theory/dynamics.md §8.1).

At consecutive parameter values i − 1 and i, attractors a and b are at

* **basin overlap distance** d_o(a, b) = 1 − |B_a ∩ B_b| / |B_a ∪ B_b|, B the set of starts in the basin
  (the Jaccard distance of the two basins; defined only when both values ran the same starts);
* **point-set distance** d(a, b), the symmetric quantile nearest-point distance of
  :func:`attnphys.dynamics.tracks` (§8).

Pairs are chosen by an optimal assignment, first on d_o among the pairs whose basins share starts
(``match_by="overlap"``), then on d ≤ ``tol`` among those overlap left unmatched (or only on d,
``match_by="distance"``). An unmatched attractor gets a new id.

Seeds (§8.1): after matching, the attractors of value i − 1 that found no partner at i are run again at i
from their own representative points; an attractor they reach that the census at i did not find (farther
than ``tol`` from all of them) continues the one its seeds came from, flagged ``seeded``, with basin
fraction 0 among the starts (the starts never reached it; its seeds are not counted).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import jax
import numpy as np
import scipy.optimize
import xarray as xr

from attnphys._arguments import checked, count
from attnphys.dynamics._census import CensusOptions, census, census_batch
from attnphys.dynamics._tracks import default_tol, set_distance
from attnphys.dynamics.checks import memory_of, state_dim
from attnphys.dynamics.classify import REGIME_CODE
from attnphys.dynamics.maps import AbstractMap
from attnphys.dynamics.samplers import AbstractSampler, ExplicitSampler
from attnphys.errors import InputError

_DIV = REGIME_CODE["divergent"]


@dataclass(frozen=True, eq=False)
class _ParamStarts(AbstractSampler):
    """Starts that depend on the parameters (theory: docs/theory/dynamics.md §8.1): ``fn(params) -> x (K, D)``
    or ``(x, aux)`` with aux's leading axis K, called with the parameters of each value (the key is not used)."""

    fn: Callable[[Any], Any] = None  # type: ignore[assignment]
    name: str = field(default="param-dependent", init=False)

    def sample(self, m, key, n, params):
        out = self.fn(params)
        x, aux = out if isinstance(out, tuple) else (out, None)
        x = np.asarray(x, dtype=float)
        if x.ndim != 2 or x.shape[0] != n:
            raise InputError(
                f"the starts callable must return an array of shape (ics = {n}, D), got shape {x.shape}", "starts"
            )
        return x, aux

    def describe(self) -> str:
        return f"param-dependent({getattr(self.fn, '__name__', 'callable')})"


def _quantities(quantity) -> dict[str, Callable[[np.ndarray], Any]]:
    if quantity is None:
        return {}
    q = {"quantity": quantity} if callable(quantity) else quantity
    if not isinstance(q, Mapping) or not all(isinstance(k, str) and callable(f) for k, f in q.items()):
        raise InputError(
            "must be a callable of the attractor's points (n, D) -> number, or a mapping name -> such a callable",
            "quantity",
        )
    return dict(q)


def _overlap_distance(lab_a: np.ndarray, lab_b: np.ndarray, ia: list[int], jb: list[int]) -> np.ndarray:
    """(len(ia), len(jb)) Jaccard distances of the basins (labels of the same starts at the two values)."""
    C = np.full((len(ia), len(jb)), np.inf)
    for r, i in enumerate(ia):
        in_a = lab_a == i
        for c, j in enumerate(jb):
            in_b = lab_b == j
            inter = np.count_nonzero(in_a & in_b)
            if inter:
                C[r, c] = 1.0 - inter / np.count_nonzero(in_a | in_b)
    return C


def _assign(C: np.ndarray, ok: np.ndarray) -> list[tuple[int, int]]:
    """Optimal assignment on C restricted to the allowed pairs ``ok``."""
    if not ok.any():
        return []
    rows, cols = scipy.optimize.linear_sum_assignment(np.where(ok, C, 1e300))
    return [(int(r), int(c)) for r, c in zip(rows, cols) if ok[r, c]]


def _match(prev: dict, cur: dict, tol: float, quantile: float, by_overlap: bool) -> list[tuple[int, int, float, str]]:
    """Pairs (i of prev, j of cur, distance, how) of two neighbouring values (module doc)."""
    ia, jb = list(range(len(prev["kind"]))), list(range(len(cur["kind"])))
    if not ia or not jb:
        return []
    div_a = np.array([prev["kind"][i] == _DIV for i in ia])
    div_b = np.array([cur["kind"][j] == _DIV for j in jb])
    same_class = div_a[:, None] == div_b[None, :]
    pairs: list[tuple[int, int, float, str]] = []
    if by_overlap:
        C = _overlap_distance(prev["label"], cur["label"], ia, jb)
        for r, c in _assign(C, np.isfinite(C) & same_class):
            pairs.append((ia[r], jb[c], float(C[r, c]), "overlap"))
    left_a = [i for i in ia if i not in {p[0] for p in pairs}]
    left_b = [j for j in jb if j not in {p[1] for p in pairs}]
    if left_a and left_b:
        D = np.full((len(left_a), len(left_b)), np.inf)
        for r, i in enumerate(left_a):
            for c, j in enumerate(left_b):
                if div_a[i] == div_b[j]:
                    D[r, c] = 0.0 if div_a[i] else set_distance(prev["points"][i], cur["points"][j], quantile)
        for r, c in _assign(D, D <= tol):
            pairs.append((left_a[r], left_b[c], float(D[r, c]), "distance"))
    return pairs


def _value(ds: xr.Dataset, b: int) -> dict:
    """The attractors of parameter value b of a census_batch result, as arrays."""
    n = int(ds["n_attractors"].values[b])
    sel: dict[str, Any] = {
        v: ds[v].values[b, :n] for v in ("kind", "period", "n_members", "basin_fraction", "exponents", "points")
    }
    sel["label"] = ds["label"].values[b]
    sel["ic_state"] = ds["ic_state"].values[b]
    sel["seeded"] = np.zeros(n, bool)
    sel["unsettled"] = float(ds["unsettled_fraction"].values[b])
    return sel


def _add_seeded(cur: dict, found: xr.Dataset, sources: np.ndarray, tol: float, quantile: float) -> list[int]:
    """Append to ``cur`` the attractors of the seed census ``found`` (one value) that are not already in it;
    returns, per appended attractor, the previous attractor its seeds (majority) came from."""
    origin = []
    n_new = int(found["n_attractors"])
    lab = found["label"].values
    for a in range(n_new):
        kind = int(found["kind"].values[a])
        pts = found["points"].values[a]
        if kind == _DIV or kind < 0:
            continue
        known = any(
            cur["kind"][j] != _DIV and set_distance(cur["points"][j], pts, quantile) <= tol
            for j in range(len(cur["kind"]))
        )
        if known:
            continue
        members = sources[lab == a]
        origin.append(int(np.bincount(members).argmax()))
        for v, val in (
            ("kind", kind),
            ("period", int(found["period"].values[a])),
            ("n_members", 0),
            ("basin_fraction", 0.0),
        ):
            cur[v] = np.append(cur[v], val)
        cur["exponents"] = np.concatenate([cur["exponents"], found["exponents"].values[a : a + 1]])
        cur["points"] = np.concatenate([cur["points"], pts[None]])
        cur["seeded"] = np.append(cur["seeded"], True)
    return origin


@checked(
    seeds=count(0),
    memory=lambda a: memory_of(
        8 * 16 * a["ics"] * max(1, a["seeds"]) * state_dim(a["m"], None),
        "the starts",
        "use fewer ics",
        a,
        "ics",
        "seeds",
    ),
)
def global_continuation(
    m: AbstractMap,
    params,
    starts: str | AbstractSampler | Callable[[Any], Any] = "random",
    *,
    ics: int = 128,
    steps: int | None = None,
    seed: int = 0,
    options: CensusOptions = CensusOptions(),
    shared=None,
    param_values=None,
    param_name: str = "param",
    match_by: Literal["overlap", "distance"] = "overlap",
    tol: float | None = None,
    rel_tol: float = 0.1,
    quantile: float = 0.9,
    quantity: Callable[[np.ndarray], Any] | Mapping[str, Callable[[np.ndarray], Any]] | None = None,
    seeds: int = 4,
    progress: bool = False,
) -> xr.Dataset:
    """Attractors and basins along a parameter, each attractor followed under one id (theory:
    docs/theory/dynamics.md §8.1).

    The censuses at all P values run as one vectorised :func:`~attnphys.dynamics.census_batch`; then, value
    by value in the order given, the attractors are matched to the previous value's (by basin overlap
    d_o = 1 − |B_a ∩ B_b| / |B_a ∪ B_b| over the common starts, then by the point-set distance d ≤ tol, see
    the module doc), and a previous attractor left unmatched seeds a census at the new value from its
    representative points, so an attractor that the starts miss is still followed (``seeded``).

    Args:
        m: the map. params: parameter pytree with a leading axis P (the values, in continuation order).
        starts: a sampler or its name (as :func:`~attnphys.dynamics.census`), or a callable
            ``params -> x (ics, D)`` (or ``(x, aux)``) giving parameter-dependent starts; with such starts the
            values do not share starts and matching is by distance.
        ics, steps, seed, options, shared: as :func:`~attnphys.dynamics.census_batch`.
        param_values: (P,) coordinate values (default 0…P−1), named ``param_name``.
        match_by: ``overlap`` (basin overlap, then distance for what it leaves) or ``distance``.
        tol: the largest point-set distance matched; default ``rel_tol`` × the diameter of all
            representative points. quantile: of the nearest-point distances.
        quantity: a callable of an attractor's points (n, D), finite rows only, returning a number, or a
            mapping name → callable: evaluated on every attractor at every value.
        seeds: representative points per unmatched attractor used as seeds (0: no seeding).
        progress: a progress bar of the censuses.

    Returns:
        Dataset with dims ``param``, ``attractor`` (the continued id), ``exponent``, ``point``, ``dim``, ``ic``
        (and ``quantity_name`` with a quantity): ``present``, ``seeded``, ``basin_fraction`` (NaN where absent, 0
        for a seeded attractor), ``n_members``, ``kind``, ``period``, ``exponents``, ``points``,
        ``quantity`` (param, attractor, quantity_name), ``match_distance`` and ``matched_by`` (to the previous
        value: 0 none, 1 overlap, 2 distance), ``label`` (param, ic: the continued id, −1 unsettled),
        ``unsettled_fraction``, ``n_attractors``, ``first``, ``last`` (attractor: first and last value
        index where present).

    Raises:
        InputError: naming the argument — ``match_by``, ``tol``, ``rel_tol``, ``quantile``, ``seeds``,
            ``quantity`` or ``starts`` (a callable returning the wrong shape); those of :func:`census_batch`.
    """
    if match_by not in ("overlap", "distance"):
        raise InputError(f"must be 'overlap' or 'distance', got {match_by!r}", "match_by")
    if tol is not None and not (np.isfinite(tol) and tol > 0):
        raise InputError(f"must be a positive number, got {tol!r}", "tol")
    if not (np.isfinite(rel_tol) and rel_tol > 0):
        raise InputError(f"must be a positive number, got {rel_tol!r}", "rel_tol")
    if not 0 <= quantile <= 1:
        raise InputError(f"must be in [0, 1], got {quantile!r}", "quantile")
    if isinstance(seeds, bool) or not isinstance(seeds, (int, np.integer)) or seeds < 0:
        raise InputError(f"must be an integer >= 0, got {seeds!r}", "seeds")
    qs = _quantities(quantity)
    sampler = starts if isinstance(starts, (str, AbstractSampler)) else None
    if sampler is None:
        if not callable(starts):
            raise InputError("must be a sampler, a sampler's name or a callable params -> starts (ics, D)", "starts")
        sampler = _ParamStarts(fn=starts)
    ds = census_batch(
        m,
        params,
        sampler,
        ics=ics,
        steps=steps,
        seed=seed,
        options=options,
        shared=shared,
        param_values=param_values,
        param_name=param_name,
        progress=progress,
    )
    P = int(ds.sizes["param"])
    if tol is None:
        tol = default_tol(ds["points"].values, ds["kind"].values, rel_tol)
    o = options if steps is None else options._replace(budget=int(steps))
    values = [_value(ds, 0)]
    ids = [np.arange(len(values[0]["kind"]))]
    n_ids = len(ids[0])
    how = [np.zeros(n_ids, np.int8)]
    dist = [np.full(n_ids, np.nan)]
    for b in range(1, P):
        prev, cur = values[b - 1], _value(ds, b)
        shared_starts = match_by == "overlap" and np.array_equal(prev["ic_state"], cur["ic_state"])
        pairs = _match(prev, cur, tol, quantile, shared_starts)
        lost = [i for i in range(len(prev["kind"])) if prev["kind"][i] != _DIV and i not in {p[0] for p in pairs}]
        cont: dict[int, tuple[int, float, int]] = {j: (i, d, 1 if h == "overlap" else 2) for i, j, d, h in pairs}
        if seeds and lost:
            x, src = [], []
            for i in lost:
                pi = prev["points"][i]
                pi = pi[np.all(np.isfinite(pi), axis=1)][:seeds]
                x.append(pi)
                src += [i] * len(pi)
            xs = np.concatenate(x)
            if xs.shape[0]:
                row = jax.tree_util.tree_map(lambda a, b=b: np.asarray(a)[b], params)
                found = census(m, row, ExplicitSampler(x=xs), ics=xs.shape[0], seed=seed, options=o, shared=shared)
                n_before = len(cur["kind"])
                for k, i in enumerate(_add_seeded(cur, found, np.asarray(src), tol, quantile)):
                    cont[n_before + k] = (i, np.nan, 2)
        n = len(cur["kind"])
        idb = np.full(n, -1, np.int64)
        hb, db = np.zeros(n, np.int8), np.full(n, np.nan)
        for j in range(n):
            if j in cont:
                i, d, h = cont[j]
                idb[j], hb[j], db[j] = ids[b - 1][i], h, d
            else:
                idb[j], n_ids = n_ids, n_ids + 1
        values.append(cur)
        ids.append(idb)
        how.append(hb)
        dist.append(db)
    return _continued_dataset(ds, values, ids, how, dist, n_ids, qs, match_by, tol, quantile, seeds)


def _continued_dataset(ds, values, ids, how, dist, n_ids, qs, match_by, tol, quantile, seeds) -> xr.Dataset:
    P, k, n_pts, D, K = (ds.sizes[d] for d in ("param", "exponent", "point", "dim", "ic"))
    nan = np.nan
    present = np.zeros((P, n_ids), bool)
    seeded = np.zeros((P, n_ids), bool)
    frac = np.full((P, n_ids), nan)
    nmem = np.zeros((P, n_ids), np.int64)
    kind = np.full((P, n_ids), -1, np.int8)
    per = np.zeros((P, n_ids), np.int64)
    exps = np.full((P, n_ids, k), nan)
    pts = np.full((P, n_ids, n_pts, D), nan)
    qv = np.full((P, n_ids, max(1, len(qs))), nan)
    mhow = np.zeros((P, n_ids), np.int8)
    mdist = np.full((P, n_ids), nan)
    label = np.full((P, K), -1, np.int64)
    for b, (v, idb) in enumerate(zip(values, ids)):
        for j, g in enumerate(idb):
            present[b, g], seeded[b, g] = True, v["seeded"][j]
            frac[b, g], nmem[b, g] = v["basin_fraction"][j], v["n_members"][j]
            kind[b, g], per[b, g] = v["kind"][j], v["period"][j]
            exps[b, g], pts[b, g] = v["exponents"][j], v["points"][j]
            mhow[b, g], mdist[b, g] = how[b][j], dist[b][j]
            if kind[b, g] != _DIV:
                p = v["points"][j]
                p = p[np.all(np.isfinite(p), axis=1)]
                for q, f in enumerate(qs.values()):
                    qv[b, g, q] = float(np.asarray(f(p)))
        lab = v["label"]
        settled = lab >= 0
        label[b, settled] = idb[lab[settled]]
    first = np.where(present.any(0), np.argmax(present, 0), -1)
    last = np.where(present.any(0), P - 1 - np.argmax(present[::-1], 0), -1)
    PA = ("param", "attractor")
    kind_attrs = {a: v for a, v in ds["kind"].attrs.items()}
    data = {
        "present": (PA, present, {"long_name": "the attractor exists at the parameter value"}),
        "seeded": (PA, seeded, {"long_name": "found only from the previous value's attractor as seeds"}),
        "basin_fraction": (
            PA,
            frac,
            {"long_name": "basin fraction (share of the starts)", "comment": "NaN: absent; 0: seeded only"},
        ),
        "n_members": (PA, nmem, {"long_name": "starts that settled on the attractor"}),
        "kind": (PA, kind, kind_attrs),
        "period": (PA, per, dict(ds["period"].attrs)),
        "exponents": (PA + ("exponent",), exps, dict(ds["exponents"].attrs)),
        "points": (PA + ("point", "dim"), pts, dict(ds["points"].attrs)),
        "match_distance": (
            PA,
            mdist,
            {"long_name": "distance to the matched attractor at the previous value (basin overlap or point set)"},
        ),
        "matched_by": (
            PA,
            mhow,
            {
                "long_name": "how the attractor was matched to the previous value",
                "flag_values": np.array([0, 1, 2], np.int8),
                "flag_meanings": "none overlap distance",
            },
        ),
        "label": (
            ("param", "ic"),
            label,
            {"long_name": "continued attractor id of the start", "comment": "-1: unsettled"},
        ),
        "unsettled_fraction": (
            "param",
            np.array([v["unsettled"] for v in values]),
            dict(ds["unsettled_fraction"].attrs),
        ),
        "n_attractors": ("param", present.sum(1), {"long_name": "number of attractors present"}),
        "first": ("attractor", first, {"long_name": "first parameter index where the attractor is present"}),
        "last": ("attractor", last, {"long_name": "last parameter index where the attractor is present"}),
    }
    coords = {
        "param": ds["param"].values,
        "attractor": np.arange(n_ids),
        "exponent": np.arange(k),
        "point": np.arange(n_pts),
        "dim": np.arange(D),
        "ic": np.arange(K),
    }
    if qs:
        data["quantity"] = (PA + ("quantity_name",), qv, {"long_name": "user quantity of the attractor's points"})
        coords["quantity_name"] = list(qs)
    out = xr.Dataset(data, coords=coords)
    out["param"].attrs = dict(ds["param"].attrs)
    out.attrs.update(
        {a: ds.attrs[a] for a in ("regimes", "sampler", "seed", "n_ics", "census_options") if a in ds.attrs},
        match_by=match_by,
        match_tol=float(tol),
        match_quantile=float(quantile),
        seeds=int(seeds),
    )
    return out


def continued_ids(
    ds: xr.Dataset,
    *,
    param: str = "param",
    tol: float | None = None,
    rel_tol: float = 0.1,
    quantile: float = 0.9,
    by_overlap: bool = True,
) -> xr.Dataset:
    """The attractors of censuses along a parameter that all ran the same starts, each given the id it keeps
    from value to value: the matching of :func:`global_continuation` (basin overlap first, then point-set
    distance ≤ ``tol``; module doc) applied to a stored census, in the order of the ``param`` dim (theory:
    docs/theory/dynamics.md §8.1).

    Args:
        ds: dims ``param`` (named by ``param``), ``attractor`` (padding: kind −1), ``ic``, with ``kind``
            (param, attractor), ``points`` (param, attractor, point, dim) and ``label`` (param, ic: the
            attractor index of each start, −1 unsettled); start i is the same start at every value.
        tol: largest point-set distance matched; default ``rel_tol`` × the diameter of all representative
            points (as :func:`~attnphys.dynamics.tracks`). quantile: of the nearest-point distances.
        by_overlap: match by basin overlap first (False: by distance only).

    Returns:
        ``ds`` with ``continued_id`` (param, attractor: the id, −1 padding), ``matched_by`` (0 none, 1 overlap,
        2 distance), ``match_distance`` (to the matched attractor of the previous value, NaN none) and
        ``continued_label`` (param, ic: the id of each start's attractor, −1 unsettled); attributes
        ``match_tol``, ``match_quantile``.
    """
    kind = ds["kind"].values
    pts = ds["points"].values
    lab = ds["label"].values
    B, A = kind.shape
    if tol is None:
        tol = default_tol(pts, kind, rel_tol)
    ids = np.full((B, A), -1, np.int64)
    how = np.zeros((B, A), np.int8)
    dist = np.full((B, A), np.nan)
    n_ids = 0
    prev: dict[str, Any] = {}
    prev_idx = np.zeros(0, np.int64)
    for b in range(B):
        idx = np.flatnonzero(kind[b] >= 0)
        # attractor slot -> position among the present ones, for the labels of the starts
        pos = np.full(A + 1, -1, np.int64)
        pos[idx] = np.arange(idx.size)
        cur = {
            "kind": kind[b, idx],
            "points": pts[b, idx],
            "label": pos[np.where((lab[b] >= 0) & (lab[b] < A), lab[b], A)],
        }
        if b and prev_idx.size:
            for i, j, d, h in _match(prev, cur, tol, quantile, by_overlap):
                ids[b, idx[j]], how[b, idx[j]], dist[b, idx[j]] = ids[b - 1, prev_idx[i]], 1 + (h != "overlap"), d
        for j in idx:
            if ids[b, j] < 0:
                ids[b, j], n_ids = n_ids, n_ids + 1
        prev, prev_idx = cur, idx
    clab = np.where((lab >= 0) & (lab < A), np.take_along_axis(ids, np.clip(lab, 0, A - 1), axis=1), -1)
    PA = (param, "attractor")
    out = ds.copy()
    out["continued_id"] = (
        PA,
        ids,
        {"long_name": "id of the attractor continued along the parameter", "comment": "-1: no attractor"},
    )
    out["matched_by"] = (
        PA,
        how,
        {
            "long_name": "how the attractor was matched to the previous value",
            "flag_values": np.array([0, 1, 2], np.int8),
            "flag_meanings": "none overlap distance",
        },
    )
    out["match_distance"] = (
        PA,
        dist,
        {"long_name": "distance to the matched attractor at the previous value (basin overlap or point set)"},
    )
    out["continued_label"] = (
        (param, "ic"),
        clab,
        {"long_name": "continued attractor id of the start", "comment": "-1: unsettled"},
    )
    out.attrs.update(match_tol=float(tol), match_quantile=float(quantile))
    return out
