"""The finite-size theory of the paper's network against simulation (theory: docs/theory/fluctuations.md).

1. At a fixed point (β_o = 1.0 of the paper preset: the orbit diagram from the first token settles on A ≈ 0
   for every β_o ≤ 1.235) and on two periodic orbits — β_o = 5.0 of the ``paper-pe5`` preset (the same
   network with P = 5 positional bits and a context of L = 32: period 192, monodromy radius 0.0025; paths
   started on the orbit at step 3000) and β_o = 4.0 of the ``paper`` preset (period 24, radius 0.017, paths
   from the first token; ``--paper-cycle 3.0`` gives the less stable orbit on which paths leave it at
   N = 990) — for N ∈ {990, 9,900, 99,000} (the multiples of N_se = 99 nearest 10³, 10⁴, 10⁵) and ``--paths``
   paths: the measured / predicted standard deviation of every record and feature over the window with its
   95 % interval, and the path-averaged error of the mean field and of the bias-corrected prediction, beside
   the sampling error of those averages. Acceptance: every overlap's ratio within 10 %; at N = 990 the
   corrected error at least 5× below the mean field's. A closing table puts these side by side.
   On both orbits, the order in 1/N of what the O(1/N) bias leaves (the remainder's size over N = 990 …
   9,900 on the paper preset's, 990 … 3,960 on the five-bit one's, its sampling noise removed with two
   independent sets of paths, and its slope against log N with a 95 % interval).
2. In a chaotic regime (β_o = 1.28, the chaotic orbit of the paper's Fig. 5), for N over five decades, paths
   started on the attractor (from the mean-field state at several steps after a 5,000-step transient): the
   median step at which a path first deviates from the mean-field orbit by ``--threshold``, its slope against
   log N with a 95 % interval over the starts, beside the predicted horizon's and 1/(2λ₁).
3. The cost of the prediction (one run of the expansion, any N) against the simulation it replaces.

``--figures DIR`` writes the figures: standard deviation and bias against N, predicted and measured, per
regime; the separation step against log N / λ₁.

Run: python benchmarks/fluctuations.py [--paths 1000] [--figures DIR]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import scipy.stats

import attnphys
from attnphys.dmft import compare_fluctuations, fluctuations, lyapunov_spectrum, preset

OVERLAPS = ("mo_se", "mv", "mq", "mk")
RECORDS = ("att",) + OVERLAPS


def regime(name, cfg, sizes, paths, steps, transient, start_step=0):
    start = f"paths from the mean-field state at step {start_step}" if start_step else "paths from the first token"
    print(
        f"\n== {name}: beta_o = {cfg.beta_o}, L = {cfg.L}, P = {cfg.P}, steps {transient}..{steps - 1}, "
        f"{paths} paths, {start} =="
    )
    ds = compare_fluctuations(
        cfg, sizes, paths=paths, steps=steps, transient=transient, start_step=start_step, record=RECORDS, seed=1
    )
    print(f"mean-field period over the window: {ds.attrs['period']} steps")
    print(f"{'N':>7} {'record':>6}  {'std measured / predicted [95% interval] per feature':<66} ok")
    worst = {}
    for i, n in enumerate(sizes):
        for k in RECORDS:
            r = ds[f"{k}_std_ratio"].values[i]
            lo, hi = ds[f"{k}_std_ratio_ci_low"].values[i], ds[f"{k}_std_ratio_ci_high"].values[i]
            cells = "  ".join(f"{a:.3f} [{b:.3f},{c:.3f}]" for a, b, c in zip(r, lo, hi, strict=True))
            ok = bool(np.all(np.abs(r - 1) <= 0.1))
            print(f"{n:>7} {k:>6}  {cells:<66} {'yes' if ok else 'NO'}")
            if k in OVERLAPS:
                worst[n] = max(worst.get(n, 0.0), float(np.max(np.abs(r - 1))))
    print(
        f"{'N':>7} {'record':>6}  {'error of mean field':>20} {'bias-corrected':>15} {'sampling error':>15} {'gain':>6}"
    )
    for i, n in enumerate(sizes):
        for k in RECORDS:
            a, b, c = (float(ds[f"{k}_error_{s}"].values[i]) for s in ("mean_field", "corrected", "noise"))
            print(f"{n:>7} {k:>6}  {a:>20.3e} {b:>15.3e} {c:>15.3e} {a / b:>6.1f}")
    sim = json.loads(ds.attrs["simulation_seconds"])
    print(
        "cost: prediction (any N) {:.1f} s; simulation {}".format(
            ds.attrs["prediction_seconds"], ", ".join(f"N={n}: {s:.1f} s" for n, s in zip(sizes, sim, strict=True))
        )
    )
    print(
        "acceptance, overlaps' std within 10 %: "
        + ", ".join(f"N={n}: max |ratio-1| = {w:.3f}" for n, w in worst.items())
    )
    i0 = 0
    gains = {k: float(ds[f"{k}_error_mean_field"].values[i0] / ds[f"{k}_error_corrected"].values[i0]) for k in RECORDS}
    print(
        f"acceptance, bias at N={sizes[i0]}: error(mean field)/error(corrected) = "
        + ", ".join(f"{k} {g:.1f}" for k, g in gains.items())
    )
    return ds


def _phase_remainder(ds, names):
    """Measured mean minus the bias-corrected prediction averaged over the window's visits of each phase of the
    mean-field cycle, its sampling error (paths are independent; on a contracting cycle the visits of one phase
    a period apart are too) and the predicted bias/N at each phase: arrays (n, phases x records x features)."""
    p = int(ds.attrs["period"])
    phase = np.arange(ds.sizes["step"]) % p
    rem, se, bias = [], [], []
    for k in names:
        d = ds[f"{k}_mean_measured"].values - ds[f"{k}_mean_predicted"].values  # (n, step, feature)
        e = ds[f"{k}_mean_se"].values
        c = ds[f"{k}_mean_predicted"].values - ds[k].values
        for ph in range(p):
            sel = phase == ph
            rem.append(d[:, sel].mean(1))
            se.append(np.sqrt((e[:, sel] ** 2).mean(1) / sel.sum()))
            bias.append(c[:, sel].mean(1))
    return np.concatenate(rem, 1), np.concatenate(se, 1), np.concatenate(bias, 1)


def remainder_order(name, cfg, sizes, paths, start, periods):
    """The order in 1/N of what the O(1/N) bias leaves: the size of the remainder (measured mean minus mean field
    minus bias/N, per phase and feature of the overlaps) over several N, its sampling noise removed by taking the
    product of two independent sets of paths, and the slope of its logarithm against log N with a 95 % interval
    (−1: the O(1/N) bias itself is wrong; −2: the next order of the expansion)."""
    print(
        f"\n== {name}, beta_o = {cfg.beta_o}: order of the remainder after the O(1/N) bias; "
        f"2 x {paths} paths per size from the mean-field state at step {start} =="
    )
    p = int(fluctuations(cfg, steps=start + 500, transient=start, stationary=True, record=OVERLAPS).attrs["period"])
    kw = dict(paths=paths, steps=start + (2 + periods) * p, transient=start + 2 * p, start_step=start, record=OVERLAPS)
    a, b = (compare_fluctuations(cfg, sizes, seed=seed, **kw) for seed in (11, 12))
    (r1, s1, bias), (r2, s2, _) = _phase_remainder(a, OVERLAPS), _phase_remainder(b, OVERLAPS)
    print(
        f"{'N':>7} {'|remainder| (noise removed)':>28} {'+-':>9} {'N x':>7} {'N^2 x':>8} {'|bias/N|':>10} "
        f"{'local slope':>12}"
    )
    x, y, w, kept, last = [], [], [], [], None
    for i, n in enumerate(sizes):
        cross = float(r1[i] @ r2[i])  # unbiased for |remainder|^2: the two sets' noises are independent
        var = float(np.sum(r1[i] ** 2 * s2[i] ** 2 + r2[i] ** 2 * s1[i] ** 2 + s1[i] ** 2 * s2[i] ** 2))
        size = np.sqrt(max(cross, 0.0))
        err = np.sqrt(var) / (2 * size) if size > 0 else np.inf
        local = np.log(size / last[1]) / np.log(n / last[0]) if last and size > 0 else np.nan
        last = (n, size)
        print(
            f"{n:>7} {size:>28.3e} {err:>9.1e} {n * size:>7.2f} {n * n * size:>8.0f} {np.linalg.norm(bias[i]):>10.3e} "
            f"{local:>12.2f}"
        )
        if size > 3 * err:
            kept.append(n)
            x.append(np.log(n))
            y.append(np.log(size))
            w.append(size / err)  # 1 / sd of log size
    if len(x) < 3:
        print("too few sizes with the remainder above its noise for a slope")
        return None
    X = np.stack([np.ones(len(x)), x], 1) * np.asarray(w)[:, None]
    coef, *_ = np.linalg.lstsq(X, np.asarray(y) * w, rcond=None)
    chi2 = float(np.sum((X @ coef - np.asarray(y) * w) ** 2)) / (len(x) - 2)
    cov = np.linalg.inv(X.T @ X) * max(chi2, 1.0)
    half = scipy.stats.t.ppf(0.975, len(x) - 2) * np.sqrt(cov[1, 1])
    print(
        f"slope of log |remainder| vs log N over N = {kept}: {coef[1]:.2f} "
        f"[{coef[1] - half:.2f}, {coef[1] + half:.2f}] (95 %; -1: the bias is wrong, -2: the next order)"
    )
    return coef[1], half


def stationary_cost(cfg, steps, transient):
    t0 = time.perf_counter()
    st = fluctuations(cfg, steps=steps, transient=transient, stationary=True, record=RECORDS)
    t1 = time.perf_counter() - t0
    print(
        f"stationary prediction (Lyapunov equation on the cycle): period {st.attrs['period']}, spectral radius "
        f"{st.attrs['spectral_radius']:.3g}, {t1:.1f} s (first call, compilation included)"
    )
    return st


def horizon(cfg, sizes, paths, starts, length, threshold):
    print(
        f"\n== chaotic regime: beta_o = {cfg.beta_o}, threshold {threshold}, {paths} paths from each of "
        f"{len(starts)} mean-field states on the attractor =="
    )
    lam = float(
        lyapunov_spectrum(cfg, start="token", steps=20_000, transient=5000, exponents=1).exponents.values.ravel()[0]
    )
    seps, hors, t_pred, t_sim = [], [], 0.0, 0.0
    for s0 in starts:
        ds = compare_fluctuations(
            cfg, sizes, paths=paths, steps=s0 + length, start_step=s0, record=RECORDS, seed=2, threshold=threshold
        )
        seps.append(ds.separation.values - s0)  # (n, path)
        hors.append(ds.horizon.values - s0)
        t_pred += ds.attrs["prediction_seconds"]
        t_sim += sum(json.loads(ds.attrs["simulation_seconds"]))
    # a path that never separated within the run counts as separating after it (a censored time, +inf)
    seps = [np.where(np.isnan(sp), np.inf, sp) for sp in seps]
    sep = np.concatenate(seps, axis=1)  # (n, starts x paths)
    hor = np.stack(hors)  # (starts, n)
    med = np.median(sep, axis=1)
    rng = np.random.default_rng(0)
    boot = np.stack([np.median(sep[:, rng.integers(0, sep.shape[1], sep.shape[1])], axis=1) for _ in range(400)])
    lo, hi = np.percentile(boot, [2.5, 97.5], axis=0)
    print(f"lambda_1 = {lam:.4f} per step: 1/(2 lambda_1) = {1 / (2 * lam):.2f} steps per unit of log N")
    print(f"{'N':>10} {'median separation [95%]':>26} {'never':>6} {'predicted horizon (median over starts)':>40}")
    for i, n in enumerate(sizes):
        print(
            f"{n:>10} {med[i]:>10.1f} [{lo[i]:.1f}, {hi[i]:.1f}] {int(np.sum(np.isinf(sep[i]))):>6} "
            f"{np.nanmedian(hor[:, i]):>40.1f}"
        )
    x = np.log(np.asarray(sizes, float))
    # slope per start (median over its paths), then the mean over starts with its t interval
    per = np.stack([np.polyfit(x, np.median(sp, axis=1), 1)[0] for sp in seps])
    pper = np.stack([np.polyfit(x, h, 1)[0] for h in hor])
    t = scipy.stats.t.ppf(0.975, len(starts) - 1)

    def ci(v):
        m, se = v.mean(), v.std(ddof=1) / np.sqrt(v.size)
        return f"{m:.2f} [{m - t * se:.2f}, {m + t * se:.2f}]"

    print(
        f"slope of the separation step vs log N (mean over {len(starts)} starts, 95% interval): measured {ci(per)}; "
        f"predicted horizon {ci(pper)}; 1/(2 lambda_1) = {1 / (2 * lam):.2f}"
    )
    print(f"cost: prediction {t_pred:.1f} s; simulation {t_sim:.1f} s (all starts and sizes)")
    return sizes, lam, (med, lo, hi), np.nanmedian(hor, axis=0)


def figures(out: Path, regimes: dict, chaos) -> None:
    from matplotlib.figure import Figure

    from attnphys.plots import fluctuations_figure, save_figure

    out.mkdir(parents=True, exist_ok=True)
    for name, ds in regimes.items():  # the figure of `attnphys dmft fluctuations --n ... --plot`
        stem = "_".join("".join(c if c.isalnum() else " " for c in name).split())
        save_figure(fluctuations_figure(ds), out / f"fluctuations_{stem}.png", dpi=120)
    sizes, lam, (med, lo, hi), hor = chaos
    fig = Figure(figsize=(5, 4), layout="constrained")
    ax = fig.subplots()
    x = np.log(np.asarray(sizes, float)) / lam
    ax.errorbar(x, med, yerr=[med - lo, hi - med], fmt="o", label="median separation step (simulated)")
    ax.plot(x, hor, "s-", label="predicted horizon (median over starts)")
    ax.plot(x, med[0] + (x - x[0]) / 2, "k:", label="slope 1/2: growth at λ₁")
    ax.set(xlabel="log N / λ₁", ylabel="steps after the start on the attractor", title="chaotic horizon")
    ax.legend(fontsize=8)
    fig.savefig(out / "fluctuations_horizon.png", dpi=120)
    print(f"figures written to {out}")


def summary(regimes: dict) -> None:
    """One line per regime and size: the acceptance numbers side by side."""
    print("\n== acceptance: overlaps (mo_se, mv, mq, mk) ==")
    print(f"{'regime':<34} {'N':>7} {'std measured/predicted':>23} {'95% intervals':>16} {'bias gain':>10}  ok")
    for name, ds in regimes.items():
        for i, n in enumerate(ds.n.values):
            r = np.concatenate([ds[f"{k}_std_ratio"].values[i] for k in OVERLAPS])
            lo = np.concatenate([ds[f"{k}_std_ratio_ci_low"].values[i] for k in OVERLAPS])
            hi = np.concatenate([ds[f"{k}_std_ratio_ci_high"].values[i] for k in OVERLAPS])
            g = [float(ds[f"{k}_error_mean_field"].values[i] / ds[f"{k}_error_corrected"].values[i]) for k in OVERLAPS]
            ok = bool(np.all(np.abs(r - 1) <= 0.1)) and (i > 0 or min(g) >= 5)
            print(
                f"{name:<34} {n:>7} {r.min():>11.3f} – {r.max():<9.3f} {lo.min():>7.3f} – {hi.max():<6.3f} "
                f"{min(g):>4.1f} – {max(g):<4.1f} {'yes' if ok else 'NO'}"
            )
    print("(ok: every ratio within 10 %; at the smallest N also the bias gain >= 5)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--paths", type=int, default=1000)
    ap.add_argument("--sizes", default="990,9900,99000")
    ap.add_argument("--fixed", type=float, default=1.0, help="β_o of the fixed point")
    ap.add_argument("--cycle", type=float, default=5.0, help="β_o of the periodic orbit of --cycle-preset")
    ap.add_argument("--cycle-preset", default="paper-pe5", help="preset of the periodic orbit (P = 5, L = 32)")
    ap.add_argument(
        "--paper-cycle", type=float, default=4.0, help="β_o of the paper preset's periodic orbit (3.0: the failing one)"
    )
    ap.add_argument("--order-sizes", default="990,1386,1980,2772,3960,5940,9900")
    ap.add_argument("--order-paths", type=int, default=4000)
    ap.add_argument("--chaotic", type=float, default=1.28, help="β_o of the chaotic regime")
    ap.add_argument("--chaos-sizes", default="990,9900,99000,990000,9900000,99000000")
    ap.add_argument("--chaos-paths", type=int, default=100)
    ap.add_argument("--chaos-starts", type=int, default=8, help="mean-field states on the attractor to start from")
    ap.add_argument("--threshold", type=float, default=0.1)
    ap.add_argument("--skip", default="", help="comma list of parts to skip: fixed, cycle, paper-cycle, order, chaos")
    ap.add_argument("--figures", type=Path, default=None)
    args = ap.parse_args()
    attnphys.configure()
    sizes = [int(s) for s in args.sizes.split(",")]
    skip = set(args.skip.split(","))
    regimes = {}
    if "fixed" not in skip:
        cfg = preset("paper", beta_o=args.fixed)
        stationary_cost(cfg, 1000, 600)
        regimes["fixed_point"] = regime("fixed point", cfg, sizes, args.paths, 1000, 600)
    if "cycle" not in skip:  # paths from the orbit: the expansion from the token costs minutes at L = 32
        cfg = preset(args.cycle_preset, beta_o=args.cycle)
        p = int(stationary_cost(cfg, 3500, 3000).attrs["period"])
        regimes[f"periodic orbit ({args.cycle_preset})"] = regime(
            "periodic orbit", cfg, sizes, args.paths, 3000 + 4 * p, 3000 + 2 * p, start_step=3000
        )
    if "paper-cycle" not in skip:
        cfg = preset("paper", beta_o=args.paper_cycle)
        stationary_cost(cfg, 3500, 3000)
        regimes["periodic orbit (paper)"] = regime("periodic orbit", cfg, sizes, args.paths, 3480, 3000)
    if "order" not in skip:
        cfg = preset("paper", beta_o=args.paper_cycle)
        remainder_order(
            "periodic orbit (paper)", cfg, [int(s) for s in args.order_sizes.split(",")], args.order_paths, 3000, 10
        )
        cfg = preset(args.cycle_preset, beta_o=args.cycle)
        remainder_order(f"periodic orbit ({args.cycle_preset})", cfg, [990, 1980, 3960], args.order_paths, 3000, 2)
    chaos = None
    if "chaos" not in skip:
        cfg = preset("paper", beta_o=args.chaotic)
        starts = [5000 + 97 * i for i in range(args.chaos_starts)]
        chaos = horizon(
            cfg, [int(s) for s in args.chaos_sizes.split(",")], args.chaos_paths, starts, 60, args.threshold
        )
    if regimes:
        summary(regimes)
    if args.figures is not None and chaos is not None and regimes:
        figures(args.figures, regimes, chaos)


if __name__ == "__main__":
    main()
