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

from attnphys.errors import InputError


def output_cosine(gamma, n, rho):
    """Exact output cosine of one SA layer on an equiangular cloud of n tokens with β = γ log n (theory:
    docs/theory/particles.md §9.1): with P = (q − p) I + p 11ᵀ, q = 1/(1 + (n − 1) e^{−β(1−ρ)}),
    p = q e^{−β(1−ρ)}, the output Gram matrix P G P is a I + b 11ᵀ and the cosine is b/(a + b). Broadcasts."""
    g, n, rho = np.asarray(gamma, float), np.asarray(n, float), np.asarray(rho, float)
    e = np.exp(-g * np.log(n) * (1 - rho))
    q = 1.0 / (1.0 + (n - 1) * e)
    p = q * e
    a2, b2 = (q - p) ** 2, 2 * (q - p) * p + n * p**2  # P² = a2 I + b2 J
    A = a2 * (1 - rho)
    B = a2 * rho + b2 * (1 - rho + n * rho)
    return B / (A + B)


def limit_cosine(gamma, rho):
    """The n → ∞ limit of :func:`output_cosine`: 1 below γ_c = 1/(1 − ρ), 4ρ/(1 + 3ρ) at γ_c, ρ above
    (theory: docs/theory/particles.md §9.1)."""
    g = np.asarray(gamma, float)
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
    ‖Σ_i ŷ_i‖² = n + Σ_{i≠k} cos(y_i, y_k) (theory: docs/theory/particles.md §9.2)."""
    n = X.shape[0]
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
    """
    from attnphys.metadata import base_attrs
    from attnphys.progress import step_bar

    g = np.atleast_1d(np.asarray(gamma, float))
    ns = np.atleast_1d(np.asarray(tokens))
    if g.size == 0 or not np.all(np.isfinite(g)) or np.any(g <= 0):
        raise InputError(f"values must be finite and > 0, got {g.tolist()!r:.80}", "gamma")
    if ns.size == 0 or not np.issubdtype(ns.dtype, np.integer) or np.any(ns < 2):
        raise InputError(f"values must be integers >= 2, got {ns.tolist()!r:.80}", "tokens")
    if not (np.isfinite(rho) and 0 < rho < 1):
        raise InputError(f"must lie in (0, 1), got {rho!r}", "rho")
    for name, v, least in (("dim", dim, 2), ("chunk", chunk, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < least:
            raise InputError(f"must be an integer >= {least}, got {v!r}", name)
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
