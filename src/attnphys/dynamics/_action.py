"""Least action of noisy maps: the discrete action, minimum-action paths from an attractor to a target over a
free number of steps, the quadratic part of the quasi-potential against the linear-noise covariance, and the
Eyring–Kramers time (theory: docs/theory/rare_events.md §1–4) of a map of the toolkit (theory:
docs/theory/dynamics.md §1).

For x_{t+1} = F(x_t) + √ε B(x_t) η_t the probability of a path x_0 … x_T is ≍ exp(−S/ε) with the discrete action

    S = ½ Σ_t |η_t|²,   x_{t+1} − F(x_t) = B(x_t) η_t,

which for an invertible Σ = B Bᵀ is ½ Σ_t (x_{t+1} − F(x_t))ᵀ Σ(x_t)⁻¹ (x_{t+1} − F(x_t)). The path is the unknown
(the end points fixed); S is a sum of terms of consecutive pairs, so its Hessian is block tridiagonal and a damped
Newton step (Levenberg–Marquardt on the exact Hessian) costs one banded Cholesky solve
(scipy.linalg.solveh_banded: a single LAPACK call that factors and solves, no thread pool touched), O(T D³):
the long soft modes of action minimisation (a path's shift in time costs next to nothing) slow no Krylov
iteration down.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr
from scipy.linalg import LinAlgError, solve_discrete_lyapunov, solveh_banded

from attnphys._arguments import checked, count, number, positives, state
from attnphys._checks import real_array
from attnphys.dynamics._noisy import (
    AbstractNoise,
    GaussianNoise,
    check_start,
    noise_at,
    noise_function,
    noise_mode,
    orbit_points,
    stack_aux,
    tree_close,
)
from attnphys.dynamics.checks import memory_of, params_dict, state_dim, warn_if_single_precision
from attnphys.dynamics.maps import AbstractMap
from attnphys.dynamics.periodic import monodromy, refine
from attnphys.errors import InputError, NonFiniteError
from attnphys.metadata import base_attrs
from attnphys.progress import step_bar

THEORY = "docs/theory/rare_events.md"

# ---------------------------------------------------------------------------------------------------------------
# the per-step terms of the action


def _residual(m: AbstractMap, noise: Callable, mode: str, x, y, aux, params, w):
    """(r, η, |q|) of one step x → y: r the residual whose square is twice the step's action (with the
    out-of-range part w q appended for singular noise), η the least-norm control with B η = the part of
    y − F(x) in the range of B, q the rest."""
    B = noise(x, aux, params)
    d = y - m.step(x, aux, params)[0]
    if mode == "full":
        L = jnp.linalg.cholesky(B @ B.T)
        r = jax.scipy.linalg.solve_triangular(L, d, lower=True)
        eta = B.T @ jax.scipy.linalg.cho_solve((L, True), d)
        return r, eta, jnp.zeros((), d.dtype)
    L = jnp.linalg.cholesky(B.T @ B)
    eta = jax.scipy.linalg.cho_solve((L, True), B.T @ d)
    q = d - B @ eta
    return jnp.concatenate([eta, w * q]), eta, jnp.linalg.norm(q)


def _step_action(m: AbstractMap, noise: AbstractNoise, mode: str, x, y, aux, params, w):
    """The action of one step x → y: ½|r|² for Gaussian noise; the law's rate ℓ(η) plus ½ w² |q|² otherwise
    (theory: docs/theory/rare_events.md §1.1, §1.3)."""
    r, eta, _ = _residual(m, noise, mode, x, y, aux, params, w)
    if isinstance(noise, GaussianNoise):
        return 0.5 * r @ r
    out = r[eta.size :] if mode != "full" else r[:0]
    return noise.rate(eta, x, aux, params) + 0.5 * out @ out


def _step_rates(m, noise, X, aux, params, eta) -> np.ndarray:
    """ℓ(η_t) of every step (T,) under the law (½|η_t|² for Gaussian noise)."""
    if isinstance(noise, GaussianNoise):
        return 0.5 * np.sum(np.asarray(eta) ** 2, axis=1)
    f = jax.vmap(lambda e, x, a: noise.rate(e, x, a, params), in_axes=(0, 0, _axes(aux)))
    return np.asarray(f(jnp.asarray(eta), jnp.asarray(X[:-1]), aux), dtype=float)


def _axes(aux):
    return None if aux is None else 0


@partial(jax.jit, static_argnames=("m", "noise", "mode"))
def _value(m, noise, mode, X, aux, params, w, mask):
    """Σ_t mask_t ½|r_t|² of the path X (T + 1, D) with the auxiliary states aux (T leading) or None."""

    def s(x, y, a):
        return _step_action(m, noise, mode, x, y, a, params, w)

    return jnp.sum(mask * jax.vmap(s, in_axes=(0, 0, _axes(aux)))(X[:-1], X[1:], aux))


@partial(jax.jit, static_argnames=("m", "noise", "mode"))
def _terms(m, noise, mode, X, aux, params, w, mask):
    """The action and, per step t, the gradient (2D,) and Hessian (2D, 2D) of its term in (x_t, x_{t+1})
    (steps of mask 0 count for nothing: they pad the path to a size compiled once)."""
    D = X.shape[1]

    def s(xy, a):
        return _step_action(m, noise, mode, xy[:D], xy[D:], a, params, w)

    XY = jnp.concatenate([X[:-1], X[1:]], axis=1)
    ax = (0, _axes(aux))
    return (
        jnp.sum(mask * jax.vmap(s, in_axes=ax)(XY, aux)),
        jax.vmap(jax.grad(s), in_axes=ax)(XY, aux),
        jax.vmap(jax.hessian(s), in_axes=ax)(XY, aux),
    )


def _bucket(T: int) -> int:
    """The compiled size for a path of T steps: T rounded up to a multiple of max(64, 2^⌊log₂T⌋/4), so that
    horizons close to each other (the phases of a periodic attractor) share one compilation."""
    g = max(64, 2 ** max(int(math.log2(max(T, 1))) - 2, 0))
    return int(math.ceil(T / g) * g)


def _padded(X, aux, T: int):
    """(X, aux, mask) padded from T to the compiled size (the last point repeated, mask 0 on the extra steps)."""
    Tp = _bucket(T)
    X = np.asarray(X, dtype=float)
    Xp = np.concatenate([X, np.repeat(X[-1:], Tp - T, axis=0)])
    mask = np.concatenate([np.ones(T), np.zeros(Tp - T)])
    if aux is not None:
        idx = np.minimum(np.arange(Tp), T - 1)
        aux = jax.tree_util.tree_map(lambda leaf: jnp.asarray(leaf)[idx], aux)
    return jnp.asarray(Xp), aux, jnp.asarray(mask)


@partial(jax.jit, static_argnames=("m", "noise", "mode"))
def _controls(m, noise, mode, X, aux, params):
    """η_t (T, K) and the out-of-range part |q_t| (T,) of the path's steps."""

    def c(x, y, a):
        _, eta, q = _residual(m, noise, mode, x, y, a, params, 1.0)
        return eta, q

    return jax.vmap(c, in_axes=(0, 0, _axes(aux)))(X[:-1], X[1:], aux)


