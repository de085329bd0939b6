"""Causal attention's metastable clusters and Rényi parking (theory: docs/theory/particles.md §13).

Under a causal mask token k moves toward a softmax-weighted mean of the tokens j ≤ k only, so the first token
never moves and every later one is pulled by its predecessors. At large β the attention of a token reaches
only an angular neighbourhood of width of order β^{−1/2}; a token with no earlier token within that width
stays where it started while the later ones gather around it. Reading the tokens in causal order and keeping
a token when its angle to every token already kept is at least δ,

    C = {k : ∠(x_k, x_j) ≥ δ for every kept j < k},

selects the *Rényi centers*: for independent uniform tokens this is Rényi's random sequential parking of arcs
of length δ, and on the circle its jammed count has mean c_R 2π/δ (c_R = 0.7475979… Rényi's parking constant;
the first center and Rényi's interval law M(x) = c_R x + c_R − 1 give exactly this, up to terms that vanish
faster than any power of δ). The prediction tested here: the first metastable plateau of the causal flow has
as many clusters as there are Rényi centers with δ = a β^{−1/2} (a = 4).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from attnphys._checks import real_array
from attnphys.errors import InputError

RENYI_CONSTANT = 0.7475979202534114
"""Rényi's parking constant: the jammed density of unit cars parked at random on a long street."""


def renyi_centers(x, delta: float) -> np.ndarray:
    """The Rényi centers of tokens in causal order (theory: docs/theory/particles.md §13.1): token k is kept
    when its angle arccos⟨x_k, x_j⟩ to every token j < k already kept is at least ``delta``.

    Args:
        x: (N, d) tokens (each direction is used; zero rows are refused). delta: the angular separation in
            radians, in (0, π].

    Returns:
        (C,) indices of the centers, increasing (the first token is always one).

    Raises:
        InputError: ``x`` not a finite (N, d) array with N ≥ 1, d ≥ 2 and non-zero rows, or ``delta`` out of
            range.
    """
    X = real_array(x, "x")
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 2 or not np.all(np.isfinite(X)):
        raise InputError(f"must be a finite (N, d) array with N >= 1 and d >= 2, got shape {X.shape}", "x")
    norms = np.linalg.norm(X, axis=1)
    if np.any(norms == 0):
        raise InputError("every token needs a direction; a row is zero", "x")
    d = real_array(delta, "delta")
    if d.ndim != 0 or not (np.isfinite(d) and 0 < d <= np.pi):
        raise InputError(f"must be an angle in (0, pi], got {delta!r}", "delta")
    U = X / norms[:, None]
    cos_min = np.cos(delta)
    kept: list[int] = []
    for k in range(U.shape[0]):
        if not kept or np.all(U[kept] @ U[k] <= cos_min + 1e-15):
            kept.append(k)
    return np.asarray(kept, dtype=np.int64)


def parking_mean(delta) -> np.ndarray:
    """Mean jammed number of Rényi centers of uniform tokens on the circle, c_R 2π/δ (theory:
    docs/theory/particles.md §13.1); ``delta`` (...) in radians, each in (0, π].

    Raises:
        InputError: a ``delta`` that is not a number in (0, π] (the law is a count of centers at least δ apart)."""
    d = real_array(delta, "delta")
    bad = ~(np.isfinite(d) & (d > 0) & (d <= np.pi))
    if np.any(bad):
        raise InputError(f"must be angles in (0, pi], got {float(d[bad].flat[0])}", "delta")
    return RENYI_CONSTANT * 2 * np.pi / d


def _uniform_starts(key: jax.Array, samples: int, tokens: int, dim: int) -> jax.Array:
    X = jax.random.normal(key, (samples, tokens, dim))
    return X / jnp.linalg.norm(X, axis=-1, keepdims=True)


