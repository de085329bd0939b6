"""Throughput of the recorded part of DMFT orbit diagrams: the map with its observations, sections and
fingerprints, and k = 0, 3 or 12 tangent vectors re-orthonormalised every Δ steps (``--reortho-every``,
default 1: every step; float64, paper preset).

This is the part of the paper's bifurcation diagram that follows the transient (75,000 of its 175,000
steps, with k = 3 or 12) and of the phase diagram (20,000 of 120,000 steps, k = 2). Prints point-steps
per second at a batch of 1024 parameter values, after compilation, best of ``--repeat``; run the same
script on another version of the package to compare.

    python benchmarks/tangents.py [--steps 4000] [--batch 1024] [--repeat 3] [--reortho-every 1 8]
"""

from __future__ import annotations

import argparse
import os
import time

from attnphys.runtime import configure


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=4000, help="recorded steps per point")
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--k", type=int, nargs="+", default=[0, 3, 12], help="numbers of tangent vectors")
    ap.add_argument("--reortho-every", type=int, nargs="+", default=[1], metavar="DELTA",
                    help="steps between QRs (several: one row each)")
    ap.add_argument("--devices", type=int, default=os.cpu_count())
    args = ap.parse_args()
    configure(x64=True, host_devices=args.devices)

    import jax
    import numpy as np

    import attnphys
    from attnphys.dmft import preset
    from attnphys.dmft.model import DMFTModel
    from attnphys.dmft.tasks import orbit_spec
    from attnphys.dynamics.orbits import orbit_sweep

    cfg = preset("paper")
    model = DMFTModel.of(cfg)
    B = args.batch
    sc = model.scalars({"beta_o": np.linspace(0.0, 3.0, B)})
    m = model.map("mo_se")
    x0, aux0 = m.state(model.windows_after("checkpoint", sc, 20_000))
    print(
        f"attnphys {attnphys.__version__} from {os.path.dirname(attnphys.__file__)}; devices: "
        f"{len(jax.devices())} x {jax.devices()[0].platform}; batch {B}, {args.steps} recorded steps"
    )
    print(f"{'k':>3} {'Δ':>3} {'point-steps/s':>15} {'load':>6}")
    for k, d in ((kk, d) for kk in args.k for d in (args.reortho_every if kk else [1])):
        spec = orbit_spec(cfg, steps=args.steps, transient=0, k=k, reortho_every=d)
        jax.block_until_ready(orbit_sweep(m, spec, x0, aux0, sc, shared=model.couplings))
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            jax.block_until_ready(orbit_sweep(m, spec, x0, aux0, sc, shared=model.couplings))
            best = min(best, time.perf_counter() - t0)
        print(f"{k:>3} {d:>3} {B * args.steps / best:>15.3e} {os.getloadavg()[0]:>6.2f}", flush=True)


if __name__ == "__main__":
    main()