# ---------------------------------------------------------------------------------------------------------------
# damped Newton on the block-tridiagonal Hessian


def _banded(g: np.ndarray, h: np.ndarray, T: int, D: int) -> tuple[np.ndarray, np.ndarray]:
    """The gradient (n,) and the Hessian in upper banded storage (2D, n) over the free points x_1 … x_{T−1}
    (n = (T − 1) D) from the per-step gradients (T, 2D) and Hessians (T, 2D, 2D)."""
    G = np.zeros((T + 1, D))
    G[:-1] += g[:, :D]
    G[1:] += g[:, D:]
    grad = G[1:-1].reshape(-1)
    n, u = (T - 1) * D, 2 * D - 1
    ab = np.zeros((u + 1, n), order="F")  # LAPACK's layout: a C-ordered band is copied at every factorisation
    if n == 0:
        return grad, ab
    diag = h[:-1, D:, D:] + h[1:, :D, :D]  # (T − 1, D, D): the blocks of x_1 … x_{T−1}
    al, be = np.triu_indices(D)
    base = (np.arange(T - 1) * D)[:, None]
    ab[(u + al - be)[None, :], base + be[None, :]] = diag[:, al, be]
    if T > 2:
        off = h[1:-1, :D, D:]  # (T − 2, D, D): the blocks (x_k, x_{k+1})
        al, be = np.meshgrid(np.arange(D), np.arange(D), indexing="ij")
        al, be = al.ravel(), be.ravel()
        base = (np.arange(1, T - 1) * D)[:, None]
        ab[(u + al - D - be)[None, :], base + be[None, :]] = off[:, al, be]
    return grad, ab


def _newton(value: Callable, terms: Callable, X0: np.ndarray, max_iterations: int, gtol: float, ftol: float):
    """Minimise the action over the free points of X0 (T + 1, D) (the end points held): Levenberg–Marquardt steps
    (H + μ I) s = −g on the exact block-tridiagonal Hessian, μ adapted by the ratio of actual to predicted
    decrease (Nielsen's rule). Returns (S, X, iterations, |g|_∞, converged)."""
    X = np.array(X0, dtype=float)
    T, D = X.shape[0] - 1, X.shape[1]
    S, g, h = (np.asarray(v) for v in terms(X))
    S = float(S)
    if not np.isfinite(S):
        return S, X, 0, np.inf, False
    mu, nu, stall, gn = None, 2.0, 0, np.inf
    u = 2 * D - 1
    for it in range(1, max_iterations + 1):
        grad, ab = _banded(g, h, T, D)
        gn = float(np.max(np.abs(grad))) if grad.size else 0.0
        if gn <= gtol or grad.size == 0:
            return S, X, it - 1, gn, True
        if mu is None:
            mu = 1e-10 * max(float(np.max(np.abs(ab[u]))), 1e-300)
        first_pred = None  # the decrease the least-damped step of this iteration promises
        while True:
            abm = ab.copy(order="F")
            abm[u] += mu
            try:  # one LAPACK call (pbsv: factor and solve), overwriting its own copies
                # (a band wider than the matrix keeps only the diagonals that exist)
                band = abm[-grad.size :] if grad.size <= u else abm
                step = -solveh_banded(band, grad, overwrite_ab=True, lower=False, check_finite=False)
            except LinAlgError:
                mu, nu = mu * nu, nu * 2.0
                if mu > 1e40:
                    return S, X, it, gn, False
                continue
            Xn = X.copy()
            Xn[1:-1] += step.reshape(T - 1, D)
            Sn = float(value(Xn))
            pred = -0.5 * float(grad @ step) + 0.5 * mu * float(step @ step)
            rho = (S - Sn) / pred if pred > 0 else -1.0
            if first_pred is None:
                first_pred = pred
            if np.isfinite(Sn) and rho > 0:
                mu *= max(1.0 / 3.0, 1.0 - (2.0 * rho - 1.0) ** 3)
                nu = 2.0
                break
            mu, nu = mu * nu, nu * 2.0
            if mu > 1e40:  # no step lowers S: a minimum to round-off when even the best one promised less
                return S, X, it, gn, bool(first_pred <= 64.0 * np.finfo(float).eps * max(abs(S), 1e-300))
        drop = S - Sn
        X = Xn
        S, g, h = (np.asarray(v) for v in terms(X))
        S = float(S)
        stall = stall + 1 if drop <= ftol * max(abs(S), 1e-300) else 0
        if stall >= 5:
            grad, _ = _banded(g, h, T, D)
            return S, X, it, float(np.max(np.abs(grad))) if grad.size else 0.0, True
    return S, X, max_iterations, gn, False


