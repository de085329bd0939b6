"""Where a step of the DMFT engine spends its time: the compiled kernels run per step, from a profiler trace
(theory: docs/theory/dmft.md §3.7, §6.3; docs/theory/dynamics.md §2).

For the paper preset at batch B (default 1024), float64, split over all JAX devices as the library does:

* ``plain``: the engine's unrecorded steps (:func:`attnphys.dmft.simulate.run_batch`, the transient of
  every diagram);
* ``orbit k=K``: the recorded part of an orbit diagram (:func:`attnphys.dynamics.orbits.orbit_sweep` with
  observations, fingerprints, sections and K tangent vectors re-orthonormalised every ``--reortho-every``
  steps, 1 by default).

Each is run for T and 3T steps and the difference divided by 2T, so compilation, transfers and everything
outside the step loop cancel. Printed: the kernels launched per step and device, the time per
trajectory-step on one core and the rate over all devices (both untraced, best of ``--repeat``), and the
kinds of kernel (the fusion's name without its number) with the largest share of the kernel time, from
``jax.profiler`` traces of the same runs (the profiler slows each launch down; shares, not times, are read
from it). Kernels are the compiled HLO instructions the runtime launches (lower-case names in the trace);
runtime events and loops are not counted.

    python benchmarks/kernels.py [--batch 1024] [--steps 1000] [--k 0 3 12] [--reortho-every 8] [--top 6]
"""

from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import os
import re
import tempfile
import time

from attnphys.runtime import configure

_KERNEL = re.compile(r"[a-z][a-z0-9_\-]*(\.\d+)?")
_NOT_KERNELS = ("while", "conditional", "call")


def _kernels(trace_dir: str) -> tuple[collections.Counter, collections.Counter]:
    """Launches and total microseconds per kernel name in the trace written to ``trace_dir``."""
    (path,) = glob.glob(os.path.join(trace_dir, "**", "*.trace.json.gz"), recursive=True)
    with gzip.open(path) as fh:
        events = json.load(fh)["traceEvents"]
    count: collections.Counter = collections.Counter()
    micros: collections.Counter = collections.Counter()
    for e in events:
        name = e.get("name", "")
        if e.get("ph") == "X" and _KERNEL.fullmatch(name) and not name.startswith(_NOT_KERNELS):
            count[name] += 1
            micros[name] += e["dur"]
    return count, micros


def _traced(fn) -> tuple[collections.Counter, collections.Counter]:
    """Launches and microseconds per kernel of one call of ``fn`` (compiled already)."""
    import jax

    with tempfile.TemporaryDirectory() as d:
        jax.profiler.start_trace(d)
        jax.block_until_ready(fn())
        jax.profiler.stop_trace()
        return _kernels(d)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=1000, help="T: runs of T and 3T steps are differenced")
    ap.add_argument("--k", type=int, nargs="+", default=[0, 3], help="tangent vectors of the orbit runs")
    ap.add_argument("--reortho-every", type=int, default=1, metavar="DELTA",
                    help="QR of the tangent vectors every DELTA steps in the orbit runs")
    ap.add_argument("--top", type=int, default=6, help="kinds of kernel listed per run")
    ap.add_argument("--repeat", type=int, default=2, help="timed untraced runs: best of this many")
    ap.add_argument("--devices", type=int, default=os.cpu_count())
    args = ap.parse_args()
    configure(x64=True, host_devices=args.devices)

    import jax
    import numpy as np

    from attnphys.dmft import preset
    from attnphys.dmft.model import DMFTModel
    from attnphys.dmft.simulate import Schedule, run_batch
    from attnphys.dmft.tasks import orbit_spec
    from attnphys.dynamics.orbits import orbit_sweep

    cfg = preset("paper")
    model = DMFTModel.of(cfg)
    B, T = args.batch, args.steps
    n_dev = len(jax.devices())
    sc = model.scalars({"beta_o": np.linspace(0.0, 3.0, B)})
    win = model.windows_after("checkpoint", sc, 2000)
    m = model.map("mo_se")
    x0, aux0 = m.state(win)
    print(
        f"jax {jax.__version__}; devices: {n_dev} x {jax.devices()[0].platform}; paper preset, batch {B}; "
        f"runs of {T} and {3 * T} steps differenced; load average {os.getloadavg()[0]:.2f}"
    )

    def plain(steps):
        sched = Schedule(steps=steps, transient=steps, record=())
        return lambda: run_batch(model.couplings, sc, win, sched, model.convention, check=False)

    def orbit(k):
        def run(steps):
            spec = orbit_spec(cfg, steps=steps, transient=0, k=k, n_orbit=min(T, 1000),
                              reortho_every=args.reortho_every)
            return lambda: orbit_sweep(m, spec, x0, aux0, sc, shared=model.couplings)

        return run

    runs = [("plain", plain)] + [(f"orbit k={k}", orbit(k)) for k in args.k]
    print(
        f"\n{'run':>12} {'kernels/step':>12} {'ns/traj-step':>12} {'traj-steps/s':>13}  "
        "largest shares of the kernel time (kind: kernels per step, share)"
    )
    for label, make in runs:
        walls = []
        for steps in (T, 3 * T):
            fn = make(steps)
            jax.block_until_ready(fn())  # compiled
            best = float("inf")
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                jax.block_until_ready(fn())
                best = min(best, time.perf_counter() - t0)
            walls.append(best)
        step_s = (walls[1] - walls[0]) / (2 * T)  # one step of the whole batch, untraced
        c1, u1 = _traced(make(T))
        c3, u3 = _traced(make(3 * T))
        kinds_n: collections.Counter = collections.Counter()
        kinds_us: collections.Counter = collections.Counter()
        for n in c3:
            launches = (c3[n] - c1.get(n, 0)) / (2 * T * n_dev)
            if launches > 0:
                kind = re.sub(r"\.\d+$", "", n)
                kinds_n[kind] += launches
                kinds_us[kind] += (u3[n] - u1.get(n, 0)) / (2 * T * n_dev)
        total = sum(kinds_us.values())
        shares = ", ".join(
            f"{kind}: {kinds_n[kind]:.1f}, {100 * t / total:.0f}%" for kind, t in kinds_us.most_common(args.top)
        )
        print(
            f"{label:>12} {sum(kinds_n.values()):>12.1f} {1e9 * step_s * n_dev / B:>12.1f} {B / step_s:>13.3e}  "
            f"{shares}",
            flush=True,
        )
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
