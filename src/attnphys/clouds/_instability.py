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

from collections.abc import Sequence
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr
from scipy.special import gammaln, ive

from attnphys.errors import InputError

Dynamics = Literal["sa", "usa"]


def check_betas(beta) -> np.ndarray:
    """(B,) inverse temperatures, finite and > 0, or InputError naming ``beta`` (theory: docs/theory/particles.md §7)."""
    b = np.atleast_1d(np.asarray(beta, dtype=float))
    if b.ndim != 1 or b.size == 0 or not np.all(np.isfinite(b)) or np.any(b <= 0):
        raise InputError(f"values must be finite and > 0, at least one; got {np.asarray(beta).tolist()!r:.80}", "beta")
    return b


def _check_choice(value, allowed, name):
    if value not in allowed:
        raise InputError(f"must be one of {', '.join(allowed)}, got {value!r}", name)


def check_int(value, least, name):
    """An integer ≥ ``least``, or InputError naming ``name`` (theory: docs/theory/particles.md §7)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise InputError(f"must be an integer >= {least}, got {value!r}", name)


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
        Dataset: ``rate`` (beta, mode), ``fastest_mode`` and ``fastest_rate`` (beta).

    Raises:
        InputError: a β ≤ 0, dim < 2, modes < 1 or an unknown dynamics, naming the argument.
    """
    from attnphys.metadata import base_attrs

    b = check_betas(beta)
    check_int(dim, 2, "dim")
    check_int(modes, 1, "modes")
    _check_choice(dynamics, ("sa", "usa"), "dynamics")
    if not isinstance(progress, bool):
        raise InputError(f"must be True or False, got {progress!r}", "progress")
    k = np.arange(1, modes + 1)
    lam = _rates(b, k, dim, dynamics)
    best = np.argmax(lam, axis=1)
    ds = xr.Dataset(
        {
            "rate": (("beta", "mode"), lam),
            "fastest_mode": (("beta",), k[best].astype(np.int64)),
            "fastest_rate": (("beta",), lam[np.arange(b.size), best]),
        },
        coords={"beta": b, "mode": k},
    )
    ds["beta"].attrs["long_name"] = "inverse temperature beta"
    ds["mode"].attrs["long_name"] = "degree k of the spherical harmonic (Fourier mode on the circle)"
    ds["rate"].attrs.update(long_name="linear growth rate lambda_k of the mode about the uniform cloud", units="1")
    ds["fastest_mode"].attrs["long_name"] = "fastest-growing degree k*(beta): predicted first cluster count (d = 2)"
    ds["fastest_rate"].attrs.update(long_name="growth rate of the fastest mode", units="1")
    ds.attrs.update(base_attrs(None, dim=dim, dynamics=dynamics, modes=modes))
    return ds


def near_uniform_start(key: jax.Array, samples: int, tokens: int, dim: int, noise: float) -> jax.Array:
    """Near-uniform starts (samples, tokens, dim) (theory: docs/theory/particles.md §7.2): on the circle the
    equally spaced lattice with independent N(0, noise²) angle perturbations; on S² the Fibonacci lattice
    with every point moved by noise times a Gaussian and renormalised; for d ≥ 4 independent uniform points
    (their deviation from uniform is of order tokens^{−1/2}, and ``noise`` is not used)."""
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
    interval.

    Args:
        beta: (B,) inverse temperatures > 0. Others: as named; tokens ≥ 4, samples ≥ 1, noise ≥ 0.

    Returns:
        Dataset: ``predicted`` (beta), ``clusters`` (beta, sample: −1 where no plateau formed), ``agree``,
        ``agree_low``, ``agree_high`` (beta), ``fastest_rate`` (beta), ``count_fraction`` (beta, count).

    Raises:
        InputError: an argument out of range, naming it. NonFiniteError: a flow became non-finite.
    """
    from attnphys.clouds.attention import ATTENTIONS
    from attnphys.metadata import base_attrs
    from attnphys.progress import step_bar

    b = check_betas(beta)
    for name, v, least in (("dim", dim, 2), ("tokens", tokens, 4), ("samples", samples, 1), ("run", run, 2)):
        check_int(v, least, name)
    check_int(saves_per_time, 1, "saves_per_time")
    _check_choice(dynamics, ("sa", "usa"), "dynamics")
    for name, v in (("noise", noise), ("horizon", horizon), ("cluster_delta", cluster_delta)):
        if not (np.isfinite(v) and v >= 0 and (v > 0 or name == "noise")):
            raise InputError(f"must be a finite number {'>= 0' if name == 'noise' else '> 0'}, got {v!r}", name)
    rates = mode_growth_rates(b, dim=dim, dynamics=dynamics, modes=max(32, tokens // 4))
    key = jax.random.PRNGKey(seed)
    X0 = near_uniform_start(key, samples, tokens, dim, noise)
    nsave = int(np.ceil(horizon)) * saves_per_time + 1
    clusters = np.zeros((b.size, samples), np.int64)
    with step_bar(b.size, "values of beta", enabled=progress) as report:
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
    top = int(max(clusters.max(), pred.max(), 1))
    frac = np.stack([(clusters == c).mean(1) for c in range(1, top + 1)], 1)
    ds = xr.Dataset(
        {
            "predicted": (("beta",), pred),
            "clusters": (("beta", "sample"), clusters),
            "agree": (("beta",), hits / samples),
            "agree_low": (("beta",), lo),
            "agree_high": (("beta",), hi),
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
        ("agree", "fraction of starts whose first plateau has the predicted count"),
        ("agree_low", "lower end of the 95% Wilson interval of the agreeing fraction"),
        ("agree_high", "upper end of the 95% Wilson interval of the agreeing fraction"),
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
        )
    )
    return ds


__all__ = ["first_cluster_count", "first_plateau", "funk_hecke", "mode_growth_rates", "near_uniform_start"]
