"""Orbit schedules and the evidence of exponents and regimes (theory: docs/theory/dmft.md §7.1;
docs/theory/dynamics.md §2.3, §4)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from attnphys.dmft.config import DMFTConfig, check_schedule
from attnphys.dmft.tasks._base import (
    PAPER_SECTION_PAIRS,
)
from attnphys.dynamics.classify import ClassifyOptions, classify
from attnphys.dynamics.orbits import OrbitSpec
from attnphys.errors import InputError
from attnphys.sweeps.task import VarSpec


def orbit_spec(
    cfg: DMFTConfig,
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
        raise InputError(f"must be in [0, {D}] (L·M{' + L·P' if full_state else ''}), got {k}", "--lyapunov")
    if k and not start_filled and transient < cfg.L - 1:
        raise ValueError(f"Lyapunov exponents from a token start need transient >= L - 1 = {cfg.L - 1}")
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
    """The variables of k Lyapunov exponents, sorted descending, with the evidence of the QR method (theory:
    docs/theory/dynamics.md §2.3): round-off, exact annihilations, and columns numerically parallel to the
    earlier ones (an exponent from such QR steps has fewer than about ten correct bits there). Exponents
    from Floquet multipliers have no QR evidence: NaN fractions, no hits, not flagged."""
    return {
        "exponents": VarSpec(
            ("exponent",), (k,), np.float64, np.nan, "Lyapunov exponents, sorted descending", "1/step"
        ),
        "roundoff_fraction": VarSpec(
            ("exponent",), (k,), np.float64, np.nan, "fraction of QR steps in which the direction was below round-off"
        ),
        "below_roundoff": VarSpec(
            ("exponent",), (k,), np.bool_, False, "direction contracted below machine precision in some QR step"
        ),
        "zero_hits": VarSpec(("exponent",), (k,), np.int64, 0, "exact annihilations of the direction"),
        "parallel_fraction": VarSpec(
            ("exponent",),
            (k,),
            np.float64,
            np.nan,
            "fraction of QR steps in which the direction was numerically parallel to the leading ones",
        ),
        "unreliable": VarSpec(
            ("exponent",),
            (k,),
            np.bool_,
            False,
            "direction numerically parallel to the leading ones in some QR step (fewer than ~10 correct bits "
            "there: a shorter reortho_every, or a direction contracted beyond resolution)",
        ),
    }


def sorted_evidence(exponents, roundoff, zero_hits, parallel) -> dict[str, np.ndarray]:
    """Exponents (…, k) in QR order, sorted descending along the last axis with their evidence: the
    variables of :func:`exponent_schema` (theory: docs/theory/dynamics.md §2.1, §2.3)."""
    exponents = np.asarray(exponents)
    order = np.argsort(-exponents, axis=-1)

    def take(a):
        return np.take_along_axis(np.asarray(a), order, -1)

    ro, par = take(roundoff), take(parallel)
    return {
        "exponents": take(exponents),
        "roundoff_fraction": ro,
        "below_roundoff": ro > 0,
        "zero_hits": take(zero_hits).astype(np.int64),
        "parallel_fraction": par,
        "unreliable": par > 0,
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
