"""Finer chaos indicators of any map (theory: docs/theory/dynamics.md §11): finite-time Lyapunov exponents and
their distributions (§11.1), local Lyapunov maps over a grid of starts (§11.1), the alignment indices SALI and
GALI_k, equal to the linear dependence index LDI_k (§11.2), weighted Birkhoff averages with their digits of
accuracy (§11.3) and the recurrence-time entropy (§11.4).

Every function takes a batch of starts ``x0`` (B, D) (or one start (D,)), their auxiliary states (batched along
B, or None) and parameters shared by all starts, runs one compiled, vectorised program (float64 where JAX is in
64-bit mode; a warning otherwise) and returns a labelled ``xarray.Dataset``. Long runs are split into compiled
chunks, with a progress bar when ``progress`` is set.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from attnphys._arguments import checked, count
from attnphys._checks import check_array, check_count, check_positive
from attnphys.dynamics._compiled import SameFunction
from attnphys.dynamics._lyapunov import gram_schmidt, initial_vectors, scaled_norm
from attnphys.dynamics.checks import memory_of, params_dict, raise_if_nonfinite, warn_if_single_precision
from attnphys.dynamics.maps import AbstractMap
from attnphys.errors import InputError
from attnphys.metadata import base_attrs

CHUNK = 2048
"""Steps (or windows) per compiled chunk of a long run: the progress bar moves once per chunk."""


# -- shared plumbing ------------------------------------------------------------------------------------------


def _starts(m: AbstractMap, x0, aux0, params) -> tuple[jax.Array, Any, int, int]:
    """(x (B, D), aux batched along B, B, D), refusing bad arguments by name."""
    from attnphys.dynamics.orbits import check_map_call

    shape = check_array(x0, "x0", ndim=(1, 2), what="one start (D,) or a batch of starts (B, D)")
    x = jnp.asarray(x0)
    if len(shape) == 1:
        x = x[None]
        aux0 = jax.tree_util.tree_map(lambda a: jnp.asarray(a)[None], aux0)
    B, D = x.shape
    if B < 1 or D < 1:
        raise InputError(f"needs at least one start of at least one component, got shape {shape}", "x0")
    for leaf in jax.tree_util.tree_leaves(aux0):
        if not jnp.shape(leaf) or jnp.shape(leaf)[0] != B:
            raise InputError(f"every leaf needs a leading axis of {B} (one per start), got {jnp.shape(leaf)}", "aux0")
    check_map_call(m, x[0], jax.tree_util.tree_map(lambda a: a[0], aux0), params)
    warn_if_single_precision(x)
    return x, aux0, B, D


def _first_bad(values, minus_inf: bool = True) -> np.ndarray:
    """(B,) the first index along axis 1 where a value is NaN or ±∞ (−∞ allowed unless ``minus_inf``: an
    exponent's log 0 of an annihilated direction), −1 where none."""
    v = np.asarray(values)
    v = v.reshape(v.shape[0], v.shape[1], -1)
    bad = np.any(np.isnan(v) | (v == np.inf) | (minus_inf & (v == -np.inf)), axis=-1)
    return np.where(bad.any(axis=1), np.argmax(bad, axis=1), -1)


def _chunks(run: Callable, carry, total: int, chunk: int, progress: bool, unit: str):
    """Run ``run(carry, n) -> (carry, out)`` over ``total`` units in chunks of at most ``chunk`` (``n`` static);
    outputs concatenated along axis 1 (axis 0 is the batch of starts)."""
    from attnphys.progress import progress_bar

    outs = []
    with progress_bar(total, unit, enabled=progress) as advance:
        done = 0
        while done < total:
            n = min(chunk, total - done)
            carry, out = run(carry, n)
            outs.append(out)
            done += n
            advance(n)
    return carry, jax.tree_util.tree_map(lambda *a: np.concatenate([np.asarray(b) for b in a], axis=1), *outs)


def _plain_steps(m: AbstractMap, x, aux, params, n: int):
    """n plain steps of one start."""

    def body(c, _):
        return m.step(c[0], c[1], params), None

    (x, aux), _ = jax.lax.scan(body, (x, aux), None, length=n)
    return x, aux


@partial(jax.jit, static_argnames=("m", "n"))
def _settle(m: AbstractMap, x, aux, params, n: int):
    """n plain steps of every start (the transient)."""
    return jax.vmap(lambda a, b: _plain_steps(m, a, b, params, n))(x, aux)


# -- 11.1 finite-time Lyapunov exponents ----------------------------------------------------------------------


def _qr_steps(m: AbstractMap, x, aux, Q, params, n: int):
    """n Benettin steps of one start: (x, aux, Q, Σ log|R_ii|)."""

    def body(c, _):
        x, aux, Q, S = c
        x, aux, V = m.tangent(x, aux, params, Q)
        Q, r, _ = gram_schmidt(V)
        return (x, aux, Q, S + jnp.log(r)), None

    (x, aux, Q, S), _ = jax.lax.scan(body, (x, aux, Q, jnp.zeros(Q.shape[1], Q.dtype)), None, length=n)
    return x, aux, Q, S


@partial(jax.jit, static_argnames=("m", "window", "n"))
def _ftle_windows(m: AbstractMap, carry, params, window: int, n: int):
    """n consecutive windows of every start: carry (x, aux, Q), exponents (B, n, k)."""

    def one(x, aux, Q):
        def win(c, _):
            x, aux, Q, S = _qr_steps(m, c[0], c[1], c[2], params, window)
            return (x, aux, Q), S / window

        return jax.lax.scan(win, (x, aux, Q), None, length=n)

    return jax.vmap(one)(*carry)


@partial(jax.jit, static_argnames=("m", "n"))
def _align(m: AbstractMap, carry, params, n: int):
    """n Benettin steps of every start, the sums discarded: the tangent vectors turn into place."""
    return jax.vmap(lambda x, a, Q: _qr_steps(m, x, a, Q, params, n)[:3])(*carry)


@checked(
    memory=lambda a: memory_of(
        8 * 4 * a["windows"] * a["exponents"], "the windows' exponents", "use fewer windows", a, "windows"
    )
)
def finite_time_lyapunov(
    m: AbstractMap,
    x0,
    aux0,
    params,
    *,
    window: int,
    windows: int = 1,
    transient: int = 0,
    align: int = 0,
    exponents: int = 1,
    progress: bool = False,
) -> xr.Dataset:
    """Finite-time Lyapunov exponents over consecutive windows of ``window`` steps along the orbit of every start
    (theory: docs/theory/dynamics.md §11.1):

        λ_i^{(w)}(x) = (1/τ) Σ_{t = wτ}^{(w+1)τ − 1} log|R_t[i, i]|,    Q_{t+1} R_t = J(x_t) Q_t,

    the Benettin/QR sums of §2.1 cut into windows of length τ = ``window``. The tangent vectors carry over from
    one window to the next (after ``align`` steps that turn them into place, following ``transient`` plain
    steps), so the mean over windows is the Benettin estimate of λ_i over ``windows``·τ steps and the spread of
    the windows is the distribution of finite-time exponents. With ``windows = 1``, ``transient = align = 0`` the
    result is the local (finite-time) exponent of each start itself (:func:`local_lyapunov_map`).

    Args:
        m: the map; x0: (D,) one start or (B, D) starts; aux0: their auxiliary states (batched along B, or
            None); params: the parameters, shared by the starts.
        window: τ, steps per window; windows: how many windows per start; transient: plain steps first;
        align: QR steps (discarded) before the first window; exponents: k ≤ D, how many exponents.
        progress: show a progress bar over the windows.

    Returns:
        Dataset with ``ftle`` (start, window, exponent) in nats per step (QR order: descending on average),
        ``mean`` and ``std`` (start, exponent) over the windows; attrs the arguments.

    Raises:
        InputError: naming ``m``, ``x0``, ``aux0``, ``params``, ``window``, ``windows``, ``transient``,
            ``align`` or ``exponents``.
        NonFiniteError: a tangent vector became NaN/∞, naming the last step of the first window where it
            showed and the parameters.
    """
    x, aux, B, D = _starts(m, x0, aux0, params)
    window = check_count(window, "window")
    windows = check_count(windows, "windows")
    transient = check_count(transient, "transient", 0)
    align = check_count(align, "align", 0)
    k = check_count(exponents, "exponents")
    if k > D:
        raise InputError(f"must be in [1, D = {D}], got {k}", "exponents")
    if transient:
        x, aux = _settle(m, x, aux, params, transient)
    Q = jnp.broadcast_to(initial_vectors(D, k, "random", x.dtype), (B, D, k))
    carry = (x, aux, Q)
    if align:
        carry = _align(m, carry, params, align)
    chunk = max(1, CHUNK // window)
    _, lam = _chunks(lambda c, n: _ftle_windows(m, c, params, window, n), carry, windows, chunk, progress, "windows")
    w = _first_bad(lam, minus_inf=False)
    raise_if_nonfinite(np.where(w >= 0, transient + align + (w + 1) * window - 1, -1), params, "tangent vector")
    dims = ("start", "window", "exponent")
    return xr.Dataset(
        {
            "ftle": (dims, lam, {"long_name": "finite-time Lyapunov exponent", "units": "1/step"}),
            "mean": (("start", "exponent"), lam.mean(axis=1), {"long_name": "mean over the windows"}),
            "std": (("start", "exponent"), lam.std(axis=1), {"long_name": "standard deviation over the windows"}),
        },
        coords={"start": np.arange(B), "window": np.arange(windows), "exponent": np.arange(k)},
        attrs=base_attrs(
            params=params_dict(params),
            **{
                "window": window,
                "windows": windows,
                "transient": transient,
                "align": align,
                "map": type(m).__name__,
                "theory": "docs/theory/dynamics.md §11.1",
            },
        ),
    )


@checked
def local_lyapunov_map(
    m: AbstractMap,
    params,
    *,
    axes: dict[str, Any],
    base,
    steps: int,
    aux0=None,
    exponents: int = 1,
    progress: bool = False,
) -> xr.Dataset:
    """The finite-time Lyapunov exponents of the starts of a grid (theory: docs/theory/dynamics.md §11.1): for
    every point of the grid, λ_i(x) = (1/T) Σ_{t<T} log|R_t[i, i]| over T = ``steps`` steps from x itself (no
    transient): regular regions show as λ_1 ≈ 0 (conservative maps) or < 0, chaotic seas and stable manifolds of
    saddles as ridges.

    Args:
        m: the map; params: its parameters.
        axes: {component index or name: values}: the grid's axes, e.g. ``{0: thetas, 1: ps}``; a name is
            ``"x<i>"`` for component i.
        base: (D,) the state whose other components stay fixed.
        steps: T; aux0: the auxiliary state of every start (unbatched, or None); exponents: k ≤ D.

    Returns:
        Dataset with ``ftle`` (x<i>, …, exponent) over the grid.

    Raises:
        InputError: naming ``axes``, ``base``, ``steps`` or the arguments of :func:`finite_time_lyapunov`.
    """
    check_array(base, "base", ndim=1, what="one state (D,)")
    base = jnp.asarray(base)
    D = base.shape[0]
    if not isinstance(axes, dict) or not axes:
        raise InputError("must be a non-empty dict {component index: values}", "axes")
    idx, names, vals = [], [], []
    for key, v in axes.items():
        i = int(key[1:]) if isinstance(key, str) and key.startswith("x") and key[1:].isdigit() else key
        if not isinstance(i, (int, np.integer)) or not 0 <= i < D or i in idx:
            raise InputError(f"keys must be distinct component indices in [0, {D}) (or 'x<i>'), got {key!r}", "axes")
        check_array(v, f"axes[{key!r}]", ndim=1)
        idx.append(int(i))
        names.append(f"x{i}")
        vals.append(np.asarray(v, dtype=float))
    grids = np.meshgrid(*vals, indexing="ij")
    shape = grids[0].shape
    X = np.broadcast_to(np.asarray(base), shape + (D,)).copy()
    for i, g in zip(idx, grids):
        X[..., i] = g
    X = jnp.asarray(X.reshape(-1, D), dtype=base.dtype)
    aux = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(jnp.asarray(a), (X.shape[0],) + jnp.shape(a)), aux0)
    ds = finite_time_lyapunov(m, X, aux, params, window=steps, windows=1, exponents=exponents, progress=progress)
    lam = ds["ftle"].values[:, 0, :].reshape(shape + (-1,))
    return xr.Dataset(
        {"ftle": ((*names, "exponent"), lam, ds["ftle"].attrs)},
        coords={**{n: v for n, v in zip(names, vals)}, "exponent": ds["exponent"].values},
        attrs=base_attrs(
            params=params_dict(params),
            **{
                "steps": steps,
                "map": type(m).__name__,
                "theory": "docs/theory/dynamics.md §11.1",
            },
        ),
    )


# -- 11.2 SALI, GALI_k and LDI_k ------------------------------------------------------------------------------


def _alignment(W: jax.Array, k: int) -> tuple[jax.Array, jax.Array]:
    """SALI of the first two unit columns and GALI_j = Π singular values of the first j columns, j = 2..k."""
    w1, w2 = W[:, 0], W[:, 1]
    sali = jnp.minimum(scaled_norm(w1 + w2), scaled_norm(w1 - w2))
    gali = jnp.stack([jnp.prod(jnp.linalg.svd(W[:, :j], compute_uv=False)) for j in range(2, k + 1)])
    return sali, gali


@partial(jax.jit, static_argnames=("m", "every", "k", "n"))
def _alignment_records(m: AbstractMap, carry, params, every: int, k: int, n: int):
    """n records, every ``every`` steps, of all starts: carry (x, aux, W), (sali (B, n), gali (B, n, k−1))."""

    def one(x, aux, W):
        def step(c, _):
            x, aux, V = m.tangent(c[0], c[1], params, c[2])
            return (x, aux, V / scaled_norm(V, axis=0)), None

        def record(c, _):
            c, _ = jax.lax.scan(step, c, None, length=every)
            return c, _alignment(c[2], k)

        return jax.lax.scan(record, (x, aux, W), None, length=n)

    return jax.vmap(one)(*carry)


@checked(
    memory=lambda a: memory_of(
        8 * 8 * (a["steps"] // a["every"] + 1),
        "the indices recorded over the steps",
        "record fewer steps or a larger every",
        a,
        "steps",
    )
)
def alignment_indices(
    m: AbstractMap,
    x0,
    aux0,
    params,
    *,
    steps: int,
    every: int = 1,
    vectors: int | None = None,
    transient: int = 0,
    progress: bool = False,
) -> xr.Dataset:
    """The smaller alignment index SALI and the generalized alignment indices GALI_j, j = 2..k, of the orbit of
    every start (theory: docs/theory/dynamics.md §11.2). k deviation vectors, orthonormal at t = 0, follow the
    tangent dynamics and are normalised every step, ŵ_i(t) = J ŵ_i(t−1)/‖J ŵ_i(t−1)‖; then

        SALI(t) = min(‖ŵ_1 + ŵ_2‖, ‖ŵ_1 − ŵ_2‖),   GALI_j(t) = ‖ŵ_1 ∧ … ∧ ŵ_j‖ = Π_{i ≤ j} σ_i(Ŵ_j),

    σ_i the singular values of the D × j matrix Ŵ_j = [ŵ_1 … ŵ_j]; the product of singular values is the linear
    dependence index LDI_j, the same number as GALI_j. On a chaotic orbit GALI_j ~ exp(−Σ_{i=2}^{j}(λ_1 − λ_i) t)
    (SALI like GALI_2); on a regular orbit of a symplectic map of 2N dimensions on an N-torus GALI_j stays
    constant for j ≤ N and decays as t^{−2(j−N)} for j > N (§11.2). Values fall to round-off (~1e−16) and stay
    there.

    Args:
        m: the map; x0: (D,) one start or (B, D) starts; aux0: their auxiliary states (batched, or None);
            params: shared parameters.
        steps: how many steps; every: steps between records (``steps`` is rounded down to a multiple);
        vectors: k in [2, D] (default D); transient: plain steps before the vectors start;
        progress: show a progress bar.

    Returns:
        Dataset with ``sali`` (start, time) and ``gali`` (start, time, order), order = j = 2..k, at the times
        every, 2·every, ….

    Raises:
        InputError: naming ``x0``, ``steps``, ``every``, ``vectors`` (also for D < 2) or ``transient``.
        NonFiniteError: a deviation vector became NaN/∞, naming the step of the first record showing it.
    """
    x, aux, B, D = _starts(m, x0, aux0, params)
    steps = check_count(steps, "steps")
    every = check_count(every, "every")
    transient = check_count(transient, "transient", 0)
    k = D if vectors is None else check_count(vectors, "vectors", 2)
    if D < 2 or not 2 <= k <= D:
        raise InputError(f"must be in [2, D = {D}] (alignment indices need two deviation vectors), got {k}", "vectors")
    n_rec = steps // every
    if n_rec < 1:
        raise InputError(f"must be at least every = {every}, got {steps}", "steps")
    if transient:
        x, aux = _settle(m, x, aux, params, transient)
    W = jnp.broadcast_to(initial_vectors(D, k, "random", x.dtype), (B, D, k))
    chunk = max(1, CHUNK // every)
    _, (sali, gali) = _chunks(
        lambda c, n: _alignment_records(m, c, params, every, k, n), (x, aux, W), n_rec, chunk, progress, "records"
    )
    r = _first_bad(np.concatenate([sali[..., None], gali], axis=-1))  # in [0, √2] and [0, 1]
    raise_if_nonfinite(np.where(r >= 0, transient + (r + 1) * every - 1, -1), params, "deviation vector")
    return xr.Dataset(
        {
            "sali": (("start", "time"), sali, {"long_name": "smaller alignment index"}),
            "gali": (("start", "time", "order"), gali, {"long_name": "generalized alignment index (= LDI)"}),
        },
        coords={"start": np.arange(B), "time": every * np.arange(1, n_rec + 1), "order": np.arange(2, k + 1)},
        attrs=base_attrs(
            params=params_dict(params),
            **{
                "every": every,
                "transient": transient,
                "map": type(m).__name__,
                "theory": "docs/theory/dynamics.md §11.2",
            },
        ),
    )


# -- 11.3 weighted Birkhoff averages --------------------------------------------------------------------------


def bump_weight(s: jax.Array) -> jax.Array:
    """The C∞ bump w(s) = exp(−1/(s(1 − s))) on (0, 1), 0 outside (theory: docs/theory/dynamics.md §11.3)."""
    inside = (s > 0) & (s < 1)
    safe = jnp.where(inside, s, 0.5)
    return jnp.where(inside, jnp.exp(-1.0 / (safe * (1.0 - safe))), 0.0)


@partial(jax.jit, static_argnames=("m", "observable", "n", "locate"))
def _birkhoff(m: AbstractMap, observable: Callable, x, aux, params, n: int, locate: bool = False):
    """Weighted sums of f over steps [0, n) and [n, 2n), and the plain sum over [0, n), of every start
    (compensated weighted sums). The weights w(t/n) are computed once for all starts and both halves; each
    half is its own scan, so a step adds only what it contributes to. A non-finite f makes the sums
    non-finite; only then is the run repeated with ``locate`` to find the first such step (−1: none)."""
    w = bump_weight(jnp.arange(n, dtype=x.dtype) / n)
    W = jnp.sum(w)  # the weights' sum: one pairwise sum, shared by every start

    def f_of(x, aux):
        return jnp.atleast_1d(jnp.asarray(observable(x, aux, params), dtype=x.dtype))

    def add(acc, v):
        """Compensated (Kahan) summation: acc = (sum, carry)."""
        S, C = acc
        y = v - C
        t = S + y
        return t, (t - S) - y

    def bad_at(bad, f, t):
        if not locate:
            return bad
        return jnp.where((bad < 0) & ~jnp.all(jnp.isfinite(f)), t, bad)

    def one(x, aux):
        zero = jnp.zeros_like(f_of(x, aux))
        z2 = (zero, zero)

        def first(c, tw):
            x, aux, S1, P, bad = c
            f = f_of(x, aux)
            bad = bad_at(bad, f, tw[0])
            x, aux = m.step(x, aux, params)
            return (x, aux, add(S1, tw[1] * f), P + f, bad), None

        def second(c, tw):
            x, aux, S2, bad = c
            f = f_of(x, aux)
            bad = bad_at(bad, f, tw[0])
            x, aux = m.step(x, aux, params)
            return (x, aux, add(S2, tw[1] * f), bad), None

        t = jnp.arange(n, dtype=jnp.int32)
        init = (x, aux, z2, zero, jnp.asarray(-1, jnp.int32))
        (x, aux, S1, P, bad), _ = jax.lax.scan(first, init, (t, w))
        (x, aux, S2, bad), _ = jax.lax.scan(second, (x, aux, z2, bad), (t + n, w))
        return S1[0] / W, S2[0] / W, P / n, bad

    return jax.vmap(one)(x, aux)


@checked(n=count(1, 2**31 - 1, why="the device counts steps in 32-bit integers"))
def weighted_birkhoff(
    m: AbstractMap,
    x0,
    aux0,
    params,
    *,
    n: int,
    observable: Callable | None = None,
    transient: int = 0,
) -> xr.Dataset:
    """Weighted Birkhoff averages of an observable along the orbit of every start, and their digits of accuracy
    (theory: docs/theory/dynamics.md §11.3):

        WB_N(f)(x) = Σ_{t=0}^{N−1} w(t/N) f(F^t x) / Σ_{t=0}^{N−1} w(t/N),    w(s) = exp(−1/(s(1 − s))),

    which on a quasi-periodic orbit (a smooth observable on a torus with Diophantine rotation) converges faster
    than any power of 1/N, against 1/N for the plain average; on a chaotic orbit it converges no faster than the
    plain one. The digits dig = −log10 max_f |WB_N(f)(x) − WB_N(f)(F^N x)| compare the averages over the first
    and the second N steps: ~15 in float64 for quasi-periodic orbits, a few for chaotic ones.

    Args:
        m: the map; x0: (D,) or (B, D) starts; aux0: their auxiliary states (batched, or None); params: shared.
        n: N, steps per average (2N steps are run); observable: ``f(x, aux, params) -> (F,)`` (default
            ``m.observe``); transient: plain steps first.

    Returns:
        Dataset with ``average`` (start, component) = WB_N(f)(x), ``second`` = WB_N(f)(F^N x), ``plain`` (the
        unweighted mean over the first N steps) and ``digits`` (start).

    Raises:
        InputError: naming ``x0``, ``n``, ``observable`` or ``transient``.
        NonFiniteError: the observable became NaN/±∞, naming the first such step.
    """
    x, aux, B, _ = _starts(m, x0, aux0, params)
    n = check_count(n, "n", 2)
    transient = check_count(transient, "transient", 0)
    obs = m.observe if observable is None else observable
    if not callable(obs):
        raise InputError(f"must be a function f(x, aux, params) -> (F,), got {type(obs).__name__}", "observable")

    if transient:
        x, aux = _settle(m, x, aux, params, transient)
    # keyed by what the observable computes (theory: docs/theory/dynamics.md §2.6): a repeated call with
    # the same map, observable and n compiles nothing, a lambda made anew included
    key = SameFunction(obs)
    wb1, wb2, plain, bad = (np.asarray(a) for a in _birkhoff(m, key, x, aux, params, n))
    if not (np.all(np.isfinite(wb1)) and np.all(np.isfinite(wb2)) and np.all(np.isfinite(plain))):
        bad = np.asarray(_birkhoff(m, key, x, aux, params, n, locate=True)[3])  # where it first went wrong
    raise_if_nonfinite(np.where(bad >= 0, transient + bad, -1), params, "observable")
    with np.errstate(divide="ignore"):
        digits = -np.log10(np.max(np.abs(wb1 - wb2), axis=-1))
    dims = ("start", "component")
    return xr.Dataset(
        {
            "average": (dims, wb1, {"long_name": "weighted Birkhoff average over steps [0, N)"}),
            "second": (dims, wb2, {"long_name": "weighted Birkhoff average over steps [N, 2N)"}),
            "plain": (dims, plain, {"long_name": "plain average over steps [0, N)"}),
            "digits": (("start",), digits, {"long_name": "digits of agreement of the two averages"}),
        },
        coords={"start": np.arange(B), "component": np.arange(wb1.shape[-1])},
        attrs=base_attrs(
            params=params_dict(params),
            **{
                "n": n,
                "transient": transient,
                "map": type(m).__name__,
                "theory": "docs/theory/dynamics.md §11.3",
            },
        ),
    )


# -- 11.4 recurrence-time entropy -----------------------------------------------------------------------------


@partial(jax.jit, static_argnames=("m", "n"))
def _orbits(m: AbstractMap, x, aux, params, n: int):
    """(B, n, D) the first n states of the orbits of all starts."""

    def one(x, aux):
        def body(c, _):
            x2, a2 = m.step(c[0], c[1], params)
            return (x2, a2), c[0]

        return jax.lax.scan(body, (x, aux), None, length=n)[1]

    return jax.vmap(one)(x, aux)


@jax.jit
def _white_lines(Y: jax.Array, eps: jax.Array) -> jax.Array:
    """(n + 1,) counts of the white vertical lines of the recurrence plot R_ij = [‖y_i − y_j‖_∞ ≤ ε] of the
    orbit Y (n, D), by length; lines that touch the plot's border are not counted."""
    n = Y.shape[0]

    def column(y):
        R = jnp.max(jnp.abs(Y - y), axis=1) <= eps
        i = jnp.arange(n)
        nxt = jax.lax.cummin(jnp.where(R, i, n), reverse=True)
        start = jnp.concatenate([jnp.zeros(1, bool), R[:-1] & ~R[1:]])
        length = jnp.where(start & (nxt < n), nxt - i, 0)
        return jnp.bincount(length, weights=(length > 0).astype(Y.dtype), length=n + 1)

    return jax.lax.map(column, Y).sum(axis=0)


@checked(
    n=count(1, 2**31 - 1, why="the device counts steps in 32-bit integers"),
    memory=lambda a: memory_of(8 * 4 * a["n"], "the recurrence times", "use a smaller n", a, "n"),
)
def recurrence_time_entropy(
    m: AbstractMap,
    x0,
    aux0,
    params,
    *,
    n: int = 1000,
    transient: int = 1000,
    threshold: float = 0.1,
) -> xr.Dataset:
    """The recurrence-time entropy of the orbit of every start (theory: docs/theory/dynamics.md §11.4): the
    Shannon entropy of the lengths of the white vertical lines of the recurrence plot
    R_ij = [‖x_i − x_j‖_∞ ≤ ε] of n states, ε = ``threshold`` × the largest standard deviation of a component
    along the orbit,

        H = −Σ_ℓ p(ℓ) ln p(ℓ),    p(ℓ) = (number of white lines of length ℓ) / (number of white lines),

    the lines touching the border of the plot left out. A periodic orbit (ε below the distance between its
    points) returns after exactly its period, so H = 0; a chaotic orbit returns after a spread of times, H > 0.

    Args:
        m: the map; x0: (D,) or (B, D) starts; aux0: their auxiliary states (batched, or None); params: shared.
        n: states in the plot (memory n² per start; the starts are done one after the other); transient: plain
            steps first; threshold: ε relative to the orbit's spread.

    Returns:
        Dataset with ``entropy`` (start) in nats, ``lines`` (start) the number of white lines and
        ``mean_time`` (start) their mean length + 1 (the mean recurrence time).

    Raises:
        InputError: naming ``x0``, ``n``, ``transient`` or ``threshold``.
        NonFiniteError: the orbit became NaN/±∞, naming the first such step.
    """
    x, aux, B, _ = _starts(m, x0, aux0, params)
    n = check_count(n, "n", 2)
    transient = check_count(transient, "transient", 0)
    check_positive(threshold, "threshold")
    if transient:
        x, aux = _settle(m, x, aux, params, transient)
    Y = _orbits(m, x, aux, params, n)
    t = _first_bad(Y)
    raise_if_nonfinite(np.where(t >= 0, transient + t, -1), params)
    H, lines, mean = np.zeros(B), np.zeros(B, dtype=np.int64), np.full(B, np.nan)
    for b in range(B):
        eps = threshold * jnp.max(jnp.std(Y[b], axis=0))
        counts = np.asarray(_white_lines(Y[b], eps))
        total = counts.sum()
        lines[b] = int(total)
        if total > 0:
            p = counts[counts > 0] / total
            H[b] = float(-(p * np.log(p)).sum()) + 0.0  # −0.0 of a single length → 0.0
            mean[b] = float((np.arange(n + 1) * counts).sum() / total + 1)
    return xr.Dataset(
        {
            "entropy": (("start",), H, {"long_name": "recurrence-time entropy", "units": "nats"}),
            "lines": (("start",), lines, {"long_name": "white vertical lines counted"}),
            "mean_time": (("start",), mean, {"long_name": "mean recurrence time", "units": "steps"}),
        },
        coords={"start": np.arange(B)},
        attrs=base_attrs(
            params=params_dict(params),
            **{
                "n": n,
                "transient": transient,
                "threshold": threshold,
                "map": type(m).__name__,
                "theory": "docs/theory/dynamics.md §11.4",
            },
        ),
    )
