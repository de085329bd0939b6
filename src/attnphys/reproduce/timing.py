"""Run-time estimates for ``attnphys reproduce list`` (theory: docs/theory/dmft.md §8).

A few seconds of calibration measure this machine's speed for vectorised steps of the paper's map; the
costs of the other kinds of work (tangent vectors, single chains, P = 5) are fixed ratios measured once
(``benchmarks/paper_fig3a.py`` prints the full Fig. 3a run time for comparison).
"""

from __future__ import annotations

import time
from functools import lru_cache

from attnphys.reproduce._base import Rates

LYAPUNOV_PER_PLAIN = 0.27
"""Speed of vectorised steps with three tangent vectors and records, relative to plain steps (P = 2)."""
SEQUENTIAL_PER_PLAIN = 0.23
"""Speed of a single trajectory's steps relative to vectorised steps per point (P = 2)."""
PE5_COST = {"plain": 3.2, "lyapunov": 6.4, "sequential": 4.0}
"""Cost of a P = 5, L = 32 step relative to P = 2, per kind of work."""
COMPILE_PER_PLAIN = 3.0
"""Compilation of a run with tangent vectors, in units of the plain calibration's compilation."""

DEFAULT = Rates(
    plain=1.2e6,
    lyapunov=1.2e6 * LYAPUNOV_PER_PLAIN,
    sequential=1.2e6 * SEQUENTIAL_PER_PLAIN,
    pe5=PE5_COST,
    overhead=8.0,
)
"""Rates of the development machine (2 CPU cores), used when calibration is switched off."""


@lru_cache(maxsize=1)
def calibrate(batch: int = 256, steps: int = 4000, repeats: int = 2) -> Rates:
    """Measure plain vectorised steps of the paper's map on this machine: compile once, then time
    ``repeats`` runs and keep the slowest (a shared machine's speed varies; estimates should not be
    optimistic) (theory: docs/theory/dmft.md §3.6)."""
    import jax

    from attnphys.dmft import DMFTModel, preset
    from attnphys.dmft.simulate import Schedule, run_batch

    model = DMFTModel.of(preset("paper"))
    sc = model.scalars(n=batch)
    st = model.initial_states("checkpoint", sc)
    schedule = Schedule(steps=steps, transient=steps, record=())
    t0 = time.perf_counter()
    final, _, _ = run_batch(model.couplings, sc, st, schedule, model.convention)
    jax.block_until_ready(final.A)
    t1 = time.perf_counter()
    slowest = 0.0
    for _ in range(repeats):
        t = time.perf_counter()
        final, _, _ = run_batch(model.couplings, sc, st, schedule, model.convention)
        jax.block_until_ready(final.A)
        slowest = max(slowest, time.perf_counter() - t)
    plain = batch * steps / max(slowest, 1e-9)
    return Rates(
        plain=plain,
        lyapunov=plain * LYAPUNOV_PER_PLAIN,
        sequential=plain * SEQUENTIAL_PER_PLAIN,
        pe5=PE5_COST,
        overhead=COMPILE_PER_PLAIN * (t1 - t0),
    )
