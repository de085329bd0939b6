"""The figure of an edge-tracking run (:func:`attnphys.dynamics.edge_track`): the pair's width and, given the
edge state, the edge trajectory's distance to it against the step (theory: docs/theory/dynamics.md §11.6)."""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from attnphys.errors import InputError
from attnphys.plots._common import figure, root


def edge_figure(ds: xr.Dataset, reference=None, *, fig=None) -> Figure:
    """An edge-tracking run of :func:`attnphys.dynamics.edge_track` (theory: docs/theory/dynamics.md §11.6):
    left, the pair's width ‖x_b − x_a‖ against the step (log scale), the bisections marked; right, when
    ``reference`` is given, the distance min_j ‖x_a(t) − r_j‖ of the edge trajectory to it (e.g. the points of
    the saddle orbit), which falls to the edge state's neighbourhood as the stable multipliers predict.

    Args:
        ds: the result of :func:`attnphys.dynamics.edge_track`. reference: (J, D) or (D,) states, optional.
        fig: a Figure or SubFigure to draw into.

    Raises:
        InputError: naming ``ds`` (not an edge-tracking result) or ``reference`` (not (J, D) with the
            trajectory's D).
    """
    needed = ("edge", "pair_distance", "bisection_step", "width_before")
    if not isinstance(ds, xr.Dataset) or any(k not in ds for k in needed) or "step" not in ds.coords:
        raise InputError("must be the result of attnphys.dynamics.edge_track", "ds")
    e = np.asarray(ds["edge"].values, float)
    ref = None
    if reference is not None:
        try:
            ref = np.atleast_2d(np.asarray(reference, float))
        except (TypeError, ValueError):
            raise InputError(f"must be finite states (J, {e.shape[1]}) of numbers", "reference") from None
        if ref.ndim != 2 or ref.shape[0] == 0 or ref.shape[1] != e.shape[1] or not np.all(np.isfinite(ref)):
            raise InputError(f"must be finite states (J, {e.shape[1]}), J >= 1 (got shape {ref.shape})", "reference")
    fig = figure(fig, figsize=(10.0, 3.8) if ref is not None else (5.5, 3.8))
    axes = fig.subplots(1, 2 if ref is not None else 1, squeeze=False)[0]
    t = ds["step"].values
    d = np.asarray(ds["pair_distance"].values, float)
    ax = axes[0]
    ax.semilogy(t, np.maximum(d, 1e-300), lw=0.8, color="C0")
    # each bisection at its step, with the width it started from (a slice of the run keeps its own)
    at, before = ds["bisection_step"].values, np.asarray(ds["width_before"].values, float)
    shown = (at >= t.min()) & (at <= t.max()) if t.size else np.zeros(at.shape, bool)
    ax.semilogy(at[shown], np.maximum(before[shown], 1e-300), "k|", ms=10, label="bisection (width before)")
    ax.set_xlabel("step t")
    ax.set_ylabel(r"pair width $\|x_b - x_a\|$")
    ax.legend(loc="best", fontsize="small")
    if ref is not None:
        dist = np.min(np.linalg.norm(e[:, None] - ref[None], axis=-1), axis=1)
        bx = axes[1]
        bx.semilogy(t, np.maximum(dist, 1e-300), lw=0.8, color="C3")
        bx.set_xlabel("step t")
        bx.set_ylabel("distance of the edge trajectory to the reference")
    status = ds.attrs.get("status", "")
    fig.suptitle(f"edge tracking: {ds.sizes['bisection']} bisections, status {status}")
    return root(fig)
