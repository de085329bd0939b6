"""Kinetic-Ising mean-field methods on the asymmetric SK benchmark (theory: docs/theory/fluctuations.md §6).

For n spins with couplings J_ij = β (j0/n + js ξ_ij/√n) and fields H_i = β h0 u_i (j0 = 1, js = 0.1, h0 = 0.5,
β = (β/β_c) × 1.1108: the benchmark's critical scale), from every spin +1: the mean squared error of m, C and D
of each method (naive, TAP, Plefka[t], Plefka2[t]) against ``--samples`` Monte-Carlo runs, averaged over the
``--steps`` steps, at β/β_c ∈ {0.7, 1.0, 1.3}, beside the Monte-Carlo floor (the mean squared standard error
of m). With ``--reference DIR`` (a fetched copy of the published reference code of the expansions, the
directory that holds its ``plefka`` package) it also runs that code on the same couplings and prints the
largest difference of every method's m, C and D from it.

Run: python benchmarks/kinetic_ising.py [--n 128] [--steps 32] [--samples 100000] [--reference DIR]
"""

from __future__ import annotations

import argparse
import sys
import time

import jax
import numpy as np

from attnphys.dynamics import (
    KINETIC_ISING_METHODS,
    asymmetric_sk,
    kinetic_ising_errors,
    kinetic_ising_mean_field,
    kinetic_ising_sample,
)

BETA_C = 1.1108397534245904  # the benchmark's critical β for h0 = 0.5, js = 0.1
REFERENCE_UPDATE = {  # method -> the reference code's update of the same expansion
    "naive": "update_P_t1_t_o1",
    "tap": "update_P_t1_t_o2",
    "plefka_t": "update_P_t_o2",
    "plefka2_t": "update_P2_t_o2",
}


def reference_run(directory: str, H, J, steps: int, update: str):
    sys.path.insert(0, directory)
    from plefka import mf_ising  # pyright: ignore[reportMissingImports]  (the fetched copy)

    model = mf_ising(H.size)
    model.H, model.J = H.copy(), J.copy()
    model.initialize_state(np.ones(H.size))
    out = {"m": [], "C": [], "D": []}
    for _ in range(steps):
        getattr(model, update)()
        for k in out:
            out[k].append(getattr(model, k).copy())
    return {k: np.array(v) for k, v in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=128)
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--betas", default="0.7,1.0,1.3", help="β/β_c values")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--reference", default=None, help="directory of a fetched copy of the reference code")
    args = ap.parse_args()
    jax.config.update("jax_enable_x64", True)
    for b in (float(v) for v in args.betas.split(",")):
        H, J = asymmetric_sk(args.n, beta=b * BETA_C, seed=args.seed)
        t0 = time.perf_counter()
        mc = kinetic_ising_sample(H, J, steps=args.steps, samples=args.samples, seed=args.seed + 1)
        t_mc = time.perf_counter() - t0
        floor = float((mc.m_se**2).mean())
        print(
            f"β/β_c = {b:g}, n = {args.n}, {args.steps} steps; Monte Carlo {args.samples} runs {t_mc:.1f} s, "
            f"floor of the m error {floor:.2e}"
        )
        print(
            f"  {'method':10s} {'error m':>10s} {'error C':>10s} {'error D':>10s} {'seconds':>8s}"
            + ("   max |ours - reference| m, C, D" if args.reference else "")
        )
        for method in KINETIC_ISING_METHODS:
            t0 = time.perf_counter()
            pred = kinetic_ising_mean_field(H, J, steps=args.steps, method=method)
            dt = time.perf_counter() - t0
            e = kinetic_ising_errors(pred, mc).attrs
            line = f"  {method:10s} {e['error_m']:10.2e} {e['error_C']:10.2e} {e['error_D']:10.2e} {dt:8.2f}"
            if args.reference:
                ref = reference_run(args.reference, H, J, args.steps, REFERENCE_UPDATE[method])
                line += "   " + ", ".join(f"{np.max(np.abs(pred[k].values - ref[k])):.1e}" for k in ("m", "C", "D"))
            print(line)


if __name__ == "__main__":
    main()
