"""Token-cloud throughput: 4096 tokens × D = 64 × 100 layers (attention + residual + LayerNorm), with the
full statistics every 10 layers. Target on a 2-core machine: <= 10 s (float32).

    python benchmarks/clouds.py [--tokens 4096] [--dim 64] [--layers 100] [--x64]
"""

from __future__ import annotations

import argparse
import time

from attnphys.runtime import configure


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--layers", type=int, default=100)
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--x64", action="store_true")
    args = ap.parse_args()
    configure(x64=args.x64, host_devices=1)

    import jax.numpy as jnp

    from attnphys.clouds import initial_cloud, run_cloud, standard_layer

    dtype = jnp.float64 if args.x64 else jnp.float32
    X0 = initial_cloud("gaussian", args.tokens, args.dim, seed=0, dtype=dtype)
    layer = standard_layer("layernorm", beta=1.0)
    small = initial_cloud("gaussian", args.tokens, args.dim, seed=1, dtype=dtype)
    t0 = time.perf_counter()
    run_cloud(small, layer, args.every, args.every)  # compile the layer block and the statistics
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    ds = run_cloud(X0, layer, args.layers, args.every)
    wall = time.perf_counter() - t0
    print(f"{args.tokens} tokens x D={args.dim} x {args.layers} layers, {ds.sizes['layer']} statistics snapshots "
          f"({len(ds.data_vars)} statistics), {jnp.dtype(dtype).name}: {wall:.2f} s after compilation "
          f"(first call incl. compilation {compile_s:.2f} s)")
    print(f"k-NN entropy {float(ds.knn_entropy[0]):.3f} -> {float(ds.knn_entropy[-1]):.3f}, "
          f"angular spread {float(ds.angular_spread[0]):.3f} -> {float(ds.angular_spread[-1]):.3f}")


if __name__ == "__main__":
    main()