# ---------------------------------------------------------------------------------------------------------------
# public analyses


@checked
def discrete_action(m: AbstractMap, noise: Any, path, params, *, aux0: Any = None) -> xr.Dataset:
    """The discrete action of a path of a noisy map, step by step (theory: docs/theory/rare_events.md §1) (theory:
    docs/theory/dynamics.md §1).

    For x_{t+1} = F(x_t; aux_t) + √ε B(x_t, aux_t) η_t (η_t ~ N(0, I_K)) the path x_0 … x_T has, in units of 1/ε,

        S = ½ Σ_{t<T} |η_t|²,   η_t = B_t⁺ (x_{t+1} − F(x_t))   (the least-norm control of the step),

    which for K ≥ D equals ½ Σ_t (x_{t+1} − F(x_t))ᵀ (B_t B_tᵀ)⁻¹ (x_{t+1} − F(x_t)). For singular noise (K < D) a
    step whose increment leaves the range of B_t has infinite action: its out-of-range part is reported.

    Args:
        m: the map. noise: ``noise(x, aux, params) -> B (D, K)`` or a constant (D, K) array. path: (T + 1, D)
            the states x_0 … x_T. params: the parameters. aux0: the auxiliary state of x_0 (advanced by the map).

    Returns:
        Dataset with ``action`` (scalar), ``step_action`` (step,) ½|η_t|², ``controls`` (step, noise) η_t and
        ``out_of_range`` (step,) |x_{t+1} − F(x_t) − B_t η_t| on the T steps; attrs ``mode`` ("full" or
        "singular"), ``admissible`` (every out-of-range part below 1e-10 of the step's size).

    Raises:
        InputError: naming ``path`` (not (T + 1, D) with T ≥ 1), ``m``, ``params``, ``aux0`` or ``noise``.
    """
    X = real_array(path, "path")
    if X.ndim != 2 or X.shape[0] < 2 or not np.all(np.isfinite(X)):
        raise InputError(f"must be a finite path (T + 1, D) of at least two states, got shape {X.shape}", "path")
    check_start(m, X[0], aux0, params, "path")
    noise = noise_function(noise)
    B = noise_at(noise, X[0], aux0, params, X.shape[1])
    mode = noise_mode(B)
    T = X.shape[0] - 1
    auxs, a = [], aux0
    for t in range(T):
        auxs.append(a)
        _, a = m.step(jnp.asarray(X[t]), a, params)
    aux = stack_aux(auxs, np.arange(T))
    eta, q = (np.asarray(v) for v in _controls(m, noise, mode, jnp.asarray(X), aux, params))
    if not (np.all(np.isfinite(eta)) and np.all(np.isfinite(q))):
        bad = int(np.flatnonzero(~np.all(np.isfinite(eta), axis=1) | ~np.isfinite(q))[0])
        raise NonFiniteError(bad, params_dict(params), what="control of the path")
    inc = np.linalg.norm(np.diff(X, axis=0), axis=1)
    step_action = _step_rates(m, noise, X, aux, params, eta)
    return xr.Dataset(
        {
            "action": ((), float(np.sum(step_action)), {"long_name": "discrete action S (units of 1/epsilon)"}),
            "step_action": ("step", step_action, {"long_name": "action of the step"}),
            "controls": (("step", "noise"), eta, {"long_name": "least-norm control eta_t"}),
            "out_of_range": ("step", q, {"long_name": "part of the increment outside the range of B"}),
        },
        coords={"step": np.arange(T), "noise": np.arange(eta.shape[1])},
        attrs=base_attrs(
            analysis="discrete action",
            mode=mode,
            admissible=int(bool(np.all(q <= 1e-10 * np.maximum(1.0, inc)))),
            map=type(m).__name__,
            theory=f"{THEORY} §1",
        ),
    )


def _initial_path(x0: np.ndarray, b: np.ndarray, T: int, jitter: float, rng: np.random.Generator) -> np.ndarray:
    """The straight line from x0 to b over T steps, bent by a smooth random bump of size jitter·|b − x0| (which
    breaks a symmetry the straight line may have)."""
    s = np.linspace(0.0, 1.0, T + 1)[:, None]
    X = x0[None] + s * (b - x0)[None]
    if jitter > 0:
        X = X + jitter * np.linalg.norm(b - x0) * np.sin(np.pi * s) * rng.normal(size=(1, b.size))
    return X


def _least_action_memory(a: dict):
    D = state_dim(a["m"], a["params"], a["a"])
    return memory_of(
        8.0 * a["max_steps"] * (4 * D * D * 6 + 4 * D),
        "the Hessian of the action (block tridiagonal)",
        "use fewer max_steps",
        a,
        "max_steps",
    )


