"""Throughput of the DMFT mean-field engine on the paper preset (float64).

Prints trajectory-steps per second for batches 1, 64, 1024 and 4001, and the wall time of one
175,000-step trajectory after compilation. Targets (2-core machine): one 175k-step trajectory in
<= 1 s; >= 5e6 trajectory-steps/s at batch >= 1024.

    python benchmarks/dmft_throughput.py [--devices N]
"""

from __future__ import annotations

import argparse
import os
import time

from attnphys.runtime import configure


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--devices", type=int, default=os.cpu_count(), help="XLA host devices (default: all cores)")
    ap.add_argument("--steps", type=int, default=20_000, help="steps per trajectory for the batched runs")
    args = ap.parse_args()
    configure(x64=True, host_devices=args.devices)

    import jax
    import numpy as np

    from attnphys.dmft import paper_checkpoint, preset
    from attnphys.dmft.meanfield import couplings, scalars
    from attnphys.dmft.simulate import Schedule, broadcast_batch, run_batch

    cfg = preset("paper")
    cp = couplings(cfg.build_correlations())
    win = paper_checkpoint(cfg)
    print(f"devices: {len(jax.devices())} x {jax.devices()[0].platform}, float64: {jax.config.jax_enable_x64}")

    def timed(B, T, record=()):
        sched = Schedule(steps=T, transient=0 if record else T, record=record)
        sc, wb = broadcast_batch(scalars(cfg, beta_o=np.linspace(0.0, 3.0, B)), win, B)
        t0 = time.perf_counter()
        jax.block_until_ready(run_batch(cp, sc, wb, sched))
        compile_and_run = time.perf_counter() - t0
        t0 = time.perf_counter()
        jax.block_until_ready(run_batch(cp, sc, wb, sched))
        return compile_and_run, time.perf_counter() - t0

    print(f"{'batch':>6} {'steps':>8} {'first call s':>13} {'run s':>8} {'traj-steps/s':>14}")
    for B in (1, 64, 1024, 4001):
        T = 175_000 if B == 1 else args.steps
        first, t = timed(B, T)
        print(f"{B:>6} {T:>8} {first:>13.2f} {t:>8.3f} {B * T / t:>14.3e}")
    first, t = timed(1, 175_000, record=("att", "mo", "mo_se", "mv", "mq", "mk"))
    print(f"one trajectory of 175,000 steps after compilation: {timed(1, 175_000)[1]:.3f} s (no records), "
          f"{t:.3f} s recording all six observables every step")


if __name__ == "__main__":
    main()
