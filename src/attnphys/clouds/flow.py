"""Continuous-time self-attention: tokens as interacting particles, on the unit sphere or in R^D,
integrated with diffrax (theory: docs/theory/particles.md §2, §6).

The flow is ẋ_i = Π_i(A(X)_i − (1 − r) x_i) with A an attention operator
(:mod:`attnphys.clouds.attention`: SA, USA, Sinkhorn; any heads, weights and causal mask), r = 1 with
the residual and r = 0 without it, and Π_i the projection on the tangent space of the sphere at x_i
(on the sphere) or the identity (in R^D).
"""

from __future__ import annotations

from dataclasses import dataclass

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from attnphys._arguments import checked
from attnphys._arguments import number as number_rule
from attnphys.clouds._blas import single_threaded
from attnphys.clouds.attention import AbstractAttention
from attnphys.clouds.observables import PAIR_TOL, clustered_pairs, interaction_energy
from attnphys.clouds.stats import LONG_NAMES, STATISTICS, cluster_components, device_stats
from attnphys.errors import NonFiniteError
from attnphys.progress import host_reporter, report_from_host, step_bar

SOLVERS = {"tsit5": diffrax.Tsit5, "dopri8": diffrax.Dopri8, "kvaerno5": diffrax.Kvaerno5}
"""Solvers by name: explicit Runge–Kutta ``tsit5`` (default) and ``dopri8``, implicit ``kvaerno5`` (stiff:
USA at large β)."""

RTOL, ATOL = 1e-8, 1e-10
"""Default relative and absolute tolerances of the adaptive step-size controller (met in float64; in float32
the round-off of the state, ~10⁻⁷ per step, dominates them: :func:`solve_flow` warns)."""


@checked
def velocity(attn: AbstractAttention, X: jax.Array, residual: bool = True, sphere: bool = True) -> jax.Array:
    """The vector field ẋ_i = Π_i(A(X)_i − (1 − r) x_i), r = 1 with the residual
    (theory: docs/theory/particles.md §2.3); Π_i(y) = y − (⟨x_i, y⟩/‖x_i‖²) x_i on the sphere.

    Args:
        attn: the attention operator A. X: (N, D) tokens.

    Returns:
        (N, D) velocities.

    Raises:
        InputError: ``attn`` not an attention operator, ``X`` not an (N, D) array of real numbers.
    """
    from attnphys._checks import check_array
    from attnphys.errors import InputError

    if not isinstance(attn, AbstractAttention):
        raise InputError(
            f"must be an attention operator (attnphys.clouds.SoftmaxAttention …), got {attn!r:.60}", "attn"
        )
    check_array(X, "X", ndim=2, what="tokens × dimensions (N, D)")
    V = attn(X)
    if not residual:
        V = V - X
    if sphere:
        V = V - (jnp.sum(V * X, -1) / jnp.sum(X * X, -1))[:, None] * X
    return V


class _BarMeter(diffrax.AbstractProgressMeter):
    """A diffrax progress meter that reports the solve's progress to the active bar
    (:func:`attnphys.progress.report_from_host`) every ``minimum_increase`` of the time span. It adds a host
    callback to the loop and touches no state: the solution is the same bits as without it (tested)."""

    minimum_increase: float = 0.01

    def init(self):
        return jnp.array(0.0)

    def step(self, state, progress):
        import equinox.internal as eqxi
        from jax.experimental import io_callback

        pred = eqxi.unvmap_all((progress - state > self.minimum_increase) | (progress == 1))

        def report(s):
            io_callback(_host_report, jax.ShapeDtypeStruct((), jnp.int32), progress, ordered=False)
            return jnp.asarray(progress, s.dtype)

        return jax.lax.cond(eqxi.nonbatchable(pred), report, lambda s: s, state)

    def close(self, state):
        del state


def _host_report(p) -> np.ndarray:
    report_from_host(float(p))
    return np.zeros((), np.int32)


