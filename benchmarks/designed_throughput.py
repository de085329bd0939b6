"""Throughput of the designed mean-field map against the paper's map (float64).

Prints trajectory-steps per second at batch 1024 (and any other batches given) for the designed map
(`4_duplicity_loop_4`, M_se = 3, M = 4, L = 4, and `4_no_duplicity`, M_se = M = 4) and for the paper's map
(the `paper` preset, M = 3, L = 4), each over a spread of beta_o, with and without recording every step.

    python benchmarks/designed_throughput.py [--devices N] [--steps T] [--batch 1024 64 ...]
"""

from __future__ import annotations

import argparse
import os
import time

from attnphys.runtime import configure


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--devices", type=int, default=os.cpu_count(), help="XLA host devices (default: all cores)")
    ap.add_argument("--steps", type=int, default=20_000, help="steps per trajectory")
    ap.add_argument("--batch", type=int, nargs="+", default=[1024], help="batch sizes")
    args = ap.parse_args()
    configure(x64=True, host_devices=args.devices)

    import jax
    import numpy as np

    from attnphys.dmft import DMFTModel, preset
    from attnphys.dmft.designed import DesignedModel, designed_config
    from attnphys.dmft.simulate import Schedule

    print(f"devices: {len(jax.devices())} x {jax.devices()[0].platform}, float64: {jax.config.jax_enable_x64}")

    def timed(run):
        t0 = time.perf_counter()
        jax.block_until_ready(run())
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        jax.block_until_ready(run())
        return first, time.perf_counter() - t0

    def paper(B, sched):
        model = DMFTModel.of(preset("paper"))
        sc = model.scalars({"beta_o": np.linspace(0.5, 3.0, B)})
        st = model.initial_states("checkpoint", sc)
        return lambda: model.run_batch(sc, st, sched)

    def designed(name):
        def make(B, sched):
            model = DesignedModel.of(designed_config(name, beta_o=3.0, gamma=20.0, epsilon=0.2))
            sc = model.scalars({"beta_o": np.linspace(0.5, 100.0, B)})
            st = model.initial_states("token", sc)
            return lambda: model.run_batch(sc, st, sched)

        return make

    maps = {
        "paper map (paper preset)": paper,
        "designed 4_duplicity_loop_4": designed("4_duplicity_loop_4"),
        "designed 4_no_duplicity": designed("4_no_duplicity"),
    }
    T = args.steps
    print(f"{'map':<30} {'batch':>6} {'records':>8} {'first call s':>13} {'run s':>8} {'traj-steps/s':>14}")
    for B in args.batch:
        for record in ((), ("att", "mo", "mo_se", "mv", "mq", "mk")):
            sched = Schedule(steps=T, transient=0 if record else T, record=record)
            rate = {}
            for label, make in maps.items():
                first, t = timed(make(B, sched))
                rate[label] = B * T / t
                print(
                    f"{label:<30} {B:>6} {'all' if record else 'none':>8} {first:>13.2f} {t:>8.3f} {rate[label]:>14.3e}"
                )
            base = rate["paper map (paper preset)"]
            for label in list(maps)[1:]:
                print(f"{'':<30} {'':>6} {'':>8} designed/paper: {rate[label] / base:.2f} ({label.split()[-1]})")


if __name__ == "__main__":
    main()
