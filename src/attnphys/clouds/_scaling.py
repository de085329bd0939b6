"""Critical attention scaling for long contexts: one softmax attention layer (identity weights, no residual)
on n tokens of pairwise cosine ρ with β_n = γ log n (theory: docs/theory/particles.md §9).

The output cosine has three limits as n → ∞: 1 for γ < γ_c (every token becomes the mean), 4ρ/(1 + 3ρ) at
γ = γ_c and ρ for γ > γ_c (attention becomes the identity), with γ_c = 1/(1 − ρ).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from attnphys.clouds._inputs import count, fits, fits_blaming, flag, number, numbers, reals
from attnphys.clouds._inputs import seed as check_seed
from attnphys.errors import InputError


def _broadcast(name_values: dict, rules: dict) -> list[np.ndarray]:
    """The arguments of a closed form as float64 arrays (:func:`~attnphys.clouds._inputs.reals`, with the bounds
    ``rules[name]`` as keywords), refused by name where the shapes do not broadcast together or the result does
    not fit."""
    out = [reals(v, k, **rules[k]) for k, v in name_values.items()]
    first = next(iter(name_values))
    try:
        shape = np.broadcast_shapes(*(a.shape for a in out))
    except ValueError:
        shapes = ", ".join(f"{k} {a.shape}" for k, a in zip(name_values, out))
        raise InputError(f"the shapes do not broadcast together: {shapes}", first) from None
    size = float(np.prod(shape, dtype=float))
    fits({first: (f"closed forms of {size:,.0f} values", 96.0 * size)})
    return out


_GAMMA = dict(low=0.0)
_RHO = dict(low=0.0, high=1.0, high_open=True)


def output_cosine(gamma, n, rho):
    """Exact output cosine of one SA layer on an equiangular cloud of n tokens with β = γ log n (theory:
    docs/theory/particles.md §9.1): with P = (q − p) I + p 11ᵀ, q = 1/(1 + (n − 1) e^{−β(1−ρ)}),
    p = q e^{−β(1−ρ)}, the output Gram matrix P G P is a I + b 11ᵀ and the cosine is b/(a + b). Broadcasts.

    Raises:
        InputError: γ not finite ≥ 0, n not finite ≥ 2, ρ not in [0, 1), or shapes that do not broadcast."""
    g, n, rho = _broadcast(
        {"gamma": gamma, "n": n, "rho": rho},
        {"gamma": _GAMMA, "n": dict(low=2.0), "rho": _RHO},
    )
    e = np.exp(-g * np.log(n) * (1 - rho))
    q = 1.0 / (1.0 + (n - 1) * e)
    p = q * e
    a2, b2 = (q - p) ** 2, 2 * (q - p) * p + n * p**2  # P² = a2 I + b2 J
    A = a2 * (1 - rho)
    B = a2 * rho + b2 * (1 - rho + n * rho)
    return B / (A + B)


def limit_cosine(gamma, rho):
    """The n → ∞ limit of :func:`output_cosine`: 1 below γ_c = 1/(1 − ρ), 4ρ/(1 + 3ρ) at γ_c, ρ above
    (theory: docs/theory/particles.md §9.1).

    Raises:
        InputError: γ not finite ≥ 0 or ρ not in [0, 1), naming it."""
    g, rho = _broadcast({"gamma": gamma, "rho": rho}, {"gamma": _GAMMA, "rho": _RHO})
    gc = 1.0 / (1.0 - rho)
    return np.where(np.isclose(g, gc, rtol=1e-12, atol=0), 4 * rho / (1 + 3 * rho), np.where(g < gc, 1.0, rho))


def almost_simplex(key: jax.Array, n: int, dim: int, rho: float, dtype=jnp.float32) -> jax.Array:
    """(n, dim) unit tokens x_i = √ρ e_1 + √(1 − ρ) z_i, z_i uniform on the unit sphere of the other
    dim − 1 coordinates: pairwise cosines ρ + (1 − ρ)⟨z_i, z_j⟩, within O(dim^{−1/2}) of ρ (theory:
    docs/theory/particles.md §9.2)."""
    z = jax.random.normal(key, (n, dim - 1), dtype)
    z = z / jnp.linalg.norm(z, axis=1, keepdims=True)
    head = jnp.full((n, 1), jnp.sqrt(rho), dtype)
    return jnp.concatenate([head, jnp.sqrt(1 - rho).astype(dtype) * z], axis=1)


def _chunk_out(X, Xc, beta):
    S = beta * (Xc @ X.T)
    return jax.nn.softmax(S, axis=-1) @ X


_chunk_out_jit = jax.jit(_chunk_out)


def chunked_attention_mean_cosine(X: jax.Array, beta: float, chunk: int = 1024) -> float:
    """Mean pairwise cosine of the outputs y_i = Σ_j softmax_j(β⟨x_i, x_j⟩) x_j of a cloud X (n, d), with
    the attention computed ``chunk`` queries at a time (memory O(n·d + chunk·n)) and the mean from
    ‖Σ_i ŷ_i‖² = n + Σ_{i≠k} cos(y_i, y_k) (theory: docs/theory/particles.md §9.2).

    Raises:
        InputError: ``X`` not a finite (n, d) array of n ≥ 2 tokens, ``beta`` not a finite number ≥ 0,
            ``chunk`` not an integer ≥ 1. ResourceError: a block of scores does not fit, naming ``chunk``."""
    from attnphys._checks import check_array

    n, d = check_array(X, "X", ndim=2, what="tokens × dimensions (n, d)", finite=True)
    if n < 2 or d < 1:
        raise InputError(f"needs n >= 2 tokens of d >= 1 dimensions, got shape {(n, d)}", "X")
    beta = number(beta, "beta", low=0.0)
    chunk = count(chunk, "chunk")
    fits({"chunk": (f"blocks of {min(chunk, n)}×{n} scores", 32.0 * min(chunk, n) * n + 16.0 * n * d)})
    X = jnp.asarray(X)
    total = jnp.zeros(X.shape[1], jnp.float64 if jax.config.jax_enable_x64 else X.dtype)  # pyright: ignore
    b = jnp.asarray(beta, X.dtype)
    for lo in range(0, n, chunk):
        Y = _chunk_out_jit(X, X[lo : lo + chunk], b)
        Y = Y / jnp.linalg.norm(Y, axis=1, keepdims=True)
        total = total + jnp.sum(Y.astype(total.dtype), axis=0)
    s = float(jnp.sum(total**2))
    return (s - n) / (n * (n - 1))


def critical_scaling(
    gamma: float | Sequence[float],
    tokens: int | Sequence[int],
    *,
    rho: float = 0.5,
    dim: int = 256,
    simulate: bool = True,
    chunk: int = 1024,
    seed: int = 0,
    progress: bool = False,
) -> xr.Dataset:
    """Output cosine of one SA layer with β_n = γ log n on n tokens of cosine ρ (theory:
    docs/theory/particles.md §9): the exact value for an equiangular cloud (:func:`output_cosine`), its
    n → ∞ limit (:func:`limit_cosine`, γ_c = 1/(1 − ρ)) and, with ``simulate``, the mean output cosine of
    an almost-simplex cloud in ``dim`` dimensions (:func:`almost_simplex`) through chunked attention
    (float32; memory O(n·dim + chunk·n)).

    Args:
        gamma: (G,) values > 0. tokens: (N,) context lengths ≥ 2. rho: input cosine in (0, 1).
        dim: ≥ 2 (simulation). chunk: queries per block ≥ 1.

    Returns:
        Dataset over (gamma, tokens): ``predicted``, ``measured`` (with ``simulate``), ``limit`` (gamma);
        scalar ``gamma_c``.

    Raises:
        InputError: an argument of a wrong type or out of range, naming it. ResourceError: the simulated cloud
            or a block of scores does not fit, naming ``tokens``, ``dim`` or ``chunk``.
    """
    from attnphys.metadata import base_attrs
    from attnphys.progress import step_bar

    g = numbers(gamma, "gamma", low=0.0, low_open=True)
    ns = np.atleast_1d(np.asarray(tokens) if not isinstance(tokens, (str, bytes)) else np.asarray([tokens]))
    if ns.ndim != 1 or ns.size == 0 or not np.issubdtype(ns.dtype, np.integer) or np.any(ns < 2):
        raise InputError(f"values must be integers >= 2, got {ns.tolist()!r:.80}", "tokens")
    rho = number(rho, "rho", low=0.0, high=1.0, low_open=True, high_open=True)
    dim, chunk = count(dim, "dim", 2), count(chunk, "chunk")
    seed, simulate, progress = check_seed(seed), flag(simulate, "simulate"), flag(progress, "progress")
    fits({"gamma": (f"closed forms of {g.size} gamma × {ns.size} context lengths", 96.0 * g.size * ns.size)})
    if simulate:  # float32 clouds of n × dim and blocks of chunk × n scores, for the longest context
        top = int(ns.max())
        fits_blaming(
            lambda v: 4.0 * (3 * v["tokens"] * v["dim"] + 3 * min(v["chunk"], v["tokens"]) * v["tokens"]),
            {"tokens": top, "dim": dim, "chunk": chunk},
            {"tokens": 2, "dim": 256, "chunk": 1024},
            {
                "tokens": f"an almost-simplex cloud of {top} tokens in {dim} dimensions",
                "dim": f"{top} tokens in {dim} dimensions",
                "chunk": f"blocks of {min(chunk, top)}×{top} scores",
            },
            least={"tokens": 2, "dim": 2},
        )
    pred = output_cosine(g[:, None], ns[None, :], rho)
    ds = xr.Dataset(
        {
            "predicted": (("gamma", "tokens"), pred),
            "limit": (("gamma",), limit_cosine(g, rho)),
            "gamma_c": ((), 1.0 / (1.0 - rho)),
        },
        coords={"gamma": g, "tokens": ns.astype(np.int64)},
    )
    if simulate:
        meas = np.full(pred.shape, np.nan)
        with step_bar(ns.size * g.size, "attention layers", enabled=progress) as report:
            for j, n in enumerate(ns):
                X = almost_simplex(jax.random.PRNGKey(seed + j), int(n), dim, rho)
                for i, gi in enumerate(g):
                    meas[i, j] = chunked_attention_mean_cosine(X, float(gi * np.log(n)), chunk)
                    report(j * g.size + i + 1, ns.size * g.size)
                del X
        ds["measured"] = (("gamma", "tokens"), meas)
        ds["measured"].attrs["long_name"] = f"mean output cosine of an almost-simplex cloud in {dim} dimensions"
    for k, text in (
        ("gamma", "attention scaling gamma in beta_n = gamma log n"),
        ("tokens", "context length n"),
        ("predicted", "output cosine of an exactly equiangular cloud (closed form)"),
        ("limit", "n -> infinity limit of the output cosine"),
        ("gamma_c", "critical scaling gamma_c = 1/(1 - rho)"),
    ):
        ds[k].attrs["long_name"] = text
    ds.attrs.update(base_attrs(None, rho=rho, dim=dim, chunk=chunk, seed=seed, dtype="float32"))
    return ds


__all__ = [
    "almost_simplex",
    "chunked_attention_mean_cosine",
    "critical_scaling",
    "limit_cosine",
    "output_cosine",
]
