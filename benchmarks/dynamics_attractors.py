"""Attractor-census throughput on the example maps (theory: docs/theory/dynamics.md §7).

For every example map at its reference parameter point (and Hénon at its chaotic point) one census of K
random starts is run twice: the first call includes compilation, the second (another seed) is timed. Printed:
compile+run and run times, starts per second, map steps per second summed over the steps each start really
ran (finished starts stop early), attractors found and the unsettled share. Then one vectorised batch of
B parameter values × K starts on the logistic map (a sweep chunk).

Run: python benchmarks/dynamics_attractors.py [--ics K] [--budget N]
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np

import attnphys
from attnphys.dynamics._census import CensusOptions, census, census_batch
from attnphys.dynamics.classify import REGIMES
from attnphys.dynamics.maps import EXAMPLES


def _points():
    for name, m in sorted(EXAMPLES.items()):
        refs = m.reference_points()
        for key in ("periodic", "chaotic"):
            if key in refs:
                yield f"{name}/{key}", m, refs[key].params


def _summary(ds) -> str:
    kinds = [REGIMES[int(k)] for k in ds["kind"].values if k >= 0]
    return ", ".join(f"{k}({int(p)}):{f:.2f}" for k, p, f in zip(kinds, ds["period"].values, ds["basin_fraction"].values))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ics", type=int, default=1024, help="starts per census")
    ap.add_argument("--budget", type=int, default=20_000, help="most steps per start")
    args = ap.parse_args()
    attnphys.configure()
    print(f"devices: {len(jax.local_devices())} × {jax.local_devices()[0].platform}; K = {args.ics} starts, "
          f"budget {args.budget} steps")
    opts = CensusOptions(budget=args.budget, lyap_steps=10_000)
    print(f"{'map/point':28s} {'first s':>8s} {'run s':>7s} {'starts/s':>9s} {'steps/s':>9s} {'unsettled':>9s}  attractors")
    for label, m, params in _points():
        if label.startswith("rotation"):
            continue  # a neutral fixed point: every start stays on its own circle (no attractor to count)
        t0 = time.perf_counter()
        census(m, params, ics=args.ics, options=opts, seed=0)
        t1 = time.perf_counter()
        ds = census(m, params, ics=args.ics, options=opts, seed=1)
        t2 = time.perf_counter()
        steps = float(ds["ic_steps"].sum())
        print(f"{label:28s} {t1 - t0:8.2f} {t2 - t1:7.2f} {args.ics / (t2 - t1):9.0f} {steps / (t2 - t1):9.2e} "
              f"{float(ds['unsettled_fraction']):9.3f}  {_summary(ds)}")
    B, K = 64, max(16, args.ics // 16)
    rs = np.linspace(2.8, 4.0, B)
    t0 = time.perf_counter()
    census_batch(EXAMPLES["logistic"], rs, ics=K, options=opts, param_values=rs, seed=0)
    t1 = time.perf_counter()
    ds = census_batch(EXAMPLES["logistic"], rs, ics=K, options=opts, param_values=rs, seed=1)
    t2 = time.perf_counter()
    steps = float(ds["ic_steps"].sum())
    print(f"logistic batch {B} r × {K} starts: first {t1 - t0:.2f} s, run {t2 - t1:.2f} s, "
          f"{B * K / (t2 - t1):.0f} starts/s, {steps / (t2 - t1):.2e} steps/s, "
          f"{int(ds['n_attractors'].sum())} attractors, unsettled {float(ds['unsettled_fraction'].mean()):.3f}")


if __name__ == "__main__":
    main()
