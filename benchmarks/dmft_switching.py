"""Rare switching of the paper network between its coexisting period-28 and period-56 attractors at
(β_o, β_att) = (1.27, 2.2) (theory: docs/theory/switching.md).

Printed, from :func:`attnphys.dmft.switching`: per attractor of the census its period and basin fraction, the
least action ΔS (units of 1/N) to the other attractor under the Gaussian (linear-noise) and the binomial
(Cramér) rate with the path's horizon and start phase, and for each size N the finite network's mean escape
time by direct simulation (binomial law) with its 95 % interval and the censored runs; then the slope of
ln τ against N with its interval beside the predicted ΔS.

    python benchmarks/dmft_switching.py [--beta-o 1.27] [--sizes 9900 39600 99000] [--walkers 32]
        [--max-steps 5000] [--b-level 0.8] [--max-horizon 112] [--keep 1] [--phase-stride 3] [--seed 0]
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--beta-o", type=float, default=1.27)
    ap.add_argument("--sizes", type=int, nargs="+", default=[9900, 39600, 99000])
    ap.add_argument("--walkers", type=int, default=32)
    ap.add_argument("--max-steps", type=int, default=5000)
    ap.add_argument("--b-level", type=float, default=0.8)
    ap.add_argument("--max-horizon", type=int, default=112)
    ap.add_argument("--keep", type=int, default=1)
    ap.add_argument("--phase-stride", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from attnphys.dmft import preset, switching

    t0 = time.perf_counter()
    ds = switching(
        preset("paper"),
        beta_o=args.beta_o,
        sizes=args.sizes,
        walkers=args.walkers,
        max_steps=args.max_steps,
        b_level=args.b_level,
        max_horizon=args.max_horizon,
        keep=args.keep,
        phase_stride=args.phase_stride,
        seed=args.seed,
    )
    print(f"switching at beta_o = {args.beta_o}: {time.perf_counter() - t0:.1f} s")
    for i in ds.attractor.values:
        a = ds.sel(attractor=i)
        print(
            f"attractor {i}: period {int(a.period)}, basin {float(a.basin_fraction):.3f}, to period "
            f"{int(ds.period.values[int(a.target)])} at distance {float(a.distance):.4f}"
        )
        print(f"  least action (screen {float(a.screen_action):.4e} at {args.max_horizon} steps at most):")
        for w in ds.law.values:
            b = a.sel(law=w)
            print(
                f"    {w:9s} dS = {float(b.action):.4e}  horizon {int(b.horizon)}  phase {int(b.phase)}  "
                f"converged {int(b.action_converged)}"
            )
        for n in ds["size"].values:
            c = a.sel(size=n)
            print(
                f"    N = {int(n):7d}: tau = {float(c.escape_time):10.1f} steps  [{float(c.escape_time_low):.1f}, "
                f"{float(c.escape_time_high):.1f}]  escapes {int(c.escapes)}, censored {int(c.censored)}"
            )
        print(
            f"  slope d ln(tau)/dN = {float(a.slope):.3e}  [{float(a.slope_low):.3e}, {float(a.slope_high):.3e}]"
            f"  against dS = {float(a.action.sel(law='gaussian')):.3e}"
        )


if __name__ == "__main__":
    main()
