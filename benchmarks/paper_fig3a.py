"""Time the full Fig. 3a reproduction: ``attnphys reproduce fig3a`` end to end.

4001 values of β_o in [0, 3], 120,000 loop steps each from the published β_o = 3 checkpoint, the first
100,000 discarded, the 20,000 recorded samples drawn as published (periodic values in full, the others as
zero-plane sections), three Lyapunov exponents over the recorded steps; data, figure and caption written.
Prints the wall time of the computation and of the whole command, the throughput, the regimes, and the
estimate that ``attnphys reproduce list`` gives on this machine.

    python benchmarks/paper_fig3a.py [--quick] [--out DIR] [--devices N]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from attnphys.runtime import configure


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the reduced run (201 values, 12,000 steps)")
    ap.add_argument("--out", default=None, help="keep the output folder here (default: a temporary folder)")
    ap.add_argument("--devices", type=int, default=os.cpu_count())
    args = ap.parse_args()
    configure(x64=True, host_devices=args.devices)

    import jax
    import numpy as np

    from attnphys.dynamics.classify import REGIMES
    from attnphys.reproduce import FIGURES
    from attnphys.reproduce._base import describe_seconds
    from attnphys.reproduce.job import ReproduceJob
    from attnphys.reproduce.timing import calibrate

    fig = FIGURES["fig3a"]
    s = fig.settings(args.quick)
    estimate = fig.work(args.quick).seconds(calibrate())
    print(f"devices: {len(jax.devices())} x {jax.devices()[0].platform}; cpus: {os.cpu_count()}; "
          f"load average: {os.getloadavg()[0]:.1f}")
    print(f"fig3a{' --quick' if args.quick else ''}: {s['num']} values of beta_o in [{s['lo']}, {s['hi']}], "
          f"{s['steps']} steps ({s['transient']} transient), {s['lyapunov']} exponents; "
          f"estimate of `attnphys reproduce list`: {describe_seconds(estimate)}")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out) if args.out else Path(tmp) / "fig3a"
        job = ReproduceJob(name="fig3a", quick=args.quick, out=out, overwrite=True)
        t0 = time.perf_counter()
        report = job.run(progress=True)
        total = time.perf_counter() - t0
        ds = report.result
        compute = float(ds.attrs["wall_time_s"])
        counts = {REGIMES[c]: int(n) for c, n in zip(*np.unique(ds.regime.values, return_counts=True)) if c >= 0}
        print(f"computation: {compute:8.1f} s ({compute / 60:.2f} min), "
              f"{s['num'] * s['steps'] / compute:.3e} point-steps/s")
        print(f"whole command (with figure and writing): {total:8.1f} s ({total / 60:.2f} min)")
        print(f"regimes: {counts}")
        print(f"output: {out if args.out else '(temporary, removed)'}")


if __name__ == "__main__":
    main()
