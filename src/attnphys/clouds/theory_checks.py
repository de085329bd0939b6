"""Numerical checks of the particle flow's quantitative theory, each ``rng -> error`` with a ``perturb``
argument that moves the prediction away from the theory: ``attnphys verify`` runs them unperturbed, and the
tests run them perturbed and require them to fail (theory: docs/theory/particles.md §7–12)."""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np


def lattice_rates_error(rng: np.random.Generator, perturb: float = 0.0) -> float:
    """Largest relative distance between the growth of Fourier mode k = 1 … 6 of n = 40 equally spaced
    tokens on the circle under SA (the flow's velocity linearised by automatic differentiation) and
    λ_k = k² I_k(β)/(β I_0(β)) (times 1 + ``perturb``), β drawn in [1, 8] (theory: docs/theory/particles.md §7.1)."""
    from attnphys.clouds import SoftmaxAttention, mode_growth_rates, velocity

    n, beta = 40, float(rng.uniform(1.0, 8.0))
    attn = SoftmaxAttention(beta=beta)

    def angular(th):
        X = jnp.stack([jnp.cos(th), jnp.sin(th)], -1)
        V = velocity(attn, X)
        return -V[:, 0] * jnp.sin(th) + V[:, 1] * jnp.cos(th)

    th0 = 2 * jnp.pi * jnp.arange(n) / n
    J = np.asarray(jax.jit(jax.jacfwd(angular))(th0))
    rates = mode_growth_rates(beta, dim=2, modes=6).rate.values[0] * (1 + perturb)
    err = 0.0
    for k in range(1, 7):
        mode = np.cos(k * np.asarray(th0))
        measured = float(mode @ J @ mode / (mode @ mode))
        err = max(err, abs(measured - rates[k - 1]) / rates[k - 1])
    return err


def first_count_error(rng: np.random.Generator, perturb: int = 0) -> float:
    """1 − the fraction of 8 near-uniform starts on the circle (200 tokens, β = 5, SA) whose first plateau
    has k*(5) + ``perturb`` clusters; the published count is 3. β = 5 lies inside the range the count law is
    checked on (β ≤ 9; theory: docs/theory/particles.md §7.2)."""
    from attnphys.clouds import first_cluster_count

    ds = first_cluster_count(5.0, samples=8, seed=int(rng.integers(2**31)))
    pred = int(ds.predicted[0]) + perturb
    return 1.0 - float(np.mean(ds.clusters.values[0] == pred)) + (0.0 if pred == 3 else 1.0)


def equiangular_error(rng: np.random.Generator, perturb: int = 0) -> float:
    """Largest distance between every pairwise cosine of an equiangular n-token flow (SA and USA, n = 5,
    β in [0.5, 4], ρ₀ in [−0.2, 0.5], t ≤ 3) and the scalar ODE for n + ``perturb`` tokens (theory:
    docs/theory/particles.md §8.1)."""
    from attnphys.clouds import SoftmaxAttention, UnnormalisedAttention, equiangular_collapse, equiangular_start
    from attnphys.clouds.flow import solve_flow

    n, beta, rho0 = 5, float(rng.uniform(0.5, 4.0)), float(rng.uniform(-0.2, 0.5))
    err = 0.0
    runs: tuple[tuple[Literal["sa", "usa"], type], ...] = (("sa", SoftmaxAttention), ("usa", UnnormalisedAttention))
    for dyn, cls in runs:
        ode = equiangular_collapse(
            beta, tokens=n + perturb, rho0=rho0, t_max=3.0, saves=16, dynamics=dyn, simulate=False
        )
        fl = solve_flow(cls(beta=beta), equiangular_start(n, rho0), ode.time.values, rtol=1e-10, atol=1e-12)
        G = np.einsum("tid,tjd->tij", fl.xs, fl.xs)[:, ~np.eye(n, dtype=bool)]
        err = max(err, float(np.max(np.abs(G - ode.cosine.values[:, None]))))
    return err


def critical_scaling_error(rng: np.random.Generator, perturb: float = 0.0) -> float:
    """Largest distance between the mean output cosine of an exact simplex of n = 256 tokens through
    chunked attention with β = γ log n and the closed form at input cosine ρ + ``perturb``, over γ in
    {γ_c/2, γ_c, 2γ_c} (theory: docs/theory/particles.md §9.1)."""
    from attnphys.clouds import chunked_attention_mean_cosine, equiangular_start, output_cosine

    n, rho = 256, float(rng.uniform(0.2, 0.7))
    X = jnp.asarray(equiangular_start(n, rho))
    gc = 1 / (1 - rho)
    return max(
        abs(chunked_attention_mean_cosine(X, g * np.log(n), 64) - float(output_cosine(g, n, rho + perturb)))
        for g in (gc / 2, gc, 2 * gc)
    )


