"""The simulator of signal propagation at initialisation: random deep transformers drawn and run in JAX, and their
mean cosine per layer set beside the theory of :mod:`attnphys.clouds.propagation` (theory:
docs/theory/signal_propagation.md §6–7, after arXiv 2505.24333)."""

from __future__ import annotations

import functools
from typing import Any, Literal

import numpy as np
import xarray as xr

from attnphys._arguments import checked
from attnphys.clouds._inputs import count, fits_blaming, number, numbers
from attnphys.clouds._inputs import seed as check_seed
from attnphys.clouds.propagation import PropagationPlacement, check_architecture, propagation_theory
from attnphys.errors import InputError


# -- the simulator ------------------------------------------------------------------------------------------
def _simulate_one(key, beta, rho0, *, tokens, dim, layers, placement, mlp, aA, aM, sw2, sv2, sb2, dtype, weights):
    """One random network on one input (theory: docs/theory/signal_propagation.md §6): (layers + 1,) mean
    cosines, (layers,) mean row entropies and participations. Pure in ``key``. ``weights="implicit"`` draws
    each product X Wᵀ of a (T, d) cloud with a fresh (d, d) Gaussian W as C Z, C Cᵀ = var · X Xᵀ (C from
    the eigendecomposition of the T × T Gram matrix) and Z a (T, d) standard Gaussian: the same law, T d
    draws instead of d² (§6)."""
    import jax
    import jax.numpy as jnp

    T, d = tokens, dim

    def ln(X):
        m = jnp.mean(X, -1, keepdims=True)
        return (X - m) / jnp.sqrt(jnp.var(X, -1, keepdims=True) + 1e-12)

    def mean_cosine(X):
        U = X / jnp.linalg.norm(X, axis=-1, keepdims=True)
        s = jnp.sum(U, 0)
        return (jnp.dot(s, s) - T) / (T * (T - 1))

    k_in, k_net = jax.random.split(key)
    kc, kg = jax.random.split(k_in)
    c = jax.random.normal(kc, (d,), dtype)
    G = jax.random.normal(kg, (T, d), dtype)
    X = ln(jnp.sqrt(rho0) * c + jnp.sqrt(1.0 - rho0) * G)
    qk_var = beta * jnp.sqrt(jnp.log(T)) / d

    def normal(k, shape, var):
        return jnp.sqrt(jnp.asarray(var, dtype)) * jax.random.normal(k, shape, dtype)

    def factor(X):
        if weights == "explicit":
            return X
        lam, U = jnp.linalg.eigh(X @ X.T)
        return U * jnp.sqrt(jnp.clip(lam, 0.0, None))

    def project(k, F, var):
        """X Wᵀ for W with i.i.d. N(0, var) entries; F = factor(X)."""
        if weights == "explicit":
            return F @ normal(k, (d, d), var).T
        return F @ normal(k, (T, d), var)

    def block(X, k):
        ks = jax.random.split(k, 8)
        Xa = ln(X) if placement == "pre" else X
        Fa = factor(Xa)
        Qx = project(ks[0], Fa, qk_var)
        Kx = project(ks[1], Fa, qk_var)
        A = jax.nn.softmax(Qx @ Kx.T / jnp.sqrt(jnp.asarray(d, dtype)), axis=-1)
        entropy = -jnp.mean(jnp.sum(jax.scipy.special.xlogy(A, A), -1))
        part = jnp.mean(jnp.sum(A * A, -1))
        V = project(ks[2], Fa, sv2 / d) + normal(ks[3], (d,), sb2)
        X1 = A @ V + aA * X
        if placement == "post":
            X1 = ln(X1)
        if mlp:
            Xm = ln(X1) if placement == "pre" else X1
            H = jax.nn.relu(project(ks[4], factor(Xm), sw2 / d) + normal(ks[5], (d,), sb2))
            X2 = project(ks[6], factor(H), sw2 / d) + normal(ks[7], (d,), sb2) + aM * X1
            X1 = ln(X2) if placement == "post" else X2
        return X1, (mean_cosine(X1), entropy, part)

    _, (cos, ent, part) = jax.lax.scan(block, X, jax.random.split(k_net, layers))
    return jnp.concatenate([mean_cosine(X)[None], cos]), ent, part


