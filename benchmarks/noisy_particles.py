"""The cost of the noisy particle system's theory against its simulation (docs/theory/noisy_particles.md): the
closed forms K_#(β) and β_*(d), the quadrature route, the mean-field branches, the SDE's step rate and one
coupling sweep, each timed, with the numbers they produce.

    python benchmarks/noisy_particles.py [--dim 2] [--beta 5.0] [--tokens 128] [--replicas 6] [--points 15]
        [--skip-sweep]

The sweep uses the acceptance settings of :data:`attnphys.clouds.noisy_checks.SWEEP_SETTINGS` unless told
otherwise; on the shared 2-core development machine one sweep of 128 tokens × 6 replicas at β = 5 (d = 2,
15 couplings up and down, 20 time units each, h ≈ 0.006) takes about 100 s, the closed forms microseconds.
"""

from __future__ import annotations

import argparse
import time


def _timed(fn, repeat: int = 1):
    t = time.perf_counter()
    for _ in range(repeat):
        out = fn()
    return out, (time.perf_counter() - t) / repeat


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dim", type=int, default=2)
    ap.add_argument("--beta", type=float, default=5.0)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--replicas", type=int, default=6)
    ap.add_argument("--points", type=int, default=15)
    ap.add_argument("--skip-sweep", action="store_true")
    args = ap.parse_args()

    from attnphys.runtime import configure

    configure(x64=True, host_devices=1)
    import jax
    import numpy as np

    from attnphys.clouds.flow import uniform_sphere
    from attnphys.clouds.noisy import (
        coupling_sweep,
        critical_beta,
        critical_beta_numeric,
        linear_threshold,
        mean_field_branches,
        solve_noisy,
        zonal_spectrum,
    )
    from attnphys.clouds.noisy_checks import SWEEP_SETTINGS

    d, beta = args.dim, args.beta
    betas = np.linspace(0.5, 6.0, 100)
    kl, t = _timed(lambda: linear_threshold(betas, d), 50)
    print(
        f"K_#(β), closed form, 100 values of β: {t * 1e6:.0f} µs; K_#({beta:g}) = {float(linear_threshold(beta, d)[0]):.12g}"
    )
    spec, t = _timed(lambda: zonal_spectrum(betas, d, 2), 1)
    print(f"K_#(β), zonal quadrature (64 nodes), 100 values: {t * 1e3:.1f} ms; largest relative distance "
          f"{float(np.max(np.abs(kl / (betas / spec[:, 1]) - 1))):.1e}")  # fmt: skip
    bs, t = _timed(lambda: critical_beta(d), 20)
    bn, tn = _timed(lambda: critical_beta_numeric(d), 1)
    print(
        f"β_*({d}) = {bs:.15g}: closed form {t * 1e6:.0f} µs, quadrature {tn * 1e3:.1f} ms (distance {abs(bs - bn):.1e})"
    )
    k0 = float(linear_threshold(beta, d)[0])
    mf, t = _timed(lambda: mean_field_branches(beta, k0 * np.linspace(0.7, 1.2, 51), d), 1)
    print(f"mean-field branches, 51 couplings (96 nodes): {t:.2f} s; K_c/K_# = {float(mf.coupling_c) / k0:.4f}, "
          f"K_s/K_# = {float(mf.coupling_s) / k0:.4f}")  # fmt: skip

    X = np.asarray(uniform_sphere(jax.random.PRNGKey(0), args.replicas * args.tokens, d))
    X = X.reshape(args.replicas, args.tokens, d)
    solve_noisy(X, [1.0], beta=beta, coupling=k0, dt=0.01, seed=0)  # compile
    _, t = _timed(lambda: solve_noisy(X, [10.0], beta=beta, coupling=k0, dt=0.01, seed=1), 1)
    print(f"SDE, {args.replicas} × {args.tokens} tokens in d = {d}: {t / 1000 * 1e3:.2f} ms per step "
          f"({args.replicas * args.tokens**2 * 1000 / t:.3g} pair interactions per second)")  # fmt: skip
    if args.skip_sweep:
        return
    st = SWEEP_SETTINGS
    ds, t = _timed(
        lambda: coupling_sweep(
            beta, k0 * np.linspace(0.75, 1.1, args.points), dim=d, theory=False, tokens=args.tokens,
            replicas=args.replicas, t_relax=float(st["t_relax"]), t_average=float(st["t_average"]),
            saves=int(st["saves"]), seed=int(st["seed"]),
        ),
        1,
    )  # fmt: skip
    print(
        f"coupling sweep up and down, {args.points} couplings, h = {ds.attrs['dt']:.4g}: {t:.1f} s; onset/K_# = "
        f"{float(ds.onset) / k0:.4f} [{float(ds.onset_low) / k0:.4f}, {float(ds.onset_high) / k0:.4f}], loop area "
        f"{float(ds.loop_area):+.2e} [{float(ds.loop_area_low):+.2e}, {float(ds.loop_area_high):+.2e}]"
    )


if __name__ == "__main__":
    main()
