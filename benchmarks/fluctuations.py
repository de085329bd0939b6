"""The finite-size theory of the paper's network against simulation (theory: docs/theory/fluctuations.md).

1. At a fixed point (β_o = 1.0: the orbit diagram from the first token settles on A ≈ 0 for every
   β_o ≤ 1.235) and on a periodic orbit (β_o = 4.0: period 24, monodromy radius 0.017; ``--cycle 3.0``
   gives the less stable period-24 orbit on which paths leave the orbit at N = 990), for
   N ∈ {990, 9,900, 99,000} (the multiples of N_se = 99 nearest 10³, 10⁴, 10⁵) and ``--paths`` paths: the
   measured / predicted standard deviation of every record and feature over the window with its 95 %
   interval, and the path-averaged error of the mean field and of the bias-corrected prediction, beside the
   sampling error of those averages. Acceptance: every overlap's ratio within 10 %; at N = 990 the
   corrected error at least 5× below the mean field's.
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


def regime(name, cfg, sizes, paths, steps, transient):
    print(f"\n== {name}: beta_o = {cfg.beta_o}, steps {transient}..{steps - 1}, {paths} paths ==")
    ds = compare_fluctuations(cfg, sizes, paths=paths, steps=steps, transient=transient, record=RECORDS, seed=1)
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
        save_figure(fluctuations_figure(ds), out / f"fluctuations_{name}.png", dpi=120)
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--paths", type=int, default=1000)
    ap.add_argument("--sizes", default="990,9900,99000")
    ap.add_argument("--fixed", type=float, default=1.0, help="β_o of the fixed point")
    ap.add_argument("--cycle", type=float, default=4.0, help="β_o of the periodic orbit (3.0: the failing one)")
    ap.add_argument("--chaotic", type=float, default=1.28, help="β_o of the chaotic regime")
    ap.add_argument("--chaos-sizes", default="990,9900,99000,990000,9900000,99000000")
    ap.add_argument("--chaos-paths", type=int, default=100)
    ap.add_argument("--chaos-starts", type=int, default=8, help="mean-field states on the attractor to start from")
    ap.add_argument("--threshold", type=float, default=0.1)
    ap.add_argument("--skip", default="", help="comma list of parts to skip: fixed, cycle, chaos")
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
    if "cycle" not in skip:
        cfg = preset("paper", beta_o=args.cycle)
        stationary_cost(cfg, 3500, 3000)
        regimes["periodic_orbit"] = regime("periodic orbit", cfg, sizes, args.paths, 3480, 3000)
    chaos = None
    if "chaos" not in skip:
        cfg = preset("paper", beta_o=args.chaotic)
        starts = [5000 + 97 * i for i in range(args.chaos_starts)]
        chaos = horizon(
            cfg, [int(s) for s in args.chaos_sizes.split(",")], args.chaos_paths, starts, 60, args.threshold
        )
    if args.figures is not None and chaos is not None and regimes:
        figures(args.figures, regimes, chaos)


if __name__ == "__main__":
    main()
