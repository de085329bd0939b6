"""DMFT attractor censuses and basins (theory: docs/theory/dmft.md §7.5).

1. One census of K starts at β_o = 1.27 (paper preset), budget 60,000 steps with a 40,000-step transient:
   the first call includes compilation, the second (another seed) is timed. Target: ≤ 5 s for K = 256.
2. ``basins``: B β_o values × K starts × N steps (the issue's figure: 401 × 128 × 40,000 in [1.24, 1.30],
   target ≤ 10 min on a 2-core machine). ``--values`` runs a slice of the grid and extrapolates linearly
   in the number of values (chunks are independent), saying so.

Printed: wall and CPU times (the process's, which a loaded machine changes less), lane-steps per second (summed over the steps each start really ran), attractors found.

Run: python benchmarks/attractors.py [--ics 256] [--basins-values 401] [--basins-ics 128] [--basins-steps 40000]
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import numpy as np

import attnphys
from attnphys.dmft import attractors, basins, preset


def census_once(K: int, seed: int, steps: int, transient: int):
    return attractors(preset("paper", beta_o=1.27), ics=K, steps=steps, transient=transient, seed=seed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ics", type=int, default=256)
    ap.add_argument("--basins-values", type=int, default=401, help="β_o values of the basins grid")
    ap.add_argument("--basins-run", type=int, default=None, help="values actually run (default: all)")
    ap.add_argument("--basins-ics", type=int, default=128)
    ap.add_argument("--basins-steps", type=int, default=40_000)
    ap.add_argument("--chunk", type=int, default=16)
    args = ap.parse_args()
    attnphys.configure()
    print(f"device: {jax.devices()[0].device_kind} ({jax.devices()[0].platform}), {len(jax.devices())} device(s); "
          f"load average {os.getloadavg()[0]:.1f}")

    t0 = time.perf_counter()
    census_once(args.ics, 0, 60_000, 40_000)
    t1, c1 = time.perf_counter(), time.process_time()
    ds = census_once(args.ics, 1, 60_000, 40_000)
    t2, c2 = time.perf_counter(), time.process_time()
    n = int(ds.n_attractors)
    lane_steps = float(ds.ic_steps.sum())
    print(f"census K={args.ics} at beta_o=1.27: first call {t1 - t0:.1f} s, timed {t2 - t1:.2f} s "
          f"(target <= 5 s; {c2 - c1:.2f} CPU-s), {lane_steps / (t2 - t1):.3g} lane-steps/s; periods "
          f"{ds.period.values[:n].tolist()}, basins {np.round(ds.basin_fraction.values[:n], 3).tolist()}, "
          f"unsettled {float(ds.unsettled_fraction):.3f}")

    B, run = args.basins_values, args.basins_run or args.basins_values
    values = np.linspace(1.24, 1.30, B)[:run]
    steps = args.basins_steps
    t0, c0 = time.perf_counter(), time.process_time()
    res = basins(preset("paper"), {"beta_o": values}, ics=args.basins_ics, steps=steps, transient=steps // 2,
                 chunk=args.chunk, progress=True)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    total = dt * B / run
    note = "" if run == B else f" (ran {run} of {B} values; extrapolated linearly)"
    print(f"basins {B} x {args.basins_ics} starts x {steps} steps: {total:.0f} s{note} (target <= 600 s); "
          f"{cpu:.1f} CPU-s for the {run} values run (first call, compilation included; load average "
          f"{os.getloadavg()[0]:.1f}); {float(res.ic_steps.sum()) / dt:.3g} lane-steps/s; tracks {res.sizes.get('track_id', 0)}, "
          f"most coexisting {int(res.n_coexisting.max()) if 'n_coexisting' in res else '-'}"
          + (f", continued ids {int(res.continued_id.max()) + 1}" if "continued_id" in res else ""))


if __name__ == "__main__":
    main()