def _solve_impl(
    attn, X0, ts, residual: bool, sphere: bool, rtol: float, atol: float, solver: str, max_steps: int, meter=None
):
    term = diffrax.ODETerm(lambda t, X, a: velocity(a, X, residual, sphere))
    sol = diffrax.diffeqsolve(
        term,
        SOLVERS[solver](),
        ts[0],
        ts[-1],
        None,
        X0,
        args=attn,
        saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=diffrax.PIDController(rtol=rtol, atol=atol),
        max_steps=max_steps,
        throw=False,
        progress_meter=diffrax.NoProgressMeter() if meter is None else meter,
    )
    return sol.ys, sol.stats["num_steps"], sol.result == diffrax.RESULTS.successful


_solve = eqx.filter_jit(_solve_impl)


@eqx.filter_jit
def solve_many(
    attn,
    X0s,
    ts,
    residual: bool = True,
    sphere: bool = True,
    rtol: float = RTOL,
    atol: float = ATOL,
    solver: str = "tsit5",
    max_steps: int = 1_000_000,
):
    """Integrate the flow from a batch of starts X0s (S, N, D) at once (theory: docs/theory/particles.md §6).

    Returns:
        (ys (S, T, N, D), steps (S,), ok (S,)): ``ok`` is False where the solver failed (ys then unusable).
    """
    return jax.vmap(lambda X: _solve_impl(attn, X, ts, residual, sphere, rtol, atol, solver, max_steps))(X0s)


@dataclass(frozen=True)
class FlowSolution:
    """Saved states of a flow.

    Attributes:
        ts: (T,) saved times. xs: (T, N, D) tokens at those times. num_steps: accepted solver steps.
        rtol, atol, solver: the integration settings.
    """

    ts: np.ndarray
    xs: np.ndarray
    num_steps: int
    rtol: float
    atol: float
    solver: str


@checked(rtol=number_rule(0.0, 1.0))
def solve_flow(
    attn: AbstractAttention,
    X0,
    ts,
    *,
    residual: bool = True,
    sphere: bool = True,
    rtol: float = RTOL,
    atol: float = ATOL,
    solver: str = "tsit5",
    max_steps: int = 1_000_000,
    progress: bool = False,
) -> FlowSolution:
    """Integrate the flow from X0 (N, D) and save it at the times ``ts`` (T,), increasing, ts[0] the
    start (theory: docs/theory/particles.md §6): adaptive steps under a PID controller with relative
    and absolute tolerances ``rtol``, ``atol``; diffrax interpolates the solution at the saved times.
    Inside an active progress bar (:mod:`attnphys.progress`) the solve reports its progress to it;
    ``progress`` shows a bar of its own otherwise.

    In float32 (``attnphys.configure()`` not called) the round-off of the state, not the tolerances, sets the
    error (~10⁻⁵ by t ~ 10): a :class:`~attnphys.errors.PrecisionWarning` says so.

    Raises:
        NonFiniteError: the state became NaN or infinite. RuntimeError: ``max_steps`` was reached
            (a stiff flow: USA at large β; try ``solver="kvaerno5"``). InputError (a ValueError): ``ts`` is
            not an increasing series of at least two finite times, ``X0`` not a finite (N, D) cloud, an
            argument of a wrong type or out of range, naming it. ResourceError: the saved states or the
            attention matrices do not fit, naming ``ts`` or ``X0``.
    """
    from attnphys._checks import check_array
    from attnphys.clouds._inputs import choice, count, fits, flag, tolerances, warn_if_single_precision
    from attnphys.errors import InputError

    if not isinstance(attn, AbstractAttention):
        raise InputError(
            f"must be an attention operator (attnphys.clouds.SoftmaxAttention …), got {attn!r:.60}", "attn"
        )
    choice(solver, tuple(SOLVERS), "solver")
    rtol, atol = tolerances(rtol, atol)
    max_steps = count(max_steps, "max_steps")
    residual, sphere, progress = flag(residual, "residual"), flag(sphere, "sphere"), flag(progress, "progress")
    if isinstance(ts, (str, bytes)) or getattr(np.asarray(ts), "dtype", np.dtype("O")).kind not in "iuf":
        raise InputError(f"the saved times must be (T,) real numbers, got {ts!r:.80}", "ts")
    times = np.asarray(ts, dtype=float)
    if times.ndim != 1 or times.size < 2 or not np.all(np.isfinite(times)) or np.any(np.diff(times) <= 0):
        raise InputError(
            f"the saved times must be (T,) finite and strictly increasing, T >= 2; got {times!r:.80}", "ts"
        )
    N, D = check_array(X0, "X0", ndim=2, what="tokens × dimensions (N, D)", finite=True)
    if N < 1 or D < 1:
        raise InputError(f"must hold at least one token of at least one dimension, got shape {(N, D)}", "X0")
    if sphere and np.any(np.linalg.norm(np.asarray(X0, dtype=float), axis=1) == 0):
        raise InputError("a token is zero: it has no direction on the sphere", "X0")
    H = int(attn.n_heads)
    fits(
        {
            "X0": (f"{N} tokens ({H} head(s) of {N}×{N} attention matrices)", 8.0 * (4 * H * N * N + 40 * N * D)),
            "ts": (f"{times.size} saved times of {N}×{D} tokens", 16.0 * times.size * N * D),
        }
    )
    warn_if_single_precision(f"the particle flow (rtol = {rtol:g})")
    ts = jnp.asarray(ts, dtype=jnp.result_type(float))
    with step_bar(100, "flow integrated (%)", enabled=progress), host_reporter() as shown:
        ys, steps, ok = _solve(
            attn,
            jnp.asarray(X0, ts.dtype),
            ts,
            residual,
            sphere,
            float(rtol),
            float(atol),
            solver,
            int(max_steps),
            _BarMeter() if shown else None,
        )
        ys = np.asarray(ys)
    finite = np.isfinite(ys).reshape(len(ts), -1).all(1)
    if not finite.all():
        k = int(np.argmin(finite))
        raise NonFiniteError(k, {"time": float(ts[k]), "beta": float(np.asarray(attn.beta))}, what="token cloud")
    if not bool(ok):
        raise RuntimeError(
            f"the {solver} solver stopped after {int(steps)} steps before t = {float(ts[-1])}: the flow "
            "is stiff (USA at large β contracts clusters at a rate ~e^β); use the implicit kvaerno5 "
            "solver or a shorter time"
        )
    return FlowSolution(np.asarray(ts), ys, int(steps), float(rtol), float(atol), solver)


