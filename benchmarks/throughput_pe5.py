"""Plain-map throughput at batch B for the paper preset (L = 4) and for P = 5, L = 32 (the ``paper-pe5``
settings), written against the API that old and new versions of the engine share, so that the same
script measures both (theory: docs/theory/dmft.md §3.4, §3.7).

    PYTHONPATH=/path/to/version/src python benchmarks/throughput_pe5.py [--batch 1024] [--steps 4000]

Run it alternately for two versions on the same machine (the load average is printed with each figure).
"""

from __future__ import annotations

import argparse
import os
import time

from attnphys.runtime import configure


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=4000, help="steps per trajectory (L = 32); L = 4 runs 5x more")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--devices", type=int, default=os.cpu_count())
    args = ap.parse_args()
    configure(x64=True, host_devices=args.devices)

    import jax
    import jax.numpy as jnp
    import numpy as np

    import attnphys
    from attnphys.dmft import preset
    from attnphys.dmft.meanfield import Window, couplings, scalars
    from attnphys.dmft.simulate import Schedule, run_batch

    print(f"attnphys from {os.path.dirname(attnphys.__file__)}; devices: {len(jax.devices())} x "
          f"{jax.devices()[0].platform}")
    B = args.batch
    for label, over, T in (("paper L=4 P=2", {}, 5 * args.steps),
                           ("P=5 L=32", dict(L=32, P=5, beta_o=1.4), args.steps)):
        cfg = preset("paper", **over)
        cp = couplings(cfg.build_correlations())
        sc = scalars(cfg, beta_o=np.linspace(0.5, 2.5, B))
        sc = type(sc)(*(jnp.broadcast_to(jnp.asarray(x), (B,)) for x in sc))
        rng = np.random.default_rng(0)
        win = Window(jnp.asarray(rng.uniform(-0.5, 0.5, (B, cfg.L, cfg.M))),
                     jnp.asarray(rng.choice([-1.0, 1.0], (B, cfg.L, cfg.P))), jnp.full(B, cfg.L, jnp.int32))
        sched = Schedule(steps=T, transient=T, record=())
        jax.block_until_ready(run_batch(cp, sc, win, sched, check=False))
        best = np.inf
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            jax.block_until_ready(run_batch(cp, sc, win, sched, check=False))
            best = min(best, time.perf_counter() - t0)
        print(f"{label:>14}: batch {B}, {T} steps: {B * T / best:.3e} traj-steps/s "
              f"(load average {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
