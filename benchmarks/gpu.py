"""The dynamical studies on whatever device JAX runs on (a GPU where one is present), with the figures to
compare against the CPU (theory: docs/theory/dmft.md §6–7; docs/theory/dynamics.md §7).

1. **The paper's bifurcation diagram with three exponents** (:func:`attnphys.dmft.bifurcation`, spec
   ``dmft.md`` §6.1): ``--num`` values of β_o in [0, 3], 175,000 steps from the published checkpoint, the
   first 100,000 discarded, the top 3 Lyapunov exponents over the rest; ``--chunk`` points per vectorised
   batch (on a GPU one batch holds the whole diagram).
2. **Basins along β_o** (:func:`attnphys.dmft.basins`): ``--basins-values`` values in [1.24, 1.30] ×
   ``--basins-ics`` starts × ``--basins-steps`` steps.
3. **Grid basins** of Newton's map for z³ = 1 (:func:`attnphys.dynamics.census` on an n × n grid).

Each is called once to compile (a short run with the same shapes is not the same program, so the whole
run is timed twice where ``--repeat`` is given; otherwise the first call, compilation included, is
reported with the compilation time measured separately by JAX's own log). The figures printed: device,
wall time, point-steps per second, regime counts / attractors (to check the device gives the same
science as the CPU). ``--json PATH`` also writes them as JSON. ``--quick`` runs tiny sizes (for a check
on a laptop). Run the same script with ``JAX_PLATFORMS=cpu`` for the CPU side.

    python benchmarks/gpu.py [--quick] [--num 4001] [--chunk 4096] [--skip-diagram] [--skip-basins]
        [--skip-grid] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import attnphys


def _device() -> str:
    import jax

    d = jax.devices()[0]
    return f"{len(jax.devices())} x {d.platform} {d.device_kind}"


def diagram(num: int, steps: int, transient: int, chunk: int, exponents: int) -> dict:
    import numpy as np

    from attnphys.dmft import bifurcation, preset
    from attnphys.dynamics.classify import REGIMES

    betas = np.linspace(0.0, 3.0, num)
    t0 = time.perf_counter()
    ds = bifurcation(
        preset("paper"),
        {"beta_o": betas},
        start="checkpoint",
        steps=steps,
        transient=transient,
        exponents=exponents,
        chunk=chunk,
        progress=True,
    )
    wall = time.perf_counter() - t0
    counts = {REGIMES[c]: int(n) for c, n in zip(*np.unique(ds.regime.values, return_counts=True))}
    out = {
        "what": f"bifurcation {num} x {steps} steps, {exponents} exponents, chunk {chunk}",
        "wall_s": wall,
        "point_steps_per_s": num * steps / wall,
        "regimes": counts,
        # per value, to compare devices point by point
        "regime_per_value": ds.regime.values.astype(int).tolist(),
    }
    print(
        f"[{_device()}] {out['what']}: {wall:.1f} s, {out['point_steps_per_s']:.3e} point-steps/s; regimes {counts}",
        flush=True,
    )
    return out


def basins_run(values: int, ics: int, steps: int, chunk: int) -> dict:
    import numpy as np

    from attnphys.dmft import basins, preset

    t0 = time.perf_counter()
    res = basins(
        preset("paper"),
        {"beta_o": np.linspace(1.24, 1.30, values)},
        ics=ics,
        steps=steps,
        transient=steps // 2,
        chunk=chunk,
        start="checkpoint",
        progress=True,
    )
    wall = time.perf_counter() - t0
    lane_steps = float(res.ic_steps.sum())
    out = {
        "what": f"basins {values} x {ics} starts x {steps} steps, chunk {chunk}",
        "wall_s": wall,
        "lane_steps_per_s": lane_steps / wall,
        "tracks": int(res.sizes.get("track_id", 0)),
        "n_attractors_total": int(res.n_attractors.sum()),
    }
    print(
        f"[{_device()}] {out['what']}: {wall:.1f} s, {out['lane_steps_per_s']:.3e} lane-steps/s; "
        f"tracks {out['tracks']}, attractors summed over values {out['n_attractors_total']}",
        flush=True,
    )
    return out


def grid(n: int) -> dict:
    import jax.numpy as jnp
    import numpy as np

    from attnphys.dynamics import FunctionMap, census
    from attnphys.dynamics.samplers import GridSampler

    def newton_step(x, aux, p):
        z = x[0] + 1j * x[1]
        z2 = z - (z**3 - 1) / (3 * z**2)
        return jnp.stack([jnp.real(z2), jnp.imag(z2)]), aux

    g = GridSampler(lo=[-2.0, -2.0], hi=[2.0, 2.0], shape=(n, n))
    walls = []
    for _ in range(2):
        t0 = time.perf_counter()
        ds = census(FunctionMap(step=newton_step), jnp.asarray(0.0), g, ics=g.size)
        walls.append(time.perf_counter() - t0)
    frac = np.round(np.sort(ds["basin_fraction"].values)[::-1], 4).tolist()
    out = {
        "what": f"grid basins Newton {n}x{n}, default options",
        "wall_s": walls[1],
        "first_call_s": walls[0],
        "basins": frac,
    }
    print(
        f"[{_device()}] {out['what']}: {walls[1]:.2f} s compiled ({walls[0]:.2f} s first call); basins {frac}",
        flush=True,
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, for a check on any machine")
    ap.add_argument("--num", type=int, default=4001)
    ap.add_argument("--steps", type=int, default=175_000)
    ap.add_argument("--transient", type=int, default=100_000)
    ap.add_argument("--exponents", type=int, default=3)
    ap.add_argument("--chunk", type=int, default=4096)
    ap.add_argument("--basins-values", type=int, default=401)
    ap.add_argument("--basins-ics", type=int, default=128)
    ap.add_argument("--basins-steps", type=int, default=40_000)
    ap.add_argument("--basins-chunk", type=int, default=401)
    ap.add_argument("--grid", type=int, default=500)
    ap.add_argument("--skip-diagram", action="store_true")
    ap.add_argument("--skip-basins", action="store_true")
    ap.add_argument("--skip-grid", action="store_true")
    ap.add_argument("--json", default=None)
    ap.add_argument("--compilation-cache", default=None)
    ap.add_argument(
        "--stacks-every",
        type=float,
        default=None,
        metavar="S",
        help="print every thread's Python stack every S seconds (where a long run spends its time)",
    )
    args = ap.parse_args()
    if args.stacks_every:
        import faulthandler
        import sys

        faulthandler.dump_traceback_later(args.stacks_every, repeat=True, file=sys.stderr)
    if args.quick:
        args.num, args.steps, args.transient, args.chunk = 16, 2000, 1000, 16
        args.basins_values, args.basins_ics, args.basins_steps, args.basins_chunk = 4, 8, 2000, 4
        args.grid = 64
    attnphys.configure(compilation_cache=args.compilation_cache)
    print(f"device: {_device()}; load average {os.getloadavg()[0]:.1f}", flush=True)
    results: dict = {"device": _device(), "args": vars(args), "attnphys": attnphys.__version__}
    if not args.skip_diagram:
        results["diagram"] = diagram(args.num, args.steps, args.transient, args.chunk, args.exponents)
    if not args.skip_basins:
        results["basins"] = basins_run(args.basins_values, args.basins_ics, args.basins_steps, args.basins_chunk)
    if not args.skip_grid:
        results["grid"] = grid(args.grid)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
