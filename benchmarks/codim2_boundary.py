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
``--steps`` steps, adaptive) over the window β_o ∈ ``--window`` × β_att ∈ [0, 3] that holds the curve.
``--refine S`` adds a second pass at S steps (the last 20,000 recorded) over the cells the first pass left
near its own boundary: every cell that is not periodic with a period dividing p with such a cell within
``--refine-band`` columns of its row (``--load`` with ``--refine``: the rows a stored grid has not refined). It reads nothing of the curve; it gives the critical slowing down next to a Neimark–Sacker point
the budget it needs (at 120,000 steps the grid's boundary sits 3–4 spacings of the 201×201 grid to the stable
side; at 480,000 within one). The script prints the evaluation counts of curve and grid (map steps actually
run by the adaptive passes), the fraction of grid cells whose regime agrees with the side of the curve they
lie on (``ns``: the period-p orbit on the left, anything else on the right; ``fold``: the other way round),
the farthest disagreeing cell in grid spacings, the per-row offset of the grid's boundary from the curve and
every exception with its reason. A stable-side cell whose period divides p agrees when it is the period-p
orbit itself, degenerate there (Newton on F^p from the curve's orbit converges at the cell to an orbit of
that minimal period whose leading multiplier gives the cell's exponent: the origin at β_att = 0); a
disagreeing cell not contiguous with the curve is reported with the multipliers of the period-p orbit refined
there (stable: a coexisting attractor, not a boundary error). ``--save F.npz`` stores the grid's arrays,
``--load F.npz`` compares a stored grid instead of running one. ``--bands`` instead runs 13-point bands
across the curve at ``--rows`` values of β_att.

    python benchmarks/codim2_boundary.py [--curve ns|fold] [--points 80] [--num 201] [--grid 21] [--refine 480000] [--save F.npz | --load F.npz] [--bands]
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
    ap.add_argument(
        "--refine", type=int, default=0, help="second pass: steps for the cells near the grid's own boundary"
    )
    ap.add_argument("--refine-band", type=int, default=8, help="second pass: columns from a period-p cell of the first")
    ap.add_argument("--save", default="", help="store the grid's arrays (.npz) for --load")
    ap.add_argument("--load", default="", help="compare a stored grid (--save) instead of running one")
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

    if args.grid or args.load:
        _grid_check(args, cfg, kind, period, c, evaluations, phase_diagram, REGIMES)
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


def _row_run(phase_diagram, cfg, xs, y, steps):
    """Regime, period, leading exponent and steps run of the cells ``xs`` of the row β_att = ``y`` at
    ``steps`` steps (the last 20,000 recorded), adaptive, from the checkpoint."""
    ds = phase_diagram(
        cfg,
        {"beta_o": xs, "beta_att": [y]},
        start="checkpoint",
        steps=steps,
        transient=steps - 20_000,
        exponents=2,
        adaptive=True,
    )
    return tuple(ds[v].transpose("beta_att", "beta_o").values[0] for v in ("regime", "period", "lambda1", "stop_step"))


def _grid_run(args, cfg, period, phase_diagram, regimes) -> dict:
    """The N×N grid diagram over the window (first pass, ``--steps``), then, with ``--refine S``, a second
    pass at S steps over the cells the first pass left near its own boundary: every cell that is not
    periodic with a period dividing p and has such a cell within ``--refine-band`` columns of its row. The second pass reads nothing of
    the curve: it is a longer budget where the grid's own diagram changes, for the critical slowing down next
    to a Neimark–Sacker point (theory: docs/theory/dmft.md §7.8)."""
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
    out = {"xs": xs, "ys": ys, "wall1": time.perf_counter() - t1}
    for v in ("regime", "period", "lambda1", "stop_step"):
        out[v] = ds[v].transpose("beta_att", "beta_o").values.copy()
    out["steps1"] = float(out["stop_step"].sum())
    out.update(refined=np.zeros(out["regime"].shape, bool), steps2=0.0, wall2=0.0, edge_changed=0)
    if args.refine:
        _refine(args, cfg, period, phase_diagram, regimes, out, np.ones(ys.size, bool))
    return out


def _on_orbit(reg, per, period, regimes):
    """Cells periodic (or fixed) with a period dividing p: the period-p orbit, or a degenerate one."""
    import numpy as np

    return (
        np.isin(reg, [regimes.index("periodic"), regimes.index("fixed_point")])
        & (per > 0)
        & (period % np.maximum(per, 1) == 0)
    )


def _refine(args, cfg, period, phase_diagram, regimes, g, rows) -> None:
    """The second pass over ``rows`` of the grid ``g`` (in place): at ``--refine`` steps, every cell that is
    not periodic with a period dividing p and has such a cell within ``--refine-band`` columns of its row."""
    import numpy as np

    xs, ys, k = g["xs"], g["ys"], args.refine_band
    on = _on_orbit(g["regime"], g["period"], period, regimes)
    t2 = time.perf_counter()
    for j in np.flatnonzero(rows):
        pc = np.flatnonzero(on[j])
        if pc.size == 0:
            continue
        gap = np.min(np.abs(np.arange(xs.size)[:, None] - pc[None, :]), axis=1)  # columns to the nearest such cell
        cols = np.flatnonzero(~on[j] & (gap <= k))
        if cols.size == 0:
            continue
        reg, per, lam, ss = _row_run(phase_diagram, cfg, xs[cols], float(ys[j]), args.refine)
        for name, val in (("regime", reg), ("period", per), ("lambda1", lam), ("stop_step", ss)):
            g[name][j, cols] = val
        g["refined"][j, cols] = True
        g["steps2"] = float(g["steps2"]) + float(ss.sum())
        g["edge_changed"] = int(g["edge_changed"]) + int(
            (_on_orbit(reg, per, period, regimes) & (gap[cols] == k)).sum()
        )
    g["wall2"] = float(g["wall2"]) + time.perf_counter() - t2


def _grid_check(args, cfg, kind, period, c, evaluations, phase_diagram, regimes) -> None:
    """The N×N grid diagram over the window (run, or loaded with ``--load``) against the side of the curve
    every cell lies on."""
    import numpy as np

    if args.load:
        g = dict(np.load(args.load))
        if args.refine and int(g.get("refine", 0)) in (0, args.refine):
            # rows the stored grid has not refined yet (all of them for a first pass only)
            _refine(args, cfg, period, phase_diagram, regimes, g, ~g["refined"].any(axis=1))
            g.update(refine=args.refine, refine_band=args.refine_band)
            if args.save:
                np.savez(args.save, **g)
    else:
        g = _grid_run(args, cfg, period, phase_diagram, regimes)
        if args.save:
            np.savez(args.save, **g, steps=args.steps, refine=args.refine, refine_band=args.refine_band)
    steps = int(g.get("steps", args.steps))
    refine, band = int(g.get("refine", args.refine)), int(g.get("refine_band", args.refine_band))
    xs, ys, reg, per, lam = g["xs"], g["ys"], g["regime"], g["period"], g["lambda1"]
    bo, ba = c.beta_o.values, c.beta_att.values
    in_p = (reg == regimes.index("periodic")) & (per == period)
    order = np.argsort(ba)
    curve_x = np.interp(ys, ba[order], bo[order])  # the curve's β_o at every row (it is a graph over β_att)
    left = xs[None, :] < curve_x[:, None]
    stable_side = left if kind == "neimark_sacker" else ~left
    # a cell on the stable side whose attractor is periodic with a period dividing p and is the continued
    # period-p orbit itself (degenerate there, e.g. the origin at β_att = 0): same orbit, checked below
    divides = _on_orbit(reg, per, period, regimes) & (per < period)
    same = np.zeros(reg.shape, bool)
    cand = np.argwhere(divides & stable_side)
    if cand.size:
        same_orbit = _same_orbit(cfg, c, period, xs, ys, cand, per, lam)
        for (j, i), ok in zip(cand, same_orbit, strict=True):
            same[j, i] = ok
    agree = np.where(stable_side, in_p | same, ~in_p)
    n = args.grid or xs.size
    dx, dy = xs[1] - xs[0], ys[1] - ys[0]
    dist = _distances(xs, ys, bo[order], ba[order], ~agree)
    counts = {regimes[k]: int((reg == k).sum()) for k in np.unique(reg)}
    wall = f"wall {float(g['wall1']):.0f} s" + (f" + refinement {float(g['wall2']):.0f} s" if refine else "")
    print(
        f"grid {n}x{n} over beta_o in [{xs[0]}, {xs[-1]}] (spacing {dx:.2e}) x beta_att in [0, 3] (spacing "
        f"{dy:.2e}), {steps} steps from the checkpoint, adaptive"
        + (
            f"; refined at {refine} steps within {band} columns of the first pass's cells periodic with a period dividing {period}"
            if refine
            else ""
        )
        + f": {wall}"
    )
    print(f" regimes: {counts}; period-{period} cells: {int(in_p.sum())}")
    nref = int(g["refined"].sum())
    print(
        f" evaluations: curve {evaluations} Newton evaluations of F^{period} with its Jacobian "
        f"({evaluations * period} map steps); grid {n * n} points, {float(g['steps1']):.4e} map steps run "
        f"(at most {n * n * steps:.4e})"
        + (
            f" + refinement {nref} points, {float(g['steps2']):.4e} map steps run (at most {nref * refine:.4e}); "
            f"total {float(g['steps1']) + float(g['steps2']):.4e}"
            if refine
            else ""
        )
    )
    if refine:
        print(
            f" refined cells that became periodic with a period dividing {period} at the band's edge ({band} columns from the nearest "
            f"such first-pass cell; 0 means the band was wide enough): {int(g['edge_changed'])}"
        )
    print(
        f" cells whose regime agrees with their side of the curve: {int(agree.sum())}/{agree.size} = {agree.mean():.5f}"
        f" (of them {int(same.sum())} on the stable side whose attractor is the period-{period} orbit itself at a "
        f"divisor of its period, see below)"
    )
    bad = ~agree
    print(
        f" disagreeing cells: {int(bad.sum())} (stable side {int((bad & stable_side).sum())}, other side "
        f"{int((bad & ~stable_side).sum())}), the farthest {dist.max() if bad.any() else 0.0:.2f} grid spacings "
        f"from the curve; within one spacing: {int((bad & (dist <= 1.0)).sum())}"
    )
    # per row: the farthest disagreeing cell adjacent to the curve (contiguous with the curve's cells)
    offs, exceptions = [], []
    for j in range(ys.size):
        cols = np.flatnonzero(bad[j])
        if cols.size == 0:
            offs.append(0.0)
            continue
        i_c = int(np.searchsorted(xs, curve_x[j]))  # first column right of the curve
        run = set()
        for step in (-1, 1):  # disagreeing cells contiguous with the curve, walking away from it
            i = i_c if step == 1 else i_c - 1
            while 0 <= i < xs.size and bad[j, i]:
                run.add(i)
                i += step
        offs.append(max([abs(xs[i] - curve_x[j]) / dx for i in run], default=0.0))
        exceptions += [(j, i) for i in cols if i not in run]
    offs = np.asarray(offs)
    print(
        f" per-row boundary offset (the farthest disagreeing cell contiguous with the curve, in spacings in "
        f"beta_o; 0 when none): median {np.median(offs):.2f}, 95th pct {np.percentile(offs, 95):.2f}, "
        f"max {offs.max():.2f}; rows with every such cell within one spacing: {int((offs <= 1.0).sum())}/{ys.size}"
    )
    hist = np.histogram(offs, bins=[0, 1e-12, 1.0, 2.0, 3.0, 4.0, 5.0, np.inf])[0]
    print(
        f"   rows by offset: 0: {hist[0]}, (0,1]: {hist[1]}, (1,2]: {hist[2]}, (2,3]: {hist[3]}, "
        f"(3,4]: {hist[4]}, (4,5]: {hist[5]}, >5: {hist[6]}"
    )
    if same.any():
        rows = sorted({round(float(ys[j]), 4) for j, _ in np.argwhere(same)})
        print(
            f" stable-side cells on the period-{period} orbit at a divisor of its period: {int(same.sum())} in rows "
            f"beta_att = {rows}: Newton on F^{period} from the curve's orbit at the cell converges to an orbit "
            f"of that minimal period whose leading multiplier matches the cell's exponent (the orbit degenerates)"
        )
    if exceptions:
        print(f" exceptions (disagreeing cells not contiguous with the curve): {len(exceptions)}")
        stab = _orbit_stable(cfg, c, period, xs, ys, np.asarray(exceptions))
        for (j, i), st in zip(exceptions, stab, strict=True):
            what = regimes[reg[j, i]] + (f" {int(per[j, i])}" if per[j, i] > 0 else "")
            side = "stable" if stable_side[j, i] else "other"
            why = (
                f"the period-{period} orbit refined there is stable (|mu| max {st:.5f}): a coexisting attractor"
                if np.isfinite(st) and st < 1
                else (
                    f"the period-{period} orbit refined there has |mu| max {st:.5f}"
                    if np.isfinite(st)
                    else f"Newton on F^{period} from the curve's orbit did not converge there"
                )
            )
            print(f"   beta_att {ys[j]:.4f} beta_o {xs[i]:.6f} ({side} side, {dist[j, i]:.1f} spacings): {what}; {why}")


def _distances(xs, ys, px, py, mask):
    """Distance of every masked cell from the curve polyline (px, py), in grid spacings (each axis scaled by
    its own); 0 elsewhere."""
    import numpy as np

    dx, dy = xs[1] - xs[0], ys[1] - ys[0]
    ax, ay, bx, by = px[:-1] / dx, py[:-1] / dy, px[1:] / dx, py[1:] / dy
    dist = np.zeros(mask.shape)
    for j, i in zip(*np.nonzero(mask), strict=True):
        qx, qy = xs[i] / dx, ys[j] / dy
        t = np.clip(((qx - ax) * (bx - ax) + (qy - ay) * (by - ay)) / ((bx - ax) ** 2 + (by - ay) ** 2 + 1e-300), 0, 1)
        dist[j, i] = float(np.min(np.hypot(ax + t * (bx - ax) - qx, ay + t * (by - ay) - qy)))
    return dist


def _refined_orbits(cfg, c, period, xs, ys, cells):
    """The continued period-p orbit refined at every cell (j, i): Newton on F^p from the curve's orbit point
    at the nearest β_att; returns (converged, minimal periods, Floquet multipliers' moduli, descending)."""
    import jax
    import numpy as np

    from attnphys.dmft._api.boundary import two_params_of
    from attnphys.dmft.model import model_of
    from attnphys.dynamics.periodic import floquet_direct, refine

    model = model_of(cfg)
    sc = model.params_of("beta_o")(np.asarray(1.24))[1]
    sc_b = jax.tree_util.tree_map(lambda a: np.asarray(a)[None], sc)
    win = jax.tree_util.tree_map(lambda a: a[0], model.windows_after("checkpoint", sc_b, 100))
    m = model.map()
    _, aux0 = m.state(win)
    params_of = two_params_of(model, "beta_o", "beta_att")
    ba, xc = c.beta_att.values, c.x.values
    conv, pmin, mods = [], [], []
    for j, i in cells:
        x0 = xc[int(np.argmin(np.abs(ba - ys[j])))]
        pr = params_of(np.asarray([xs[i], ys[j]]))
        orb = refine(m, x0, aux0, pr, period)
        ok = bool(orb.converged)
        pts = np.asarray(orb.points)[:period]
        scale = max(1.0, float(np.max(np.abs(pts)))) if ok else 1.0
        mp = next(
            q
            for q in range(1, period + 1)
            if period % q == 0 and np.max(np.abs(pts[q % period] - pts[0])) < 1e-9 * scale
        )
        fq = floquet_direct(
            m,
            np.asarray(orb.points)[None],
            jax.tree_util.tree_map(lambda a: np.asarray(a)[None], orb.aux_points),
            jax.tree_util.tree_map(lambda a: np.asarray(a)[None], pr[1]),
            [period],
            shared=pr[0],
        )
        conv.append(ok)
        pmin.append(int(mp))
        mods.append(np.sort(np.abs(np.asarray(fq.multipliers)[0]))[::-1] if ok else np.full(1, np.nan))
    return conv, pmin, mods


def _same_orbit(cfg, c, period, xs, ys, cells, per, lam):
    """Whether the attractor of each cell (j, i) (period dividing p) is the continued period-p orbit: Newton
    from the curve's orbit converges there to an orbit of the cell's minimal period, stable, whose leading
    Floquet exponent log|μ₁| / p equals the cell's λ₁ (1e-6)."""
    import numpy as np

    conv, pmin, mods = _refined_orbits(cfg, c, period, xs, ys, cells)
    out = []
    for (j, i), ok, pm, mu in zip(cells, conv, pmin, mods, strict=True):
        out.append(bool(ok and pm == per[j, i] and mu[0] < 1 and abs(np.log(mu[0]) / period - lam[j, i]) < 1e-6))
    return out


def _orbit_stable(cfg, c, period, xs, ys, cells):
    """The largest Floquet multiplier modulus of the continued period-p orbit refined at each cell (NaN where
    Newton did not converge)."""
    import numpy as np

    conv, _, mods = _refined_orbits(cfg, c, period, xs, ys, cells)
    return [float(mu[0]) if ok else np.nan for ok, mu in zip(conv, mods, strict=True)]


if __name__ == "__main__":
    main()
