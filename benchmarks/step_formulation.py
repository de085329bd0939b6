"""How the mean-field step is written matters to XLA: the engine's step against the same arithmetic written
entry by entry (theory: docs/theory/dmft.md §3.4, §3.7), on the paper preset, float64.

The engine (:func:`attnphys.dmft.simulate.run_batch`, transient only) computes the attention as sums of
products and the new row's overlaps with small contractions (einsum), every step fenced by optimisation
barriers so that it fuses alone and keeps its bits in every path (docs/theory/dmft.md §3.7). The variant below computes every overlap
and attention entry as an explicit sum of products over arrays of batch shape, carrying only what the next
step needs (m^v, m^k of every row, m^q of the newest token, the codes and the fill count), once with the
batch axis first (``vmap`` of a per-trajectory loop, the engine's layout) and once with the batch axis last.
It prints trajectory-steps/s of each, how far the variant is from the engine after a few steps (round-off
only: the orbits are chaotic, so the difference grows later), whether the two layouts agree bitwise, and
whether XLA contracts a·b + c into one fused multiply-add on this machine (it does on x86-64 with FMA: the
last bit of a result then depends on how XLA fuses the program, so a faster step can only replace the
engine's in every path at once — plain, recorded, segmented and tangent steps — if those paths are to stay
bitwise equal). The last rows say whether that can be had by giving every path one shared loop body: the
variant with one step per iteration of a loop whose trip count is only known at run time (XLA then compiles
exactly one step, whatever surrounds it), and whether the unrolled loop ends bitwise where that one does.

    python benchmarks/step_formulation.py [--batch 4000] [--steps 20000] [--devices N]
"""

from __future__ import annotations

import argparse
import os
import time

from attnphys.runtime import configure


def _sum(terms):
    it = iter(terms)
    total = next(it)
    for t in it:
        total = total + t
    return total


