"""Roofline of the DMFT mean-field step (theory: docs/theory/dmft.md §3.4, §3.7): flops per trajectory-step
from XLA's cost analysis, achieved trajectory-steps/s and GFLOP/s, and the fraction of this machine's peak.

For each preset (``paper``: L = 4, P = 2; ``paper-pe5``: L = 32, P = 5), batch B (default 1024), float64:

* flops, transcendentals and bytes per trajectory-step: ``jax.jit(step).lower(...).compile().cost_analysis()``
  of one vmapped cached step (:func:`attnphys.dmft.meanfield.advance`) over the batch, divided by B;
* achieved throughput of the engine (:func:`attnphys.dmft.simulate.run_batch`, transient only, no records),
  split over all JAX devices as the library does;
* the peak is *estimated* from a measured float64 matmul (n = 2048) on all devices at once — a practical
  ceiling for dense float64 arithmetic on this machine, not a vendor figure. tanh and exp are counted by XLA
  as transcendentals, not flops; they cost far more than one flop each, so the flop fraction understates how
  busy the units are.

    python benchmarks/roofline.py [--batch 1024] [--steps 20000] [--devices N]
"""

from __future__ import annotations

import argparse
import os
import time
from functools import partial

from attnphys.runtime import configure


def _advance_state(cp, sc, st, convention):
    from attnphys.dmft.meanfield import advance

    return advance(cp, sc, st, convention)[0]


def _cost(compiled) -> dict:
    ca = compiled.cost_analysis()
    if isinstance(ca, (list, tuple)):  # older jax: one dict per program
        ca = ca[0]
    return dict(ca or {})


def matmul_peak(n: int = 2048, repeats: int = 3) -> float:
    """Float64 n × n matmul on every device at once, best of ``repeats``, in flop/s: a practical ceiling of
    dense arithmetic on this machine (also read by ``benchmarks/speed.py``)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    devs = jax.devices()
    mats = [jax.device_put(jnp.asarray(np.random.default_rng(i).normal(size=(n, n))), d) for i, d in enumerate(devs)]
    mm = jax.jit(lambda a: a @ a)
    jax.block_until_ready([mm(a) for a in mats])
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready([mm(a) for a in mats])
        best = min(best, time.perf_counter() - t0)
    return 2 * n**3 * len(devs) / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=20_000, help="steps per trajectory (paper); P=5 runs steps/4")
    ap.add_argument("--devices", type=int, default=os.cpu_count(), help="XLA host devices (default: all cores)")
    ap.add_argument("--repeats", type=int, default=3, help="timed repeats (best is reported)")
    args = ap.parse_args()
    configure(x64=True, host_devices=args.devices)

    import jax
    import numpy as np

    from attnphys.dmft import preset
    from attnphys.dmft.model import DMFTModel
    from attnphys.dmft.simulate import Schedule, run_batch

    devs = jax.devices()
    print(f"jax {jax.__version__}; devices: {len(devs)} x {devs[0].platform} ({devs[0].device_kind}); "
          f"float64: {jax.config.jax_enable_x64}; load average: {os.getloadavg()[0]:.2f}")

    # ---- peak estimate: float64 matmul on every device at once --------------------------------------
    n = 2048
    peak = matmul_peak(n)
    print(f"peak estimate: {peak / 1e9:.1f} GFLOP/s (float64 {n}x{n} matmul on {len(devs)} device(s), best of 3)")

    B = args.batch
    print(f"\n{'preset':>10} {'L':>3} {'P':>2} {'flop/step':>10} {'transc/step':>11} {'bytes/step':>10} "
          f"{'steps':>7} {'traj-steps/s':>13} {'GFLOP/s':>8} {'% peak':>7} {'flop/byte':>9}")
    for name, steps in (("paper", args.steps), ("paper-pe5", max(1000, args.steps // 4))):
        cfg = preset(name)
        model = DMFTModel.of(cfg)
        betas = np.linspace(0.5, 2.5, B)
        sc = model.scalars({"beta_o": betas}, n=B)
        st = model.initial_states("token", sc)
        # settle into a full window first (the cost of a step does not depend on it, the values do)
        st, _, _ = run_batch(model.couplings, sc, st, Schedule(steps=cfg.L, transient=cfg.L, record=()),
                             model.convention)
        one = jax.jit(jax.vmap(partial(_advance_state, model.couplings, convention=model.convention)))
        cost = _cost(one.lower(sc, st).compile())
        flops = cost.get("flops", float("nan")) / B
        trans = cost.get("transcendentals", float("nan")) / B
        byts = cost.get("bytes accessed", float("nan")) / B
        sched = Schedule(steps=steps, transient=steps, record=())
        jax.block_until_ready(run_batch(model.couplings, sc, st, sched, model.convention))
        t = np.inf
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            jax.block_until_ready(run_batch(model.couplings, sc, st, sched, model.convention))
            t = min(t, time.perf_counter() - t0)
        rate = B * steps / t
        gf = rate * flops / 1e9
        print(f"{name:>10} {cfg.L:>3} {cfg.P:>2} {flops:>10.0f} {trans:>11.0f} {byts:>10.0f} {steps:>7} "
              f"{rate:>13.3e} {gf:>8.2f} {100 * gf * 1e9 / peak:>6.2f}% {flops / byts:>9.2f}")
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
