"""Lyapunov spectra, orbit/bifurcation diagrams and regimes of the DMFT map (theory: docs/theory/dmft.md
§6–7), as library functions over the sweep tasks of :mod:`attnphys.dmft.tasks`.

:func:`analyse` runs any grid of parameter points (cold starts, or continuation along one swept
parameter) and returns one ``xarray.Dataset`` with, per point, the leading Lyapunov exponents (descending)
and their round-off evidence, the last ``n_orbit`` observations, the zero-plane section points, and the
regime with its evidence (λ₁, λ₂, period, 0–1 K). :func:`lyapunov_spectrum` gives spectra alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import xarray as xr

from attnphys.dmft.config import DMFTConfig
from attnphys.dmft.tasks import PAPER_SECTION_PAIRS, LyapunovTask, OrbitTask, evidence, orbit_spec
from attnphys.dmft.trajectory import grid_axes
from attnphys.dynamics.classify import ClassifyOptions
from attnphys.dynamics.orbits import OrbitSpec


def analyse(
    cfg: DMFTConfig,
    sweep: Mapping[str, Sequence[float] | np.ndarray],
    spec: OrbitSpec,
    *,
    start="checkpoint",
    observable: str = "mo_se",
    full_state: bool = False,
    directions: Sequence[str] | None = None,
    chunk: int = 1024,
    options: ClassifyOptions = ClassifyOptions(),
    progress: bool = False,
) -> xr.Dataset:
    """Orbits, exponents and regimes at every point of ``sweep`` (outer-product grid)
    (theory: docs/theory/dmft.md §7).

    Args:
        spec: the schedule and what to keep (:func:`orbit_spec`).
        directions: ``None`` for cold starts (every point from ``start``); else continuation along the
            single swept parameter in the given directions (``up``, ``down``), adding a ``direction`` dim.
        chunk: points per vectorised batch (bounds memory; each chunk is one call).
    """
    from attnphys.sweeps import Axis, Grid, Sweep, run_sweep

    axes = grid_axes(sweep)
    task = OrbitTask(
        config=cfg,
        start=start,  # pyright: ignore[reportArgumentType]  (validated by the task)
        steps=spec.transient + spec.steps,
        transient=spec.transient,
        lyapunov=spec.k,
        n_orbit=spec.n_orbit,
        keep_orbit=True,
        observable=observable,
        section_tol=spec.section_tol,
        max_section=spec.max_section,
        align=spec.align,
        reortho_every=spec.reortho_every,
        init=spec.init,  # pyright: ignore[reportArgumentType]
        full_state=full_state,
        classify_options=dict(options.__dict__),
    )
    if directions is not None:
        if len(axes) != 1:
            raise ValueError("continuation needs exactly one swept parameter")
        axes = (Axis(name="direction", values=tuple(directions)),) + axes
        chunk = len(axes[1].values) * max(1, chunk // len(axes[1].values))
    ds = run_sweep(Sweep(grid=Grid(axes=axes, chunk=chunk), task=task), progress=progress)
    ds.attrs["run_mode"] = "cold" if directions is None else "continuation"
    return ds.drop_vars("point_seed")


def lyapunov_spectrum(
    cfg: DMFTConfig,
    sweep: Mapping[str, Sequence[float] | np.ndarray] | None = None,
    *,
    steps: int,
    transient: int,
    k: int | None = None,
    start="token",
    full_state: bool = False,
    align: int = 0,
    reortho_every: int = 1,
    history_every: int = 0,
    init: str = "identity",
    progress: bool = False,
) -> xr.Dataset:
    """Lyapunov exponents of the DMFT map at every point of ``sweep`` (theory: docs/theory/dmft.md §6).

    Loop steps t < ``transient`` are discarded (the last ``align`` of them rotate the tangent vectors),
    the exponents are averages over the remaining ``steps − transient`` steps, starting from identity
    tangent vectors as the reference (``init``). With ``full_state`` the state is the reference's
    L(M+P)-dimensional one; otherwise the L·M attention block (the L·P positional exponents are 0).

    Returns:
        Dataset with ``exponents`` (sweep…, exponent) sorted descending, ``roundoff_fraction``,
        ``below_roundoff``, ``zero_hits``, ``parallel_fraction``, ``unreliable`` and, if
        ``history_every``, ``history`` (sweep…, checkpoint,
        qr_column): the running estimates in QR order.
    """
    from attnphys.sweeps import Grid, Sweep, run_sweep

    axes = grid_axes(sweep)
    task = LyapunovTask(
        config=cfg,
        start=start,  # pyright: ignore[reportArgumentType]  (validated by the task)
        steps=steps,
        transient=transient,
        k=k,
        full_state=full_state,
        align=align,
        reortho_every=reortho_every,
        history_every=history_every,
        init=init,  # pyright: ignore[reportArgumentType]
    )
    size = int(np.prod([len(a.values) for a in axes])) if axes else 1
    ds = run_sweep(Sweep(grid=Grid(axes=axes, chunk=size), task=task), progress=progress)
    return ds.drop_vars("point_seed")


__all__ = ["PAPER_SECTION_PAIRS", "analyse", "evidence", "lyapunov_spectrum", "orbit_spec"]