def staircase_energy_error(rng: np.random.Generator, perturb: float = 0.0) -> float:
    """Largest relative distance between the interaction energy on every metastable plateau of a flow (SA,
    24 uniform tokens on the circle, β = 6) and the cluster formula (1/(2β)) Σ m_a m_b e^{β⟨z_a, z_b⟩}
    (times 1 + ``perturb``) (theory: docs/theory/particles.md §10.1)."""
    from attnphys.clouds import staircase

    ds = staircase(6.0, tokens=24, dim=2, t_max=120.0, saves=241, seed=int(rng.integers(2**20)))
    return float(np.max(np.abs(ds.energy.values / (ds.energy_predicted.values * (1 + perturb)) - 1)))


def causal_influence_error(rng: np.random.Generator, perturb: float = 0.0) -> float:
    """Largest distance (relative to the profile's largest value, s in [0.1, 0.95]) between the influence of each
    position on the last token of a causal flow with ALiBi slope λ (33 positions × 10 particles on the circle,
    linearised with jax.jacfwd through the solver; β in [0.5, 1.5], λ in [0.5, 2], t ∈ {0.5, 1, 2}) and the
    kinetic Green's function S_t(s) evaluated at the times t·(1 + ``perturb``) (theory:
    docs/theory/particles.md §12.3)."""
    from attnphys.clouds import causal_influence
    from attnphys.clouds._causal import influence_profile

    beta, lam = float(rng.uniform(0.5, 1.5)), float(rng.uniform(0.5, 2.0))
    ds = causal_influence(beta, [0.5, 1.0, 2.0], alibi=lam, positions=32, particles=10, modes=4)
    s = ds.position.values
    pred = influence_profile(beta, ds.time.values * (1 + perturb), s, alibi=lam, needle=8.0, modes=4)
    inner = (s >= 0.1) & (s <= 0.95)
    return float(np.max(np.abs(ds.influence.values - pred)[:, inner]) / np.max(np.abs(pred[:, inner])))


def placement_decay_error(rng: np.random.Generator, perturb: float = 0.0) -> float:
    """Largest relative distance between the fitted decay law of 1 − ρ (rate or exponent, over the times
    where 10⁻⁹ < 1 − ρ < 10⁻³, t ≤ 4000) and the predicted one (times 1 + ``perturb``) for the six
    normalization placements of an equiangular cloud (SA, 6 tokens, β in [0.5, 2]): Post-LN and nGPT-style
    e^{−2t}, Pre-LN, Peri-LN and Mix-LN t^{−2}, √-scaling t^{−1} (theory: docs/theory/particles.md §11.2)."""
    from attnphys.clouds import normalization_decay

    ds = normalization_decay(
        float(rng.uniform(0.5, 2.0)), tokens=6, t_max=4000.0, saves=600, spacing="log", simulate=False,
        rtol=1e-8, atol=1e-14, fit_range=(1e-9, 1e-3),
    )  # fmt: skip
    return float(np.max(np.abs(ds.fitted.values / (ds.predicted.values * (1 + perturb)) - 1)))


def causal_renyi_error(rng: np.random.Generator, perturb: float = 0.0) -> float:
    """Distance, relative to the mean Rényi count, between the mean first-plateau cluster count of the causal
    flow (SA, Q = K = V = I, 200 uniform tokens on the circle, β = 64, 16 starts) and the mean number of Rényi
    centers of the same starts with δ = 4 (1 + ``perturb``) β^{−1/2} (theory: docs/theory/particles.md
    §13.2)."""
    from attnphys.clouds import causal_clusters

    ds = causal_clusters(64.0, samples=16, delta_scale=4.0 * (1 + perturb), seed=int(rng.integers(2**31)))
    has = ds.clusters.values[0] >= 0
    return float(abs(ds.clusters.values[0][has].mean() - ds.renyi.values[0].mean()) / ds.renyi.values[0].mean())


def causal_collapse_error(rng: np.random.Generator, perturb: float = 0.0) -> float:
    """1 − the smallest pairwise cosine at t = 300 of causal flows with a random key-query matrix and
    V = (1 − 2 ``perturb``) I (32 tokens on S², β in [0.5, 1.5], 3 starts): 0 when every flow has become one
    cluster, as it must for V = I; ``perturb`` = 1 (V = −I) must fail (theory: docs/theory/particles.md
    §13.3)."""
    from attnphys.clouds import particle_flow

    d = 3
    worst = 0.0
    for _ in range(3):
        A = rng.normal(size=(1, d, d)) / np.sqrt(d)
        w = {"Q": A, "K": np.eye(d)[None], "V": (1 - 2 * perturb) * np.eye(d)[None]}
        ds = particle_flow(
            beta=float(rng.uniform(0.5, 1.5)), tokens=32, dim=d, t_max=300.0, saves=2, causal=True, weights=w,
            seed=int(rng.integers(2**31)), keep_cloud=True,
        )  # fmt: skip
        X = ds.x.values[-1].astype(float)
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        worst = max(worst, 1.0 - float((X @ X.T).min()))
    return worst


__all__ = [
    "causal_collapse_error",
    "causal_renyi_error",
    "causal_influence_error",
    "placement_decay_error",
    "critical_scaling_error",
    "equiangular_error",
    "first_count_error",
    "lattice_rates_error",
    "staircase_energy_error",
]
