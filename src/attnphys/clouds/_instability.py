"""Instability of the uniform cloud: the growth rate of every spherical-harmonic mode of a perturbation of
the uniform distribution, the fastest mode k*(β), and the first cluster count measured from near-uniform
starts (theory: docs/theory/particles.md §7).

On S^{d−1} (d ≥ 2) the degree-k harmonics grow, to first order, at the rate

    λ_k = k (k + d − 2) c_k(β) / β              (USA)
    λ_k = k (k + d − 2) c_k(β) / (β c_0(β))      (SA)

with c_k(β) = Γ(d/2) (2/β)^{d/2−1} I_{k+d/2−1}(β) the Funk–Hecke eigenvalue of the kernel e^{β⟨x,y⟩}
(I_ν the modified Bessel function); on the circle λ_k = k² I_k(β)/(β I_0(β)) for SA.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr
from scipy.special import gammaln, ive

from attnphys.clouds._inputs import (
    check_key,
    choice,
    count,
    fits_blaming,
    flag,
    number,
    numbers,
    precision_noted,
    tolerances,
)
from attnphys.clouds._inputs import seed as check_seed
from attnphys.errors import InputError

Dynamics = Literal["sa", "usa"]


def check_betas(beta) -> np.ndarray:
    """(B,) inverse temperatures, finite and > 0, or InputError naming ``beta`` (theory: docs/theory/particles.md §7)."""
    return numbers(beta, "beta", low=0.0, low_open=True)


def _check_choice(value, allowed, name):
    choice(value, allowed, name)


def check_int(value, least, name):
    """An integer ≥ ``least``, or InputError naming ``name`` (theory: docs/theory/particles.md §7)."""
    return count(value, name, least)


def modes_needed(beta: np.ndarray, dim: int) -> int:
    """Enough degrees to hold the fastest one: for large β, c_k/c_0 ≈ e^{−k(k+d−2)/(2β)} puts it near
    √(2β), and 3√(2β) + 8 degrees contain it with room (theory: docs/theory/particles.md §7.1)."""
    return int(3 * np.sqrt(2 * float(np.max(beta)))) + 8


def funk_hecke(beta: np.ndarray, k: np.ndarray, dim: int) -> np.ndarray:
    """The eigenvalue c_k(β) = Γ(d/2) (2/β)^{d/2−1} I_{k+d/2−1}(β) of f ↦ ∫ e^{β⟨x,y⟩} f(y) dσ(y) on the
    degree-k harmonics of S^{d−1}, σ the uniform probability (theory: docs/theory/particles.md §7.1),
    computed as e^β times the exponentially scaled Bessel function.

    Args:
        beta: (B,) values > 0. k: (K,) degrees ≥ 0. dim: d ≥ 2.

    Returns:
        (B, K) eigenvalues.
    """
    b, kk = np.asarray(beta, float)[:, None], np.asarray(k, float)[None, :]
    nu = dim / 2 - 1
    log_pre = gammaln(dim / 2) + nu * np.log(2 / b) + b
    return np.exp(log_pre) * ive(kk + nu, b)


def _rates(beta: np.ndarray, k: np.ndarray, dim: int, dynamics: str) -> np.ndarray:
    nu = dim / 2 - 1
    b, kk = beta[:, None], k[None, :].astype(float)
    lap = kk * (kk + dim - 2)
    if dynamics == "sa":  # the ratio of scaled Bessel functions: no overflow at large β
        return lap * ive(kk + nu, b) / (b * ive(nu, b))
    return lap * funk_hecke(beta, k, dim) / b


def mode_growth_rates(
    beta: float | Sequence[float] | np.ndarray,
    *,
    dim: int = 2,
    dynamics: Dynamics = "sa",
    modes: int = 32,
    progress: bool = False,
) -> xr.Dataset:
    """Linear growth rates λ_k of the harmonics of degree k = 1 … ``modes`` of a perturbation of the uniform
    cloud on S^{d−1}, and the fastest degree k*(β) = argmax_k λ_k (theory: docs/theory/particles.md §7.1):

        λ_k = k (k + d − 2) c_k(β) / β  (USA),   λ_k = k (k + d − 2) c_k(β) / (β c_0(β))  (SA),

    c_k(β) = Γ(d/2) (2/β)^{d/2−1} I_{k+d/2−1}(β); on the circle (d = 2) λ_k ∝ k² I_k(β).

    Args:
        beta: (B,) inverse temperatures > 0.
        dim: d ≥ 2.
        dynamics: ``sa`` or ``usa``.
        modes: largest degree.
        progress: accepted as every analysis accepts it; a closed form takes no time, so no bar is shown.

    Returns:
        Dataset: ``rate`` (beta, mode), ``fastest_mode`` and ``fastest_rate`` (beta); where the fastest of the
        computed degrees is the last one (the fastest may lie beyond ``modes``), −1 and NaN.

    Raises:
        InputError: a β ≤ 0, dim < 2, modes < 1 or an unknown dynamics, naming the argument; rates that are not
            finite in float64 (a huge dim or β), naming it.
    """
    from attnphys.metadata import base_attrs

    b = check_betas(beta)
    dim, modes = count(dim, "dim", 2), count(modes, "modes")
    _check_choice(dynamics, ("sa", "usa"), "dynamics")
    flag(progress, "progress")
    fits_blaming(
        lambda v: 64.0 * v["beta"] * v["modes"],
        {"beta": b.size, "modes": modes},
        {"beta": 1, "modes": 32},
        {"beta": f"{b.size} values of beta × {modes} modes", "modes": f"{modes} modes of {b.size} beta"},
    )
    k = np.arange(1, modes + 1)
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        lam = _rates(b, k, dim, dynamics)
    bad = ~np.isfinite(lam).all(1)
    if bad.any():
        i = int(np.argmax(bad))
        with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
            on_circle = np.isfinite(_rates(b[i : i + 1], k, 2, dynamics)).all()
        raise InputError(
            f"the growth rates are not finite at beta={b[i]:g}, dim={dim} (the Bessel functions under- or "
            "overflow in float64)",
            "dim" if on_circle else "beta",
        )
    best = np.argmax(lam, axis=1)
    # the fastest computed degree is the last one: the fastest of all may lie beyond it, so none is claimed
    unresolved = best == modes - 1
    ds = xr.Dataset(
        {
            "rate": (("beta", "mode"), lam),
            "fastest_mode": (("beta",), np.where(unresolved, -1, k[best]).astype(np.int64)),
            "fastest_rate": (("beta",), np.where(unresolved, np.nan, lam[np.arange(b.size), best])),
        },
        coords={"beta": b, "mode": k},
    )
    ds["beta"].attrs["long_name"] = "inverse temperature beta"
    ds["mode"].attrs["long_name"] = "degree k of the spherical harmonic (Fourier mode on the circle)"
    ds["rate"].attrs.update(long_name="linear growth rate lambda_k of the mode about the uniform cloud", units="1")
    ds["fastest_mode"].attrs["long_name"] = (
        "fastest-growing degree k*(beta): predicted first cluster count (d = 2); -1 where the fastest of the "
        "computed degrees is the last one (the fastest may lie beyond: raise modes)"
    )
    ds["fastest_rate"].attrs.update(long_name="growth rate of the fastest mode", units="1")
    ds.attrs.update(base_attrs(None, dim=dim, dynamics=dynamics, modes=modes))
    return ds


def near_uniform_start(key: jax.Array, samples: int, tokens: int, dim: int, noise: float) -> jax.Array:
    """Near-uniform starts (samples, tokens, dim) (theory: docs/theory/particles.md §7.2): on the circle the
    equally spaced lattice with independent N(0, noise²) angle perturbations; on S² the Fibonacci lattice
    with every point moved by noise times a Gaussian and renormalised; for d ≥ 4 independent uniform points
    (their deviation from uniform is of order tokens^{−1/2}, and ``noise`` is not used).

    Raises:
        InputError: ``key`` not a JAX random key, a size not an integer ≥ 1 (``dim`` ≥ 2), ``noise`` not a
            finite number ≥ 0. ResourceError: the starts do not fit, naming the size to blame."""
    check_key(key)
    samples, tokens, dim = count(samples, "samples"), count(tokens, "tokens"), count(dim, "dim", 2)
    noise = number(noise, "noise", low=0.0)
    fits_blaming(
        lambda v: 24.0 * v["samples"] * v["tokens"] * v["dim"],
        {"samples": samples, "tokens": tokens, "dim": dim},
        {"samples": 24, "tokens": 200, "dim": 2},
        {
            "samples": f"{samples} starts of {tokens} tokens",
            "tokens": f"{samples} starts of {tokens} tokens",
            "dim": f"{samples} starts of {tokens} tokens in {dim} dimensions",
        },
        least={"dim": 2},
    )
    n = tokens
    if dim == 2:
        th = 2 * jnp.pi * jnp.arange(n) / n + noise * jax.random.normal(key, (samples, n))
        return jnp.stack([jnp.cos(th), jnp.sin(th)], -1)
    if dim == 3:
        i = jnp.arange(n) + 0.5
        z = 1 - 2 * i / n
        phi = jnp.pi * (1 + 5**0.5) * i
        r = jnp.sqrt(1 - z**2)
        base = jnp.stack([r * jnp.cos(phi), r * jnp.sin(phi), z], -1)
        X = base[None] + noise * jax.random.normal(key, (samples, n, 3))
    else:
        X = jax.random.normal(key, (samples, n, dim))
    return X / jnp.linalg.norm(X, axis=-1, keepdims=True)


@jax.jit
def cluster_counts(ys, delta):
    """(S, T, N, D) → cluster counts (S, T): components of cos > 1 − δ."""
    from attnphys.clouds.stats import cluster_components

    return jax.vmap(jax.vmap(lambda X: cluster_components(X @ X.T > 1 - delta)))(ys)


FIRST_COUNT_CHECKED_BETA = 9.0
"""Largest β at which the first-cluster-count law (the first plateau has k*(β) clusters) was checked, on the
circle under SA from the near-uniform lattice starts, in float64 (docs/theory/particles.md §7.2). Beyond it
the two fastest degrees have close rates and the count depends on the start (at β = 12, 12 of 16 independent
uniform 400-token starts plateau at k* − 1 = 4; at β = 20 the counts spread over 5–7), so
:func:`first_cluster_count` reports the spread of the counts there, not an agreement."""


def flow_count_bytes(samples: int, saves: int, tokens: int, dim: int) -> float:
    """Bytes that :func:`flow_cluster_counts` holds at once: the saved flows (samples, saves, tokens, dim),
    twice, the tokens × tokens cosines of every saved state and their graph, and the solver's attention."""
    return 8.0 * samples * (saves * (2.0 * tokens**2 + 2.0 * tokens * dim) + 4.0 * tokens**2 + 30.0 * tokens * dim)