def causal_clusters(
    beta: float | Sequence[float] | np.ndarray,
    *,
    dim: int = 2,
    tokens: int = 200,
    samples: int = 16,
    t_max: float = 100.0,
    saves: int = 101,
    delta_scale: float = 4.0,
    run: int = 5,
    cluster_delta: float = 1e-3,
    rtol: float = 1e-7,
    atol: float = 1e-9,
    seed: int = 0,
    progress: bool = False,
) -> xr.Dataset:
    """The first metastable cluster count of the causal flow against the Rényi centers of its start (theory:
    docs/theory/particles.md §13). ``samples`` starts of ``tokens`` independent uniform tokens on S^{dim−1}
    (the token index is the causal order) flow under causal SA with Q = K = V = I at each β, saved at
    ``saves`` times in [0, t_max]; the measured count is that of the first plateau (components of
    cos > 1 − ``cluster_delta`` below tokens/2 held over ``run`` saves); the predicted one is the number of
    Rényi centers (:func:`renyi_centers`) of the same start with δ = ``delta_scale`` β^{−1/2}.

    Args:
        beta: (B,) inverse temperatures > 0 (large β: δ must stay below π). Others as named: dim ≥ 2,
            tokens ≥ 4, samples ≥ 2, saves > run ≥ 2.

    Returns:
        Dataset over (beta, sample, time): ``counts`` (beta, sample, time) cluster counts; ``clusters``
        (beta, sample) the first plateau's count (−1: none formed); ``renyi`` (beta, sample) the Rényi
        centers; ``difference`` (beta) the mean of clusters − renyi over the samples with a plateau, with its
        95 % t interval ``difference_low``/``difference_high``; ``relative_difference`` (beta) that mean over
        the mean Rényi count; ``within_one`` (beta) the fraction of samples with |clusters − renyi| ≤ 1;
        ``parking_mean`` (beta) c_R 2π/δ (circle only, NaN otherwise); ``delta`` (beta).

    Raises:
        InputError: an argument out of range, naming it. NonFiniteError: a flow became non-finite.
    """
    from scipy import stats as st

    from attnphys.clouds._inputs import fits_blaming, flag, number, precision_noted, tolerances
    from attnphys.clouds._instability import (
        check_betas,
        check_int,
        first_plateau,
        flow_cluster_counts,
        flow_count_bytes,
    )
    from attnphys.clouds.attention import ATTENTIONS
    from attnphys.metadata import base_attrs
    from attnphys.progress import step_bar

    b = check_betas(real_array(beta, "beta"))
    if np.unique(b).size != b.size:
        raise InputError(f"values must differ (each is one coordinate of the result), got {b.tolist()}", "beta")
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**32:
        raise InputError(f"must be an integer in [0, 2^32), got {seed!r}", "seed")
    for name, v, least in (("dim", dim, 2), ("tokens", tokens, 4), ("samples", samples, 2), ("run", run, 2)):
        check_int(v, least, name)
    check_int(saves, 3, "saves")
    if run >= saves:
        raise InputError(
            f"must be below saves ({saves}): a count is read where it holds over run saves, got {run}", "run"
        )
    t_max = number(t_max, "t_max", low=0.0, low_open=True)
    delta_scale = number(delta_scale, "delta_scale", low=0.0, low_open=True)
    cluster_delta = number(cluster_delta, "cluster_delta", low=0.0, high=2.0, low_open=True, high_open=True)
    deltas = delta_scale / np.sqrt(b)
    if np.any(deltas > np.pi):
        raise InputError(
            f"delta = delta_scale / sqrt(beta) must be at most pi; beta = {b[deltas > np.pi][0]:g} gives "
            f"{deltas.max():.3g}: raise beta or lower delta_scale",
            "beta",
        )
    rtol, atol = tolerances(rtol, atol)
    flag(progress, "progress")
    # the saved flows of one β and the cosines of every saved state (flow_count_bytes), and the counts over
    # every β
    fits_blaming(
        lambda v: flow_count_bytes(v["samples"], v["saves"], v["tokens"], v["dim"]) + 8.0 * b.size * samples * saves,
        {"samples": samples, "saves": saves, "tokens": tokens, "dim": dim},
        {"samples": 16, "saves": 101, "tokens": 200, "dim": 2},
        {
            "samples": f"the causal flows of {samples} starts of {tokens} tokens, saved {saves} times",
            "saves": f"{saves} saved times of {samples} causal flows of {tokens} tokens",
            "tokens": f"the causal flows of {samples} starts of {tokens} tokens, saved {saves} times",
            "dim": f"{samples} starts of {tokens} tokens in {dim} dimensions",
        },
        least={"samples": 2, "saves": run + 1, "tokens": 4, "dim": 2},
    )
    X0 = _uniform_starts(jax.random.PRNGKey(seed), samples, tokens, dim)
    starts = np.asarray(X0)
    ts = jnp.linspace(0.0, float(t_max), saves)
    counts = np.zeros((b.size, samples, saves), np.int64)
    clusters = np.zeros((b.size, samples), np.int64)
    renyi = np.zeros((b.size, samples), np.int64)
    with (
        precision_noted("causal_clusters (diffrax solves)"),
        step_bar(b.size, "values of beta", enabled=progress) as report,
    ):
        for i, beta_i in enumerate(b):
            attn = ATTENTIONS["sa"](beta=jnp.asarray(float(beta_i)), causal=True)
            counts[i] = flow_cluster_counts(
                attn, X0, ts, delta=cluster_delta, rtol=rtol, atol=atol, max_steps=500_000,
                params={"beta": float(beta_i), "dim": dim}, what="causal flow",
            )  # fmt: skip
            clusters[i] = first_plateau(counts[i], tokens, run)
            renyi[i] = [renyi_centers(starts[s], float(deltas[i])).size for s in range(samples)]
            report(i + 1, b.size)
    diff = np.full(b.size, np.nan)
    lo, hi, within = np.full(b.size, np.nan), np.full(b.size, np.nan), np.full(b.size, np.nan)
    for i in range(b.size):
        has = clusters[i] >= 0
        d = (clusters[i] - renyi[i])[has].astype(float)
        if d.size:
            diff[i] = d.mean()
            within[i] = float(np.mean(np.abs(d) <= 1))
        if d.size >= 2:
            half = st.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size)
            lo[i], hi[i] = diff[i] - half, diff[i] + half
    ds = xr.Dataset(
        {
            "counts": (("beta", "sample", "time"), counts),
            "clusters": (("beta", "sample"), clusters),
            "renyi": (("beta", "sample"), renyi),
            "difference": (("beta",), diff),
            "difference_low": (("beta",), lo),
            "difference_high": (("beta",), hi),
            "relative_difference": (("beta",), diff / renyi.mean(1)),
            "within_one": (("beta",), within),
            "parking_mean": (("beta",), parking_mean(deltas) if dim == 2 else np.full(b.size, np.nan)),
            "delta": (("beta",), deltas),
        },
        coords={"beta": b, "sample": np.arange(samples), "time": np.asarray(ts)},
    )
    for k, text in (
        ("beta", "inverse temperature beta"),
        ("sample", "index of the uniform start"),
        ("time", "time of the flow"),
        ("counts", "clusters: components of cos > 1 - cluster_delta"),
        ("clusters", "clusters of the first plateau (-1: no plateau within t_max)"),
        ("renyi", "Renyi centers of the start with delta = delta_scale / sqrt(beta)"),
        ("difference", "mean of first-plateau clusters minus Renyi centers"),
        ("difference_low", "lower end of the 95% t interval of the mean difference"),
        ("difference_high", "upper end of the 95% t interval of the mean difference"),
        ("relative_difference", "mean difference over the mean Renyi count"),
        ("within_one", "fraction of starts whose first plateau is within one cluster of the Renyi count"),
        ("parking_mean", "jammed mean Renyi count on the circle, c_R 2 pi / delta"),
        ("delta", "angular separation delta of the Renyi centers"),
    ):
        ds[k].attrs["long_name"] = text
    ds["time"].attrs["units"] = "1"
    ds["delta"].attrs["units"] = "rad"
    ds.attrs.update(
        base_attrs(
            None,
            dim=dim,
            tokens=tokens,
            samples=samples,
            t_max=t_max,
            saves=saves,
            delta_scale=delta_scale,
            run=run,
            cluster_delta=cluster_delta,
            rtol=rtol,
            atol=atol,
            seed=seed,
        )
    )
    return ds


__all__ = ["RENYI_CONSTANT", "causal_clusters", "parking_mean", "renyi_centers"]
