"""Attractor census of Newton's map for z³ = 1 on a grid of starts: wall time, peak memory, basins.

The census settles the starts in chunks that fit ``--memory-budget`` (attnphys.dynamics._census.CensusOptions),
so a large grid needs no hand-made chunking; the grid sampler gives the starts in C order, so the labels
reshaped to the grid are the basin picture. The three roots' basins are exchanged by rotations of 120°,
so each holds about a third of a square grid centred on 0.

    python benchmarks/census_grid.py --n 500
    python benchmarks/census_grid.py --n 128 --memory-budget 64e6
"""

from __future__ import annotations

import argparse
import resource
import time

import jax.numpy as jnp
import numpy as np

import attnphys

attnphys.configure()

from attnphys.dynamics._census import CensusOptions, census  # noqa: E402
from attnphys.dynamics.maps import FunctionMap  # noqa: E402
from attnphys.dynamics.samplers import GridSampler  # noqa: E402


def newton_step(x, aux, p):
    """z ← z − (z³ − 1)/(3z²) in real coordinates."""
    z = x[0] + 1j * x[1]
    z2 = z - (z**3 - 1) / (3 * z**2)
    return jnp.stack([jnp.real(z2), jnp.imag(z2)]), aux


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=500, help="grid points per side")
    ap.add_argument("--memory-budget", type=float, default=float(1 << 28), help="bytes for the settle run")
    ap.add_argument("--budget", type=int, default=2_000, help="most steps per start")
    args = ap.parse_args()
    o = CensusOptions(budget=args.budget, max_period=16, block=64, memory_budget=int(args.memory_budget))
    g = GridSampler(lo=[-2.0, -2.0], hi=[2.0, 2.0], shape=(args.n, args.n))
    t0 = time.perf_counter()
    ds = census(FunctionMap(step=newton_step), jnp.asarray(0.0), g, ics=g.size, options=o)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"{args.n} x {args.n} = {g.size} starts, {o._replace(n_state=2).lanes_per_chunk()} per settle chunk")
    print(f"wall time {wall:.1f} s, peak resident memory {peak:.2f} GiB")
    frac = ds["basin_fraction"].values
    print("attractors", int(ds["n_attractors"]), "basin fractions", np.round(np.sort(frac)[::-1], 4).tolist(),
          "unsettled", float(ds["unsettled_fraction"]))


if __name__ == "__main__":
    main()