@jax.jit
def _time_stats(xs, keys, beta, pair_tol, cluster_delta):
    prev = jnp.concatenate([xs[:1], xs[:-1]])
    stats, cos = jax.vmap(device_stats)(xs, prev, keys)
    stats["clusters"] = jax.vmap(lambda c: cluster_components(c > 1 - cluster_delta))(cos).astype(xs.dtype)
    stats["energy"] = jax.vmap(lambda X: interaction_energy(X, beta))(xs)
    stats["clustered_pairs"] = jax.vmap(lambda X: clustered_pairs(X, pair_tol))(xs)
    stats["sphere_drift"] = jnp.max(jnp.abs(jnp.linalg.norm(xs, axis=-1) - 1.0), axis=-1)
    return stats


FLOW_LONG_NAMES = {
    "energy": "interaction energy E_beta = sum_ij exp(beta <x_i, x_j>) / (2 beta n^2)",
    "clustered_pairs": "fraction of token pairs whose directions are closer than the pair tolerance",
    "sphere_drift": "largest deviation of a token norm from 1 (integration error on the sphere)",
}


@checked
def flow_statistics(
    sol: FlowSolution, beta: float, *, pair_tol: float = PAIR_TOL, cluster_delta: float = 1e-3, seed: int = 0
) -> dict[str, np.ndarray]:
    """Every observable at every saved time (theory: docs/theory/particles.md §3, §4): ``energy``
    E_β, ``clusters`` (components of cos > 1 − δ), ``clustered_pairs``, ``sphere_drift`` and the cloud
    statistics (:data:`attnphys.clouds.stats.STATISTICS`; ``moved_apart`` against the previous saved time).

    Returns:
        name → (T,) array.
    """
    xs = jnp.asarray(sol.xs)
    keys = jax.random.split(jax.random.PRNGKey(seed), xs.shape[0])
    with single_threaded():
        res = _time_stats(xs, keys, float(beta), float(pair_tol), float(cluster_delta))
        out = {k: np.array(v) for k, v in res.items()}
    out["moved_apart"][0] = np.nan
    return out


