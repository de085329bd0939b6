"""The 0–1 test for chaos (theory: docs/theory/dynamics.md §4.3) on a batch of series: what classifying
an orbit diagram costs per point (the classification runs it on every point's recorded window).

Times ``attnphys.dynamics.classify.zero_one_test`` on ``--series`` series of ``--length`` points (random
walks plus a sine, so that K is neither 0 nor 1), best of ``--repeat``, and prints the seconds, the
milliseconds per series and a checksum of K; run the same script on another version of the package
(``PYTHONPATH=<other>/src``) to compare times and K.

    python benchmarks/zero_one.py [--series 2048] [--length 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--series", type=int, default=2048)
    ap.add_argument("--length", type=int, default=1000, help="points per series (the orbit window n_orbit)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    import attnphys
    from attnphys.dynamics.classify import zero_one_test

    rng = np.random.default_rng(0)
    t = np.arange(args.length)
    phi = np.cumsum(rng.normal(size=(args.series, args.length)), axis=-1) * 0.01 + np.sin(0.3 * t)
    best, K = float("inf"), None
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        K = zero_one_test(phi)
        best = min(best, time.perf_counter() - t0)
    assert K is not None
    print(
        f"attnphys {attnphys.__version__} from {os.path.dirname(attnphys.__file__)}; load average "
        f"{os.getloadavg()[0]:.2f}"
    )
    print(
        f"zero_one_test, {args.series} series of {args.length}: {best:.2f} s "
        f"({best / args.series * 1e3:.3f} ms per series); mean K {np.nanmean(K):.12f}"
    )


if __name__ == "__main__":
    main()
