"""Weighted Birkhoff averages (theory: docs/theory/dynamics.md §11.3, §2.6): what a repeated call costs, how many
programs it compiles, and the same work done by pynamicalsys (``DiscreteDynamicalSystem.dig``) when it is
installed (it is no dependency of attnphys).

The work: the standard map y' = y + k sin(2πx)/(2π), x' = x + y' mod 1 at k = 1.5, ``--starts`` starts on a line,
each run 2N steps (N = ``--n``), the observable cos(2πx). Printed: the first call (compilation included), the
median of ``--repeats`` further calls each made with a *new* lambda as the observable and the compiled programs
they added (0: compiled once), pynamicalsys's time for the same starts (its first call, which compiles with
numba, is left out), and the largest difference of the digits between the two on the starts.

    python benchmarks/birkhoff.py [--starts 256] [--n 10000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

K = 1.5


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--starts", type=int, default=256)
    ap.add_argument("--n", type=int, default=10_000, help="N: steps per average (2N steps per start)")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()

    import attnphys

    attnphys.configure()
    import jax.numpy as jnp

    from attnphys.dynamics import autonomous, weighted_birkhoff
    from attnphys.dynamics._indicators import _birkhoff

    def f(x, k):
        y = x[1] + k * jnp.sin(2 * jnp.pi * x[0]) / (2 * jnp.pi)
        return jnp.stack([jnp.mod(x[0] + y, 1.0), y])

    m = autonomous(f)
    x0 = np.stack([np.linspace(0.05, 0.95, args.starts), np.full(args.starts, 0.1)], axis=1)

    def call():
        return weighted_birkhoff(m, x0, None, K, n=args.n, observable=lambda x, a, p: jnp.cos(2 * jnp.pi * x[0]))

    t = time.perf_counter()
    ds = call()
    first = time.perf_counter() - t
    programs = _birkhoff._cache_size()
    times = []
    for _ in range(args.repeats):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    added = _birkhoff._cache_size() - programs
    ours = statistics.median(times)
    print(f"attnphys weighted_birkhoff: {args.starts} starts x {2 * args.n} steps")
    print(
        f"  first call {first:.2f} s (compilation included); repeated with a new lambda each time: median "
        f"{ours:.3f} s over {args.repeats}, programs compiled by the repeats: {added}"
    )
    try:
        from pynamicalsys import DiscreteDynamicalSystem
    except ImportError:
        print("pynamicalsys: not installed, not compared")
        return
    sys_ = DiscreteDynamicalSystem(model="standard map")
    obs = lambda u: np.cos(2 * np.pi * u[:, 0])  # noqa: E731
    sys_.dig(x0[0], 2 * args.n, parameters=[K], func=obs)  # numba compiles here
    t = time.perf_counter()
    theirs_dig = np.array([sys_.dig(u, 2 * args.n, parameters=[K], func=obs) for u in x0])
    theirs = time.perf_counter() - t
    ours_dig = ds["digits"].values
    both = np.isfinite(ours_dig) & np.isfinite(theirs_dig)
    regular = both & (theirs_dig > 8)
    print(f"pynamicalsys dig: the same starts and steps, {theirs:.3f} s (compiled)")
    print(f"  time ratio pynamicalsys / attnphys: {theirs / ours:.2f}")
    print(
        f"  digits on the {int(regular.sum())} regular starts (> 8 digits): largest difference "
        f"{np.max(np.abs(ours_dig[regular] - theirs_dig[regular])) if regular.any() else float('nan'):.2f}; "
        f"starts that both call chaotic (< 4 digits): {int(np.sum(both & (ours_dig < 4) & (theirs_dig < 4)))}, "
        f"that only one does: {int(np.sum(both & ((ours_dig < 4) != (theirs_dig < 4))))}"
    )


if __name__ == "__main__":
    main()
