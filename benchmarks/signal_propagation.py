"""The cost of the signal-propagation theory against the simulation it replaces: the mean cosine per layer of
the paper's random Post-LN encoder (d = 720, T = 512, 50 blocks, σ_w² = σ_v² = 0.2, σ_b² = 4·10⁻⁴) at
β = 0.5 and 3, the finite-T REM theory and the T → ∞ law timed against the batched JAX simulation of
``--seeds`` networks per β, with the largest |theory − simulation| over the layers.

    python benchmarks/signal_propagation.py [--seeds 10] [--tokens 512] [--dim 720] [--layers 50]
        [--weights explicit|implicit]

Measured on the shared 2-core development machine (load near 8), 10 networks per β: simulation 323 s;
finite-T REM theory 23.4 s (14× faster), max |theory − simulation| 0.0110 (β = 0.5) and 0.0072 (β = 3);
T → ∞ law 0.03 s, 0.0102 and 0.0485 (docs/theory/signal_propagation.md §7).
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--tokens", type=int, default=512)
    ap.add_argument("--dim", type=int, default=720)
    ap.add_argument("--layers", type=int, default=50)
    ap.add_argument("--weights", choices=("explicit", "implicit"), default="explicit")
    args = ap.parse_args()

    import numpy as np

    from attnphys.clouds.propagation import propagation_theory
    from attnphys.clouds.propagation_simulation import simulate_propagation
    from attnphys.runtime import configure

    configure(x64=True, host_devices=1)
    betas = [0.5, 3.0]
    t = time.perf_counter()
    sim = simulate_propagation(
        betas, seeds=args.seeds, tokens=args.tokens, dim=args.dim, layers=args.layers, weights=args.weights
    )
    t_sim = time.perf_counter() - t
    rho0 = float(sim["mean"].isel(layer=0).mean())
    rows = []
    for finite in (True, False):
        t = time.perf_counter()
        th = propagation_theory(betas, rho0=rho0, layers=args.layers, tokens=args.tokens, finite_size=finite)
        rows.append((finite, time.perf_counter() - t, np.abs(th.cosine.values - sim["mean"].values).max(-1)))
    print(
        f"simulation: {args.seeds} networks per beta, d = {args.dim}, T = {args.tokens}, {args.layers} blocks, "
        f"{args.weights} weights: {t_sim:.1f} s"
    )
    for finite, sec, err in rows:
        name = "finite-T REM theory" if finite else "T -> infinity law"
        errs = ", ".join(f"beta = {b:g}: {e:.4f}" for b, e in zip(betas, err))
        print(f"{name}: {sec:.2f} s ({t_sim / sec:.0f}x faster); max |theory - simulation| {errs}")


if __name__ == "__main__":
    main()
