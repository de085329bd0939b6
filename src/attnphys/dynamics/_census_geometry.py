"""The geometry of an attractor census (theory: docs/theory/dynamics.md §7.2): distances between clouds of
fingerprints, the recurrence and convergence tests of starts that spent their budget, the runs of the
non-periodic representatives, and the merging of pieces of one attractor. Used by
:mod:`attnphys.dynamics._census`."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from attnphys.dynamics._lyapunov import advance, lyapunov_core
from attnphys.dynamics.fingerprint import fingerprint
from attnphys.dynamics.settle import lane_params


def _dist(A, B):
    """(n, m) Euclidean distances."""
    return jnp.sqrt(jnp.maximum(jnp.sum(A**2, -1)[:, None] + jnp.sum(B**2, -1)[None, :] - 2 * A @ B.T, 0.0))


def _nn_quantile(S, q):
    d = _dist(S, S) + jnp.diag(jnp.full(S.shape[0], jnp.inf))
    return jnp.quantile(jnp.min(d, axis=1), q)


def _to_quantile(A, B, q):
    """q-quantile over points of A of the distance to the nearest point of B."""
    return jnp.quantile(jnp.min(_dist(A, B), axis=1), q)


def _recurrence(S, floor, q, factor):
    """Per lane (S (N, n, G)): (recurrent, h = within-set NN quantile of S)."""

    def one(s, fl):
        n = s.shape[0] // 2
        A, B = s[:n], s[n:]
        hA = _nn_quantile(A, q)
        return _to_quantile(B, A, q) <= factor * hA + fl, _nn_quantile(s, q)

    return jax.lax.map(lambda a: one(*a), (S, floor), batch_size=64)


@partial(jax.jit, static_argnames=("q", "factor"))
def same_cloud(Sr, hr, S, h, floor, q, factor):
    """Pairwise: does the cloud S[i] (n, G) belong to the attractor of the representative cloud Sr[i]?
    Sr, S: (N, n, G); hr, h: (N,) their within-set NN quantiles; floor: (N,) absolute tolerances."""

    def one(sr, hr_, s, hs, fl):
        tol = factor * jnp.maximum(hr_, hs) + fl
        return (_to_quantile(s, sr, q) <= tol) & (_to_quantile(sr, s, q) <= tol)

    return jax.lax.map(lambda a: one(*a), (Sr, hr, S, h, floor), batch_size=64)


def _converging(ring, P, conf, tol):
    """Per lane: does the ring approach a periodic orbit (period ≤ P) without reaching it?"""

    def one(r):
        W = r.shape[0]
        lo = jnp.min(jnp.where(jnp.isfinite(r), r, jnp.inf), axis=0)
        hi = jnp.max(jnp.where(jnp.isfinite(r), r, -jnp.inf), axis=0)
        thr = tol * jnp.maximum(jnp.max(hi - lo), jnp.finfo(r.dtype).tiny)
        lags = jnp.arange(1, P + 1)
        d = jnp.max(jnp.abs(r[W - 1 - lags] - r[-1]), axis=-1)
        c = jnp.where(jnp.any(d <= thr), lags[jnp.argmax(d <= thr)], P)
        e = jnp.max(jnp.abs(r - jnp.roll(r, c, axis=0)), axis=-1)
        idx = jnp.arange(W)
        near = jnp.all(jnp.where(idx >= W - conf * c, e <= thr, True)) & jnp.any(d <= thr)
        quarter = (W - c) // 4
        early = jnp.sum(jnp.where((idx >= c) & (idx < c + quarter), e, 0.0)) / quarter
        late = jnp.sum(jnp.where(idx >= W - quarter, e, 0.0)) / quarter
        return near & (late < 0.5 * early)

    return jax.lax.map(one, ring, batch_size=64)


@partial(jax.jit, static_argnames=("q", "factor", "P", "conf", "tol", "stride", "n_rec"))
def assess(ring, q, factor, P, conf, tol, stride, n_rec, period_tol):
    """Lanes that spent their budget (ring (N, W, G)): recurrent, within-set NN quantile h, converging, and
    the subsampled clouds S (N, n_rec, G)."""
    S = ring[:, ::stride][:, -n_rec:]
    scale = jnp.maximum(1.0, jnp.max(jnp.where(jnp.isfinite(S), jnp.abs(S), 0.0), axis=(1, 2)))
    rec, h = _recurrence(S, period_tol * scale, q, factor)
    return rec, h, _converging(ring, P, conf, tol), S


@partial(jax.jit, static_argnames=("m", "k", "steps", "align", "n_window", "n_fp", "n_long", "stride"))
def rep_run(m, k, steps, align, n_window, n_fp, n_long, stride, x, aux, table, pidx, shared):
    """Per non-periodic representative: Benettin exponents over ``steps`` steps (after ``align``), then a
    window of n_window observations and fingerprints for the classification, the final state, and a long
    run of n_long fingerprints ``stride`` steps apart (the point set that merges pieces of one attractor)."""

    def one(x, aux, i):
        params = lane_params(table, shared, i)
        r = lyapunov_core(
            m, x, aux, params, steps=steps, k=k, reortho_every=1, align=align, history_every=0, init="random"
        )

        def emit(x, aux):
            return m.observe(x, aux, params), fingerprint(x, n_fp), jnp.all(jnp.isfinite(x))

        x2, aux2, _, _, (y, f, ok) = advance(m, params, n_window, 1, r.x, r.aux, emit=emit)
        bad = jnp.where(r.nonfinite >= 0, r.nonfinite, jnp.where(jnp.all(ok), -1, steps + jnp.argmin(ok)))

        def hop(c, _):
            xx, aa, _, _, _ = advance(m, params, stride, 1, c[0], c[1])
            return (xx, aa), fingerprint(xx, n_fp)

        _, long = jax.lax.scan(hop, (x2, aux2), None, length=n_long)
        return r.exponents, y, f, bad, x2, aux2, long

    return jax.vmap(one)(x, aux, pidx)


def covers(X: np.ndarray, Y: np.ndarray, q: float, factor: float) -> float:
    """Share of the points of X within factor × (the larger q-quantile nearest-neighbour spacing of X and
    Y) of a point of Y (theory: docs/theory/dynamics.md §7.2): ≈ 1 for two long runs on one attractor,
    ≈ 0 for runs on disjoint attractors."""
    from scipy.spatial import cKDTree  # pyright: ignore[reportAttributeAccessIssue]  (re-exported at runtime)

    X, Y = X[np.all(np.isfinite(X), axis=1)], Y[np.all(np.isfinite(Y), axis=1)]
    if X.shape[0] < 2 or Y.shape[0] < 2:
        return 0.0
    tx, ty = cKDTree(X), cKDTree(Y)
    h = max(float(np.quantile(tx.query(X, k=2)[0][:, 1], q)), float(np.quantile(ty.query(Y, k=2)[0][:, 1], q)))
    scale = max(1.0, float(np.max(np.abs(X))), float(np.max(np.abs(Y))))
    return float(np.mean(ty.query(X)[0] <= factor * h + 1e-12 * scale))


@partial(jax.jit, static_argnames=("m", "n"))
def trace_observe(m, n, x, aux, table, pidx, shared):
    """Per representative: n states from x and the observable at each: (n, D), (n, F)."""

    def one(x, aux, i):
        params = lane_params(table, shared, i)

        def body(c, _):
            x, aux = c
            y = m.observe(x, aux, params)
            return m.step(x, aux, params), (x, y)

        _, (xs, ys) = jax.lax.scan(body, (x, aux), None, length=n)
        return xs, ys

    return jax.vmap(one)(x, aux, pidx)


@partial(jax.jit, static_argnames=("m",))
def observe_points(m, xs, auxs, table, pidx, shared):
    def one(x, a, i):
        params = lane_params(table, shared, i)
        return jax.vmap(lambda xx, aa: m.observe(xx, aa, params))(x, a)

    return jax.vmap(one)(xs, auxs, pidx)


def odd_prime_stride(n: int) -> int:
    """The smallest prime ≥ max(n, 5): the long run of a representative is sampled that many steps apart, so
    that the samples do not alias with a banded attractor's cycle of 2^k·3 bands (or a map's driving period
    of 2, 3 or 4), which would leave each run in one band (theory: docs/theory/dynamics.md §7.2)."""
    p = max(int(n), 5)
    while any(p % d == 0 for d in range(2, int(p**0.5) + 1)):
        p += 1
    return p


def merge_pieces(atts: list, o) -> None:
    """Merge, in place, non-periodic attractors of one parameter point whose long runs cover each other
    (:func:`covers` ≥ ``merge_coverage`` both ways): pieces of one attractor that the ring-based grouping
    split (intermittent or banded chaos visits its regions unevenly within a ring) (theory:
    docs/theory/dynamics.md §7.2). The largest piece keeps its representative; members are pooled."""
    rec = sorted((a for a in atts if a["source"] == "recurrent"), key=lambda a: (-len(a["members"]), a["rep"]))
    kept: list = []
    for a in rec:
        for k in kept:
            q, f = o.recurrence_quantile, o.recurrence_factor
            if min(covers(a["long"], k["long"], q, f), covers(k["long"], a["long"], q, f)) >= o.merge_coverage:
                k["members"] = sorted(k["members"] + a["members"])
                k.setdefault("merged", []).append(a["rep"])
                a["dropped"] = True
                break
        else:
            kept.append(a)
    atts[:] = [a for a in atts if not a.get("dropped")]


def pow2(n: int, least: int = 8) -> int:
    """Batch sizes are padded to powers of two (at least ``least``), so that few shapes get compiled
    (theory: docs/theory/dynamics.md §7.2)."""
    return max(least, 1 << max(0, int(n) - 1).bit_length())


def align_match(seqs, rep, tol):
    """seqs (n, p, G) vs rep (p, G): same point set up to a phase shift, within tol (max-norm) (theory:
    docs/theory/dynamics.md §7.2)."""
    d0 = np.max(np.abs(seqs - rep[0]), axis=-1)  # (n, p)
    k = np.argmin(d0, axis=1)
    p = rep.shape[0]
    rolled = np.take_along_axis(seqs, ((np.arange(p)[None, :] + k[:, None]) % p)[..., None], axis=1)
    return np.max(np.abs(rolled - rep), axis=(-2, -1)) <= tol
