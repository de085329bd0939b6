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

    import jax

    from attnphys.dmft import DMFTModel, finite_trajectories, preset
    from attnphys.dmft.finite import random_network, simulate_paths

    cfg = preset("paper", beta_o=1.0)
    n = max(1, round(args.n / cfg.n_se)) * cfg.n_se

    def report(name, wall, steps, classes):
        print(f"{name:>32}: N = {n} semantic bits x {steps} steps, one path: {wall:.2f} s ({steps / wall:.0f} steps/s, "
              f"{classes} classes; {args.steps} steps would take {wall * args.steps / steps:.1f} s)", flush=True)

    # the paper's weights (each of the n_se columns repeated N/n_se times): the library's function
    runs = [("class binomial, paper weights", False, args.steps)]
    if args.per_bit_steps:
        runs.append(("per-bit Bernoulli, paper weights", True, args.per_bit_steps))
    for name, per_bit, steps in runs:
        finite_trajectories(cfg, n, paths=1, steps=steps, per_bit=per_bit)  # compile
        t0 = time.perf_counter()
        ds = finite_trajectories(cfg, n, paths=1, steps=steps, per_bit=per_bit, seed=1)
        report(name, time.perf_counter() - t0, steps, ds.attrs["classes"])
    # N independent random columns (up to 2^(4M+P) distinct classes): the network engine itself
    net = random_network(cfg.M, cfg.P, n, seed=0)
    model = DMFTModel.of(cfg)
    sc = jax.tree_util.tree_map(lambda a: a[0], model.scalars(n=1))
    for seed in (0, 1):  # compile, then time
        t0 = time.perf_counter()
        keys = jax.random.fold_in(jax.random.PRNGKey(1), seed)[None]
        out = simulate_paths(net, sc, keys, steps=args.steps, transient=0, L=cfg.L, convention=model.convention)
        jax.block_until_ready(out)
    report("class binomial, random weights", time.perf_counter() - t0, args.steps, net.W.shape[2])


if __name__ == "__main__":
    main()