@checked(
    a=state(),
    b=state(),
    stiffness=number(0.0),
    max_iterations=count(1, 100_000),
    memory=_least_action_memory,
)
def least_action_path(
    m: AbstractMap,
    noise: Any,
    a,
    b,
    params,
    *,
    aux0: Any = None,
    period: int = 1,
    b_aux: Any = None,
    b_period: int = 1,
    steps: int = 100,
    steps_increment: int | None = None,
    max_steps: int = 20_000,
    tol: float = 1e-10,
    phases: Sequence[int] | None = None,
    guess: Any = None,
    jitter: float = 0.05,
    refine_a: bool = True,
    stiffness: float = 1e6,
    max_iterations: int = 500,
    seed: int = 0,
    progress: bool = False,
) -> xr.Dataset:
    """The minimum-action path of a noisy map from an attractor to a target over a free number of steps, with its
    action (the barrier) (theory: docs/theory/rare_events.md §2) (theory: docs/theory/dynamics.md §1).

    With x_{t+1} = F(x_t) + √ε B(x_t) η_t and the attractor the orbit z_0 … z_{p−1} of ``a`` (period p), the action
    of reaching b from phase j in T steps is

        S_j(T) = min { ½ Σ_{t<T} |η_t|² : x_0 = z_j, x_T = b },

    minimised over the path x_1 … x_{T−1} by damped Newton steps on the exact block-tridiagonal Hessian (§2.1;
    singular noise: the part of each increment outside the range of B held to zero by the ``stiffness`` weight).
    Phase selection (§2.2): every start phase j is tried and the least S_j kept (with ``b_aux``, phase j arrives
    after T + s_j steps, s_j < p the shift that brings the auxiliary state to ``b_aux``). The horizon grows,
    T = steps, steps + Δ, … (Δ = ``steps_increment`` rounded up to a multiple of p), each solve started from the
    previous path with steps on the attractor prepended (and, when b is a periodic point, steps on b's orbit
    appended, the two in the ratio of the rates at which the path leaves a and reaches b), so S(T) never
    increases; it stops once
    S(T − Δ) − S(T) ≤ tol · S(T) (§2.3). The barrier to a saddle b is the quasi-potential V(b) = lim_T S(T).

    Args:
        m: the map. noise: ``noise(x, aux, params) -> B (D, K)`` or a constant (D, K) array. a: (D,) a point of
            the attractor (refined by Newton when ``refine_a``). b: (D,) the target (a saddle point, a point of a
            saddle orbit, or any state). params: the parameters. aux0: the auxiliary state of a. period: p.
        b_aux: the auxiliary state the path must arrive with (None: any). b_period: q, when b is a point of a
            period-q orbit (a saddle orbit): the longer horizons then add steps on that orbit as well.
            steps: the first horizon T.
        steps_increment: Δ (default ``steps``). max_steps: the largest horizon. tol: the relative decrease of S
            under which the horizon stops growing. phases: the start phases tried (default all p).
        guess: (T + 1, D) an initial path for the first horizon (its ends replaced by z_j and b); default the
            straight line bent by a smooth random bump of relative size ``jitter`` (seeded by ``seed``).
        stiffness: the weight of the out-of-range part (singular noise only). max_iterations: Newton steps per
            solve. progress: a progress bar over the horizons.

    Returns:
        Dataset with ``path`` (step, component) the best path x_0 … x_T, ``controls`` (step, noise) η_t and
        ``step_action`` (step,) (NaN at the last point); ``action`` (scalar) S of the best path; on (horizon,
        phase): ``action_by_horizon`` S_j(T), ``steps_used`` T + s_j, ``iterations``, ``gradient``; scalars
        ``best_phase``, ``steps``; attrs ``status`` ("converged" or "max_steps"), ``mode``,
        ``constraint_violation`` (largest out-of-range part; 0 for full noise), ``converged`` (every Newton solve
        reached its tolerance), the configuration, the seed and the package version.

    Raises:
        InputError: naming ``m``, ``a``, ``b`` (another dimension), ``params``, ``aux0``, ``noise`` (not a (D, K)
            factor of full rank), ``period`` (a does not close after it; its aux does not return), ``b_aux`` (no
            phase arrives with it), ``phases``, ``guess``, ``steps``, ``steps_increment``, ``max_steps`` (below
            steps), ``tol``, ``jitter`` (negative), ``stiffness``, ``max_iterations``.
        NonFiniteError: the action of a path is not finite (the map or the noise factor broke down on it).
    """
    xa = check_start(m, a, aux0, params, "a")
    D = xa.size
    xb = np.asarray(b, dtype=float)
    if xb.shape != (D,):
        raise InputError(f"must be a state (D,) with D = {D} as a, got shape {xb.shape}", "b")
    if jitter < 0:
        raise InputError(f"must be at least 0, got {jitter:g}", "jitter")
    if max_steps < steps:
        raise InputError(f"must be at least steps = {steps}, got {max_steps}", "max_steps")
    noise_fn = noise_function(noise)
    warn_if_single_precision(jnp.asarray(xa))
    if refine_a:
        orb = refine(m, jnp.asarray(xa), aux0, params, period)
        if bool(orb.converged):
            xa = np.asarray(orb.x, dtype=float)
    xs, auxs = orbit_points(m, xa, aux0, params, period, "period")
    mode = noise_mode(noise_at(noise_fn, xs[0], auxs[0], params, D))
    p = period
    if phases is None:
        phase_list = list(range(p))
    else:
        try:
            phase_list = sorted({int(j) for j in phases})
        except (TypeError, ValueError):
            raise InputError(f"must be start phases (integers in [0, {p})), got {phases!r}", "phases") from None
        if not phase_list or any(j < 0 or j >= p for j in phase_list):
            raise InputError(f"must be start phases in [0, {p}), got {phases!r}", "phases")
    inc = steps if steps_increment is None else steps_increment
    inc = int(math.ceil(inc / p) * p)
    has_aux = bool(jax.tree_util.tree_leaves(aux0))
    if guess is not None:
        G = np.asarray(guess, dtype=float)
        if G.shape != (steps + 1, D) or not np.all(np.isfinite(G)):
            raise InputError(f"must be a finite path (steps + 1, D) = ({steps + 1}, {D}), got {G.shape}", "guess")

    def shift(j: int, T: int) -> int | None:
        if b_aux is None or not has_aux:
            return 0
        for s in range(p):
            if tree_close(auxs[(j + T + s) % p], b_aux):
                return s
        return None

    if b_aux is not None and has_aux and all(shift(j, steps) is None for j in phase_list):
        raise InputError("no phase of the attractor's auxiliary state equals it", "b_aux")
    # the new steps of a longer horizon go to both ends in the ratio of the rates at which the path leaves the
    # attractor and reaches b (when b is a periodic point: staying on its orbit is free), so that the warm start
    # is nearly balanced and Newton need not move the climb along the path (§2.3)
    lam_a = _slowest_rate(m, xs, auxs, params, leaving=True)
    q = b_period
    b_orbit, lam_b = _periodic_tail(m, xb, b_aux if b_aux is not None else auxs[(phase_list[0] + steps) % p], params, q)
    inc_a = inc
    if b_orbit is not None:
        L = p * q // math.gcd(p, q)
        tail = int(round(inc * lam_a / (lam_a + lam_b) / L)) * L
        inc = max(inc, L)
        inc = int(math.ceil(inc / L) * L)
        tail = min(max(tail, 0), inc)
        inc_a = inc - tail
    w = float(stiffness)
    horizons: list[int] = []
    table: dict[str, list[list[float]]] = {k: [] for k in ("S", "T", "it", "g")}
    paths: dict[int, np.ndarray] = {}
    best: tuple[float, int, np.ndarray] | None = None
    converged_all, status = True, "max_steps"
    prev_best = np.inf
    Tn = steps
    with step_bar(float(max_steps), "steps", enabled=progress) as report:
        while Tn <= max_steps:
            row = {k: [np.nan] * len(phase_list) for k in table}
            for col, j in enumerate(phase_list):
                s_j = shift(j, Tn)
                if s_j is None:
                    continue
                T = Tn + s_j
                if j in paths:  # the previous horizon's path, the inc new steps on the attractor and on b
                    head = xs[(j - inc_a + np.arange(inc_a)) % p]
                    more = inc - inc_a  # > 0 only when b is a periodic point (b_orbit is its orbit)
                    tail = b_orbit[(1 + np.arange(more)) % q] if b_orbit is not None and more > 0 else np.zeros((0, D))
                    X0 = np.concatenate([head, paths[j], tail])
                elif guess is not None and s_j == 0:
                    X0 = G.copy()
                else:
                    X0 = _initial_path(xs[j], xb, T, jitter, np.random.default_rng([seed, j]))
                X0[0], X0[-1] = xs[j], xb
                aux_seq = stack_aux(auxs, (j + np.arange(T)) % p) if has_aux else None
                pj = jax.tree_util.tree_map(jnp.asarray, params)
                value = partial(_eval_value, m, noise_fn, mode, aux_seq, pj, w)
                terms = partial(_eval_terms, m, noise_fn, mode, aux_seq, pj, w)
                S, X, it, gn, ok = _newton(value, terms, X0, max_iterations, gtol=1e-13, ftol=1e-14)
                if not np.isfinite(S):
                    raise NonFiniteError(T, params_dict(params), what="action of the path")
                converged_all &= ok
                paths[j] = X
                row["S"][col], row["T"][col], row["it"][col], row["g"][col] = S, T, it, gn
                if best is None or S < best[0] or (S == best[0] and T < best[2].shape[0] - 1):
                    best = (S, j, X)
            horizons.append(Tn)
            for k in table:
                table[k].append(row[k])
            now = float(np.nanmin(row["S"]))
            report(float(Tn), float(max_steps))
            if np.isfinite(prev_best) and prev_best - now <= tol * max(abs(now), 1e-300):
                status = "converged"
                break
            prev_best = now
            Tn += inc
    assert best is not None
    S, j_best, X = best
    T = X.shape[0] - 1
    aux_seq = stack_aux(auxs, (j_best + np.arange(T)) % p) if has_aux else None
    eta, q = (np.asarray(v) for v in _controls(m, noise_fn, mode, jnp.asarray(X), aux_seq, params))
    K = eta.shape[1]
    pad = np.full((1, K), np.nan)
    rates = _step_rates(m, noise_fn, X, aux_seq, params, eta)
    opts = dict(
        period=period,
        b_period=b_period,
        steps=steps,
        steps_increment=inc,
        max_steps=max_steps,
        tol=tol,
        phases=phase_list,
        jitter=jitter,
        refine_a=refine_a,
        stiffness=stiffness,
        max_iterations=max_iterations,
        seed=seed,
        b_aux_given=b_aux is not None,
        guess_given=guess is not None,
    )
    return xr.Dataset(
        {
            "path": (("step", "component"), X, {"long_name": "least-action path x_t"}),
            "controls": (("step", "noise"), np.concatenate([eta, pad]), {"long_name": "control eta_t"}),
            "step_action": ("step", np.append(rates, np.nan), {"long_name": "action of step t"}),
            "action": ((), float(np.sum(rates)), {"long_name": "least action S (units of 1/epsilon)"}),
            "action_by_horizon": (("horizon", "phase"), np.asarray(table["S"]), {"long_name": "S_j(T)"}),
            "steps_used": (("horizon", "phase"), np.asarray(table["T"]), {"long_name": "steps of the path"}),
            "iterations": (("horizon", "phase"), np.asarray(table["it"]), {"long_name": "Newton steps"}),
            "gradient": (("horizon", "phase"), np.asarray(table["g"]), {"long_name": "final |gradient|_inf"}),
            "best_phase": ((), int(j_best), {"long_name": "start phase of the best path"}),
            "steps": ((), int(T), {"long_name": "steps of the best path"}),
        },
        coords={
            "step": np.arange(T + 1),
            "component": np.arange(D),
            "noise": np.arange(K),
            "horizon": np.asarray(horizons),
            "phase": np.asarray(phase_list),
        },
        attrs=base_attrs(
            opts,
            analysis="least action path",
            status=status,
            mode=mode,
            converged=int(converged_all),
            constraint_violation=float(np.max(q)) if mode == "singular" else 0.0,
            attractor=json.dumps(xs.tolist()),
            target=json.dumps(xb.tolist()),
            params=params_dict(params),
            map=type(m).__name__,
            theory=f"{THEORY} §2",
        ),
    )


