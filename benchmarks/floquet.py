"""Floquet multipliers of the paper preset's periodic orbits: the QR step and the periodic QR iteration.

Part 1 times the QR step of the iteration (theory: docs/theory/dynamics.md §5.2) on batches of 16
products J Q, J (12, 12), Q (12, r): LAPACK through ``jnp.linalg.qr`` against the vectorised
``attnphys.dynamics._linalg.householder_qr``, in µs per matrix and step, for r = 5 (the top-3 exponents)
and r = 12 (all of them). Part 2 refines the period-24 orbits of β_o ∈ [2.6, 3.0] (from the published
checkpoint after a transient) and times ``floquet_batch`` for the 3 leading and for all 12 multipliers,
after compilation, best of ``--repeat``; run the same script on another version of the package to compare
(part 1 needs ``householder_qr``).

    python benchmarks/floquet.py [--orbits 64] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import time

from attnphys.runtime import configure


def best_of(f, repeat: int):
    """(best wall time of ``repeat`` calls after a first one, the last call's result)."""
    out = f()
    t = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = f()
        t = min(t, time.perf_counter() - t0)
    return t, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--orbits", type=int, default=64, help="values of beta_o in [2.6, 3.0]")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--devices", type=int, default=os.cpu_count())
    args = ap.parse_args()
    configure(x64=True, host_devices=args.devices)

    import jax
    import jax.numpy as jnp
    import numpy as np

    import attnphys
    import attnphys.dynamics.periodic as periodic
    from attnphys.dmft import preset
    from attnphys.dmft.model import DMFTModel

    print(
        f"attnphys {attnphys.__version__}; devices: {len(jax.devices())} x {jax.devices()[0].platform}; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    from attnphys.dynamics import _linalg

    if hasattr(_linalg, "householder_qr"):
        steps, B, D = 2000, 16, 12
        rng = np.random.default_rng(0)
        Js = jnp.asarray(rng.normal(size=(steps, B, D, D)) * 0.5)
        for r in (5, 12):
            for name, qr in (("jnp.linalg.qr", jnp.linalg.qr), ("householder_qr", _linalg.householder_qr)):

                @jax.jit
                def run(Q, qr=qr):
                    return jax.lax.scan(lambda Q, J: (jax.vmap(qr)(J @ Q)[0], None), Q, Js)[0]

                Q0 = jnp.broadcast_to(jnp.eye(D, r), (B, D, r))
                t, _ = best_of(lambda Q0=Q0: jax.block_until_ready(run(Q0)), args.repeat)
                print(f"QR step, batch {B}, J Q ({D}, {r}): {name:>15} {t / (steps * B) * 1e6:6.2f} us per matrix")

    cfg = preset("paper")
    model = DMFTModel.of(cfg)
    m = model.map("mo_se", False)
    sc = model.scalars({"beta_o": np.linspace(2.6, 3.0, args.orbits)})
    x, aux = m.state(model.windows_after("checkpoint", sc, 20_000))
    params = sc  # the map's per-point parameters; the couplings are shared
    orb = periodic.refine_batch(m, x, aux, params, np.full(args.orbits, 24), shared=model.couplings)
    ok = np.flatnonzero(np.asarray(orb.converged) & np.asarray(orb.aux_closed))
    take = jax.tree_util.tree_map(lambda a: np.asarray(a)[ok], (orb.points, orb.aux_points, params))
    per = np.asarray(orb.period)[ok]
    print(f"{ok.size} of {args.orbits} orbits refined at period 24")
    for lead in (3, None):
        t, fq = best_of(
            lambda lead=lead: periodic.floquet_batch(m, *take, per, shared=model.couplings, max_cycles=100, leading=lead),
            args.repeat,
        )
        want = lead or cfg.L * cfg.M
        print(
            f"floquet_batch, {'all 12' if lead is None else f'top {lead}'} multipliers: {t:6.2f} s "
            f"({t / ok.size * 1e3:.1f} ms per orbit); cycles {int(np.sum(fq.cycles))}; "
            f"resolved >= {want}: {int(np.sum(np.asarray(fq.resolved) >= want))}/{ok.size}"
        )


if __name__ == "__main__":
    main()
