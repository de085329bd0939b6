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

from attnphys.clouds._inputs import (
    choice,
    count,
    fits_blaming,
    flag,
    number,
    numbers,
    precision_noted,
    tolerances,
)
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
    """(β values, n, ρ₀, dynamics) of an equiangular cloud checked (theory: docs/theory/particles.md §8.1): β
    finite ≥ 0, n an integer ≥ 2, ρ₀ in (−1/(n−1), 1), dynamics ``sa`` or ``usa``.

    Raises:
        InputError: naming the argument and its value.
    """
    tokens = count(tokens, "tokens", 2)
    choice(dynamics, ("sa", "usa"), "dynamics")
    b = numbers(beta, "beta", low=0.0)
    lo = -1.0 / (tokens - 1)
    if isinstance(rho0, (bool, np.bool_)):
        raise InputError(f"must be a number in ({lo:.4g}, 1), got {rho0!r}", "rho0")
    r = number(rho0, "rho0")
    if not lo < r < 1:
        raise InputError(f"must lie in (-1/(n-1), 1) = ({lo:.4g}, 1) for n = {tokens} tokens, got {rho0!r}", "rho0")
    return b


def _check_threshold(threshold, tokens: int) -> float:
    t = number(threshold, "threshold")
    if not -1.0 / (tokens - 1) < t < 1:
        raise InputError(f"must lie in (-1/(n-1), 1), got {threshold!r}", "threshold")
    return t


def _flow_bytes(tokens: int, saves: int) -> float:
    """Bytes of the n-token flow in d = n dimensions: the saved states and their Gram matrices (saves × n × n,
    a few), the solver's stages and the attention (a few dozen n × n)."""
    return 8.0 * (4.0 * saves * tokens**2 + 40.0 * tokens**2)


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
        (B,) times (+inf where the collapse is slower than float64 can tell: SA at very large β).

    Raises:
        InputError: an argument of a wrong type or out of range, naming it.
    """
    from scipy.integrate import quad

    b = check_equiangular(beta, tokens, rho0, dynamics)
    threshold = _check_threshold(threshold, tokens)
    out = np.zeros(b.size)
    if rho0 >= threshold:
        return out
    values, where = np.unique(b, return_inverse=True)  # one quadrature per distinct β
    times = np.zeros(values.size)

    def rate(r, bb):
        return 1.0 / cosine_velocity(r, bb, tokens, dynamics)

    with np.errstate(over="ignore", divide="ignore"):  # SA at large β: ρ' underflows, the time is +inf
        for i, bi in enumerate(values):
            times[i] = quad(rate, rho0, threshold, args=(bi,), limit=200)[0]
    out[:] = times[where.reshape(-1)]
    return out


def equiangular_start(tokens: int, rho0: float, dim: int | None = None) -> np.ndarray:
    """(n, d) unit tokens with every pairwise cosine ρ₀ (theory: docs/theory/particles.md §8.1): the rows of
    the Cholesky factor of the Gram matrix (1 − ρ₀) I + ρ₀ 11ᵀ, padded with zeros to d ≥ n columns.

    Raises:
        InputError: n not an integer ≥ 1, ρ₀ outside (−1/(n−1), 1) (the Gram matrix is then not positive
            definite), d < n. ResourceError: the (n, d) cloud does not fit."""
    tokens = count(tokens, "tokens")
    rho0 = number(rho0, "rho0")
    lo = -1.0 / (tokens - 1) if tokens > 1 else -np.inf
    if not lo < rho0 < 1:
        raise InputError(f"must lie in (-1/(n-1), 1) = ({lo:.4g}, 1) for n = {tokens} tokens, got {rho0!r}", "rho0")
    d = tokens if dim is None else count(dim, "dim")
    fits_blaming(
        lambda v: 8.0 * (3 * v["tokens"] ** 2 + v["tokens"] * max(v["dim"], v["tokens"])),
        {"tokens": tokens, "dim": d},
        {"tokens": 2, "dim": 2},
        {"tokens": f"the {tokens}×{tokens} Gram matrix and its factor", "dim": f"{tokens} tokens in {d} dimensions"},
    )
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
        scalar ``deviation`` = max_t max_{i≠j} |⟨x_i, x_j⟩ − ρ(t)| (≲ 10⁻⁹ at the default tolerances in float64;
        in float32 round-off makes it ~10⁻⁴ and a PrecisionWarning is given); scalar ``collapse_time``.

    Raises:
        InputError: an argument of a wrong type or out of range, naming it; an ODE that overflows (naming
            ``beta``). ResourceError: the n-token flow does not fit, naming ``tokens`` or ``saves``.
    """
    import diffrax

    from attnphys.clouds.attention import ATTENTIONS
    from attnphys.clouds.flow import solve_flow
    from attnphys.metadata import base_attrs

    beta = number(beta, "beta", low=0.0)
    check_equiangular(beta, tokens, rho0, dynamics)
    t_max = number(t_max, "t_max", low=0.0, low_open=True)
    saves = count(saves, "saves", 2)
    threshold = _check_threshold(threshold, tokens)
    simulate, progress = flag(simulate, "simulate"), flag(progress, "progress")
    rtol, atol = tolerances(rtol, atol)
    fits_blaming(
        lambda v: 64.0 * v["saves"] + (_flow_bytes(v["tokens"], v["saves"]) if simulate else 0.0),
        {"tokens": tokens, "saves": saves},
        {"tokens": 8, "saves": 101},
        {
            "tokens": f"the {tokens}-token flow in {tokens} dimensions" if simulate else f"{tokens} tokens",
            "saves": f"{saves} saved times" + (f" of {tokens}×{tokens} states" if simulate else ""),
        },
        least={"tokens": 2, "saves": 2},
    )
    with precision_noted(f"equiangular_collapse (diffrax solves at rtol = {rtol:g})"):
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
        if not np.all(np.isfinite(rho)):
            raise InputError(f"the cosine ODE overflows at beta={beta:g} ({dynamics}); lower beta", "beta")
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

    Raises:
        InputError: as :func:`collapse_time`; ``pair_tol`` not a distance in (0, 2) between unit vectors.
    """
    from attnphys.metadata import base_attrs

    b = check_equiangular(beta, tokens, rho0, dynamics)
    pair_tol = number(pair_tol, "pair_tol", low=0.0, high=2.0, low_open=True, high_open=True)
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