def _slowest_rate(m: AbstractMap, xs: np.ndarray, auxs: list, params, leaving: bool) -> float:
    """−ln ρ / p per step, ρ the largest modulus of the multipliers of the orbit xs inside the unit circle (and,
    for a saddle, of the inverses of those outside): the rate of the slowest direction along which a least-action
    path leaves (reaches) the orbit."""
    M = np.asarray(monodromy(m, jnp.asarray(xs[0]), auxs[0], params, len(xs)), dtype=float)  # one compiled program
    mu = np.abs(np.linalg.eigvals(M))
    mu = np.where(mu > 1.0, 1.0 / np.maximum(mu, 1e-300), mu) if not leaving else mu[mu < 1.0]
    rho = float(np.max(mu)) if np.size(mu) else 0.0
    return max(-math.log(max(rho, 1e-300)) / len(xs), 1e-12) if rho < 1.0 else 1e-12


def _periodic_tail(m: AbstractMap, xb: np.ndarray, aux, params, q: int):
    """(the orbit b, F(b), … (q, D), its rate) when b is a point of a period-q orbit of the map, else (None, 0)."""
    try:
        pts, auxs = orbit_points(m, xb, aux, params, q, "b_period", closure=1e-9)
    except InputError:
        return None, 0.0
    return pts, _slowest_rate(m, pts, auxs, params, leaving=False)


