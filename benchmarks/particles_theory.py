"""The particle-flow reproductions at full size, timed, and critical attention scaling at n = 10⁵ tokens
with its peak memory (target on a 2-core machine: each figure <= 2 min; the memory of n = 10⁵ bounded by
the cloud and one block of scores, O(n·d + chunk·n), never the n × n matrix).

Measured on the shared 2-core development machine under heavy load (about a sixth of a core): n = 10⁵, d = 128,
chunk = 1024, three values of γ: 1733 s, peak resident memory 1214 MiB (the cloud 49 MiB, one score block
391 MiB, the rest the softmax's temporaries and the runtime); a smaller ``--chunk`` lowers the peak.

    python benchmarks/particles_theory.py [--skip-figures] [--figures NAME ...] [--skip-long] [--tokens 100000]
        [--dim 128] [--chunk 1024]

The long-context run is a separate process, so that its peak resident memory (``ru_maxrss``) is its own; it
prints the measured and predicted output cosines at γ = γ_c/2, γ_c, 3γ_c/2 (ρ = 0.5).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

LONG = """
import json, resource, sys, time
import numpy as np
from attnphys.runtime import configure
configure(x64=True, host_devices=1)
from attnphys.clouds import critical_scaling
n, dim, chunk = (int(a) for a in sys.argv[1:4])
t = time.perf_counter()
ds = critical_scaling([1.0, 2.0, 3.0], [n], rho=0.5, dim=dim, chunk=chunk)
wall = time.perf_counter() - t
print(json.dumps(dict(seconds=wall, peak_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    gamma=ds.gamma.values.tolist(), measured=ds.measured.values[:, 0].tolist(),
    predicted=ds.predicted.values[:, 0].tolist(), limit=ds.limit.values.tolist())))
"""


def particle_figures() -> tuple[str, ...]:
    """The particle figures of the reproduce registry (every figure named ``particles-…``)."""
    from attnphys.reproduce import FIGURES

    return tuple(name for name in FIGURES if name.startswith("particles-"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--skip-figures", action="store_true")
    ap.add_argument("--tokens", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--chunk", type=int, default=1024)
    ap.add_argument("--figures", nargs="*", default=None, help="particle figures to time (default: all)")
    ap.add_argument("--skip-long", action="store_true", help="skip the long-context critical-scaling run")
    args = ap.parse_args()

    if not args.skip_figures:
        from attnphys.runtime import configure

        configure(x64=True, host_devices=1)
        from attnphys.reproduce import FIGURES

        for name in args.figures or particle_figures():
            fig = FIGURES[name]
            t = time.perf_counter()
            ds = fig.compute(fig.settings(False), progress=False)
            print(f"{name}: {time.perf_counter() - t:.1f} s (full settings)")
            print("   " + fig.caption(ds).replace("\n", "\n   "))
    if args.skip_long:
        return
    out = subprocess.run(
        [sys.executable, "-c", LONG, str(args.tokens), str(args.dim), str(args.chunk)],
        capture_output=True,
        text=True,
        check=True,
    )
    r = json.loads(out.stdout.strip().splitlines()[-1])
    x_mib = args.tokens * args.dim * 4 / 2**20
    print(
        f"critical scaling, n = {args.tokens:,}, d = {args.dim}, chunk = {args.chunk}: {r['seconds']:.1f} s, "
        f"peak resident memory {r['peak_mib']:.0f} MiB (the cloud itself {x_mib:.0f} MiB, one score block "
        f"{args.chunk * args.tokens * 4 / 2**20:.0f} MiB)"
    )
    for g, m, p, lim in zip(r["gamma"], r["measured"], r["predicted"], r["limit"]):
        print(f"   γ = {g:g}: measured {m:.4f}, equiangular closed form {p:.4f}, n → ∞ limit {lim:.4f}")


if __name__ == "__main__":
    main()
