"""Equiangular collapse: n unit tokens with every pairwise cosine equal to ρ stay equiangular under SA and
USA (identity weights, on the sphere), and ρ(t) solves one scalar ODE (theory: docs/theory/particles.md §8):

    ρ' = 2 p(ρ) (1 − ρ) (1 + (n − 1) ρ),
    p_SA(ρ) = e^{βρ} / (e^β + (n − 1) e^{βρ}),   p_USA(ρ) = e^{βρ} / n,

p being the weight a token gives each of the others. The time to reach a cosine threshold ρ* is
T = ∫_{ρ₀}^{ρ*} dρ / ρ'(ρ).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import jax.numpy as jnp
import numpy as np
import xarray as xr

from attnphys.errors import InputError

Dynamics = Literal["sa", "usa"]


def cosine_velocity(rho, beta, n: int, dynamics: str = "sa"):
    """ρ' = 2 p(ρ) (1 − ρ)(1 + (n − 1)ρ) of an equiangular cloud of n tokens (theory:
    docs/theory/particles.md §8.1); works on numpy and JAX arrays (broadcasting ρ and β)."""
    xp = jnp if any(hasattr(a, "devices") for a in (rho, beta)) else np
    if dynamics == "sa":  # e^{βρ}/(e^β + (n−1)e^{βρ}) = 1/(e^{β(1−ρ)} + n − 1)
        p = 1.0 / (xp.exp(beta * (1.0 - rho)) + (n - 1))
    else:
        p = xp.exp(beta * rho) / n
    return 2.0 * p * (1.0 - rho) * (1.0 + (n - 1) * rho)


def check_equiangular(beta, tokens, rho0, dynamics):
    if isinstance(tokens, bool) or not isinstance(tokens, (int, np.integer)) or tokens < 2:
        raise InputError(f"must be an integer >= 2, got {tokens!r}", "tokens")
    if dynamics not in ("sa", "usa"):
        raise InputError(f"must be one of sa, usa, got {dynamics!r}", "dynamics")
    b = np.atleast_1d(np.asarray(beta, dtype=float))
    if b.size == 0 or not np.all(np.isfinite(b)) or np.any(b < 0):
        raise InputError(f"values must be finite and >= 0, got {np.asarray(beta).tolist()!r:.80}", "beta")
    lo = -1.0 / (tokens - 1)
    if not (np.isfinite(rho0) and lo < rho0 < 1):
        raise InputError(f"must lie in (-1/(n-1), 1) = ({lo:.4g}, 1) for n = {tokens} tokens, got {rho0!r}", "rho0")
    return b


def collapse_time(
    beta: float | Sequence[float] | np.ndarray,
    *,
    tokens: int,
    rho0: float = 0.0,
    threshold: float = 0.999,
    dynamics: Dynamics = "sa",
) -> np.ndarray:
    """Time for the cosine of an equiangular cloud to grow from ρ₀ to ``threshold``,
    T = ∫_{ρ₀}^{ρ*} dρ / (2 p(ρ)(1 − ρ)(1 + (n − 1)ρ)) (theory: docs/theory/particles.md §8.2), by adaptive
    quadrature (:func:`scipy.integrate.quad`); 0 where ρ₀ ≥ threshold.

    Args:
        beta: (B,) values ≥ 0. tokens: n ≥ 2. rho0: in (−1/(n−1), 1). threshold: in (ρ₀, 1).

    Returns:
        (B,) times.
    """
    from scipy.integrate import quad

    b = check_equiangular(beta, tokens, rho0, dynamics)
    if not (np.isfinite(threshold) and -1.0 / (tokens - 1) < threshold < 1):
        raise InputError(f"must lie in (-1/(n-1), 1), got {threshold!r}", "threshold")
    out = np.zeros(b.size)
    if rho0 >= threshold:
        return out
    for i, bi in enumerate(b):
        out[i] = quad(lambda r, bb=bi: 1.0 / cosine_velocity(r, bb, tokens, dynamics), rho0, threshold, limit=200)[0]
    return out


def equiangular_start(tokens: int, rho0: float, dim: int | None = None) -> np.ndarray:
    """(n, d) unit tokens with every pairwise cosine ρ₀ (theory: docs/theory/particles.md §8.1): the rows of
    the Cholesky factor of the Gram matrix (1 − ρ₀) I + ρ₀ 11ᵀ, padded with zeros to d ≥ n columns."""
    d = tokens if dim is None else dim
    if d < tokens:
        raise InputError(f"an equiangular cloud of {tokens} tokens needs dim >= {tokens}, got {d}", "dim")
    G = (1 - rho0) * np.eye(tokens) + rho0 * np.ones((tokens, tokens))
    L = np.linalg.cholesky(G)
    return np.pad(L, ((0, 0), (0, d - tokens)))


def equiangular_collapse(
    beta: float,
    *,
    tokens: int = 8,
    rho0: float = 0.0,
    t_max: float = 10.0,
    saves: int = 101,
    dynamics: Dynamics = "sa",
    threshold: float = 0.999,
    simulate: bool = True,
    rtol: float = 1e-10,
    atol: float = 1e-12,
    progress: bool = False,
) -> xr.Dataset:
    """The cosine ρ(t) of an equiangular cloud from the scalar ODE ρ' = 2 p(ρ)(1 − ρ)(1 + (n − 1)ρ)
    (theory: docs/theory/particles.md §8), integrated with diffrax (Dopri8), and, with ``simulate``, the same
    start flowed as n tokens in d = n dimensions (:func:`attnphys.clouds.solve_flow`): the smallest and
    largest pairwise cosine at every saved time and their largest distance to the ODE.

    Args:
        beta: β ≥ 0. tokens: n ≥ 2. rho0: in (−1/(n−1), 1). t_max > 0, saves ≥ 2. threshold: the cosine
            whose crossing time ``collapse_time`` reports.

    Returns:
        Dataset over ``time``: ``cosine`` (ODE); with ``simulate`` ``cosine_min``, ``cosine_max`` and the
        scalar ``deviation`` = max_t max_{i≠j} |⟨x_i, x_j⟩ − ρ(t)|; scalar ``collapse_time``.
    """
    import diffrax

    from attnphys.clouds.attention import ATTENTIONS
    from attnphys.clouds.flow import solve_flow
    from attnphys.metadata import base_attrs

    check_equiangular(beta, tokens, rho0, dynamics)
    if not (np.isfinite(t_max) and t_max > 0):
        raise InputError(f"must be a finite number > 0, got {t_max!r}", "t_max")
    if isinstance(saves, bool) or not isinstance(saves, (int, np.integer)) or saves < 2:
        raise InputError(f"must be an integer >= 2, got {saves!r}", "saves")
    ts = np.linspace(0.0, float(t_max), saves)
    term = diffrax.ODETerm(lambda t, r, a: cosine_velocity(r, a, tokens, dynamics))
    sol = diffrax.diffeqsolve(
        term,
        diffrax.Dopri8(),
        0.0,
        float(t_max),
        None,
        jnp.asarray(rho0, jnp.result_type(float)),
        args=jnp.asarray(float(beta)),
        saveat=diffrax.SaveAt(ts=jnp.asarray(ts)),
        stepsize_controller=diffrax.PIDController(rtol=rtol, atol=atol),
        max_steps=1_000_000,
    )
    rho = np.asarray(sol.ys)
    ds = xr.Dataset({"cosine": (("time",), rho)}, coords={"time": ts})
    ds["time"].attrs.update(long_name="time of the continuous-time dynamics", units="1")
    ds["cosine"].attrs["long_name"] = "pairwise cosine rho(t) of the equiangular cloud (scalar ODE)"
    if simulate:
        X0 = equiangular_start(tokens, rho0)
        attn = ATTENTIONS[dynamics](beta=jnp.asarray(float(beta)))
        fl = solve_flow(attn, X0, ts, rtol=rtol, atol=atol, solver="dopri8", progress=progress)
        G = np.einsum("tid,tjd->tij", fl.xs, fl.xs)
        off = ~np.eye(tokens, dtype=bool)
        cos = G[:, off]
        ds["cosine_min"] = (("time",), cos.min(1))
        ds["cosine_max"] = (("time",), cos.max(1))
        ds["deviation"] = ((), float(np.max(np.abs(cos - rho[:, None]))))
        ds["cosine_min"].attrs["long_name"] = "smallest pairwise cosine of the n-token flow"
        ds["cosine_max"].attrs["long_name"] = "largest pairwise cosine of the n-token flow"
        ds["deviation"].attrs["long_name"] = "largest distance of a pairwise cosine of the flow to the ODE"
    ds["collapse_time"] = (
        (),
        float(collapse_time(beta, tokens=tokens, rho0=rho0, threshold=threshold, dynamics=dynamics)[0])
        if threshold > rho0
        else 0.0,
    )
    ds["collapse_time"].attrs.update(long_name=f"time for the cosine to reach {threshold:g}", units="1")
    ds.attrs.update(
        base_attrs(
            None,
            beta=float(beta),
            tokens=tokens,
            rho0=float(rho0),
            dynamics=dynamics,
            threshold=float(threshold),
            rtol=rtol,
            atol=atol,
        )
    )
    return ds


def collapse_boundary(
    beta: float | Sequence[float] | np.ndarray,
    *,
    tokens: int,
    rho0: float = 0.0,
    pair_tol: float = 1e-3,
    dynamics: Dynamics = "sa",
) -> xr.Dataset:
    """The predicted boundary of the (β, t) clustering diagram: the time at which an equiangular cloud of n
    tokens from cosine ρ₀ has its pairs within ``pair_tol`` of each other, i.e. reaches the cosine
    1 − pair_tol²/2 (theory: docs/theory/particles.md §8.3).

    Returns:
        Dataset over ``beta``: ``boundary_time``.
    """
    from attnphys.metadata import base_attrs

    b = check_equiangular(beta, tokens, rho0, dynamics)
    thr = 1.0 - pair_tol**2 / 2
    t = collapse_time(b, tokens=tokens, rho0=rho0, threshold=thr, dynamics=dynamics)
    ds = xr.Dataset({"boundary_time": (("beta",), t)}, coords={"beta": b})
    ds["beta"].attrs["long_name"] = "inverse temperature beta"
    ds["boundary_time"].attrs.update(
        long_name=f"equiangular collapse time to cosine 1 - pair_tol^2/2 from rho0 = {rho0:g}", units="1"
    )
    ds.attrs.update(base_attrs(None, tokens=tokens, rho0=rho0, pair_tol=pair_tol, dynamics=dynamics))
    return ds


__all__ = [
    "check_equiangular",
    "collapse_boundary",
    "collapse_time",
    "cosine_velocity",
    "equiangular_collapse",
    "equiangular_start",
]