def _eval_value(m, noise, mode, aux, params, w, X):
    T = X.shape[0] - 1
    Xp, auxp, mask = _padded(X, aux, T)
    return _value(m, noise, mode, Xp, auxp, params, w, mask)


def _eval_terms(m, noise, mode, aux, params, w, X):
    T = X.shape[0] - 1
    Xp, auxp, mask = _padded(X, aux, T)
    S, g, h = _terms(m, noise, mode, Xp, auxp, params, w, mask)
    return S, np.asarray(g)[:T], np.asarray(h)[:T]


# ---------------------------------------------------------------------------------------------------------------
# the linear-noise covariance and the quadratic part of the quasi-potential


def _linear_noise(m: AbstractMap, noise: Callable, xs: np.ndarray, auxs: list, params) -> tuple[np.ndarray, ...]:
    """(P, M, Q) at phase 0 of the orbit xs: M = J_{p−1} ⋯ J_0, Q = Σ_k Φ_k Σ_k Φ_kᵀ (the noise of one period carried
    to its end) and P = M P Mᵀ + Q, the stationary covariance of the linearised noisy map (units of ε)."""
    D = xs.shape[1]
    M, Q = np.eye(D), np.zeros((D, D))
    for x, aux in zip(xs, auxs, strict=True):
        J = np.asarray(m.jacobian(jnp.asarray(x), aux, params), dtype=float)
        B = np.asarray(noise(jnp.asarray(x), aux, params), dtype=float)
        Q = J @ Q @ J.T + B @ B.T
        M = J @ M
    P = solve_discrete_lyapunov(M, Q, method="direct" if D <= 12 else "bilinear")
    return 0.5 * (P + P.T), M, Q


