"""Orbit schedules and the evidence of exponents and regimes (theory: docs/theory/dmft.md §7.1;
docs/theory/dynamics.md §2.3, §4)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from attnphys.dmft._variant import AbstractConfig
from attnphys.dmft.config import check_schedule
from attnphys.dmft.tasks._base import (
    PAPER_SECTION_PAIRS,
)
from attnphys.dynamics.blocks import LYAPUNOV_EVIDENCE, sorted_evidence
from attnphys.dynamics.classify import ClassifyOptions, classify
from attnphys.dynamics.orbits import OrbitSpec
from attnphys.errors import InputError
from attnphys.sweeps.task import VarSpec


def orbit_spec(
    cfg: AbstractConfig,
    *,
    steps: int,
    transient: int,
    k: int,
    n_orbit: int = 1000,
    align: int = 0,
    reortho_every: int = 1,
    section_tol: float = 1e-3,
    max_section: int = 1000,
    full_state: bool = False,
    start_filled: bool = True,
    init: str = "random",
) -> OrbitSpec:
    """Translate a schedule (T total steps, T_tr transient) into an :class:`OrbitSpec`
    (theory: docs/theory/dmft.md §7.1)."""
    check_schedule(steps, transient)
    recorded = steps - transient
    D = cfg.L * (cfg.M + (cfg.P if full_state else 0))
    if not 0 <= k <= D:
        raise InputError(f"must be in [0, {D}] (L·M{' + L·P' if full_state else ''}), got {k}", "--exponents")
    if k and not start_filled and transient < cfg.L - 1:
        raise InputError(
            f"Lyapunov exponents from a token start need --transient >= L - 1 = {cfg.L - 1} (the window must be "
            f"full), got {transient}",
            "--transient",
        )
    if align > transient:
        raise InputError(f"must not exceed --transient ({transient}), got {align}", "--align")
    pairs = tuple(p for p in PAPER_SECTION_PAIRS if max(p) < cfg.M)
    return OrbitSpec(
        steps=recorded,
        transient=transient,
        k=k,
        align=align,
        reortho_every=reortho_every,
        n_orbit=min(n_orbit, recorded),
        section=pairs,
        section_tol=section_tol,
        max_section=max_section,
        init=init,
    ).validate()


def exponent_schema(k: int) -> dict[str, VarSpec]:
    """The variables of k Lyapunov exponents, sorted descending, with the evidence of the QR method (the
    toolkit's :data:`~attnphys.dynamics.blocks.LYAPUNOV_EVIDENCE`; theory: docs/theory/dynamics.md §2.3)."""
    return {
        name: VarSpec(("exponent",), (k,), dtype, fill, **attrs)
        for name, (dtype, fill, attrs) in LYAPUNOV_EVIDENCE.items()
    }


def evidence(spec: OrbitSpec, res: Mapping[str, np.ndarray], options: ClassifyOptions = ClassifyOptions()) -> dict:
    """Exponents sorted descending with their round-off evidence, and the regime with its evidence
    (``regime``, ``period``, ``lambda1``, ``lambda2``, ``K``, ``agree``), per point (leading axes kept)
    (theory: docs/theory/dynamics.md §4)."""
    out = {}
    exps = None
    if spec.k:
        out = sorted_evidence(res["exponents"], res["roundoff"], res["zero_hits"], res["parallel"])
        exps = out["exponents"]
    out.update(classify(res["orbit"], exps, res["nonfinite_step"], options))
    return out