@functools.cache
def _batched_simulation():
    """:func:`_simulate_one` over a batch of keys, compiled once per sizes and flags (theory:
    docs/theory/signal_propagation.md §6); β and the variances are traced, so that every β of a run and
    every run of the same sizes share one program."""
    import jax
    import jax.numpy as jnp

    def batch(keys, beta, rho0, aA, aM, sw2, sv2, sb2, *, tokens, dim, layers, placement, mlp, dtype, weights):
        dt = jnp.float32 if dtype == "float32" else jnp.float64

        def one(key):
            return _simulate_one(
                key, beta, rho0, tokens=tokens, dim=dim, layers=layers, placement=placement, mlp=mlp, aA=aA,
                aM=aM, sw2=sw2, sv2=sv2, sb2=sb2, dtype=dt, weights=weights,
            )  # fmt: skip

        return jax.vmap(one)(keys)

    return jax.jit(batch, static_argnames=("tokens", "dim", "layers", "placement", "mlp", "dtype", "weights"))


@checked
def simulate_propagation(
    beta,
    seeds: int = 5,
    rho0: float = 0.2,
    tokens: int = 512,
    dim: int = 720,
    layers: int = 50,
    placement: PropagationPlacement = "post",
    mlp: bool = True,
    alpha_attention: float = 1.0,
    alpha_mlp: float = 1.0,
    sigma_w2: float = 0.2,
    sigma_v2: float = 0.2,
    sigma_b2: float = 4e-4,
    seed: int = 0,
    dtype: Literal["float32", "float64"] = "float32",
    weights: Literal["explicit", "implicit"] = "explicit",
) -> xr.Dataset:
    """The simulated mean cosine per layer of random deep transformers at initialisation, over ``seeds``
    independent networks and inputs, batched with ``jax.vmap`` (theory: docs/theory/signal_propagation.md §6):
    T = ``tokens`` inputs x_i = LN(√ρ_0 c + √(1 − ρ_0) g_i) (c, g_i ~ N(0, I_d)); per block, query and key
    weights N(0, β √(log T)/d), scores ⟨W_Q x_i, W_K x_j⟩/√d, a softmax over all T tokens, values
    N(0, σ_v²/d) with bias N(0, σ_b²), residual α_A, the ReLU MLP (width d, weights N(0, σ_w²/d), biases
    N(0, σ_b²)) and residual α_M, LayerNorm (no affine, ε = 10⁻¹²) as ``placement`` says. Network s uses
    ``jax.random.PRNGKey(seed + s)``.

    Args:
        beta: (B,) β > 0. seeds ≥ 1 networks per β. rho0 in [0, 1). tokens ≥ 2, dim ≥ 2, layers ≥ 1.
        dtype: the arithmetic (float32 resolves cosines to ~10⁻⁶, far below the seed-to-seed spread).
        weights: ``explicit`` draws every (d, d) weight matrix; ``implicit`` draws the products X Wᵀ directly
            in the same law (T d Gaussians each instead of d², cheaper where T < d; §6).

    Returns:
        Dataset over (beta, seed, layer = 0 … layers): ``cosine``; over (beta, seed, block = 1 … layers):
        ``entropy`` (nats) and ``participation`` (Σ_j w_j²) of the rows, averaged over the rows; ``mean`` and
        ``stderr`` (beta, layer) of the cosine over the seeds.

    Raises:
        InputError: naming the argument out of range. ResourceError: arrays that do not fit, naming the size.
    """
    import jax
    import jax.numpy as jnp

    from attnphys.metadata import base_attrs

    b = numbers(beta, "beta", low=0.0, low_open=True)
    rho0 = number(rho0, "rho0", low=0.0, high=1.0, high_open=True)
    count(tokens, "tokens", 2)
    count(dim, "dim", 2)
    check_seed(seed)
    if seed + seeds > 2**32:
        raise InputError(f"seed + seeds must stay below 2^32, got {seed} + {seeds}", "seed")
    check_architecture(placement, mlp, alpha_attention, alpha_mlp, sigma_w2, sigma_v2, sigma_b2)
    width = 4.0 if dtype == "float32" else 8.0
    fits_blaming(  # per batch of seeds: the scores, eight weight matrices, a few token clouds
        lambda v: width * v["seeds"] * (3.0 * v["tokens"] ** 2 + 10.0 * v["dim"] ** 2 + 12.0 * v["tokens"] * v["dim"]),
        {"seeds": seeds, "tokens": tokens, "dim": dim},
        {"seeds": 5, "tokens": 512, "dim": 720},
        {
            "seeds": f"{seeds} networks simulated together",
            "tokens": f"{seeds} networks' {tokens}×{tokens} attention matrices",
            "dim": f"{seeds} networks' {dim}×{dim} weight matrices",
        },
        least={"seeds": 1, "tokens": 2, "dim": 2},
    )
    dt = jnp.float32 if dtype == "float32" else jnp.float64

    def body():
        run = _batched_simulation()
        keys = jnp.stack([jax.random.PRNGKey(seed + s) for s in range(seeds)])
        numbers_ = [jnp.asarray(float(v), dt) for v in (rho0, alpha_attention, alpha_mlp, sigma_w2, sigma_v2, sigma_b2)]
        static = dict(tokens=tokens, dim=dim, layers=layers, placement=placement, mlp=mlp, dtype=dtype, weights=weights)
        outs = [run(keys, jnp.asarray(float(x), dt), *numbers_, **static) for x in b]
        return [np.array([np.asarray(o[i], dtype=np.float64) for o in outs]) for i in range(3)]

    if dtype == "float64":
        with jax.enable_x64(True):  # local to this simulation
            cos, ent, part = body()
    else:
        cos, ent, part = body()
    if not np.all(np.isfinite(cos)):
        raise InputError("the simulated cosines became non-finite; lower beta or the variances", "beta")
    ds = xr.Dataset(
        {
            "cosine": (("beta", "seed", "layer"), cos),
            "entropy": (("beta", "seed", "block"), ent),
            "participation": (("beta", "seed", "block"), part),
            "mean": (("beta", "layer"), cos.mean(1)),
            "stderr": (("beta", "layer"), cos.std(1, ddof=1) / np.sqrt(seeds) if seeds > 1 else np.nan * cos[:, 0]),
        },
        coords={
            "beta": b, "seed": seed + np.arange(seeds), "layer": np.arange(layers + 1),
            "block": np.arange(1, layers + 1),
        },
    )  # fmt: skip
    for k, text in (
        ("beta", "inverse temperature beta (query-key variance beta sqrt(log T)/d)"),
        ("seed", "seed of the network and its input"),
        ("layer", "number of blocks applied (0: the input)"),
        ("block", "block index"),
        ("cosine", "simulated mean pairwise cosine of the tokens"),
        ("entropy", "simulated mean entropy of an attention row, nats"),
        ("participation", "simulated mean sum_j w_j^2 of an attention row"),
        ("mean", "mean over the seeds of the simulated mean cosine"),
        ("stderr", "standard error over the seeds of the simulated mean cosine"),
    ):
        ds[k].attrs["long_name"] = text
    ds.attrs.update(
        base_attrs(
            None,
            seeds=int(seeds),
            rho0=rho0,
            tokens=int(tokens),
            dim=int(dim),
            layers=int(layers),
            placement=placement,
            mlp=int(mlp),
            alpha_attention=float(alpha_attention),
            alpha_mlp=float(alpha_mlp),
            sigma_w2=float(sigma_w2),
            sigma_v2=float(sigma_v2),
            sigma_b2=float(sigma_b2),
            seed=int(seed),
            dtype=dtype,
            weights=weights,
        )  # fmt: skip
    )
    return ds