@checked(x=state(), radius=number(0.0))
def quasi_potential_hessian(
    m: AbstractMap,
    noise: Any,
    x,
    params,
    *,
    aux0: Any = None,
    period: int = 1,
    radius: float = 1e-3,
    directions: Any = None,
    steps: int = 20,
    max_steps: int = 5000,
    tol: float = 1e-12,
    progress: bool = False,
) -> xr.Dataset:
    """The quadratic part of the quasi-potential near a stable periodic point from least actions, beside the
    inverse of the stationary covariance of the linearised noisy map (theory: docs/theory/rare_events.md §3) (theory:
    docs/theory/dynamics.md §1).

    With M = J_{p−1} ⋯ J_0 the monodromy from x (phase 0) and Q = Σ_k Φ_k Σ_k Φ_kᵀ the noise of one period carried
    to its end (Σ_k = B_k B_kᵀ), the stationary covariance solves P = M P Mᵀ + Q (for p = 1: P = J P Jᵀ + Σ,
    scipy.linalg.solve_discrete_lyapunov); the quasi-potential is V(x + δ) = ½ δᵀ P⁻¹ δ + O(|δ|³). For each
    direction u (unit) the least actions to x ± r u (:func:`least_action_path`, every phase tried) give

        uᵀ H u ≈ (V(x + r u) + V(x − r u)) / r²,

    the cubic terms cancelling; the default directions e_i and (e_i + e_j)/√2 determine H.

    Args:
        m: the map. noise: ``noise(x, aux, params) -> B (D, K)`` or a constant (D, K) array. x: (D,) a point of
            the stable orbit (refined by Newton). params: the parameters. aux0: its auxiliary state. period: p.
        radius: r (absolute). directions: (n, D) directions u (normalised here); default the D(D + 1)/2 ones
            that determine H. steps, max_steps, tol: the horizons of each least action (§2.3).
        progress: a progress bar over the directions.

    Returns:
        Dataset with ``covariance`` P, ``inverse_covariance`` P⁻¹ and, for the default directions, ``hessian`` H
        (component, component_); on dim ``direction``: ``direction_vector`` (direction, component),
        ``form_action`` uᵀHu from the actions, ``form_covariance`` uᵀP⁻¹u, ``action_plus``, ``action_minus``;
        scalars ``relative_difference`` (‖H − P⁻¹‖_F/‖P⁻¹‖_F, or for given directions the largest relative
        difference of the forms) and ``point`` (component); attrs the configuration and the package version.

    Raises:
        InputError: naming ``m``, ``x`` (Newton does not converge, or the orbit is not stable), ``params``,
            ``aux0``, ``noise``, ``period``, ``radius``, ``directions`` (not (n, D), or zero), ``steps``,
            ``max_steps``, ``tol``; or ``noise`` when P is singular (the noise does not reach every direction).
    """
    x0 = check_start(m, x, aux0, params, "x")
    D = x0.size
    noise_fn = noise_function(noise)
    orb = refine(m, jnp.asarray(x0), aux0, params, period)
    if not bool(orb.converged):
        raise InputError(
            f"Newton did not converge to a period-{period} point (residual {float(orb.residual):.2e})", "x"
        )
    xs, auxs = orbit_points(m, np.asarray(orb.x, float), aux0, params, period, "period")
    noise_at(noise_fn, xs[0], auxs[0], params, D)
    P, M, _ = _linear_noise(m, noise_fn, xs, auxs, params)
    mult = np.abs(np.linalg.eigvals(M))
    if np.max(mult) >= 1.0:
        raise InputError(f"the orbit is not stable (|multipliers| {np.round(mult, 6)})", "x")
    ev = np.linalg.eigvalsh(P)
    if ev[0] <= 1e-12 * ev[-1]:
        raise InputError(
            "the stationary covariance is singular: the noise does not reach every direction (the quasi-potential "
            "is infinite off its range)",
            "noise",
        )
    Pinv = np.linalg.inv(P)
    default = directions is None
    if default:
        U = [np.eye(D)[i] for i in range(D)]
        U += [(np.eye(D)[i] + np.eye(D)[k]) / np.sqrt(2.0) for i in range(D) for k in range(i + 1, D)]
        U = np.asarray(U)
    else:
        U = np.asarray(directions, dtype=float)
        if U.ndim == 1:
            U = U[None]
        if U.ndim != 2 or U.shape[1] != D or not np.all(np.isfinite(U)) or np.any(np.linalg.norm(U, axis=1) == 0):
            raise InputError(f"must be non-zero directions (n, D) with D = {D}, got shape {U.shape}", "directions")
        U = U / np.linalg.norm(U, axis=1, keepdims=True)
    plus, minus = np.zeros(len(U)), np.zeros(len(U))
    with step_bar(float(len(U)), "directions", enabled=progress) as report:
        for i, u in enumerate(U):
            for sign, out in ((1.0, plus), (-1.0, minus)):
                ds = least_action_path(
                    m,
                    noise_fn,
                    xs[0],
                    xs[0] + sign * radius * u,
                    params,
                    aux0=auxs[0],
                    period=period,
                    steps=steps,
                    max_steps=max_steps,
                    tol=tol,
                    refine_a=False,
                    jitter=0.0,
                )
                out[i] = float(ds["action"])
            report(i + 1.0, float(len(U)))
    form_action = (plus + minus) / radius**2
    form_cov = np.einsum("nd,de,ne->n", U, Pinv, U)
    data = {
        "covariance": (("component", "component_"), P, {"long_name": "stationary covariance P (units of epsilon)"}),
        "inverse_covariance": (("component", "component_"), Pinv, {"long_name": "P^-1"}),
        "direction_vector": (("direction", "component"), U),
        "form_action": ("direction", form_action, {"long_name": "u^T H u from least actions"}),
        "form_covariance": ("direction", form_cov, {"long_name": "u^T P^-1 u"}),
        "action_plus": ("direction", plus, {"long_name": "V(x + r u)"}),
        "action_minus": ("direction", minus, {"long_name": "V(x - r u)"}),
        "point": ("component", xs[0], {"long_name": "the refined periodic point"}),
    }
    if default:
        H = np.zeros((D, D))
        H[np.diag_indices(D)] = form_action[:D]
        n = D
        for i in range(D):
            for k in range(i + 1, D):
                H[i, k] = H[k, i] = form_action[n] - 0.5 * (H[i, i] + H[k, k])
                n += 1
        data["hessian"] = (("component", "component_"), H, {"long_name": "Hessian of the quasi-potential"})
        rel = float(np.linalg.norm(H - Pinv) / np.linalg.norm(Pinv))
    else:
        rel = float(np.max(np.abs(form_action - form_cov) / np.abs(form_cov)))
    data["relative_difference"] = ((), rel, {"long_name": "relative difference of H and P^-1"})
    return xr.Dataset(
        data,
        coords={"component": np.arange(D), "component_": np.arange(D), "direction": np.arange(len(U))},
        attrs=base_attrs(
            dict(period=period, radius=radius, steps=steps, max_steps=max_steps, tol=tol, default_directions=default),
            analysis="quasi-potential hessian",
            params=params_dict(params),
            map=type(m).__name__,
            theory=f"{THEORY} §3",
        ),
    )


