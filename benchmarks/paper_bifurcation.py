"""The full paper bifurcation diagram (spec ``dmft.md`` §6.1) with Lyapunov exponents.

4001 values of β_o in [0, 3], 175,000 loop steps each from the published β = 3 checkpoint, the first
100,000 discarded, the top 3 Lyapunov exponents over the last 75,000 steps, orbit samples, zero-plane
sections and regimes. Prints the wall time (target on a 2-core machine: <= 5 minutes; the reference
needs about 900 CPU-hours), then the same diagram with the full 12-exponent spectrum.

    python benchmarks/paper_bifurcation.py [--num 4001] [--skip-full] [--out bif.zarr]
"""

from __future__ import annotations

import argparse
import os
import time

from attnphys.runtime import configure


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--num", type=int, default=4001)
    ap.add_argument("--steps", type=int, default=175_000)
    ap.add_argument("--transient", type=int, default=100_000)
    ap.add_argument("--devices", type=int, default=os.cpu_count())
    ap.add_argument("--skip-full", action="store_true", help="skip the 12-exponent run")
    ap.add_argument("--out", default=None, help="write the 3-exponent diagram here (.zarr)")
    args = ap.parse_args()
    configure(x64=True, host_devices=args.devices)

    import jax
    import numpy as np

    from attnphys.dmft import preset
    from attnphys.dmft.analysis import analyse, orbit_spec
    from attnphys.dynamics.classify import REGIMES

    cfg = preset("paper")
    betas = np.linspace(0.0, 3.0, args.num)
    print(f"devices: {len(jax.devices())} x {jax.devices()[0].platform}; {args.num} values of beta_o in [0, 3]; "
          f"{args.steps} steps, {args.transient} transient, from the checkpoint")
    results = {}
    for k in (3,) if args.skip_full else (3, 12):
        spec = orbit_spec(cfg, steps=args.steps, transient=args.transient, k=k)
        t0 = time.perf_counter()
        ds = analyse(cfg, {"beta_o": betas}, spec, start="checkpoint", progress=True)
        wall = time.perf_counter() - t0
        results[k] = wall
        counts = {REGIMES[c]: int(n) for c, n in zip(*np.unique(ds.regime.values, return_counts=True))}
        print(f"top {k:>2} exponents: wall time {wall:7.1f} s ({wall / 60:.2f} min), "
              f"{args.num * args.steps / wall:.3e} point-steps/s; regimes {counts}")
        if k == 3 and args.out:
            from attnphys.io import save

            save(ds, args.out)
    print("summary: " + ", ".join(f"k={k}: {w:.1f} s" for k, w in results.items()))


if __name__ == "__main__":
    main()
