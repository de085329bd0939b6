"""Boundaries of the paper network's phase diagram in (β_o, β_att), continued by
:func:`attnphys.dynamics.bifurcation_curve` (theory: docs/theory/dynamics.md §9), against a grid phase
diagram over the same plane.

``--curve ns`` (default): the period-4 orbit that the published checkpoint settles on at (1.24, 2.2) loses
stability in a Neimark–Sacker bifurcation (``dmft orbit-continuation`` locates it): the boundary between the
periodic and the quasi-periodic regime. ``--curve fold``: the period-16 orbit that the checkpoint settles on
at (1.25, 2.2) is born in a fold just below β_o = 1.25: the edge of a period-16 locking region. The curve is
continued both ways inside [0, 3]²; the script prints it, its codimension-two points and its cost (Newton
evaluations of F^p and its Jacobian), then the cost of an N×N grid diagram for comparison.

``--grid N`` runs the N×N grid phase diagram (:func:`attnphys.dmft.phase_diagram`, from the same checkpoint,
``--steps`` steps, adaptive) over the window β_o ∈ ``--window`` × β_att ∈ [0, 3] that holds the curve, and
prints the evaluation counts of curve and grid, the fraction of grid cells whose regime agrees with the side
of the curve they lie on (``ns``: period p on the left, anything else on the right; ``fold``: period p on the
right, anything else on the left) and the largest distance of a disagreeing cell from the curve in grid
spacings. ``--bands`` instead runs 13-point bands across the curve at ``--rows`` values of β_att.

    python benchmarks/codim2_boundary.py [--curve ns|fold] [--points 80] [--num 201] [--grid 21] [--bands]
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
    ap.add_argument("--grid", type=int, default=0, help="also run an N×N grid diagram over the window and compare")
    ap.add_argument("--window", default="1.236,1.254", help="β_o range of the grid (β_att spans [0, 3])")
    ap.add_argument("--bands", action="store_true", help="also run grid bands across the curve and compare")
    ap.add_argument("--rows", default="2.0,2.2,2.4", help="β_att values of the grid band")
    ap.add_argument("--band", type=float, default=0.006, help="half-width in β_o of the grid band")
    args = ap.parse_args()
    configure(x64=True, host_devices=2)

    import numpy as np

    from attnphys.dmft import boundary, preset

    cfg = preset("paper")
    t0 = time.perf_counter()
    kind, b_start, b_stop = ("neimark_sacker", 1.24, 1.26) if args.curve == "ns" else ("fold", 1.25, 1.20)
    c = boundary(
        cfg,
        kind,
        ("beta_o", "beta_att"),
        b_start,
        b_stop,
        start="checkpoint",
        max_points=300,
        curve_points=args.points,
        curve_step=0.05,
        progress=True,
    )
    wall = time.perf_counter() - t0
    period, evaluations = int(c.attrs["period"]), int(c.attrs["evaluations"])
    b_fold = float(c.attrs["start_beta_o"])
    bo, ba, a = c.beta_o.values, c.beta_att.values, c.coefficient.values
    print(
        f"{bo.size} points, status {c.attrs['status_backward']} / {c.attrs['status_forward']}, codimension-two "
        f"points: {list(zip(c.special_kind.values, c.special_beta_o.values.round(6), c.special_beta_att.values.round(6), strict=True))}"
    )
    print(f"period-{period} {kind} at beta_att = {cfg.beta_att}: beta_o = {b_fold:.10f}")
    print(f" beta_o        beta_att      {c.attrs['coefficient']}")
    for i in range(0, bo.size, max(1, bo.size // 25)):
        print(f" {bo[i]:.8f}  {ba[i]:.8f}  {a[i]:+.4f}")
    print(
        f"curve: {bo.size} points, {evaluations} Newton evaluations of F^{period} with its Jacobian "
        f"({evaluations * period} map steps in the residuals), wall {wall:.1f} s including compilation"
    )
    # every evaluation pushes 1 + (D + 2) + (D + 2)·D forward-mode directions through F^p (the residual, its
    # Jacobian, and the derivative of the monodromy matrix inside the test function's Jacobian)
    D = c.sizes["dim"]
    curve_equiv = evaluations * period * (1 + (D + 2) * (D + 1))
    grid_steps = args.num**2 * args.steps
    grid_equiv = grid_steps * 3  # the state and two tangent vectors (top 2 exponents)
    print(f"curve cost, counting every forward-mode direction as a step: {curve_equiv:.3e} step-equivalents")
    print(
        f"grid {args.num}x{args.num} at {args.steps} steps with 2 exponents: {grid_steps:.3e} map steps, "
        f"{grid_equiv:.3e} step-equivalents ({grid_equiv / curve_equiv:.0f} times the curve's)"
    )
    from attnphys.dmft import phase_diagram
    from attnphys.dynamics.classify import REGIMES

    if args.grid:
        _grid_check(args, cfg, kind, period, bo, ba, evaluations, phase_diagram, REGIMES)
    if not args.bands:
        return

    rows = np.array([float(v) for v in args.rows.split(",")])
    for row in rows:
        k = np.argmin(np.abs(ba - row))
        centre = np.interp(row, ba[np.argsort(ba)], bo[np.argsort(ba)]) if abs(ba[k] - row) < 0.2 else bo[k]
        xs = centre + np.linspace(-args.band, args.band, 13)
        t1 = time.perf_counter()
        ds = phase_diagram(
            cfg,
            {"beta_o": xs, "beta_att": np.array([row])},
            start="checkpoint",
            steps=args.steps,
            transient=args.steps - 20_000,
            exponents=2,
            adaptive=True,
        )
        names = [REGIMES[c] for c in ds.regime.transpose("beta_att", "beta_o").values[0]]
        print(
            f"beta_att = {row}: {kind} curve at beta_o = {centre:.6f}; grid ({len(xs)} points, "
            f"{len(xs) * args.steps:.2e} map steps, {time.perf_counter() - t1:.0f} s):"
        )
        periods = ds.period.transpose("beta_att", "beta_o").values[0] if "period" in ds else [0] * len(xs)
        for x, n, p in zip(xs, names, periods, strict=True):
            side = "on" if abs(x - centre) < 1e-12 else (">" if x > centre else "<")
            print(f"   {x:.5f} {side} curve: {n}" + (f" (period {int(p)})" if int(p) else ""))


def _grid_check(args, cfg, kind, period, bo, ba, evaluations, phase_diagram, regimes) -> None:
    """The N×N grid diagram over the window against the side of the curve every cell lies on."""
    import numpy as np

    lo, hi = (float(v) for v in args.window.split(","))
    xs, ys = np.linspace(lo, hi, args.grid), np.linspace(0.0, 3.0, args.grid)
    t1 = time.perf_counter()
    ds = phase_diagram(
        cfg,
        {"beta_o": xs, "beta_att": ys},
        start="checkpoint",
        steps=args.steps,
        transient=args.steps - 20_000,
        exponents=2,
        adaptive=True,
        progress=True,
    )
    wall = time.perf_counter() - t1
    reg = ds.regime.transpose("beta_att", "beta_o").values
    per = ds.period.transpose("beta_att", "beta_o").values
    in_p = (reg == regimes.index("periodic")) & (per == period)
    order = np.argsort(ba)
    curve_x = np.interp(ys, ba[order], bo[order])  # the curve's β_o at every row (it is a graph over β_att)
    left = xs[None, :] < curve_x[:, None]
    expected = left if kind == "neimark_sacker" else ~left
    agree = in_p == expected
    # distance of every disagreeing cell from the curve polyline, in grid spacings (each axis scaled by its own)
    dx, dy = xs[1] - xs[0], ys[1] - ys[0]
    px, py = bo[order] / dx, ba[order] / dy
    worst, dist = 0.0, np.zeros(agree.shape)
    for j, i in zip(*np.nonzero(~agree), strict=True):
        qx, qy = xs[i] / dx, ys[j] / dy
        ax, ay, bx, by = px[:-1], py[:-1], px[1:], py[1:]
        t = np.clip(((qx - ax) * (bx - ax) + (qy - ay) * (by - ay)) / ((bx - ax) ** 2 + (by - ay) ** 2 + 1e-300), 0, 1)
        dist[j, i] = float(np.min(np.hypot(ax + t * (bx - ax) - qx, ay + t * (by - ay) - qy)))
        worst = max(worst, dist[j, i])
    n = args.grid
    counts = {regimes[c]: int((reg == c).sum()) for c in np.unique(reg)}
    print(
        f"grid {n}x{n} over beta_o in [{lo}, {hi}] (spacing {dx:.2e}) x beta_att in [0, 3] (spacing {dy:.2e}), "
        f"{args.steps} steps from the checkpoint, adaptive: wall {wall:.0f} s"
    )
    print(f" regimes: {counts}; period-{period} cells: {int(in_p.sum())}")
    print(
        f" evaluations: curve {evaluations} Newton evaluations of F^{period} with its Jacobian "
        f"({evaluations * period} map steps); grid {n * n} points, at most {n * n * args.steps:.3e} map steps"
    )
    print(
        f" cells whose regime agrees with their side of the curve: {int(agree.sum())}/{agree.size} = {agree.mean():.5f}"
    )
    print(f" disagreeing cells: {int((~agree).sum())}, the farthest {worst:.2f} grid spacings from the curve")
    far = dist > 3.0
    print(f" disagreeing cells farther than 3 grid spacings from the curve: {int(far.sum())} (rows beta_att = "
          f"{sorted({round(float(ys[j]), 4) for j in np.nonzero(far)[0]})}); cells that agree or lie within 3 "
          f"spacings: {1 - far.mean():.5f}")
    left_bad = int((~agree & left).sum())
    print(f" disagreeing cells on the left (period-{period}) side: {left_bad}; on the right: {int((~agree & ~left).sum())}")
    for j in np.flatnonzero((~agree).any(axis=1)):
        bad = np.flatnonzero(~agree[j])
        what = sorted({f"{regimes[reg[j, i]]}" + (f" {int(per[j, i])}" if per[j, i] > 0 else "") for i in bad})
        steps_off = np.abs(xs[bad] - curve_x[j]) / dx
        print(
            f"   beta_att {ys[j]:.4f} (curve at beta_o {curve_x[j]:.6f}): {bad.size} cells, {', '.join(what)}, "
            f"{steps_off.min():.2f} to {steps_off.max():.2f} spacings in beta_o from the curve"
        )


if __name__ == "__main__":
    main()