def entrywise_step(cp, gamma, beta_o, eps, mv, mk, mq, pe, n):
    """One step on (mv, mk (L, M, *b), mq (M, *b), pe (L, P, *b), n (*b)): trailing batch shape *b."""
    import jax.numpy as jnp

    L, M = mv.shape[:2]
    P = pe.shape[1]
    S = cp.signs.shape[0]
    s = [jnp.where(d < n, gamma * _sum(mk[d, a] * mq[a] for a in range(M)), -jnp.inf) for d in range(L)]
    top = s[0]
    for x in s[1:]:
        top = jnp.maximum(top, x)
    e = [jnp.exp(x - top) for x in s]
    z = _sum(e)
    w = [x / z for x in e]
    att = [_sum(w[d] * mv[d, a] for d in range(L)) for a in range(M)]
    u = [jnp.tanh(beta_o * _sum(cp.signs[k, a] * att[a] for a in range(M))) for k in range(S)]
    pe = jnp.concatenate([pe[L - 1 :], pe[: L - 1]])
    c_se, c_pe = 1.0 - eps, (1.0 - (1.0 - eps)) / P
    new = [
        jnp.stack(
            [
                c_se * _sum(cp.K[x, k, a] * u[k] for k in range(S))
                + c_pe * _sum(cp.W_pe[x, a, p] * pe[0, p] for p in range(P))
                for a in range(M)
            ]
        )
        for x in (1, 2, 3)
    ]
    mv = jnp.concatenate([new[0][None], mv[: L - 1]])
    mk = jnp.concatenate([new[2][None], mk[: L - 1]])
    return mv, mk, new[1], pe, jnp.minimum(n + 1, L)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=4000)
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--devices", type=int, default=os.cpu_count(), help="XLA host devices (default: all cores)")
    args = ap.parse_args()
    configure(x64=True, host_devices=args.devices)

    import jax
    import jax.numpy as jnp
    import numpy as np

    from attnphys.dmft import paper_checkpoint, preset
    from attnphys.dmft.meanfield import couplings, fill, scalars
    from attnphys.dmft.simulate import Schedule, broadcast_batch, run_batch
    from attnphys.runtime import shard_batch

    cfg = preset("paper")
    cp = couplings(cfg.build_correlations())
    B = args.batch
    sc, wins = broadcast_batch(scalars(cfg, beta_o=np.linspace(0.0, 3.0, B)), paper_checkpoint(cfg), B)
    st = jax.vmap(lambda s, w: fill(cp, s, w))(sc, wins)
    print(f"devices: {len(jax.devices())} x {jax.devices()[0].platform}, batch {B}, {args.steps} steps, float64")

    def batch_first(cp, sc, st, n):
        def one(s, x):
            carry = (x.mv, x.mk, x.m0[2], x.pe, x.n)
            out = jax.lax.fori_loop(
                0, n, lambda i, c: entrywise_step(cp, s.gamma, s.gain_o, s.eps, *c), carry, unroll=8
            )
            return out[0][0]  # m^v of the newest token (M,)

        return jax.vmap(one)(sc, st)

    def one_per_iteration(cp, sc, st, n):
        def one(s, x):
            carry = (x.mv, x.mk, x.m0[2], x.pe, x.n)
            out = jax.lax.while_loop(
                lambda c: c[0] < n,
                lambda c: (c[0] + 1, entrywise_step(cp, s.gamma, s.gain_o, s.eps, *c[1])),
                (0, carry),
            )
            return out[1][0][0]

        return jax.vmap(one)(sc, st)

    def batch_last(cp, sc, st, n):
        last = lambda x: jnp.moveaxis(x, 0, -1)  # noqa: E731
        carry = (last(st.mv), last(st.mk), last(st.m0[:, 2]), last(st.pe), st.n)
        out = jax.lax.fori_loop(0, n, lambda i, c: entrywise_step(cp, sc.gamma, sc.beta_o, sc.eps, *c), carry, unroll=8)
        return out[0][0].T

    def timed(fn):
        jax.block_until_ready(fn())
        t0 = time.perf_counter()
        out = jax.block_until_ready(fn())
        return B * args.steps / (time.perf_counter() - t0), out

    def engine(n):
        final, _, _ = run_batch(cp, sc, wins, Schedule(steps=n, transient=n, record=()))
        return final.mv[:, 0]

    def variant(kind, n):
        fn = jax.jit(batch_first if kind == "first" else batch_last, static_argnums=3)
        return shard_batch(lambda s, x: fn(cp, s, x, n), (sc, st), B)

    dynamic = jax.jit(one_per_iteration)

    def variant_dynamic(n):
        return shard_batch(lambda s, x: dynamic(cp, s, x, jnp.asarray(n, jnp.int32)), (sc, st), B)

    rate_e, _ = timed(lambda: engine(args.steps))
    rate_f, out_f = timed(lambda: variant("first", args.steps))
    rate_l, out_l = timed(lambda: variant("last", args.steps))
    rate_d, out_d = timed(lambda: variant_dynamic(args.steps))
    print(f"{'formulation':<34} {'traj-steps/s':>14}")
    print(f"{'engine':<34} {rate_e:>14.3e}")
    print(f"{'entry by entry, batch axis first':<34} {rate_f:>14.3e}")
    print(f"{'entry by entry, batch axis last':<34} {rate_l:>14.3e}")
    print(f"{'entry by entry, one step/iteration':<34} {rate_d:>14.3e}")
    print(f"the two layouts bitwise equal after {args.steps} steps: {bool(np.array_equal(out_f, out_l))}")
    same = bool(np.array_equal(out_f, out_d))
    print(f"unrolled loop bitwise equal to one step/iteration after {args.steps} steps: {same}")
    for n in (1, 3, 10):
        dev = float(np.max(np.abs(np.asarray(variant("first", n)) - np.asarray(engine(n)))))
        print(f"max |m^v variant - engine| after {n:>2} steps: {dev:.1e}")
    a, b, c = jnp.full(8, 1 + 2.0**-30), jnp.full(8, 1 - 2.0**-30), jnp.full(8, -1.0)
    fused = float(jax.jit(lambda a, b, c: a * b + c)(a, b, c)[0]) != 0.0
    print(f"XLA contracts a*b + c into a fused multiply-add: {fused}")


if __name__ == "__main__":
    main()
