"""The saddle periodic orbit between the paper network's two coexisting attractors at (β_o, β_att) = (1.27, 2.2),
and its manifolds (theory: docs/theory/dmft.md §7.9; docs/theory/dynamics.md §11.5–11.6).

At the paper's point a period-28 and a period-56 orbit coexist. Printed:

1. The attractors: ``--starts`` states around the checkpoint's (seed 0), each run ``--settle`` steps; the
   periods they settle on, with counts.
2. The saddle: the period-28 attractor continued up in β_o (:func:`attnphys.dynamics.continue_orbit`, past its
   folds) until the branch returns to β_o = 1.27; its events, and the orbit it returns on, refined by Newton,
   with its Floquet multipliers (one outside the unit circle).
3. Its unstable manifold (:func:`attnphys.dynamics.invariant_manifold`): the distance of each branch's end to
   each attractor.
4. Its stable manifold is the basin boundary: the starts x* ± ε v_u (v_u the unstable eigenvector) for ε from
   1e-9 to 1e-1, each run ``--settle`` steps: the attractor each reaches.
5. Edge tracking (:func:`attnphys.dynamics.edge_track`) from the segment between a point of each attractor:
   the distance of the edge trajectory to the saddle orbit against the step. The states are labelled by
   running them ``--settle``/4 steps and comparing with the two attractors; ``--census``: by the default
   classifier instead (a census of 32 states along the segment, then landing runs).
6. The trace of the basin boundary in the plane through x* spanned by v_u and the stable eigenvector v_s of
   the second multiplier: its crossing of each of 9 lines parallel to v_u, by bisection; then the attractor of
   every point of an 11 × 41 grid on a square five times wider, as text.

``--fold16`` first prints the case that does not separate two attractors: at (1.25, 2.2) the period-16 orbit
of the checkpoint, continued down in β_o through its fold (at β_o ≈ 1.2494912) and back up to 1.25, gives a
period-16 saddle; both sides of its unstable manifold go to the same period-16 node (the pair is the
phase-locked orbit pair on an invariant circle), so its stable manifold is no basin boundary.

    python benchmarks/dmft_saddle.py [--starts 32] [--settle 56000] [--edge-steps 3000] [--fold16] [--census]
        [--figure edge.png]
"""

from __future__ import annotations

import argparse
import time

from attnphys.runtime import configure

BETA_O = 1.27
PERIOD = 28


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--starts", type=int, default=32, help="starts around the checkpoint's state")
    ap.add_argument("--settle", type=int, default=56_000, help="steps of each run that finds an attractor")
    ap.add_argument("--edge-steps", type=int, default=3000, help="steps of the edge-tracking pair")
    ap.add_argument("--pieces", type=int, default=200, help="pieces of each branch of the unstable manifold")
    ap.add_argument(
        "--census", action="store_true", help="edge tracking with the default classifier (a census of the segment)"
    )
    ap.add_argument("--figure", default="", help="write the edge-tracking figure (plots.edge_figure) here")
    ap.add_argument("--fold16", action="store_true", help="first the period-16 fold pair at beta_o = 1.25")
    args = ap.parse_args()
    configure(x64=True)
    if args.fold16:
        fold16(args.settle)
    out = saddle_study(args.starts, args.settle, args.edge_steps, args.pieces, verbose=True, census=args.census)
    if args.figure:
        from attnphys.plots import edge_figure, save_figure

        save_figure(edge_figure(out["edge"], reference=out["saddle"]), args.figure)
        print(f"figure: {args.figure}")
    print(f"total wall {out['wall']:.1f} s")


