"""The full paper bifurcation diagram (spec ``dmft.md`` §6.1) with Lyapunov exponents.

4001 values of β_o in [0, 3], 175,000 loop steps each from the published β = 3 checkpoint, the first
100,000 discarded, the top 3 Lyapunov exponents over the last 75,000 steps, orbit samples, zero-plane
sections and regimes. Prints the wall time (target on a 2-core machine: <= 5 minutes; the reference
needs about 900 CPU-hours), then the same diagram with the full 12-exponent spectrum.

    python benchmarks/paper_bifurcation.py [--num 4001] [--skip-full] [--adaptive] [--out bif.zarr]
        [--compilation-cache DIR]

``--num`` below 4001 gives a subset of the diagram (same range, same schedule) for a quick estimate.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from attnphys.runtime import configure


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--num", type=int, default=4001)
    ap.add_argument("--steps", type=int, default=175_000)
    ap.add_argument("--transient", type=int, default=100_000)
    ap.add_argument("--devices", type=int, default=os.cpu_count())
    ap.add_argument("--skip-full", action="store_true", help="skip the 12-exponent run")
    ap.add_argument("--out", default=None, help="write the 3-exponent diagram here (.zarr)")
    ap.add_argument("--adaptive", action=argparse.BooleanOptionalAction, default=False,
                    help="stop points on confirmed periodic orbits early (Floquet exponents)")
    ap.add_argument("--chunk", type=int, default=2048,
                    help="points per vectorised batch (2048: two batches, the adaptive run is fastest)")
    ap.add_argument("--reortho-every", type=int, default=1, metavar="DELTA",
                    help="steps between QR re-orthonormalisations of the tangent vectors (the task's reortho_every)")
    ap.add_argument("--compilation-cache", default=None, metavar="DIR",
                    help="keep compiled programs in DIR (a second run skips their compilation)")
    args = ap.parse_args()
    configure(x64=True, host_devices=args.devices, compilation_cache=args.compilation_cache)
    if args.compilation_cache:
        cache = Path(args.compilation_cache)
        n_cached = len(list(cache.iterdir())) if cache.is_dir() else 0
        print(f"compilation cache {args.compilation_cache}: {n_cached} programs before the run "
              f"({'warm' if n_cached else 'cold'})")

    import jax
    import numpy as np

    from attnphys.dmft import bifurcation, preset
    from attnphys.dynamics.classify import REGIMES

    cfg = preset("paper")
    betas = np.linspace(0.0, 3.0, args.num)
    print(f"devices: {len(jax.devices())} x {jax.devices()[0].platform}; {args.num} values of beta_o in [0, 3]; "
          f"{args.steps} steps, {args.transient} transient, from the checkpoint")
    results = {}
    for k in (3,) if args.skip_full else (3, 12):
        t0 = time.perf_counter()
        ds = bifurcation(cfg, {"beta_o": betas}, start="checkpoint", steps=args.steps, transient=args.transient,
                         exponents=k, adaptive=args.adaptive, reortho_every=args.reortho_every, chunk=args.chunk,
                         progress=True)
        wall = time.perf_counter() - t0
        results[k] = wall
        counts = {REGIMES[c]: int(n) for c, n in zip(*np.unique(ds.regime.values, return_counts=True))}
        extra = ""
        if args.adaptive:
            extra = (f"; stopped early {int(ds.stopped_early.sum())}/{args.num}, Floquet exponents "
                     f"{int(ds.floquet.sum())}, steps run {ds.stop_step.values.sum() / (args.num * args.steps):.1%}")
        extra += f"; exponents flagged unreliable per index {ds.unreliable.values.sum(axis=0).tolist()}"
        print(f"top {k:>2} exponents: wall time {wall:7.1f} s ({wall / 60:.2f} min), "
              f"{args.num * args.steps / wall:.3e} point-steps/s; regimes {counts}{extra}; "
              f"load average {os.getloadavg()[0]:.2f}")
        if k == 3 and args.out:
            from attnphys.io import save

            save(ds, args.out)
    print("summary: " + ", ".join(f"k={k}: {w:.1f} s" for k, w in results.items()))


if __name__ == "__main__":
    main()
