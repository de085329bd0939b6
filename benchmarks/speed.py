"""Where researchers wait, side by side in one run: grid basins, small-map kernels, the first result
(theory: docs/theory/dynamics.md §2, §3, §7; docs/theory/dmft.md §3.7).

1. **Grid basins**: the attractor census of Newton's map for z³ = 1 on an n × n grid of starts
   (:func:`attnphys.dynamics.census` with a :class:`~attnphys.dynamics.samplers.GridSampler`), with the
   default options and with options tuned to the map (``max_period=8, block=32, budget=2048``), each
   called twice (the first call compiles; printed beside); the labels of the two must be identical. Beside
   them the peer, ``pynamicalsys`` (when installed; it is no dependency of attnphys): its basin computation for
   maps, ``DiscreteDynamicalSystem.escape_analysis(u, max_time, exits=roots, escape="entering",
   hole_size=h)`` — the index of the first small square around a root that the orbit of u enters — called
   for every start of the same grid (its Newton map compiled by numba; the best of two passes after a
   warm-up start), its labels compared with ours up to a relabelling, and the ratio of its time to ours.
2. **Small-map kernels**: the Hénon map batched over B parameter values: an orbit diagram
   (:func:`~attnphys.dynamics.orbit_sweep` without tangent vectors), the same with both exponents (k = 2),
   and :func:`~attnphys.dynamics.lyapunov_spectrum` with ``batch=True``, in point-steps/s (best of 2,
   compiled; also per CPU-second of the process, which a loaded machine changes less), with the roofline fraction: flops per point-step from XLA's cost analysis of one vmapped
   step of the run (tangent step and QR for k = 2) times the rate, over a measured float64 matmul peak.
3. **Attractors along a parameter**: the logistic map at 401 values of r × 128 starts × at most 40,000
   steps, as one :func:`~attnphys.dynamics.census_batch` and as :func:`~attnphys.dynamics.global_continuation`
   (the same censuses, matched by basin overlap, seeded, with a quantity).
4. **The first result**: one 175,000-step ``attnphys dmft trajectory``, whole process, with an empty
   compilation cache and repeated with the cache it filled (wall and CPU time of the child process).

Every figure depends on the load of the machine, printed with it: compare lines of one run.

    python benchmarks/speed.py [--n 500] [--batch 4096] [--steps 2000] [--continuation-values 401]
        [--skip-grid] [--skip-startup] [--skip-continuation]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import attnphys

attnphys.configure()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from roofline import matmul_peak  # noqa: E402  (the sibling script: benchmarks/ is on the path of a script run from it)

from attnphys.dynamics import CensusOptions, FunctionMap, OrbitSpec, census, lyapunov_spectrum, orbit_sweep  # noqa: E402
from attnphys.dynamics.maps import HENON  # noqa: E402
from attnphys.dynamics.samplers import GridSampler  # noqa: E402

TUNED = dict(max_period=8, block=32, budget=2048)
"""Options tuned by hand to Newton's map (short cycles, fast convergence)."""


def newton_step(x, aux, p):
    """z ← z − (z³ − 1)/(3z²) in real coordinates."""
    z = x[0] + 1j * x[1]
    z2 = z - (z**3 - 1) / (3 * z**2)
    return jnp.stack([jnp.real(z2), jnp.imag(z2)]), aux


ROOTS = np.array([[1.0, 0.0], [-0.5, np.sqrt(3) / 2], [-0.5, -np.sqrt(3) / 2]])
"""The three roots of z³ = 1: Newton's map has one attractor at each."""


def peer_basins(g: GridSampler, max_time: int = 1000, hole: float = 1e-3):
    """pynamicalsys's escape basins of Newton's map on the starts of ``g``: (labels (n·n,) with −1 for a start
    that entered no square within ``max_time`` steps, seconds of the best of two passes), or None when
    pynamicalsys is not installed."""
    try:
        from numba import njit
        from pynamicalsys import DiscreteDynamicalSystem
    except ImportError:
        return None

    @njit
    def newton(u, p):
        z = u[0] + 1j * u[1]
        z2 = z - (z**3 - 1) / (3 * z**2)
        return np.array([z2.real, z2.imag])

    ds = DiscreteDynamicalSystem(mapping=newton, system_dimension=2, number_of_parameters=0)
    starts = g.states()
    none = np.zeros(0)

    def run():
        return np.array(
            [
                ds.escape_analysis(u, max_time, ROOTS, parameters=none, escape="entering", hole_size=hole)[0]
                for u in starts
            ]
        )

    ds.escape_analysis(starts[0], max_time, ROOTS, parameters=none, escape="entering", hole_size=hole)  # compiles
    best, labels = np.inf, None
    for _ in range(2):
        t0 = time.perf_counter()
        labels = run()
        best = min(best, time.perf_counter() - t0)
    return labels, best