@checked(a=state(), b=state(), barrier=number(0.0), epsilon=positives())
def eyring_kramers(
    m: AbstractMap,
    noise: Any,
    a,
    b,
    params,
    *,
    aux0: Any = None,
    barrier: float,
    epsilon: Any,
) -> xr.Dataset:
    """The Eyring–Kramers mean escape time of a noisy map over a non-degenerate saddle, in steps (theory:
    docs/theory/rare_events.md §4) (theory: docs/theory/dynamics.md §1).

    With H_a = P_a⁻¹ and H_b = P_b⁻¹ the inverses of the solutions of P = J P Jᵀ + Σ at the stable fixed point a
    and at the saddle b (one real multiplier μ > 1, no multiplier on the unit circle), and ΔS the barrier
    (:func:`least_action_path` from a to b),

        τ(ε) = 2π / ln μ · √(|det H_b| / det H_a) · exp(ΔS / ε)   steps.

    For a map x + f(x) dt + √(ε dt) B ξ whose drift is reversible, f = −Σ ∇U (Σ = B Bᵀ), this tends as dt → 0 to
    the Eyring–Kramers law τ = 2π/|λ_u| √(|det ∇²U(b)|/det ∇²U(a)) e^{2ΔU/ε} in time (λ_u the unstable eigenvalue
    of ∂f at b); ``asymmetry`` reports ‖J Σ − Σ Jᵀ‖/‖J Σ‖ at both points, zero for such maps to first order in dt.
    Other maps have a prefactor the local quantities do not give: the number is then a guide only.

    Args:
        m: the map. noise: ``noise(x, aux, params) -> B (D, K)`` or a constant (D, K) array. a: (D,) near the
            stable fixed point. b: (D,) near the saddle (both refined by Newton). params: the parameters.
        barrier: ΔS (units of 1/ε). epsilon: the noise strengths ε. aux0: the auxiliary state (of both).

    Returns:
        Dataset with ``escape_time`` (epsilon) τ in steps, ``rate`` (epsilon) 1/τ; scalars ``prefactor``
        (2π/ln μ · √(|det H_b|/det H_a)), ``multiplier`` μ, ``barrier``; ``hessian_a``, ``hessian_b``
        (component, component_); attrs ``asymmetry_a``, ``asymmetry_b``.

    Raises:
        InputError: naming ``a`` (Newton does not converge, or not stable), ``b`` (not a saddle with one real
            multiplier μ > 1, or degenerate: a multiplier on the unit circle or H_b singular), ``noise``
            (singular: the covariance at a is not invertible), ``barrier``, ``epsilon``, ``m``, ``params``.
    """
    xa = check_start(m, a, aux0, params, "a")
    D = xa.size
    xb = np.asarray(b, dtype=float)
    if xb.shape != (D,):
        raise InputError(f"must be a state (D,) with D = {D} as a, got shape {xb.shape}", "b")
    noise_fn = noise_function(noise)
    eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
    out = {}
    for name, x0 in (("a", xa), ("b", xb)):
        orb = refine(m, jnp.asarray(x0), aux0, params, 1)
        if not bool(orb.converged):
            raise InputError(f"Newton did not converge to a fixed point (residual {float(orb.residual):.2e})", name)
        x = np.asarray(orb.x, float)
        noise_at(noise_fn, x, aux0, params, D)
        J = np.asarray(m.jacobian(jnp.asarray(x), aux0, params), dtype=float)
        B = np.asarray(noise_fn(jnp.asarray(x), aux0, params), dtype=float)
        Sig = B @ B.T
        mu = np.linalg.eigvals(J)
        out[name] = (x, J, Sig, mu)
    xa, Ja, Sa, mua = out["a"]
    xb, Jb, Sb, mub = out["b"]
    if np.max(np.abs(mua)) >= 1.0:
        raise InputError(f"the fixed point is not stable (multipliers {np.round(mua, 6)})", "a")
    unstable = np.abs(mub) > 1.0
    if unstable.sum() != 1 or abs(mub[unstable][0].imag) > 0 or mub[unstable][0].real <= 1.0:
        raise InputError(
            f"must be a saddle with exactly one real unstable multiplier > 1 (multipliers {np.round(mub, 6)})", "b"
        )
    if np.any(np.isclose(np.abs(mub), 1.0, rtol=0, atol=1e-12)) or np.any(
        np.isclose(np.outer(mub, mub), 1.0, rtol=0, atol=1e-12)
    ):
        raise InputError(f"is degenerate: a multiplier on or paired across the unit circle ({np.round(mub, 6)})", "b")
    if np.linalg.eigvalsh(Sa)[0] <= 1e-14 * np.linalg.eigvalsh(Sa)[-1]:
        raise InputError("is singular at a: the Eyring–Kramers prefactor needs an invertible covariance", "noise")
    Pa = solve_discrete_lyapunov(Ja, Sa)
    Pb = solve_discrete_lyapunov(Jb, Sb)
    Ha, Hb = np.linalg.inv(0.5 * (Pa + Pa.T)), np.linalg.inv(0.5 * (Pb + Pb.T))
    det_a, det_b = np.linalg.det(Ha), np.linalg.det(Hb)
    if not (det_a > 0 and np.isfinite(det_b) and det_b != 0):
        raise InputError(f"gives a degenerate quadratic part (det H_a = {det_a:.3g}, det H_b = {det_b:.3g})", "b")
    mu_u = float(mub[unstable][0].real)
    pref = 2.0 * np.pi / np.log(mu_u) * np.sqrt(abs(det_b) / det_a)
    tau = pref * np.exp(float(barrier) / eps)

    def asym(J, S):
        JS = J @ S
        return float(np.linalg.norm(JS - JS.T) / np.linalg.norm(JS))

    return xr.Dataset(
        {
            "escape_time": ("epsilon", tau, {"long_name": "Eyring-Kramers mean escape time", "units": "steps"}),
            "rate": ("epsilon", 1.0 / tau, {"long_name": "escape rate", "units": "1/steps"}),
            "prefactor": ((), float(pref), {"long_name": "2 pi / ln mu * sqrt(|det H_b| / det H_a)"}),
            "multiplier": ((), mu_u, {"long_name": "unstable multiplier of the saddle"}),
            "barrier": ((), float(barrier), {"long_name": "barrier (units of 1/epsilon)"}),
            "hessian_a": (("component", "component_"), Ha),
            "hessian_b": (("component", "component_"), Hb),
            "point_a": ("component", xa),
            "point_b": ("component", xb),
        },
        coords={"epsilon": eps, "component": np.arange(D), "component_": np.arange(D)},
        attrs=base_attrs(
            dict(barrier=float(barrier), epsilon=eps.tolist()),
            analysis="Eyring-Kramers time",
            asymmetry_a=asym(Ja, Sa),
            asymmetry_b=asym(Jb, Sb),
            params=params_dict(params),
            map=type(m).__name__,
            theory=f"{THEORY} §4",
        ),
    )


__all__ = ["discrete_action", "eyring_kramers", "least_action_path", "quasi_potential_hessian"]
