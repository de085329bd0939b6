"""Lyapunov spectra of the mean-field map over parameter grids (theory: docs/theory/dmft.md §6)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, overload

import xarray as xr

from attnphys._messages import validated
from attnphys.dmft._api._common import Config, Sweep, sweep_axes

if TYPE_CHECKING:
    from attnphys.sweeps import Sweep as SweepPlan


@overload
def lyapunov_spectrum(
    cfg: Config,
    *,
    sweep: Sweep | None = None,
    start: Any = "token",
    steps: int,
    transient: int,
    exponents: int | None = None,
    full_state: bool = False,
    align: int = 0,
    reortho_every: int = 1,
    history_every: int = 0,
    init: Literal["identity", "random"] = "identity",
    progress: bool = False,
    dry_run: Literal[False] = False,
) -> xr.Dataset: ...


@overload
def lyapunov_spectrum(
    cfg: Config,
    *,
    sweep: Sweep | None = None,
    start: Any = "token",
    steps: int,
    transient: int,
    exponents: int | None = None,
    full_state: bool = False,
    align: int = 0,
    reortho_every: int = 1,
    history_every: int = 0,
    init: Literal["identity", "random"] = "identity",
    progress: bool = False,
    dry_run: Literal[True],
) -> SweepPlan: ...


def lyapunov_spectrum(
    cfg: Config,
    *,
    sweep: Sweep | None = None,
    start: Any = "token",
    steps: int,
    transient: int,
    exponents: int | None = None,
    full_state: bool = False,
    align: int = 0,
    reortho_every: int = 1,
    history_every: int = 0,
    init: Literal["identity", "random"] = "identity",
    progress: bool = False,
    dry_run: bool = False,
) -> xr.Dataset | SweepPlan:
    """Lyapunov exponents λ_i = lim (1/T) Σ_t log R_t[i, i] of the mean-field map (Benettin's QR method;
    theory: docs/theory/dmft.md §6, docs/theory/dynamics.md §2) at every point of ``sweep``.

    Loop steps t < ``transient`` are discarded (the last ``align`` of them rotate the tangent vectors), the
    exponents average the remaining ``steps − transient`` steps, starting from identity tangent vectors as
    the reference (``init``). With ``full_state`` the state is the reference's L(M+P)-dimensional one;
    otherwise the L·M attention block (the L·P positional exponents are exactly 0).

    Args:
        cfg: the configuration; sweep: field → values; start: the initial condition (as :func:`trajectories`).
        exponents: how many leading exponents (default: all of the state).
        reortho_every: steps between QR re-orthonormalisations.
        history_every: keep running estimates every this many steps (0: none).
        dry_run: validate the options, the grid and the starts, and return the :class:`~attnphys.sweeps.Sweep`
            that would run (its grid and task) instead of computing.

    Returns:
        Dataset with ``exponents`` (sweep…, exponent) sorted descending and their evidence
        ``roundoff_fraction``, ``below_roundoff``, ``zero_hits``, ``parallel_fraction``, ``unreliable``;
        with ``history_every``, ``history`` (sweep…, checkpoint, qr_column): the running estimates in QR order.
    """
    from attnphys.dmft.tasks import LyapunovTask
    from attnphys.sweeps import run_task

    task = validated(
        LyapunovTask,
        arguments={"k": "exponents"},
        config=cfg,
        start=start,
        steps=steps,
        transient=transient,
        k=exponents,
        full_state=full_state,
        align=align,
        reortho_every=reortho_every,
        history_every=history_every,
        init=init,
    )
    if dry_run:
        return run_task(task, sweep_axes(sweep), dry_run=True)
    return run_task(task, sweep_axes(sweep), progress=progress)
