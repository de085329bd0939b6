"""Chaos indicators and invariant manifolds (theory: docs/theory/dynamics.md §11): the numbers they give on maps
with known answers, and what each costs (the second call, compiled).

Printed, one line each: the mean and spread of finite-time exponents of the logistic map at r = 4 (ln 2 and
π/(√6 τ)); the decay rate of GALI_2 on the standard map's chaotic sea at K = 6 against λ1 − λ2, and its
power-law exponent on a regular orbit at K = 0.5 (−2); the weighted Birkhoff error of a golden rotation against
I0(1), with the plain mean's error and the digits; the recurrence-time entropy of periodic and chaotic logistic
orbits; the Hénon saddle's manifolds (seam, Newton residual, distance from the exact-inverse curve).

    python benchmarks/indicators.py [--starts 256]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def timed(fn):
    """(result, seconds of the second call)."""
    fn()
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--starts", type=int, default=256, help="starts per batch")
    args = ap.parse_args()

    import attnphys

    attnphys.configure()
    import jax.numpy as jnp
    from scipy.special import i0

    from attnphys.dynamics import (
        alignment_indices,
        autonomous,
        finite_time_lyapunov,
        invariant_manifold,
        recurrence_time_entropy,
        weighted_birkhoff,
    )
    from attnphys.dynamics.maps import HENON, LOGISTIC, ROTATION

    def standard(x, K):
        p = x[1] + K * jnp.sin(x[0])
        return jnp.stack([jnp.mod(x[0] + p, 2 * np.pi), jnp.mod(p + np.pi, 2 * np.pi) - np.pi])

    std_map = autonomous(standard)
    B = args.starts
    rng = np.random.default_rng(0)

    x = jnp.asarray(rng.uniform(0.05, 0.95, (B, 1)))
    ds, s = timed(
        lambda: finite_time_lyapunov(LOGISTIC, x, None, jnp.asarray(4.0), window=100, windows=100, transient=100)
    )
    spread = float(np.sqrt((ds["std"].values ** 2).mean()))
    print(
        f"FTLE logistic r=4, {B} starts x 100 windows of 100: mean {float(ds['ftle'].mean()):.5f} (ln 2 = "
        f"{np.log(2):.5f}), std·τ {spread * 100:.3f} (π/√6 = {np.pi / np.sqrt(6):.3f}); {B * 10_000 / s:.3g} steps/s"
    )

    xs = jnp.asarray(np.c_[rng.uniform(0, 2 * np.pi, B), rng.uniform(-np.pi, np.pi, B)])
    lam = finite_time_lyapunov(std_map, xs[:1], None, jnp.asarray(6.0), window=100_000, align=100, exponents=2)
    l1, l2 = lam["mean"].values[0]
    ds, s = timed(lambda: alignment_indices(std_map, xs, None, jnp.asarray(6.0), steps=10))
    rate = -np.polyfit(ds["time"].values[2:], np.log(ds["gali"].values[:, 2:, 0]).mean(0), 1)[0]
    print(f"GALI_2 standard map K=6, {B} starts: decay rate {rate:.4f}, λ1 − λ2 = {l1 - l2:.4f}")
    reg, s = timed(
        lambda: alignment_indices(std_map, jnp.array([0.5, 1.0]), None, jnp.asarray(0.5), steps=100_000, every=100)
    )
    t, g = reg["time"].values, reg["gali"].values[0, :, 0]
    slope = np.polyfit(np.log(t[100:]), np.log(g[100:]), 1)[0]
    print(f"GALI_2 standard map K=0.5 regular orbit, 1e5 steps: power {slope:.4f} (law −2); {s:.2f} s")

    ds, s = timed(
        lambda: weighted_birkhoff(
            ROTATION,
            jnp.array([1.0, 0.0]),
            None,
            jnp.asarray((np.sqrt(5) - 1) / 2),
            n=4000,
            observable=lambda x, a, p: jnp.exp(x[0]),
        )
    )
    err, plain = float(ds["average"].values[0, 0] - i0(1.0)), float(ds["plain"].values[0, 0] - i0(1.0))
    print(
        f"weighted Birkhoff golden rotation N=4000: error {err:.2e} (plain {plain:.2e}), digits {float(ds['digits'][0]):.2f}"
    )
    ds = weighted_birkhoff(LOGISTIC, jnp.array([0.3]), None, jnp.asarray(4.0), n=4000, transient=100)
    print(f"weighted Birkhoff logistic r=4 N=4000: digits {float(ds['digits'][0]):.2f}")

    for r in (3.2, 3.5, 3.83, 4.0):
        ds, s = timed(lambda r=r: recurrence_time_entropy(LOGISTIC, jnp.array([0.3]), None, jnp.asarray(r), n=1000))
        print(f"recurrence-time entropy logistic r={r}, n=1000: {float(ds['entropy'][0]):.4f} nats; {s:.2f} s")
    ds = recurrence_time_entropy(HENON, jnp.array([0.1, 0.1]), None, jnp.array([1.4, 0.3]), n=1000)
    print(f"recurrence-time entropy Hénon (1.4, 0.3), n=1000: {float(ds['entropy'][0]):.4f} nats")

    P = jnp.array([1.4, 0.3])

    def inverse(z):
        u = z[1] / 0.3
        return jnp.stack([u, z[0] - 1 + 1.4 * u**2])

    u, s = timed(lambda: invariant_manifold(HENON, jnp.array([0.6, 0.2]), P, pieces=10, points=500, delta=1e-4))
    print(f"Hénon W^u 10 pieces x 500: seam {u.attrs['seam']:.2e}, largest gap {u.attrs['max_gap']:.2e}; {s:.2f} s")
    st = invariant_manifold(HENON, jnp.array([0.6, 0.2]), P, kind="stable", pieces=6)
    ex = invariant_manifold(HENON, jnp.array([0.6, 0.2]), P, kind="stable", pieces=6, inverse=inverse)
    diff = float(np.abs(st["points"].values - ex["points"].values).max())
    print(f"Hénon W^s 6 pieces: Newton residual {st.attrs['max_residual']:.2e}, vs exact inverse {diff:.2e}")


if __name__ == "__main__":
    main()