def flow_cluster_counts(attn, X0, ts, *, delta, rtol, atol, max_steps, params: dict, what: str) -> np.ndarray:
    """Flow the starts X0 (S, N, D) under ``attn`` on the sphere, saved at ``ts`` (T,), and count the clusters
    (components of cos > 1 − ``delta``) at every saved time: (S, T) (theory: docs/theory/particles.md §7.2).

    Raises:
        NonFiniteError: a flow failed or became non-finite (naming ``params`` and ``what``).
    """
    from attnphys.clouds.flow import solve_many
    from attnphys.errors import NonFiniteError

    ys, _, ok = solve_many(attn, X0, ts, True, True, rtol, atol, "tsit5", max_steps)
    if not bool(np.all(np.asarray(ok))) or not np.isfinite(np.asarray(ys)).all():
        raise NonFiniteError(0, params, what=what)
    return np.asarray(cluster_counts(ys, delta))


def first_plateau(counts: np.ndarray, tokens: int, run: int) -> np.ndarray:
    """Per row of ``counts`` (S, T): the first count below tokens/2 that stays the same over ``run``
    consecutive saved times, or −1 where there is none (theory: docs/theory/particles.md §7.2)."""
    out = np.full(counts.shape[0], -1, dtype=np.int64)
    for s, row in enumerate(counts):
        for t in range(len(row) - run + 1):
            if row[t] < tokens / 2 and np.all(row[t : t + run] == row[t]):
                out[s] = row[t]
                break
    return out


