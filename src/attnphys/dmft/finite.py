"""The finite-N stochastic attention network and its link to the mean field (theory: docs/theory/dmft.md §2).

Conventions — the same as the mean-field map of this package, so that both describe one network:

* positions as the reference's mean-field model (§3.5, §8 item 7): the first token x₀ only leaves its
  trace A₀ = m^v(x₀) and is not in the window; generated token k has position (k − 1) mod L;
* overlaps m^α(x) = (1−ε)/N_se W^{α,se}·x^se + ε'/P W^{α,pe}·x^pe with ε' = 1 − (1 − ε);
* ``mo_se`` follows the configuration's ``mo_se_convention`` (``plain``: W^{o,se}·x^se / N_se;
  ``paper``: times (1 − ε), as the mean-field records);
* records of loop step t (``att`` = A_{t+1}, and every other observable of
  :mod:`~attnphys.dmft.observables` registry of the token x_{t+1} sampled from A_t) are the
  finite-N counterparts of the mean-field records of loop step t: the mean-field
  overlaps are their conditional expectations given A_t, and the finite values deviate by O(N^{-1/2}).

Exact and memory-bounded for any N: the dynamics depends on the sampled token only through the
overlaps, i.e. through Σ_i x_i over the bits that share the same weight column (W^o, W^v, W^q, W^k)_{·,i}.
Bits of one such class are independent given the field, so their sum is 2·Binomial(n_c, p_c) − n_c.
A network is stored as its distinct columns (at most 2^{4M}) with counts, and one step costs
O(#classes), independent of N. ``per_bit=True`` samples every bit (a Bernoulli draw per bit, memory
O(N)) — the literal algorithm, used to cross-check the class sampler.

The softmax is max-shifted (``jax.nn.softmax``): it cannot overflow for any γ.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnphys import _deprecated
from attnphys.dmft.config import DMFTConfig, MoSeConvention
from attnphys.dmft.correlations import Correlations, odd_subsets
from attnphys.dmft.meanfield import Scalars
from attnphys.dmft.observables import check_observable, observable, observable_table


class FiniteNetwork(NamedTuple):
    """W: (4, M, C) distinct semantic weight columns (±1), family order (o, v, q, k) — columns last, so
    that the per-step products are (4M × C) matrix–vector products; counts: (C,) how many of the N_se
    semantic bits have each column; W_pe: (4, M, P)."""

    W: jax.Array
    counts: jax.Array
    W_pe: jax.Array

    @property
    def n_se(self) -> int:
        return int(np.sum(np.asarray(self.counts)))


def network_from_weights(W: np.ndarray, n_se: int) -> FiniteNetwork:
    """Group the semantic columns of explicit weights (4, M, N_se + P) into classes."""
    W = np.asarray(W)
    cols, counts = np.unique(W[:, :, :n_se].reshape(-1, n_se).T, axis=0, return_counts=True)
    M = W.shape[1]
    dt = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32  # pyright: ignore[reportAttributeAccessIssue]
    return FiniteNetwork(
        jnp.asarray(cols.T.reshape(4, M, -1), dt), jnp.asarray(counts, dt), jnp.asarray(W[:, :, n_se:], dt)
    )


def network_size(cfg: DMFTConfig, n: int) -> int:
    """Check a finite network size: N must be a positive multiple of the configuration's n_se (each of its
    weight columns is repeated N/n_se times; theory: docs/theory/dmft.md §2). Returns N.

    Raises:
        InputError: naming ``--n`` and the nearest valid sizes.
    """
    from attnphys.errors import InputError

    if not isinstance(n, (int, np.integer)) or n < cfg.n_se or n % cfg.n_se:
        lo = max(cfg.n_se, (int(n) // cfg.n_se) * cfg.n_se) if n >= 1 else cfg.n_se
        near = sorted({lo, lo + cfg.n_se})
        raise InputError(
            f"n must be a positive multiple of n_se = {cfg.n_se} (each column is repeated), got {n}; "
            f"nearest: {', '.join(map(str, near))}",
            "--n",
        )
    return int(n)


def repeated_network(cfg: DMFTConfig, n: int) -> FiniteNetwork:
    """The configuration's N_se weight columns each repeated n / N_se times: every correlation tensor is
    exactly the mean-field model's (theory: docs/theory/dmft.md §2), so both models describe the same network."""
    weights = cfg.correlations.explicit_weights(cfg.M, cfg.n_se, cfg.P)
    if weights is None:
        raise ValueError(
            f"correlations of kind {cfg.correlations.kind!r} have no explicit weights; "
            "use segments or random correlations for a finite network"
        )
    network_size(cfg, n)
    net = network_from_weights(weights, cfg.n_se)
    return net._replace(counts=net.counts * (n // cfg.n_se))


def random_network(M: int, P: int, n: int, seed: int = 0, chunk: int = 1 << 20) -> FiniteNetwork:
    """Independent uniform ±1 weights with n semantic bits, counted per column class in chunks (memory
    O(chunk + 2^{4M})). Its mean-field description is :func:`network_correlations`."""
    if 4 * M > 24:
        raise ValueError("random_network keeps a table of 2^(4M) column classes; M <= 6")
    rng = np.random.default_rng(seed)
    counts = np.zeros(1 << (4 * M), np.int64)
    done = 0
    while done < n:
        k = min(chunk, n - done)
        bits = rng.integers(0, 2, size=(k, 4 * M), dtype=np.int64)
        counts += np.bincount(bits @ (1 << np.arange(4 * M)), minlength=counts.size)
        done += k
    codes = np.flatnonzero(counts)
    cols = 2 * ((codes[:, None] >> np.arange(4 * M)) & 1) - 1
    dt = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32  # pyright: ignore[reportAttributeAccessIssue]
    W_pe = 2 * rng.integers(0, 2, size=(4, M, P)) - 1
    return FiniteNetwork(
        jnp.asarray(cols.T.reshape(4, M, -1), dt), jnp.asarray(counts[codes], dt), jnp.asarray(W_pe, dt)
    )


def network_correlations(net: FiniteNetwork) -> Correlations:
    """The mean-field correlations C^α_{B,a} of a finite network (exact moments over its N_se bits)."""
    W = np.asarray(net.W, np.float64)
    frac = np.asarray(net.counts, np.float64) / np.sum(np.asarray(net.counts, np.float64))
    M = W.shape[1]
    prods = np.stack([np.prod(W[0, list(B), :], axis=0) for B in odd_subsets(M)])  # (S, C)
    C = np.einsum("bc,xac,c->xba", prods, W, frac)
    return Correlations(C=C, W_pe=np.asarray(net.W_pe, np.float64), source=f"finite network, N_se={net.n_se}")


def expand(net: FiniteNetwork) -> FiniteNetwork:
    """One class per bit (counts all 1): the literal network, for per-bit sampling (memory O(N))."""
    idx = np.repeat(np.arange(net.W.shape[2]), np.asarray(net.counts).astype(np.int64))
    return FiniteNetwork(net.W[:, :, idx], jnp.ones(idx.size, net.W.dtype), net.W_pe)


def token_overlaps(net: FiniteNetwork, eps, row: int = 0):
    """m^α(x₀) for x₀ = row ``row`` of W^o, positional bits −1 (theory: docs/theory/dmft.md §3.5): (4, M)."""
    n = jnp.sum(net.counts)
    se = (net.W @ (net.counts * net.W[0, row])) / n
    P = net.W_pe.shape[-1]
    pe = (1.0 - (1.0 - eps)) / P * jnp.sum(-net.W_pe, axis=-1) if P else 0.0
    return (1.0 - eps) * se + pe


class FiniteState(NamedTuple):
    """Window of the generated tokens' value and key overlaps (L, M), row 0 newest; n filled rows;
    A the newest attention output (M,); t the loop step."""

    mv: jax.Array
    mk: jax.Array
    n: jax.Array
    A: jax.Array
    t: jax.Array


def initial_state(net: FiniteNetwork, sc: Scalars, L: int) -> FiniteState:
    M = net.W.shape[1]
    m0 = token_overlaps(net, sc.eps)
    z = jnp.zeros((L, M), net.W.dtype)
    return FiniteState(z, z, jnp.asarray(0, jnp.int32), m0[1], jnp.asarray(0, jnp.int32))


class TokenView(NamedTuple):
    """What the observables of the registry (:mod:`attnphys.dmft.observables`) read in a step of the
    finite network: the fields of a mean-field state that it has (theory: docs/theory/dmft.md §2.2).

    A: (1, M) the step's attention output A_{t+1}. m0: (4, M) the overlaps (o, v, q, k) of the token
    x_{t+1} sampled from A_t; se0: (4, M) their semantic parts, (1 − ε)·(1/N) W^{se}·x^{se}. mv, mk: (L, M)
    the value and key overlaps of the window's tokens, row 0 newest.
    """

    A: jax.Array
    m0: jax.Array
    se0: jax.Array
    mv: jax.Array
    mk: jax.Array


def check_finite_model(cfg) -> DMFTConfig:
    """The finite network is the paper model's (theory: docs/theory/dmft.md §2): refuse another model's
    configuration, naming it. Returns ``cfg``.

    Raises:
        ValueError: ``cfg`` is not a :class:`~attnphys.dmft.DMFTConfig`.
    """
    if not isinstance(cfg, DMFTConfig):
        kind = getattr(cfg, "kind", type(cfg).__name__)
        raise ValueError(f"the finite network is the paper model's; a {kind} configuration has none")
    return cfg


def finite_observables() -> tuple[str, ...]:
    """The observables of the table that the finite network can record: those that read only the fields of
    :class:`TokenView` (an observable reading anything else, e.g. the positional window, is refused)."""
    z = jnp.zeros((4, 2))
    view = TokenView(A=z[:1], m0=z, se0=z, mv=z, mk=z)
    names = []
    for name, obs in observable_table().items():
        try:
            obs.value(view, 0.0, "plain")
        except (AttributeError, IndexError, TypeError):
            continue
        names.append(name)
    return tuple(names)


def check_finite_record(record) -> tuple[str, ...]:
    """``record`` if the finite network can record each of its observables.

    Raises:
        ValueError: naming the first observable it cannot record, and those it can.
    """
    ok = finite_observables()
    for name in record:
        check_observable(name)
        if name not in ok:
            raise ValueError(
                f"the finite network cannot record observable {name!r} (it reads a field the network does not "
                f"have); it records {', '.join(ok)}"
            )
    return tuple(record)


def finite_step(
    net: FiniteNetwork,
    sc: Scalars,
    state: FiniteState,
    key,
    L: int,
    per_bit: bool,
    convention: MoSeConvention,
    record: tuple[str, ...] | None = None,
):
    """One generation step (theory: docs/theory/dmft.md §1.3, §2 with this module's conventions): returns
    (state, records), the records read from :class:`TokenView` by the observables' table."""
    n_se = jnp.sum(net.counts)
    h = sc.gain_o * (state.A @ net.W[0])  # field on each class (C,)
    p = 0.5 * (1.0 + jnp.tanh(h))
    if per_bit:
        ones = (jax.random.uniform(key, p.shape, p.dtype) < p).astype(p.dtype)
    else:
        ones = jax.random.binomial(key, net.counts, p).astype(p.dtype)
    sum_x = 2.0 * ones - net.counts
    se = (net.W.reshape(-1, net.W.shape[-1]) @ sum_x).reshape(net.W.shape[:2]) / n_se  # plain overlaps (4, M)
    P = net.W_pe.shape[-1]
    if P:
        bits = (jnp.right_shift(state.t % L, jnp.arange(P - 1, -1, -1)) & 1).astype(p.dtype)
        pe = (1.0 - (1.0 - sc.eps)) / P * (net.W_pe @ (2.0 * bits - 1.0))
    else:
        pe = 0.0
    m = (1.0 - sc.eps) * se + pe
    mv = jnp.concatenate([m[1][None], state.mv[:-1]])
    mk = jnp.concatenate([m[3][None], state.mk[:-1]])
    n = jnp.minimum(state.n + 1, L)
    scores = jnp.where(jnp.arange(L) < n, sc.gamma * (mk @ m[2]), -jnp.inf)
    A = jax.nn.softmax(scores) @ mv
    view = TokenView(A=A[None], m0=m, se0=(1.0 - sc.eps) * se, mv=mv, mk=mk)
    names = finite_observables() if record is None else record
    rec = {name: observable(name).value(view, sc.eps, convention) for name in names}
    return FiniteState(mv, mk, n, A, state.t + 1), rec


@partial(jax.jit, static_argnames=("steps", "transient", "L", "per_bit", "convention", "record"))
def simulate_paths(
    net: FiniteNetwork,
    sc: Scalars,
    keys,
    *,
    steps: int,
    transient: int,
    L: int,
    per_bit: bool = False,
    convention: MoSeConvention = "paper",
    record: tuple[str, ...] | None = None,
):
    """Sample paths (one per key) of ``steps`` loop steps; records for t ≥ ``transient``.

    Returns:
        dict name → (paths, steps − transient, M).
    """

    def one(key):
        s0 = initial_state(net, sc, L)

        def body(s, t):
            return finite_step(net, sc, s, jax.random.fold_in(key, t), L, per_bit, convention, record)

        s, _ = jax.lax.scan(body, s0, jnp.arange(transient))
        _, recs = jax.lax.scan(body, s, jnp.arange(transient, steps))
        return recs

    return jax.vmap(one)(keys)


def sample_points(
    model,
    sc: Scalars,
    n: int,
    *,
    paths: int,
    steps: int,
    transient: int = 0,
    seed: int = 0,
    per_bit: bool = False,
    record: tuple[str, ...] | None = None,
    labels=None,
) -> dict[str, np.ndarray]:
    """Finite-N sample paths at a batch of points (theory: docs/theory/dmft.md §2).

    Args:
        model: the :class:`~attnphys.dmft.model.DMFTModel`. sc: (B,) batched scalars. n: network size.

    Returns:
        name → (B, paths, steps − transient, M).

    Raises:
        NonFiniteError: naming the point.
    """
    from attnphys.errors import NonFiniteError

    record = finite_observables() if record is None else check_finite_record(record)
    cfg = model.config
    net = repeated_network(cfg, n)
    if per_bit:
        net = expand(net)
    keys = jax.vmap(lambda i: jax.random.fold_in(jax.random.PRNGKey(seed), i))(jnp.arange(paths))
    B = int(np.shape(sc.gain_o)[0])
    outs = []
    for i in range(B):
        sc_i = Scalars(*(x[i] for x in sc))
        recs = simulate_paths(
            net,
            sc_i,
            keys,
            steps=steps,
            transient=transient,
            L=cfg.L,
            per_bit=per_bit,
            convention=model.convention,
            record=tuple(record),
        )
        outs.append({k: np.asarray(v) for k, v in recs.items()})
        bad = [k for k, v in outs[-1].items() if not np.all(np.isfinite(v))]
        if bad:
            where = {k: float(np.asarray(v)[i]) for k, v in (labels or {"index": np.arange(B)}).items()}
            first = min(int(np.argmax(~np.isfinite(outs[-1][k]).any(axis=(0, 2)))) for k in bad)
            raise NonFiniteError(step=transient + first, params=where, what="finite-network record")
    return {k: np.stack([o[k] for o in outs]) for k in record}


if not TYPE_CHECKING:  # the names of 0.2.0 that moved, with a deprecation warning
    __getattr__ = _deprecated.module_getattr(__name__)
