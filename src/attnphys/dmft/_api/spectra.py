"""Lyapunov spectra of the mean-field map over parameter grids (theory: docs/theory/dmft.md §6)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import xarray as xr

from attnphys._messages import validated
from attnphys._options import takes
from attnphys.dmft._analysis_options import LyapunovOptions
from attnphys.dmft._api._common import Config, Sweep, sweep_axes

if TYPE_CHECKING:
    from attnphys.sweeps import Sweep as SweepPlan


def _spectrum_task(cfg: Config, o: LyapunovOptions):
    from attnphys.dmft.tasks import LyapunovTask

    return validated(
        LyapunovTask,
        arguments={"k": "exponents"},
        config=cfg,
        start=o.start,
        steps=o.steps,
        transient=o.transient,
        k=o.exponents,
        full_state=o.full_state,
        align=o.align,
        reortho_every=o.reortho_every,
        history_every=o.history_every,
        init=o.init,
    )


@takes(LyapunovOptions)
def plan_lyapunov_spectrum(cfg: Config, *, sweep: Sweep | None = None, options: LyapunovOptions) -> SweepPlan:
    """The sweep that :func:`lyapunov_spectrum` with the same arguments would run, validated, nothing
    computed (theory: docs/theory/sweeps.md §5).

    Raises:
        InputError: naming the argument or option refused.
    """
    from attnphys.sweeps import run_task

    return run_task(_spectrum_task(cfg, options), sweep_axes(sweep), dry_run=True)


@takes(LyapunovOptions, plan=plan_lyapunov_spectrum)
def lyapunov_spectrum(cfg: Config, *, sweep: Sweep | None = None, options: LyapunovOptions) -> xr.Dataset:
    """Lyapunov exponents λ_i = lim (1/T) Σ_t log R_t[i, i] of the mean-field map (Benettin's QR method;
    theory: docs/theory/dmft.md §6, docs/theory/dynamics.md §2) at every point of ``sweep``.

    Loop steps t < ``transient`` are discarded (the last ``align`` of them rotate the tangent vectors), the
    exponents average the remaining ``steps − transient`` steps, starting from identity tangent vectors as
    the reference (``init``). With ``full_state`` the state is the reference's L(M+P)-dimensional one;
    otherwise the L·M attention block (the L·P positional exponents are exactly 0).

    Args:
        cfg: the configuration; sweep: field → values.

    The options (each a keyword; :class:`~attnphys.dmft.LyapunovOptions`): ``exponents``, how many leading
    exponents (default: all of the state); ``history_every``, keep running estimates every this many steps
    (0: none); :func:`plan_lyapunov_spectrum` validates them and returns the sweep that would run.

    Returns:
        Dataset with ``exponents`` (sweep…, exponent) sorted descending and their evidence
        ``roundoff_fraction``, ``below_roundoff``, ``zero_hits``, ``parallel_fraction``, ``unreliable``;
        with ``history_every``, ``history`` (sweep…, checkpoint, qr_column): the running estimates in QR order.
    """
    from attnphys.sweeps import run_task

    return run_task(_spectrum_task(cfg, options), sweep_axes(sweep), progress=options.progress)
