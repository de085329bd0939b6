"""Finite-N network: one path of N = 10^6 semantic bits × 10,000 steps on the paper preset.
Target on a 2-core machine: <= 60 s. Prints the class-binomial sampler (default; exact, cost
independent of N) and the literal per-bit sampler (one Bernoulli draw per bit and step).

    python benchmarks/finite_n.py [--n 1000000] [--steps 10000] [--skip-per-bit]
"""

from __future__ import annotations

import argparse
import time

from attnphys.runtime import configure


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000, help="rounded to the nearest multiple of n_se = 99")
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--per-bit-steps", type=int, default=200, help="steps for the literal per-bit sampler (0: skip)")
    args = ap.parse_args()
    configure(x64=True, host_devices=1)

    from attnphys.dmft import preset
    from attnphys.dmft.finite import finite_trajectories

    cfg = preset("paper", beta_o=1.0)
    n = max(1, round(args.n / cfg.n_se)) * cfg.n_se
    from attnphys.dmft.finite import random_network, repeated_network

    paper_net = repeated_network(cfg, n)
    random_net = random_network(cfg.M, cfg.P, n, seed=0)
    runs = [("class binomial, paper weights", paper_net, False, args.steps),
            ("class binomial, random weights", random_net, False, args.steps)]
    if args.per_bit_steps:
        runs.append(("per-bit Bernoulli, paper weights", paper_net, True, args.per_bit_steps))
    for name, net, per_bit, steps in runs:
        finite_trajectories(cfg, n, paths=1, steps=steps, per_bit=per_bit, network=net)  # compile
        t0 = time.perf_counter()
        ds = finite_trajectories(cfg, n, paths=1, steps=steps, per_bit=per_bit, seed=1, network=net)
        wall = time.perf_counter() - t0
        print(f"{name:>32}: N = {n} semantic bits x {steps} steps, one path: {wall:.2f} s ({steps / wall:.0f} steps/s, "
              f"{ds.attrs['classes']} classes; {args.steps} steps would take {wall * args.steps / steps:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