@checked
def flow_dataset(
    sol: FlowSolution,
    beta: float,
    *,
    pair_tol: float = PAIR_TOL,
    cluster_delta: float = 1e-3,
    store_cloud: bool = True,
    seed: int = 0,
    attrs: dict | None = None,
    progress: bool = False,
) -> xr.Dataset:
    """The flow's observables over ``time`` (and the plateaus of the cluster count over ``plateau``)
    as a Dataset with CF attributes (theory: docs/theory/particles.md §4.2); ``progress``: a bar while the
    statistics are computed."""
    from attnphys.clouds.observables import plateaus
    from attnphys.metadata import base_attrs

    with step_bar(100, "flow statistics (%)", enabled=progress):
        st = flow_statistics(sol, beta, pair_tol=pair_tol, cluster_delta=cluster_delta, seed=seed)
    names = ["energy", "clusters", "clustered_pairs", "sphere_drift"] + [s for s in STATISTICS if s != "clusters"]
    ds = xr.Dataset({k: (("time",), st[k]) for k in names}, coords={"time": sol.ts})
    ds["time"].attrs.update(long_name="time of the continuous-time dynamics", units="1")  # dimensionless (CF "1")
    for k in names:
        ds[k].attrs["long_name"] = FLOW_LONG_NAMES.get(k) or LONG_NAMES[k]
    ds["clusters"].attrs["long_name"] = f"angular clusters: connected components of cos > 1 - {cluster_delta:g}"
    if store_cloud:
        ds["x"] = (("time", "token", "dim"), sol.xs)
        ds["x"].attrs["long_name"] = "token positions"
    pl = plateaus(sol.ts, st["clusters"])
    ds["plateau_start"] = (("plateau",), np.array([p.start for p in pl]))
    ds["plateau_end"] = (("plateau",), np.array([p.end for p in pl]))
    ds["plateau_length"] = (("plateau",), np.array([p.length for p in pl]))
    ds["plateau_clusters"] = (("plateau",), np.array([p.clusters for p in pl], dtype=np.int64))
    ds["plateau_closed"] = (("plateau",), np.array([p.closed for p in pl], dtype=np.int8))
    for k, text in (
        ("plateau_start", "first saved time of a constant cluster count"),
        ("plateau_end", "first saved time with another count (or the last saved time if open)"),
        ("plateau_length", "duration of the constant cluster count"),
        ("plateau_clusters", "cluster count on the plateau"),
        ("plateau_closed", "1 if the plateau ends with a change of count, 0 if it lasts to the end"),
    ):
        ds[k].attrs["long_name"] = text
    for k in ("plateau_start", "plateau_end", "plateau_length"):
        ds[k].attrs["units"] = "1"
    ds.attrs.update(
        base_attrs(
            None,
            rtol=sol.rtol,
            atol=sol.atol,
            solver=sol.solver,
            num_steps=sol.num_steps,
            pair_tol=pair_tol,
            cluster_delta=cluster_delta,
            **{"beta": float(beta), **(attrs or {})},
        )
    )
    return ds


def uniform_sphere(key, n: int, d: int, dtype=None) -> jax.Array:
    """n points uniform on the unit sphere S^{d−1} (normalized Gaussians) (theory:
    docs/theory/particles.md §1).

    Raises:
        InputError: ``key`` not a JAX random key, ``n`` or ``d`` not an integer ≥ 1. ResourceError: the
            (n, d) cloud does not fit, naming ``n`` or ``d``."""
    from attnphys.clouds._inputs import check_key, count
    from attnphys.clouds._sizes import fits_blaming

    check_key(key)
    n, d = count(n, "n"), count(d, "d")
    fits_blaming(
        lambda v: 24.0 * v["n"] * v["d"],
        {"n": n, "d": d},
        {"n": 64, "d": 3},
        {"n": f"{n} points in {d} dimensions", "d": f"{n} points in {d} dimensions"},
    )
    X = jax.random.normal(key, (n, d), dtype or jnp.result_type(float))
    return X / jnp.linalg.norm(X, axis=1, keepdims=True)


__all__ = [
    "SOLVERS",
    "RTOL",
    "ATOL",
    "velocity",
    "FlowSolution",
    "solve_flow",
    "solve_many",
    "flow_statistics",
    "flow_dataset",
    "uniform_sphere",
]
