"""Boundaries of the paper network's phase diagram in (β_o, β_att), continued by
:func:`attnphys.dynamics.bifurcation_curve` (theory: docs/theory/dynamics.md §9), against a grid phase
diagram over the same plane.

``--curve ns`` (default): the period-4 orbit that the published checkpoint settles on at (1.24, 2.2) loses
stability in a Neimark–Sacker bifurcation (``dmft orbit-continuation`` locates it): the boundary between the
periodic and the quasi-periodic regime. ``--curve fold``: the period-16 orbit that the checkpoint settles on
at (1.25, 2.2) is born in a fold just below β_o = 1.25: the edge of a period-16 locking region. The curve is
continued both ways inside [0, 3]²; the script prints it, its codimension-two points and its cost (Newton
evaluations of F^p and its Jacobian), then the cost of an N×N grid diagram for comparison. With ``--grid`` it also runs a grid phase diagram on a band around the
curve (``--num`` β_o values over ``--band``, at ``--rows`` values of β_att) from the same checkpoint and
reports, for every row, the regime on either side of the curve.

    python benchmarks/codim2_boundary.py [--curve ns|fold] [--points 80] [--num 201] [--grid] [--rows 2.0,2.2,2.4]
"""

from __future__ import annotations

import argparse
import time

from attnphys.runtime import configure


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--curve", choices=("ns", "fold"), default="ns", help="which boundary (see above)")
    ap.add_argument("--points", type=int, default=80, help="most points on each half of the curve")
    ap.add_argument("--num", type=int, default=201, help="grid size N of the N×N diagram the cost is compared with")
    ap.add_argument("--steps", type=int, default=120_000, help="steps per grid point (the paper's)")
    ap.add_argument("--grid", action="store_true", help="also run a grid band around the curve and compare")
    ap.add_argument("--rows", default="2.0,2.2,2.4", help="β_att values of the grid band")
    ap.add_argument("--band", type=float, default=0.006, help="half-width in β_o of the grid band")
    args = ap.parse_args()
    configure(x64=True, host_devices=2)

    import jax
    import jax.numpy as jnp
    import numpy as np

    from attnphys.dmft import orbit_continuation, preset
    from attnphys.dmft.config import gamma_of
    from attnphys.dmft.model import model_of
    from attnphys.dynamics import bifurcation_curve

    cfg = preset("paper")
    model = model_of(cfg)
    t0 = time.perf_counter()
    kind, b_start, b_stop = ("neimark_sacker", 1.24, 1.26) if args.curve == "ns" else ("fold", 1.25, 1.20)
    branch = orbit_continuation(cfg, "beta_o", b_start, b_stop, start="checkpoint", max_points=300)
    period = int(branch.attrs["period"])
    folds = np.flatnonzero(branch.event_kind.values == kind)
    if not folds.size:
        raise SystemExit(f"no {kind} point on the period-{period} branch from beta_o = {b_start}")
    b_fold, x_fold = float(branch.event_s.values[folds[0]]), branch.event_x.values[folds[0]]
    # the orbit's aux state (positional window) at the phase that the branch followed
    sc = model.params_of("beta_o")(jnp.asarray(b_start))[1]
    win = jax.tree_util.tree_map(
        lambda a: a[0], model.windows_after("checkpoint", jax.tree_util.tree_map(lambda a: jnp.asarray(a)[None], sc), 40_000)
    )
    m = model.map()
    _, aux0 = m.state(win)
    cp = model.couplings

    def params_of(s):
        return cp, sc._replace(gain_o=s[0] * cfg.scaling_o, gamma=gamma_of(s[1], cfg.scaling_att, cfg.M))

    halves, evaluations = [], 0
    for direction in (1, -1):
        c = bifurcation_curve(
            m, kind, x_fold, [b_fold, cfg.beta_att], params_of, aux0=aux0, period=period, direction=direction,
            max_points=args.points, ds_max=0.05, bounds=((0.0, 3.0), (0.0, 3.0)), param_names=("beta_o", "beta_att"),
            progress=True,
        )
        halves.append(c)
        evaluations += int(c.attrs["evaluations"])
        print(f"direction {direction:+d}: {c.sizes['point']} points, status {c.attrs['status']}, "
              f"codimension-two points: {list(zip(c.special_kind.values, c.special_beta_o.values.round(6), c.special_beta_att.values.round(6), strict=True))}")
    wall = time.perf_counter() - t0
    bo = np.concatenate([halves[1].beta_o.values[::-1], halves[0].beta_o.values[1:]])
    ba = np.concatenate([halves[1].beta_att.values[::-1], halves[0].beta_att.values[1:]])
    a = np.concatenate([halves[1].coefficient.values[::-1], halves[0].coefficient.values[1:]])
    print(f"period-{period} {kind} at beta_att = {cfg.beta_att}: beta_o = {b_fold:.10f}")
    print(f" beta_o        beta_att      {halves[0].attrs['coefficient']}")
    for i in range(0, bo.size, max(1, bo.size // 25)):
        print(f" {bo[i]:.8f}  {ba[i]:.8f}  {a[i]:+.4f}")
    print(f"curve: {bo.size} points, {evaluations} Newton evaluations of F^{period} with its Jacobian "
          f"({evaluations * period} map steps in the residuals), wall {wall:.1f} s including compilation")
    # every evaluation pushes 1 + (D + 2) + (D + 2)·D forward-mode directions through F^p (the residual, its
    # Jacobian, and the derivative of the monodromy matrix inside the test function's Jacobian)
    D = x_fold.size
    curve_equiv = evaluations * period * (1 + (D + 2) * (D + 1))
    grid_steps = args.num**2 * args.steps
    grid_equiv = grid_steps * 3  # the state and two tangent vectors (top 2 exponents)
    print(f"curve cost, counting every forward-mode direction as a step: {curve_equiv:.3e} step-equivalents")
    print(f"grid {args.num}x{args.num} at {args.steps} steps with 2 exponents: {grid_steps:.3e} map steps, "
          f"{grid_equiv:.3e} step-equivalents ({grid_equiv / curve_equiv:.0f} times the curve's)")
    if not args.grid:
        return
    from attnphys.dmft import phase_diagram
    from attnphys.dynamics.classify import REGIMES

    rows = np.array([float(v) for v in args.rows.split(",")])
    for row in rows:
        k = np.argmin(np.abs(ba - row))
        centre = np.interp(row, ba[np.argsort(ba)], bo[np.argsort(ba)]) if abs(ba[k] - row) < 0.2 else bo[k]
        xs = centre + np.linspace(-args.band, args.band, 13)
        t1 = time.perf_counter()
        ds = phase_diagram(cfg, {"beta_o": xs, "beta_att": np.array([row])}, start="checkpoint", steps=args.steps,
                           transient=args.steps - 20_000, exponents=2, adaptive=True)
        names = [REGIMES[c] for c in ds.regime.transpose("beta_att", "beta_o").values[0]]
        print(f"beta_att = {row}: {kind} curve at beta_o = {centre:.6f}; grid ({len(xs)} points, "
              f"{len(xs) * args.steps:.2e} map steps, {time.perf_counter() - t1:.0f} s):")
        periods = ds.period.transpose("beta_att", "beta_o").values[0] if "period" in ds else [0] * len(xs)
        for x, n, p in zip(xs, names, periods, strict=True):
            side = "on" if abs(x - centre) < 1e-12 else (">" if x > centre else "<")
            print(f"   {x:.5f} {side} curve: {n}" + (f" (period {int(p)})" if int(p) else ""))


if __name__ == "__main__":
    main()
