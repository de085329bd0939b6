"""How unpredictable the basins are near their boundaries: the basin entropy and boundary basin entropy on
a grid of boxes, and the uncertainty exponent with the boundary's box-counting dimension (theory:
docs/theory/dynamics.md §10.4–10.5)."""

from __future__ import annotations

import json
import warnings
from typing import Any

import jax
import numpy as np
import xarray as xr

from attnphys._arguments import checked, positives
from attnphys.dynamics._census import CensusOptions, census
from attnphys.dynamics._global_core import UNRESOLVED, check_int, land, prepare
from attnphys.dynamics.checks import memory_of, state_dim
from attnphys.dynamics.intervals import wilson_interval
from attnphys.dynamics.maps import AbstractMap
from attnphys.dynamics.samplers import ExplicitSampler, GridSampler
from attnphys.errors import FitWarning, InputError, find_stack_level
from attnphys.metadata import base_attrs
from attnphys.progress import step_bar, subrange

LOG2 = float(np.log(2.0))


@checked
def box_entropy(labels: Any, box: int = 5) -> xr.Dataset:
    """Basin entropy S_b and boundary basin entropy S_bb of a picture of basins (theory:
    docs/theory/dynamics.md §10.4).

    The picture (its axes of more than one point) is cut into boxes of ``box`` points per axis (a remainder
    at the high end of an axis is left out). In box i, with p_ij the share of its points labelled j (every
    label a colour, −1 included: an unsettled start is an outcome of its own), the box's entropy is
    S_i = −Σ_j p_ij log p_ij (natural log); then

        S_b = (1/N) Σ_i S_i,   S_bb = (1/N_b) Σ_{i: S_i > 0} S_i,

    over the N boxes and the N_b boxes that hold more than one colour. S_bb > log 2 is a sufficient
    condition for a fractal boundary.

    Args:
        labels: the basin picture, an array (or DataArray) of integer labels of any shape, e.g. a census's
            ``label`` reshaped to its grid. box: points per box side (≥ 2).

    Returns:
        Dataset with ``basin_entropy`` S_b, ``boundary_basin_entropy`` S_bb (NaN: no boundary box),
        ``n_boxes`` N, ``n_boundary_boxes`` N_b, ``n_colours``, ``fractal_by_log2`` (S_bb > log 2) and
        ``box_entropy`` S_i on dims ``box0``, ``box1``, … (one per picture axis).

    Raises:
        InputError: ``labels`` not an integer picture with an axis of at least ``box`` points; ``box`` < 2.
    """
    lab = np.asarray(labels.values if isinstance(labels, xr.DataArray) else labels)
    if lab.size == 0 or lab.dtype.kind not in "iu":
        raise InputError(f"must be an array of integer labels (got dtype {lab.dtype})", "labels")
    if isinstance(box, bool) or not isinstance(box, (int, np.integer)) or box < 2:
        raise InputError(f"must be an integer >= 2 (got {box!r})", "box")
    lab = lab.reshape([n for n in lab.shape if n > 1] or [lab.size])
    if min(lab.shape) < box:
        raise InputError(f"every axis of the picture needs at least box = {box} points (shape {lab.shape})", "box")
    nb = [n // box for n in lab.shape]
    lab = lab[tuple(slice(0, k * box) for k in nb)]
    d = lab.ndim
    # (nb0, box, nb1, box, …) → (nb0, nb1, …, box**d)
    split = lab.reshape([v for k in nb for v in (k, box)])
    order = list(range(0, 2 * d, 2)) + list(range(1, 2 * d, 2))
    blocks = split.transpose(order).reshape(nb + [box**d])
    colours = np.unique(lab)
    counts = np.stack([np.sum(blocks == c, axis=-1) for c in colours], axis=-1) / float(box**d)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = -np.sum(np.where(counts > 0, counts * np.log(counts), 0.0), axis=-1)
    s = np.maximum(s, 0.0)
    boundary = s > 0
    Sb = float(np.mean(s))
    Sbb = float(np.mean(s[boundary])) if boundary.any() else np.nan
    dims = tuple(f"box{i}" for i in range(d))
    ds = xr.Dataset(
        {
            "basin_entropy": ((), Sb, {"long_name": "basin entropy S_b", "units": "nat"}),
            "boundary_basin_entropy": (
                (),
                Sbb,
                {"long_name": "boundary basin entropy S_bb", "units": "nat", "comment": "NaN: no boundary box"},
            ),
            "n_boxes": ((), int(s.size), {"long_name": "boxes N"}),
            "n_boundary_boxes": ((), int(boundary.sum()), {"long_name": "boxes holding more than one label N_b"}),
            "n_colours": ((), int(colours.size), {"long_name": "distinct labels (outcomes) in the picture"}),
            "fractal_by_log2": (
                (),
                bool(Sbb > LOG2),
                {"long_name": "S_bb > log 2 (a sufficient condition for a fractal boundary)"},
            ),
            "box_entropy": (dims, s, {"long_name": "entropy of each box S_i", "units": "nat"}),
        },
        coords={name: np.arange(k) for name, k in zip(dims, nb)},
    )
    ds.attrs.update(box=int(box), criterion="S_bb > log 2 implies a fractal boundary (sufficient, not necessary)")
    return ds


@checked
def basin_entropy(
    m: AbstractMap,
    params,
    grid: GridSampler,
    *,
    box: int = 5,
    seed: int = 0,
    options: CensusOptions = CensusOptions(),
    shared=None,
    progress: bool = False,
) -> xr.Dataset:
    """Basin entropy S_b and boundary basin entropy S_bb of the basins of a map on a grid of starts
    (theory: docs/theory/dynamics.md §10.4): the census of every grid point
    (:func:`attnphys.dynamics.census` with the grid sampler), its labels as the picture, and
    :func:`box_entropy` over boxes of ``box`` points per side.

    Args:
        m: the map. params: the parameters (no batch axis). grid: a :class:`GridSampler` (its axes of more
            than one point are the picture's). box: points per box side. seed, options, shared: the census.
        progress: show a progress bar.

    Returns:
        The Dataset of :func:`box_entropy` plus ``label`` (the picture, dims ``grid0``, ``grid1``, … with
        the grid's coordinates), ``basin_fraction`` and ``kind`` per attractor, ``unsettled_fraction``.

    Raises:
        InputError: ``grid`` not a GridSampler; a bad ``box``; the census's own errors.
    """
    if not isinstance(grid, GridSampler):
        raise InputError(f"must be a GridSampler (got {type(grid).__name__})", "grid")
    if isinstance(box, bool) or not isinstance(box, (int, np.integer)) or box < 2:
        raise InputError(f"must be an integer >= 2 (got {box!r})", "box")
    axes = [i for i, n in enumerate(grid.shape) if n > 1]
    if not axes or min(grid.shape[i] for i in axes) < box:
        raise InputError(
            f"the grid needs an axis and box = {box} points on each of its axes (shape {grid.shape})", "grid"
        )
    with step_bar(100.0, "%", enabled=progress) as report:
        ds = census(m, params, grid, ics=grid.size, seed=seed, options=options, shared=shared)
        report(100.0, 100.0)
    picture = ds["label"].values.reshape([grid.shape[i] for i in axes])
    out = box_entropy(picture, box)
    states = grid.states()
    lo = np.atleast_1d(np.asarray(grid.lo, float))
    hi = np.atleast_1d(np.asarray(grid.hi, float))
    gdims = tuple(f"grid{j}" for j in range(len(axes)))
    out = out.assign_coords({g: np.linspace(lo[i], hi[i], grid.shape[i]) for g, i in zip(gdims, axes)})
    out["label"] = (gdims, picture, dict(ds["label"].attrs))
    out["basin_fraction"] = ("attractor", ds["basin_fraction"].values, dict(ds["basin_fraction"].attrs))
    out["kind"] = ("attractor", ds["kind"].values, dict(ds["kind"].attrs))
    out["unsettled_fraction"] = ((), float(ds["unsettled_fraction"]), dict(ds["unsettled_fraction"].attrs))
    out.attrs.update(
        base_attrs(),
        measure="basin entropy",
        sampler=grid.describe(),
        grid_axes=json.dumps(axes),
        n_starts=int(states.shape[0]),
        regimes=ds.attrs.get("regimes", ""),
    )
    return out


MIN_FIT = 3
"""Fewest ε a fit of the uncertainty exponent needs to carry an interval (one degree of freedom)."""


@checked(
    eps=positives(2, optional=True),
    memory=lambda a: memory_of(
        8 * 32 * a["ics"] * state_dim(a["m"], a["params"], a["lo"]),
        "the perturbed starts",
        "use fewer ics",
        a,
        "ics",
        "census_ics",
    ),
)
def uncertainty_exponent(
    m: AbstractMap,
    params,
    lo,
    hi,
    *,
    eps: Any = None,
    ics: int = 4096,
    aux: Any = None,
    seed: int = 0,
    census_ics: int = 256,
    options: CensusOptions = CensusOptions(),
    shared=None,
    tol: float = 1e-6,
    steps: int | None = None,
    min_uncertain: int = 10,
    progress: bool = False,
) -> xr.Dataset:
    """The uncertainty exponent α of the basins in a box and the box-counting dimension of their boundary,
    D_b = d − α (theory: docs/theory/dynamics.md §10.5).

    ``ics`` starts x are drawn uniformly in the box [lo, hi] (the d axes with hi > lo; the others held at
    lo), each with a random unit direction u in those axes. At each ε the start is *ε-uncertain* when x,
    x + εu and x − εu do not all reach the same attractor (§10.1; attractors from a census of the first
    ``census_ics`` starts). The uncertain share scales as

        f(ε) ∝ ε^α,

    and α is the slope of log f against log ε, fitted by least squares weighted by the uncertain counts n(ε)
    (var log f ≈ 1/n for binomial counts; standard error (Σ n (log ε − mean)²)^(−1/2)) over the ε with at
    least ``min_uncertain`` uncertain starts. A smooth boundary gives α = 1 (D_b = d − 1); a fractal one α < 1.

    Args:
        m: the map. params: the parameters (no batch axis). lo, hi: (D,) corners of the box. eps: the
            perturbation sizes (default 10 values from 1e-6 to 10^-1.5 times the box's largest side). ics:
            starts. aux: the auxiliary state of every start. seed: the starts, directions and census.
        census_ics, options, shared: the census that finds the attractors. tol: relative radius ε_a of the
            attractors (§10.1). steps: the most steps per run (default the census budget).
        min_uncertain: the fewest uncertain starts an ε needs to enter the fit. progress: a progress bar.

    Returns:
        Dataset on dim ``eps``: ``uncertain_fraction`` f(ε) with its 95% Wilson interval, ``n_uncertain``,
        ``n_valid`` (triples all of whose runs reached an attractor), ``in_fit``; scalars
        ``uncertainty_exponent`` α, ``uncertainty_exponent_stderr``, ``boundary_dimension`` D_b,
        ``box_dimension`` d.

    Raises:
        InputError: a bad argument, named (``lo``/``hi``, ``eps``, ``ics``, ``census_ics``, ``min_uncertain``,
            ``tol``, ``steps``).
    """
    lo_a = np.atleast_1d(np.asarray(lo, float))
    hi_a = np.atleast_1d(np.asarray(hi, float))
    if lo_a.shape != hi_a.shape or lo_a.ndim != 1:
        raise InputError(f"lo and hi must be (D,) vectors of one length (got {lo_a.shape}, {hi_a.shape})", "lo")
    if not (np.all(np.isfinite(lo_a)) and np.all(np.isfinite(hi_a)) and np.all(hi_a >= lo_a)):
        raise InputError(f"the box must be finite with hi >= lo (got lo={lo_a}, hi={hi_a})", "hi")
    free = np.flatnonzero(hi_a > lo_a)
    if free.size == 0:
        raise InputError("the box has no axis with hi > lo", "hi")
    ics = check_int(ics, "ics")
    census_ics = min(check_int(census_ics, "census_ics"), ics)
    min_uncertain = check_int(min_uncertain, "min_uncertain")
    side = float(np.max(hi_a - lo_a))
    e = side * np.geomspace(1e-6, 10**-1.5, 10) if eps is None else np.atleast_1d(np.asarray(eps, float))
    if e.ndim != 1 or e.size < 2 or not np.all(np.isfinite(e) & (e > 0)):
        raise InputError(f"must be at least two finite positive sizes (got {eps!r})", "eps")
    e = np.sort(e)
    D, d = lo_a.size, int(free.size)
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    x = np.tile(lo_a, (ics, 1))
    x[:, free] += np.asarray(jax.random.uniform(k1, (ics, d)), float) * (hi_a - lo_a)[free]
    u = np.zeros((ics, D))
    g = np.array(jax.random.normal(k2, (ics, d)), float)
    u[:, free] = g / np.maximum(np.linalg.norm(g, axis=1, keepdims=True), 1e-300)
    shared_aux = aux is not None and bool(jax.tree_util.tree_leaves(aux))
    sampler = ExplicitSampler(x=x[:census_ics], aux=aux)
    with step_bar(100.0, "%", enabled=progress) as report:
        with subrange(0.0, 0.3):
            pr = prepare(m, params, sampler, None, census_ics, seed, options, shared, tol, steps)
        # every start, then x + εu and x − εu per ε: (1 + 2E)·K runs
        pts = np.concatenate([x] + [x + s * eps_ * u for eps_ in e for s in (1.0, -1.0)])
        n = pts.shape[0]
        aux_all = (
            jax.tree_util.tree_map(lambda a: np.broadcast_to(np.asarray(a), (n,) + np.shape(a)), aux)
            if shared_aux
            else None
        )
        with subrange(0.3, 1.0):
            lab, _ = land(m, pr.params, pts, aux_all, pr.targets, pr.steps, report)
    lab = lab.reshape(1 + 2 * e.size, ics)
    base = lab[0]
    n_unc = np.zeros(e.size, np.int64)
    n_valid = np.zeros(e.size, np.int64)
    for i in range(e.size):
        plus, minus = lab[1 + 2 * i], lab[2 + 2 * i]
        valid = (base != UNRESOLVED) & (plus != UNRESOLVED) & (minus != UNRESOLVED)
        n_valid[i] = int(valid.sum())
        n_unc[i] = int(np.sum(valid & ((plus != base) | (minus != base))))
    f = np.where(n_valid > 0, n_unc / np.maximum(n_valid, 1), np.nan)
    ci_lo, ci_hi = wilson_interval(n_unc, np.maximum(n_valid, 1))
    fit = n_unc >= min_uncertain
    alpha = err = np.nan
    if fit.sum() >= 2:
        # weighted least squares: var(log f) ≈ 1/n_uncertain (binomial counts, f small)
        X, Y, w = np.log(e[fit]), np.log(f[fit]), n_unc[fit].astype(float)
        xm = float(np.sum(w * X) / np.sum(w))
        sxx = float(np.sum(w * (X - xm) ** 2))
        alpha = float(np.sum(w * (X - xm) * Y) / sxx)
        err = float(np.sqrt(1.0 / sxx))
    if fit.sum() < MIN_FIT:
        warnings.warn(
            f"uncertainty_exponent: {int(fit.sum())} of {e.size} eps have at least min_uncertain = {min_uncertain} "
            f"uncertain starts, fewer than the {MIN_FIT} a fit with an interval needs"
            + (f" (alpha = {alpha:.3g} ± {err:.2g} rests on two points)" if fit.sum() == 2 else "")
            + ": give more ics, larger eps or a smaller min_uncertain",
            FitWarning,
            stacklevel=find_stack_level(),
        )
    ds = xr.Dataset(
        {
            "uncertain_fraction": ("eps", f, {"long_name": "share of eps-uncertain starts f(eps)"}),
            "uncertain_ci_low": (
                "eps",
                np.where(n_valid > 0, ci_lo, np.nan),
                {"long_name": "f(eps), lower end of the 95% Wilson interval"},
            ),
            "uncertain_ci_high": (
                "eps",
                np.where(n_valid > 0, ci_hi, np.nan),
                {"long_name": "f(eps), upper end of the 95% Wilson interval"},
            ),
            "n_uncertain": ("eps", n_unc, {"long_name": "eps-uncertain starts"}),
            "n_valid": ("eps", n_valid, {"long_name": "starts whose three runs all reached an attractor"}),
            "in_fit": ("eps", fit, {"long_name": "eps used in the fit of the exponent"}),
            "n_fit": ((), int(fit.sum()), {"long_name": "eps in the fit", "comment": f"fewer than {MIN_FIT}: warned"}),
            "uncertainty_exponent": (
                (),
                alpha,
                {"long_name": "uncertainty exponent alpha", "comment": "NaN: fewer than two eps in the fit"},
            ),
            "uncertainty_exponent_stderr": ((), err, {"long_name": "standard error of alpha (counting statistics)"}),
            "boundary_dimension": (
                (),
                d - alpha,
                {"long_name": "box-counting dimension of the basin boundary d - alpha"},
            ),
            "box_dimension": ((), d, {"long_name": "dimension d of the box of starts"}),
            "n_attractors": ((), int(np.sum(pr.targets.kind >= 0)), {"long_name": "attractors of the census"}),
        },
        coords={"eps": ("eps", e, {"long_name": "perturbation size eps"})},
    )
    ds.attrs.update(
        base_attrs(),
        measure="uncertainty exponent",
        lo=json.dumps(lo_a.tolist()),
        hi=json.dumps(hi_a.tolist()),
        ics=int(ics),
        census_ics=int(census_ics),
        seed=int(seed),
        tol=float(tol),
        steps=int(pr.steps),
    )
    return ds