def same_up_to_relabelling(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two labellings of the same starts are one bijection apart (−1, unsettled, maps to −1)."""
    pairs = np.unique(np.stack([a, b], 1), axis=0)
    return len(np.unique(pairs[:, 0])) == len(pairs) == len(np.unique(pairs[:, 1])) and all(
        (x < 0) == (y < 0) for x, y in pairs
    )


def grid_basins(n: int) -> None:
    g = GridSampler(lo=[-2.0, -2.0], hi=[2.0, 2.0], shape=(n, n))
    m = FunctionMap(step=newton_step)
    labels, times = {}, {}
    for name, opts in (("defaults", CensusOptions()), ("tuned", CensusOptions(**TUNED))):
        walls = []
        for _ in range(2):  # the first call compiles what the options need, the second runs compiled
            t0 = time.perf_counter()
            ds = census(m, jnp.asarray(0.0), g, ics=g.size, options=opts)
            walls.append(time.perf_counter() - t0)
        labels[name] = ds["label"].values
        times[name] = walls[1]
        frac = np.round(np.sort(ds["basin_fraction"].values)[::-1], 4).tolist()
        print(
            f"grid basins {n}x{n}, {name:8s}: {walls[1]:7.2f} s compiled ({walls[0]:.2f} s first call)  "
            f"basins {frac}  unsettled {float(ds['unsettled_fraction']):.4f}",
            flush=True,
        )
    print(f"grid basins: labels of defaults and tuned identical: {np.array_equal(labels['defaults'], labels['tuned'])}")
    peer = peer_basins(g)
    if peer is None:
        print("grid basins, pynamicalsys: not installed, not compared")
        return
    plab, pt = peer
    import pynamicalsys

    print(
        f"grid basins {n}x{n}, pynamicalsys {pynamicalsys.__version__} escape_analysis per start: {pt:7.2f} s  "
        f"(not entered: {int(np.sum(plab < 0))})",
        flush=True,
    )
    for name in ("defaults", "tuned"):
        same = same_up_to_relabelling(labels[name], plab)
        print(
            f"grid basins, {name:8s} vs pynamicalsys: {pt / times[name]:5.2f}x its speed, labels identical up to "
            f"relabelling: {same}",
            flush=True,
        )


def _flops_per_step(B: int, k: int) -> float:
    """XLA's flop count of one vmapped Hénon step (with k tangent vectors and their QR), per point."""
    from attnphys.dynamics._lyapunov import reorthonormalise, zero_acc

    def one(x, p, Q):
        if not k:
            return HENON.step(x, None, p)[0]
        x2, _, JQ = HENON.tangent(x, None, p, Q)
        Q2, acc = reorthonormalise(JQ, zero_acc(k, x.dtype))
        return x2, Q2, acc.S

    x = jnp.full((B, 2), 0.1)
    p = jnp.tile(jnp.array([[1.4, 0.3]]), (B, 1))
    Q = jnp.tile(jnp.eye(2, k)[None], (B, 1, 1))
    ca = jax.jit(jax.vmap(one)).lower(x, p, Q).compile().cost_analysis()
    ca = ca[0] if isinstance(ca, (list, tuple)) else ca
    return float((ca or {}).get("flops", np.nan)) / B


def kernels(B: int, T: int, peak: float) -> None:
    a = np.linspace(1.0, 1.4, B)
    params = jnp.asarray(np.stack([a, np.full(B, 0.3)], 1))
    x0 = jnp.tile(jnp.array([[0.1, 0.1]]), (B, 1))

    def rate(f, steps):
        """(point-steps per second of wall time, per CPU-second of this process), best of 2 compiled runs."""
        jax.block_until_ready(f())
        best, cpu = np.inf, np.inf
        for _ in range(2):
            t0, c0 = time.perf_counter(), time.process_time()
            jax.block_until_ready(f())
            best, cpu = min(best, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
        return B * steps / best, B * steps / cpu

    runs = [
        (
            "orbit diagram (k = 0)",
            0,
            lambda: orbit_sweep(HENON, OrbitSpec(steps=T, transient=T, n_orbit=200), x0, None, params),
            2 * T,
        ),
        (
            "orbit diagram with spectra (k = 2)",
            2,
            lambda: orbit_sweep(HENON, OrbitSpec(steps=T, transient=T, k=2, n_orbit=200), x0, None, params),
            2 * T,
        ),
        ("lyapunov_spectrum, batch", 2, lambda: lyapunov_spectrum(HENON, x0, None, params, steps=T, batch=True), T),
    ]
    cpu_rates = {}
    for label, k, f, steps in runs:
        r, rc = rate(f, steps)
        cpu_rates[label] = rc
        fl = _flops_per_step(B, k)
        print(
            f"Henon {label:36s} B = {B}: {r:10.3e} point-steps/s  ({fl:.0f} flop/point-step: "
            f"{100 * r * fl / peak:.2f} % of the {peak / 1e9:.1f} GFLOP/s matmul peak); "
            f"{rc:.3e} per CPU-second",
            flush=True,
        )
    # the orbit diagram's T transient steps carry no tangent vectors: its tangent steps alone are compared
    r0, r2, rs = (cpu_rates[label] for label, *_ in runs)
    tangent_phase = 1.0 / (2.0 / r2 - 1.0 / r0)
    print(
        f"Henon per CPU-second: lyapunov_spectrum {rs:.3e} vs the orbit diagram's steps with spectra "
        f"{tangent_phase:.3e} (ratio {rs / tangent_phase:.2f})",
        flush=True,
    )


def continuation(n_values: int, ics: int, steps: int) -> None:
    """Attractors along a parameter: the logistic map at n_values values of r in [2.9, 4] × ics starts ×
    at most ``steps`` steps, as one census_batch and as global_continuation (the same censuses, then matching
    by basin overlap, seeds and a quantity), each called twice (the first call compiles)."""
    import attnphys.dynamics as dyn
    from attnphys.dynamics import census_batch
    from attnphys.dynamics.maps import LOGISTIC

    rs = np.linspace(2.9, 4.0, n_values)
    opts = CensusOptions(budget=steps)
    runs = [("census_batch", lambda: census_batch(LOGISTIC, rs, ics=ics, options=opts, param_values=rs))]
    if "global_continuation" in dir(dyn):
        runs.append(
            (
                "global_continuation",
                lambda: dyn.global_continuation(LOGISTIC, rs, ics=ics, options=opts, param_values=rs, quantity=np.mean),
            )
        )
    for label, f in runs:
        walls, cpus = [], []
        for _ in range(2):
            t0, c0 = time.perf_counter(), time.process_time()
            ds = f()
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
        print(
            f"attractors along r: {n_values} x {ics} starts x <= {steps} steps, {label:19s}: {walls[1]:7.2f} s "
            f"compiled, {cpus[1]:.1f} CPU-s ({walls[0]:.2f} s first call); attractor dim {ds.sizes['attractor']}",
            flush=True,
        )
    if len(runs) == 1:
        print("attractors along r: global_continuation not in this version")


def startup(steps: int) -> None:
    exe = str(Path(sys.executable).with_name("attnphys"))
    cmd = [exe] if Path(exe).exists() else [sys.executable, "-m", "attnphys"]
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, ATTNPHYS_COMPILATION_CACHE=str(Path(tmp) / "xla"))
        for label in ("empty cache", "repeat", "repeat"):
            out = Path(tmp) / f"t-{time.perf_counter_ns()}.zarr"
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            res = subprocess.run(
                [
                    *cmd,
                    "dmft",
                    "trajectory",
                    "--steps",
                    str(steps),
                    "--transient",
                    str(steps - 1000),
                    "--start",
                    "checkpoint",
                    "--out",
                    str(out),
                ],
                capture_output=True,
                text=True,
                env=env,
            )
            wall = time.perf_counter() - t0
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
            ok = "ok" if res.returncode == 0 else f"FAILED: {res.stderr[-300:]}"
            print(
                f"dmft trajectory, {steps} steps, whole process, {label:11s}: {wall:6.2f} s, {cpu:.2f} CPU-s "
                f"(target <= 1.5 s; load average {os.getloadavg()[0]:.1f}) ({ok})",
                flush=True,
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=500, help="grid points per side of the basin census")
    ap.add_argument("--batch", type=int, default=4096, help="Hénon parameter values run at once")
    ap.add_argument("--steps", type=int, default=2000, help="steps of the Hénon runs (orbit diagrams: twice)")
    ap.add_argument("--trajectory-steps", type=int, default=175_000)
    ap.add_argument("--skip-grid", action="store_true")
    ap.add_argument("--skip-startup", action="store_true")
    ap.add_argument("--continuation-values", type=int, default=401, help="values of r along the parameter")
    ap.add_argument("--continuation-ics", type=int, default=128)
    ap.add_argument("--continuation-steps", type=int, default=40_000)
    ap.add_argument("--skip-continuation", action="store_true")
    args = ap.parse_args()
    print(
        f"jax {jax.__version__}; {len(jax.devices())} x {jax.devices()[0].platform}; "
        f"load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    if not args.skip_grid:
        grid_basins(args.n)
    kernels(args.batch, args.steps, matmul_peak())
    if not args.skip_continuation:
        continuation(args.continuation_values, args.continuation_ics, args.continuation_steps)
    if not args.skip_startup:
        startup(args.trajectory_steps)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
