"""The 201×201 paper phase diagram over (β_o, β_att) on the sweep engine (spec ``dmft.md`` §6).

Equivalent to

    attnphys dmft phase-diagram --preset paper --x beta_o 0 3 201 --y beta_att 0 3 201 \\
        --steps 120000 --transient 100000 --exponents 2 --start checkpoint --out phase.zarr --plot phase.png

Prints the wall time and points per second (target on a 2-core machine: <= 20 minutes; the reference
needs about 440 CPU-hours). ``--num`` shrinks the grid for a quick look.

    python benchmarks/phase_diagram.py [--num 201] [--adaptive] [--out phase.zarr] [--plot phase.png] [--executor inprocess]
        [--compilation-cache DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from attnphys.runtime import configure


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--num", type=int, default=201)
    ap.add_argument("--steps", type=int, default=120_000)
    ap.add_argument("--transient", type=int, default=100_000)
    ap.add_argument("--chunk", type=int, default=1024)
    ap.add_argument("--executor", default="inprocess")
    ap.add_argument("--out", type=Path, default=None, help="store (default: a temporary one, removed)")
    ap.add_argument("--plot", type=Path, default=None)
    ap.add_argument("--adaptive", action=argparse.BooleanOptionalAction, default=False,
                    help="stop points on confirmed periodic orbits early (Floquet exponents)")
    ap.add_argument("--reortho-every", type=int, default=1, metavar="DELTA",
                    help="steps between QR re-orthonormalisations of the tangent vectors (the task's reortho_every)")
    ap.add_argument("--compilation-cache", default=None, metavar="DIR",
                    help="keep compiled programs in DIR (a second run skips their compilation)")
    args = ap.parse_args()
    configure(x64=True, host_devices=os.cpu_count(), compilation_cache=args.compilation_cache)
    if args.compilation_cache:
        cache = Path(args.compilation_cache)
        n_cached = len(list(cache.iterdir())) if cache.is_dir() else 0
        print(f"compilation cache {args.compilation_cache}: {n_cached} programs before the run "
              f"({'warm' if n_cached else 'cold'})")

    import numpy as np

    from attnphys.dmft import phase_diagram, preset
    from attnphys.dynamics.classify import REGIMES

    tmp = None
    out = args.out
    if out is None:
        tmp = tempfile.mkdtemp()
        out = Path(tmp) / "phase.zarr"
    elif out.exists():
        shutil.rmtree(out)  # a benchmark measures a full run, not a resume
    grid = {"beta_o": np.linspace(0, 3, args.num), "beta_att": np.linspace(0, 3, args.num)}
    size = args.num**2
    t0 = time.perf_counter()
    ds = phase_diagram(preset("paper"), grid, start="checkpoint", steps=args.steps, transient=args.transient,
                       exponents=2, adaptive=args.adaptive, reortho_every=args.reortho_every, store=out,
                       chunk=args.chunk, executor=args.executor, progress=True)
    wall = time.perf_counter() - t0
    codes, counts = np.unique(ds.regime.values, return_counts=True)
    print(f"{size} points ({args.num}×{args.num}), {args.steps} steps ({args.transient} transient), top 2 "
          f"exponents, executor {args.executor}: wall time {wall:.1f} s ({wall / 60:.2f} min), "
          f"{size / wall:.1f} points/s, {size * args.steps / wall:.3e} point-steps/s")
    print("regimes: " + ", ".join(f"{REGIMES[c]}: {n}" for c, n in zip(codes, counts)))
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # kB on Linux
    print(f"peak resident memory {peak:.2f} GiB; load average {os.getloadavg()[0]:.2f}")
    if args.adaptive:
        print(f"stopped early {int(ds.stopped_early.sum())}/{size}, steps run "
              f"{ds.stop_step.values.sum() / (size * args.steps):.1%}")
    if args.plot:
        from attnphys.plots import phase_diagram_figure, save_figure

        print("figure:", save_figure(phase_diagram_figure(ds, "beta_o", "beta_att"), args.plot, dpi=130))
    if tmp:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