def wilson_interval(hits: np.ndarray, total: int, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a binomial proportion, per entry of ``hits`` (theory:
    docs/theory/particles.md §7.2), through :func:`scipy.stats.binomtest`."""
    from scipy.stats import binomtest

    lo, hi = [], []
    for h in np.atleast_1d(hits):
        ci = binomtest(int(h), int(total)).proportion_ci(level, method="wilson")
        lo.append(ci.low)
        hi.append(ci.high)
    return np.array(lo), np.array(hi)


def first_cluster_count(
    beta: float | Sequence[float] | np.ndarray,
    *,
    dim: int = 2,
    dynamics: Dynamics = "sa",
    tokens: int = 200,
    samples: int = 24,
    noise: float = 1e-3,
    horizon: float = 30.0,
    saves_per_time: int = 1,
    run: int = 5,
    cluster_delta: float = 1e-4,
    rtol: float = 1e-7,
    atol: float = 1e-9,
    seed: int = 0,
    progress: bool = False,
) -> xr.Dataset:
    """The number of clusters of the first metastable plateau from near-uniform starts, predicted and
    measured (theory: docs/theory/particles.md §7.2). Prediction: the fastest-growing degree
    k*(β) = argmax_k λ_k of :func:`mode_growth_rates` (on the circle the k-th Fourier mode gathers the tokens
    into k equally spaced clusters). Measurement: ``samples`` near-uniform starts
    (:func:`near_uniform_start`) flow under SA or USA up to t = horizon / λ_max, saved every
    1/(saves_per_time λ_max); the count is that of the first plateau (components of cos > 1 − δ below
    tokens/2 held over ``run`` saves); the fraction of samples whose count equals k*(β) with its 95 % Wilson
    interval, for β in the range the law was checked on (β ≤ :data:`FIRST_COUNT_CHECKED_BETA` = 9, on the
    circle, in float64); beyond it the two fastest degrees compete, no agreement is claimed (``agree`` NaN) and
    the spread of the counts is reported (``clusters_min``, ``clusters_max``, ``count_fraction``).

    Args:
        beta: (B,) inverse temperatures > 0. Others: as named; tokens ≥ 4, samples ≥ 1, noise ≥ 0.

    Returns:
        Dataset: ``predicted`` (beta), ``clusters`` (beta, sample: −1 where no plateau formed), ``agree``,
        ``agree_low``, ``agree_high`` (beta; NaN where ``checked_range`` is False), ``checked_range``,
        ``clusters_min``, ``clusters_max``, ``fastest_rate`` (beta), ``count_fraction`` (beta, count).

    Raises:
        InputError: an argument of a wrong type or out of range, naming it. ResourceError: the saved flows do
            not fit, naming the size to blame. NonFiniteError: a flow became non-finite.
    """
    from attnphys.clouds.attention import ATTENTIONS
    from attnphys.metadata import base_attrs
    from attnphys.progress import step_bar

    b = check_betas(beta)
    dim, tokens, samples, run = (
        count(dim, "dim", 2),
        count(tokens, "tokens", 4),
        count(samples, "samples"),
        count(run, "run", 2),
    )
    saves_per_time = count(saves_per_time, "saves_per_time")
    _check_choice(dynamics, ("sa", "usa"), "dynamics")
    noise = number(noise, "noise", low=0.0)
    horizon = number(horizon, "horizon", low=0.0, low_open=True)
    cluster_delta = number(cluster_delta, "cluster_delta", low=0.0, high=2.0, low_open=True, high_open=True)
    rtol, atol = tolerances(rtol, atol)
    seed, progress = check_seed(seed), flag(progress, "progress")
    nsave = math.ceil(horizon) * saves_per_time + 1
    if run > nsave:
        raise InputError(
            f"a plateau held over {run} saves cannot form in the {nsave} saved times (horizon {horizon:g} × "
            f"saves_per_time {saves_per_time} + 1): lower run or raise horizon",
            "run",
        )
    fits_blaming(
        lambda v: flow_count_bytes(
            v["samples"], math.ceil(v["horizon"]) * v["saves_per_time"] + 1, v["tokens"], v["dim"]
        ),
        {
            "samples": samples,
            "tokens": tokens,
            "dim": dim,
            "horizon": math.ceil(horizon),
            "saves_per_time": saves_per_time,
        },
        {"samples": 24, "tokens": 200, "dim": 2, "horizon": 30, "saves_per_time": 1},
        {
            "samples": f"the flows of {samples} starts of {tokens} tokens, saved {nsave} times",
            "tokens": f"the flows of {samples} starts of {tokens} tokens, saved {nsave} times",
            "dim": f"{samples} starts of {tokens} tokens in {dim} dimensions",
            "horizon": f"{nsave} saved times of {samples} flows of {tokens} tokens",
            "saves_per_time": f"{nsave} saved times of {samples} flows of {tokens} tokens",
        },
        least={"tokens": 4, "dim": 2},
    )
    modes = max(32, tokens // 4, modes_needed(b, dim))
    rates = mode_growth_rates(b, dim=dim, dynamics=dynamics, modes=modes)
    key = jax.random.PRNGKey(seed)
    X0 = near_uniform_start(key, samples, tokens, dim, noise)
    nsave = int(np.ceil(horizon)) * saves_per_time + 1
    clusters = np.zeros((b.size, samples), np.int64)
    with (
        precision_noted("first_cluster_count (diffrax solves)"),
        step_bar(b.size, "values of beta", enabled=progress) as report,
    ):
        for i, beta_i in enumerate(b):
            lam = float(rates.fastest_rate[i])
            ts = jnp.linspace(0.0, horizon / lam, nsave)
            attn = ATTENTIONS[dynamics](beta=jnp.asarray(float(beta_i)))
            counts = flow_cluster_counts(
                attn, X0, ts, delta=cluster_delta, rtol=rtol, atol=atol, max_steps=200_000,
                params={"beta": float(beta_i), "dim": dim}, what="near-uniform flow",
            )  # fmt: skip
            clusters[i] = first_plateau(counts, tokens, run)
            report(i + 1, b.size)
    pred = rates.fastest_mode.values
    hits = (clusters == pred[:, None]).sum(1)
    lo, hi = wilson_interval(hits, samples)
    # a verdict where the law was checked; beyond, the spread of the counts only (docs/theory/particles.md §7.2)
    checked = b <= FIRST_COUNT_CHECKED_BETA
    top = int(max(clusters.max(), pred.max(), 1))
    frac = np.stack([(clusters == c).mean(1) for c in range(1, top + 1)], 1)
    formed = np.where(clusters >= 0, clusters, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # no plateau at all: NaN
        low_count, high_count = np.nanmin(formed, 1), np.nanmax(formed, 1)
    ds = xr.Dataset(
        {
            "predicted": (("beta",), pred),
            "clusters": (("beta", "sample"), clusters),
            "agree": (("beta",), np.where(checked, hits / samples, np.nan)),
            "agree_low": (("beta",), np.where(checked, lo, np.nan)),
            "agree_high": (("beta",), np.where(checked, hi, np.nan)),
            "checked_range": (("beta",), checked),
            "clusters_min": (("beta",), low_count),
            "clusters_max": (("beta",), high_count),
            "fastest_rate": (("beta",), rates.fastest_rate.values),
            "count_fraction": (("beta", "count"), frac),
        },
        coords={"beta": b, "sample": np.arange(samples), "count": np.arange(1, top + 1)},
    )
    for k, text in (
        ("beta", "inverse temperature beta"),
        ("sample", "index of the near-uniform start"),
        ("count", "cluster count"),
        ("predicted", "predicted first cluster count: fastest-growing degree k*(beta)"),
        ("clusters", "measured cluster count of the first plateau (-1: no plateau within the horizon)"),
        ("agree", "fraction of starts whose first plateau has the predicted count (NaN beyond the checked range)"),
        ("agree_low", "lower end of the 95% Wilson interval of the agreeing fraction"),
        ("agree_high", "upper end of the 95% Wilson interval of the agreeing fraction"),
        (
            "checked_range",
            f"beta lies in the range the count law was checked on (beta <= {FIRST_COUNT_CHECKED_BETA:g})",
        ),
        ("clusters_min", "smallest first-plateau count over the starts that formed one"),
        ("clusters_max", "largest first-plateau count over the starts that formed one"),
        ("count_fraction", "fraction of starts whose first plateau has this count"),
    ):
        ds[k].attrs["long_name"] = text
    ds["fastest_rate"].attrs.update(long_name="growth rate of the fastest mode lambda_max", units="1")
    ds.attrs.update(
        base_attrs(
            None,
            dim=dim,
            dynamics=dynamics,
            tokens=tokens,
            samples=samples,
            noise=noise,
            horizon=horizon,
            saves_per_time=saves_per_time,
            run=run,
            cluster_delta=cluster_delta,
            rtol=rtol,
            atol=atol,
            seed=seed,
            checked_beta_max=FIRST_COUNT_CHECKED_BETA,
        )
    )
    return ds


__all__ = [
    "FIRST_COUNT_CHECKED_BETA",
    "first_cluster_count",
    "first_plateau",
    "funk_hecke",
    "mode_growth_rates",
    "near_uniform_start",
]
