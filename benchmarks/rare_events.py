"""Rare transitions of noisy maps: the known answers and the cost of splitting beside direct simulation (theory:
docs/theory/rare_events.md §8).

Printed, each with its wall time (compilation included): the AR(1) quasi-potential and path; the double-well
map's discrete barrier at three step sizes (its O(dt²) approach to 2ΔV = 1/2); the Maier–Stein map's least action
at β = 1 and β = 10 at two step sizes; the Hessian of the quasi-potential against the inverse stationary covariance;
the Eyring–Kramers prefactor of the map against the continuous law; then, for the double-well map, the transition
probability by splitting and by direct simulation at ε = 0.1 (both with intervals and costs in map steps), and by
splitting at small ε, where direct simulation is out of reach, with the steps direct simulation would need for the
same relative error and the mean escape time against Eyring–Kramers and against the map's exact value.

Run: python benchmarks/rare_events.py [--seed S]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import attnphys


def _timed(label: str, fn):
    t = time.perf_counter()
    out = fn()
    print(f"  [{label}: {time.perf_counter() - t:.1f} s]", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    attnphys.configure()
    from attnphys.dynamics import direct_transition, eyring_kramers, least_action_path, splitting
    from attnphys.dynamics import rare_checks as rc

    rng = np.random.default_rng(args.seed)
    print("known answers (error, tolerance)")
    e = _timed("AR(1)", lambda: rc.ar1_quasi_potential_error(rng))
    print(f"AR(1) quasi-potential and path: {e:.2e} (1e-8)")
    for dt in (0.02, 0.01, 0.005):
        m, B = rc.double_well(dt)
        ds = _timed(
            f"double well dt={dt}",
            lambda m=m, B=B, dt=dt: least_action_path(m, B, [-1.0], [0.0], dt, steps=int(10 / dt)),
        )
        print(
            f"double-well map dt = {dt}: barrier {float(ds['action']):.10f}, minus 1/2 = {float(ds['action']) - 0.5:.3e}"
        )
    for beta in (1.0, 10.0):
        for dt in (0.01, 0.005):
            S = _timed(f"Maier-Stein beta={beta} dt={dt}", lambda beta=beta, dt=dt: rc.maier_stein_action(beta, dt))
            print(f"Maier-Stein map beta = {beta:g}, dt = {dt}: least action {S:.7f}")
    e = _timed("Hessian", lambda: rc.hessian_covariance_error(rng))
    print(f"Hessian of the quasi-potential vs inverse stationary covariance: {e:.2e} (0.05)")
    dt = 0.01
    m, B = rc.double_well(dt)
    ek = eyring_kramers(m, B, [-1.0], [0.0], dt, barrier=0.5, epsilon=[0.05])
    print(
        f"Eyring-Kramers prefactor of the map at dt = {dt}: {float(ek['prefactor']) * dt:.5f} (time units); "
        f"continuous 2 pi/sqrt(2) = {2 * np.pi / np.sqrt(2):.5f}"
    )

    print("\nsplitting beside direct simulation (double-well map, A = {x <= -0.8}, B = {x >= 1/2})")
    dt = 0.05
    m, B = rc.double_well(dt)
    seed = int(rng.integers(2**31))
    eps = 0.1
    s = _timed("splitting", lambda: splitting(m, B, [-1.0], [1.0], dt, epsilon=eps, b_level=0.75, runs=8, seed=seed))
    d = _timed(
        "direct",
        lambda: direct_transition(m, B, [-1.0], [1.0], dt, epsilon=eps, b_level=0.75, trials=200_000, seed=seed),
    )
    exact = rc.double_well_exact(dt, eps, -0.79)
    print(
        f"eps = {eps}: p splitting {float(s['probability_mean']):.4e} [{float(s['probability_low']):.4e}, "
        f"{float(s['probability_high']):.4e}] (rel. error {float(s['relative_error']):.3f}, "
        f"{float(s['cost_splitting']):.3g} steps + {float(s['cost_cycles']):.3g} in cycles)"
    )
    print(
        f"          p direct    {float(d['probability']):.4e} [{float(d['probability_low']):.4e}, "
        f"{float(d['probability_high']):.4e}] (rel. error {float(d['relative_error']):.3f}, {float(d['cost']):.3g} steps)"
    )
    print(
        f"          direct cost for the splitting's error (estimated): {float(s['cost_direct_same_error']):.3g} steps"
    )
    print(
        f"          tau splitting {float(s['mean_first_passage']):.4g}, direct {float(d['mean_first_passage']):.4g}, "
        f"map exact {exact['tau']:.4g} steps"
    )
    for eps, x0, runs in ((0.04, None, 20), (0.025, -0.79, 4)):
        kw = dict(epsilon=eps, b_level=0.75, replicas=1000, runs=runs, seed=seed)
        if x0 is not None:
            kw["x0"] = [x0]
        s = _timed(f"splitting eps={eps}", lambda kw=kw: splitting(m, B, [-1.0], [1.0], dt, **kw))
        exact = rc.double_well_exact(dt, eps, -0.79 if x0 is None else x0)
        line = (
            f"eps = {eps}{'' if x0 is None else f', from x0 = {x0}'}: p {float(s['probability_mean']):.4e} "
            f"(rel. error {float(s['relative_error']):.3f}"
            + (
                ""
                if x0 is None
                else f"; exact {exact['p']:.4e}, off by {float(s['probability_mean']) / exact['p'] - 1:+.3f}"
            )
            + f"); splitting {float(s['cost_splitting']):.3g} steps, direct would need "
            f"{float(s['cost_direct_same_error']):.3g} steps for the same error "
            f"({float(s['cost_direct_same_error']) / float(s['cost_splitting']):.2g} x)"
        )
        print(line)
        if x0 is None:
            tau = float(s["mean_first_passage"]) * dt
            print(
                f"          tau {tau:.5g} (time) vs Eyring-Kramers {rc.eyring_kramers_time(eps):.5g}: "
                f"{tau / rc.eyring_kramers_time(eps) - 1:+.3f}; map exact {exact['tau'] * dt:.5g}: "
                f"{tau / (exact['tau'] * dt) - 1:+.3f}"
            )


if __name__ == "__main__":
    main()