def fold16(settle: int) -> None:
    """The period-16 saddle-node pair at β_o = 1.25: where x_s ± ε v_u go."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from attnphys.dmft import preset
    from attnphys.dmft.model import model_of
    from attnphys.dynamics import continue_orbit
    from attnphys.dynamics.periodic import monodromy, refine

    b = 1.25
    model = model_of(preset("paper", beta_o=b))
    pf = model.params_of("beta_o")
    params = pf(jnp.asarray(b))
    sc_b = jax.tree_util.tree_map(lambda a: jnp.asarray(a)[None], params[1])
    m = model.map()
    x0, aux0 = m.state(jax.tree_util.tree_map(lambda a: a[0], model.windows_after("checkpoint", sc_b, 40_000)))
    br = continue_orbit(m, x0, aux0, pf, b, 1.20, period=16, ds=1e-4, ds_max=2e-3, max_steps=120, past_folds=True)
    folds = [e.s for e in br.events if e.kind == "fold"]
    node = refine(m, jnp.asarray(br.x[0]), aux0, params, 16)
    sad = refine(m, jnp.asarray(br.x[-1]), aux0, params, 16)
    mu, V = np.linalg.eig(np.asarray(monodromy(m, sad.x, aux0, params, 16)))
    o = np.argsort(-np.abs(mu))
    vu = np.real(V[:, o[0]])
    vu /= np.linalg.norm(vu)
    nodes = np.asarray(node.points)[:16]
    print(
        f"0. period-16 fold at beta_o = {folds[0]:.7f}; back at beta_o = {br.s[-1]:.7f} the saddle has multipliers "
        + ", ".join(f"{z.real:+.5f}" for z in mu[o][:3])
    )

    @jax.jit
    def run(x):
        return jax.lax.fori_loop(0, settle, lambda _, c: m.step(c[0], c[1], params), (x, aux0))[0]

    for eps in (1e-5, -1e-5, 1e-3, -1e-3):
        y = np.asarray(run(jnp.asarray(np.asarray(sad.x) + eps * vu)))
        d = float(np.min(np.linalg.norm(nodes - y[None], axis=1)))
        print(f"   x_s {eps:+.0e} v_u after {settle} steps: distance {d:.1e} to the period-16 node")


def saddle_study(
    starts: int, settle: int, edge_steps: int, pieces: int, verbose: bool = False, census: bool = False
) -> dict:
    """Every number the script prints, as a dict (the slow test reads it)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from attnphys.dmft import preset
    from attnphys.dmft.model import model_of
    from attnphys.dynamics import CensusOptions, continue_orbit, edge_track, invariant_manifold
    from attnphys.dynamics.classify import detect_period
    from attnphys.dynamics.periodic import monodromy, refine

    say = print if verbose else (lambda *a, **k: None)
    t0 = time.perf_counter()
    cfg = preset("paper", beta_o=BETA_O)
    model = model_of(cfg)
    pf = model.params_of("beta_o")
    params = pf(jnp.asarray(BETA_O))
    sc_b = jax.tree_util.tree_map(lambda a: jnp.asarray(a)[None], params[1])
    m = model.map()
    xc, aux_c = m.state(jax.tree_util.tree_map(lambda a: a[0], model.windows_after("checkpoint", sc_b, 0)))

    @jax.jit
    def run(x, aux, n):
        return jax.lax.fori_loop(0, n, lambda _, c: m.step(c[0], c[1], params), (x, aux))

    @jax.jit
    def cycle(x, aux):
        def body(c, _):
            y, a = m.step(c[0], c[1], params)
            return (y, a), jnp.concatenate([c[0], c[1][0].reshape(-1)])

        return jax.lax.scan(body, (x, aux), None, length=512)[1]

    # 1. the attractors, from states around the checkpoint's
    key = jax.random.PRNGKey(0)
    X = np.asarray(xc)[None] + 0.3 * np.asarray(jax.random.uniform(key, (starts, xc.size), minval=-1, maxval=1))
    ends, aux_end = jax.vmap(lambda x: run(x, aux_c, settle))(jnp.asarray(X))
    aux0 = jax.tree_util.tree_map(lambda t: t[0], aux_end)  # every run is at the same step: one aux
    D = xc.size
    att: dict[int, np.ndarray] = {}
    counts: dict[int, int] = {}
    for k in range(starts):
        ys = np.asarray(cycle(ends[k], aux0))
        p = int(detect_period(ys, max_period=128, confirmations=3))
        counts[p] = counts.get(p, 0) + 1
        att.setdefault(p, ys[:p, :D] if p else ys[:, :D])
    say(f"1. attractors at beta_o = {BETA_O}, beta_att = {cfg.beta_att}: {starts} starts, {settle} steps each")
    for p, n in sorted(counts.items()):
        say(f"   period {p}: {n} starts")
    if PERIOD not in att or 2 * PERIOD not in att:
        raise SystemExit(f"the period-{PERIOD} and period-{2 * PERIOD} attractors were not both found")
    A1, A2 = att[PERIOD], att[2 * PERIOD]

    def dist(y, P):
        return float(np.min(np.linalg.norm(P - np.asarray(y)[None], axis=1)))

    def label(y):
        d1, d2 = dist(y, A1), dist(y, A2)
        return PERIOD if d1 < 1e-8 else (2 * PERIOD if d2 < 1e-8 else -1)

    # 2. the saddle: the period-28 branch continued up in beta_o, past its folds, back to 1.27
    t = time.perf_counter()
    br = continue_orbit(
        m,
        jnp.asarray(A1[0]),
        aux0,
        pf,
        BETA_O,
        1.30,
        period=PERIOD,
        ds=1e-4,
        ds_max=2e-3,
        max_steps=150,
        past_folds=True,
    )
    ds_br = br.to_dataset("beta_o")
    s = ds_br.s.values
    say(f"2. period-{PERIOD} branch from the attractor, up in beta_o: {s.size} points, {time.perf_counter() - t:.1f} s")
    for kind, at in zip(ds_br.event_kind.values, ds_br.event_s.values, strict=True):
        say(f"   {kind} at beta_o = {at:.7f}")
    if abs(s[-1] - BETA_O) > 1e-12:
        raise SystemExit(f"the branch did not return to beta_o = {BETA_O} (ends at {s[-1]})")
    orb = refine(m, jnp.asarray(ds_br.x.values[-1]), aux0, params, PERIOD)
    xs = np.asarray(orb.x)
    saddle = np.asarray(orb.points)[:PERIOD]
    mu, V = np.linalg.eig(np.asarray(monodromy(m, jnp.asarray(xs), aux0, params, PERIOD)))
    o = np.argsort(-np.abs(mu))
    mu = mu[o]
    vu = np.real(V[:, o[0]])
    vu /= np.linalg.norm(vu)
    say(f"   saddle back at beta_o = {s[-1]:.7f}: Newton residual {float(orb.residual):.1e}")
    say("   multipliers: " + ", ".join(f"{z.real:+.6f}{z.imag:+.6f}i" for z in mu[:4]) + ", ...")
    say(
        f"   outside the unit circle: {int(np.sum(np.abs(mu) > 1))}; distance to the period-{PERIOD} attractor "
        f"{dist(xs, A1):.4f}, to the period-{2 * PERIOD} one {dist(xs, A2):.4f}"
    )

    # 3. the unstable manifold
    t = time.perf_counter()
    man = invariant_manifold(m, xs, params, aux0=aux0, period=PERIOD, kind="unstable", pieces=pieces, points=64)
    ends_man = man["points"].values[:, -1, -1]  # (branch, D): the last point of the last piece
    say(
        f"3. unstable manifold: {pieces} pieces x 64 points per branch, {time.perf_counter() - t:.1f} s, "
        f"multiplier {man.attrs['multiplier']:.6f}, seam {man.attrs['seam']:.1e}"
    )
    man_d = []
    for b in range(ends_man.shape[0]):
        d1, d2 = dist(ends_man[b], A1), dist(ends_man[b], A2)
        man_d.append((d1, d2))
        say(
            f"   branch {b}: end at distance {d1:.2e} from the period-{PERIOD} attractor, {d2:.2e} from the "
            f"period-{2 * PERIOD} one"
        )

    # 4. x* ± eps v_u: the stable manifold separates the two basins
    eps = 10.0 ** np.arange(-9, 0)
    pts = np.concatenate([xs[None] + eps[:, None] * vu[None], xs[None] - eps[:, None] * vu[None]])
    fin, _ = jax.vmap(lambda x: run(x, aux0, settle))(jnp.asarray(pts))
    labs = np.array([label(y) for y in np.asarray(fin)]).reshape(2, eps.size)
    say(f"4. starts x* + eps v_u / x* - eps v_u, {settle} steps: the period each settles on")
    for i, e in enumerate(eps):
        say(f"   eps {e:.0e}: {labs[0, i]:>3} / {labs[1, i]:>3}")

    # 5. edge tracking between the two attractors
    t = time.perf_counter()

    def classify(x, aux):
        y, _ = jax.vmap(lambda z: run(z, aux, settle // 4))(jnp.asarray(x))
        return np.array([label(v) for v in np.asarray(y)])

    opts = CensusOptions(budget=settle // 4)
    et = edge_track(
        m,
        A1[0],
        A2[0],
        params,
        aux=aux0,
        classify=None if census else classify,
        steps=edge_steps,
        tol=1e-10,
        delta=1e-6,
        options=opts,
        progress=verbose,
    )
    e = et["edge"].values
    d_edge = np.min(np.linalg.norm(e[:, None] - saddle[None], axis=-1), axis=1)
    say(
        f"5. edge tracking from the segment between the attractors: {edge_steps} steps, "
        f"{et.sizes['bisection']} bisections, {int(et['evaluations'].sum())} states classified, "
        f"{time.perf_counter() - t:.1f} s, status {et.attrs['status']}"
    )
    say(
        f"   step   distance to the saddle orbit (along the boundary it contracts by |{mu[1].real:.4f}| per "
        f"{PERIOD} steps; across it the pair is re-bisected at 1e-10 and held within 1e-6)"
    )
    for i in sorted(set(range(0, e.shape[0], max(1, e.shape[0] // 15))) | {e.shape[0] - 1}):
        say(f"   {i:5d}  {d_edge[i]:.3e}")
    for t0_ in (100, 200, 500):
        if e.shape[0] > t0_:
            say(f"   largest distance from step {t0_} on: {np.max(d_edge[t0_:]):.2e}")
    # 6. the trace of the basin boundary in the plane through x* spanned by v_u and v_s (the eigenvector of
    # mu_2): on each line x* + c v_s + s v_u, bisection in s for the crossing
    vs = np.real(V[:, o[1]])
    vs /= np.linalg.norm(vs)
    r = 0.01
    cs = np.linspace(-r, r, 9)
    lo, hi = np.full(cs.size, -r), np.full(cs.size, r)
    line = lambda c, s_: xs[None] + c[:, None] * vs[None] + s_[:, None] * vu[None]  # noqa: E731
    l_lo, l_hi = classify(line(cs, lo), aux0), classify(line(cs, hi), aux0)
    ok = (l_lo >= 0) & (l_hi >= 0) & (l_lo != l_hi)
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lm = classify(line(cs, mid), aux0)
        same = lm == l_lo
        lo, hi = np.where(same, mid, lo), np.where(same, hi, mid)
    cross = np.where(ok, 0.5 * (lo + hi), np.nan)
    say(f"6. the basin boundary in the plane x* + c v_s + s v_u (|c|, |s| <= {r}): its crossing s(c) of each line")
    for c, sc, a_, b_ in zip(cs, cross, l_lo, l_hi, strict=True):
        say(f"   c {c:+.4f}: s = {sc:+.3e}" + ("" if np.isfinite(sc) else f" (the ends reach periods {a_} and {b_})"))
    R = 5 * r
    ss = np.linspace(-R, R, 41)
    grid = classify(np.concatenate([line(np.full(ss.size, c), ss) for c in np.linspace(-R, R, 11)]), aux0)
    say(f"   the basins on a wider square (|c|, |s| <= {R}; a: period {PERIOD}, B: period {2 * PERIOD}, ?: neither):")
    for i, c in enumerate(np.linspace(-R, R, 11)):
        row = grid[i * ss.size : (i + 1) * ss.size]
        say(f"   c {c:+.3f} " + "".join({PERIOD: "a", 2 * PERIOD: "B"}.get(int(v), "?") for v in row))
    return {
        "counts": counts,
        "events": [str(k) for k in ds_br.event_kind.values],
        "saddle_distances": (dist(xs, A1), dist(xs, A2)),
        "bisection_steps": et["bisection_step"].values,
        "slice_c": cs,
        "slice_s": cross,
        "multipliers": mu,
        "residual": float(orb.residual),
        "manifold_end_distances": man_d,
        "eps": eps,
        "labels": labs,
        "edge_distance": d_edge,
        "edge_status": et.attrs["status"],
        "edge": et,
        "saddle": saddle,
        "wall": time.perf_counter() - t0,
    }


if __name__ == "__main__":
    main()