@checked
def propagation_agreement(
    beta,
    seeds: int = 5,
    rho0: float = 0.2,
    tokens: int = 512,
    dim: int = 720,
    layers: int = 50,
    placement: PropagationPlacement = "post",
    alpha_attention: float = 1.0,
    alpha_mlp: float = 1.0,
    sigma_w2: float = 0.2,
    sigma_v2: float = 0.2,
    sigma_b2: float = 4e-4,
    finite_size: bool = True,
    seed: int = 0,
    weights: Literal["explicit", "implicit"] = "explicit",
) -> xr.Dataset:
    """Theory against simulation, layer by layer (theory: docs/theory/signal_propagation.md §7): the
    simulated mean cosine over ``seeds`` networks (:func:`simulate_propagation`, MLP on), the theory
    (:func:`propagation_theory`) started from the simulated mean input cosine, and the negative control:
    the same theory with the MLP's kernel left out (``mlp=False``, the network unchanged).

    Args:
        as in :func:`simulate_propagation` and :func:`propagation_theory`.

    Returns:
        Dataset over (beta, layer): ``simulated``, ``stderr``, ``predicted``, ``predicted_no_mlp``,
        ``difference`` (predicted − simulated); over beta: ``max_difference``, ``max_difference_no_mlp``
        (largest |Δ| over the layers); ``simulated_entropy``, ``predicted_entropy`` over (beta, block).

    Raises:
        InputError: naming the argument out of range.
    """
    sim = simulate_propagation(
        beta, seeds=seeds, rho0=rho0, tokens=tokens, dim=dim, layers=layers, placement=placement, mlp=True,
        alpha_attention=alpha_attention, alpha_mlp=alpha_mlp, sigma_w2=sigma_w2, sigma_v2=sigma_v2,
        sigma_b2=sigma_b2, seed=seed, weights=weights,
    )  # fmt: skip
    start = float(sim["mean"].isel(layer=0).mean())
    common: dict[str, Any] = dict(
        rho0=start, layers=layers, placement=placement, alpha_attention=alpha_attention, alpha_mlp=alpha_mlp,
        sigma_w2=sigma_w2, sigma_v2=sigma_v2, sigma_b2=sigma_b2, tokens=tokens, finite_size=finite_size,
    )  # fmt: skip
    th = propagation_theory(sim.beta.values, mlp=True, **common)
    ctrl = propagation_theory(sim.beta.values, mlp=False, **common)
    diff = th.cosine.values - sim["mean"].values
    ds = xr.Dataset(
        {
            "simulated": (("beta", "layer"), sim["mean"].values),
            "stderr": (("beta", "layer"), sim["stderr"].values),
            "predicted": (("beta", "layer"), th.cosine.values),
            "predicted_no_mlp": (("beta", "layer"), ctrl.cosine.values),
            "difference": (("beta", "layer"), diff),
            "max_difference": (("beta",), np.abs(diff).max(-1)),
            "max_difference_no_mlp": (("beta",), np.abs(ctrl.cosine.values - sim["mean"].values).max(-1)),
            "simulated_entropy": (("beta", "block"), sim.entropy.values.mean(1)),
            "predicted_entropy": (("beta", "block"), th.entropy.values),
            "simulated_participation": (("beta", "block"), sim.participation.values.mean(1)),
            "predicted_participation": (("beta", "block"), th.participation.values),
        },
        coords={"beta": sim.beta.values, "layer": sim.layer.values, "block": sim.block.values},
    )
    for k, text in (
        ("beta", "inverse temperature beta"),
        ("layer", "number of blocks applied (0: the input)"),
        ("block", "block index"),
        ("simulated", "simulated mean cosine, mean over the seeds"),
        ("stderr", "standard error over the seeds"),
        ("predicted", "predicted mean cosine (theory with the MLP kernel)"),
        ("predicted_no_mlp", "negative control: the theory with the MLP kernel left out"),
        ("difference", "predicted minus simulated mean cosine"),
        ("max_difference", "largest |predicted - simulated| over the layers"),
        ("max_difference_no_mlp", "largest |control - simulated| over the layers"),
        ("simulated_entropy", "simulated mean row entropy, nats"),
        ("predicted_entropy", "predicted mean row entropy, nats"),
        ("simulated_participation", "simulated mean sum_j w_j^2 of a row"),
        ("predicted_participation", "predicted E sum_j w_j^2 of a row"),
    ):
        ds[k].attrs["long_name"] = text
    ds.attrs.update({k: v for k, v in sim.attrs.items()})
    ds.attrs.update(finite_size=int(finite_size), theory_rho0=start)
    return ds


__all__ = ["propagation_agreement", "simulate_propagation"]
