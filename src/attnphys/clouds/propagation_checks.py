"""Numerical checks of the signal-propagation theory at initialisation, each ``rng -> error`` with a ``perturb``
argument that moves the prediction away from the theory: ``attnphys verify`` runs them unperturbed, and the
tests run them perturbed and require them to fail (theory: docs/theory/signal_propagation.md §3, §7).

The agreement checks simulate the encoder of arXiv 2505.24333's Fig. 1 at full size (d = 720, T = 512,
50 Post-LN blocks, 20 networks per β): minutes on two CPU cores."""

from __future__ import annotations

import numpy as np

TOLERANCE = 0.02
"""The largest |predicted − simulated| mean cosine over the layers that counts as agreement."""

ENCODER_SEEDS = 20
"""Networks per β in the encoder checks: the seed-to-seed spread of one network's mean cosine reaches 0.03 at
d = 720, so the mean of 10 has a standard error near 0.01 (two sets of 10 gave 0.007 and 0.021 at β = 3)
and the mean of 20 near 0.007."""


def _agreement(rng: np.random.Generator, betas, seeds: int = ENCODER_SEEDS, **sizes):
    from attnphys.clouds.propagation import PAPER_ENCODER
    from attnphys.clouds.propagation_simulation import propagation_agreement

    cfg = {**PAPER_ENCODER, **sizes}
    return propagation_agreement(
        betas, seeds=seeds, rho0=0.2, tokens=cfg["tokens"], dim=cfg["dim"], layers=cfg["layers"],
        placement="post", alpha_attention=cfg["alpha_attention"], alpha_mlp=cfg["alpha_mlp"],
        sigma_w2=cfg["sigma_w2"], sigma_v2=cfg["sigma_v2"], sigma_b2=cfg["sigma_b2"],
        seed=int(rng.integers(2**20)),
    )  # fmt: skip


def _encoder_error(rng: np.random.Generator, beta: float, perturb: float, **sizes) -> float:
    ds = _agreement(rng, [beta], **sizes)
    return float(np.max(np.abs(ds.predicted.values + perturb - ds.simulated.values)))


def encoder_low_beta_error(rng: np.random.Generator, perturb: float = 0.0) -> float:
    """Largest |predicted + ``perturb`` − simulated| mean cosine over the 50 layers of the paper's encoder at
    β = 0.5 (rows spread: rank collapse within ~30 layers), 20 networks, input cosine 0.2 (theory:
    docs/theory/signal_propagation.md §7)."""
    return _encoder_error(rng, 0.5, perturb)


def encoder_high_beta_error(rng: np.random.Generator, perturb: float = 0.0) -> float:
    """Largest |predicted + ``perturb`` − simulated| mean cosine over the 50 layers of the paper's encoder at
    β = 3 (rows condensed until ρ crosses 1 − 2/β²), 20 networks, input cosine 0.2 (theory:
    docs/theory/signal_propagation.md §7)."""
    return _encoder_error(rng, 3.0, perturb)


def mlp_control_ratio(rng: np.random.Generator, perturb: float = 0.0) -> float:
    """Negative control, as a number that must stay ≤ 1: 0.02 divided by the smaller, over β ∈ {0.5, 3}, of the
    largest |control − simulated| mean cosine over the encoder's 50 layers, the control being the theory with
    the MLP's kernel left out (the simulated networks keep their MLP). ≤ 1 means the control misses the
    simulation by at least 0.02 at both β, i.e. fails the agreement test that the full theory passes.
    ``perturb`` ∈ [0, 1] moves the control toward the full theory (its cosine (1 − perturb)·control +
    perturb·theory): at 1 the control is the theory and the ratio exceeds 1 (theory:
    docs/theory/signal_propagation.md §7)."""
    ds = _agreement(rng, [0.5, 3.0])
    control = (1.0 - perturb) * ds.predicted_no_mlp.values + perturb * ds.predicted.values
    worst = np.max(np.abs(control - ds.simulated.values), axis=-1)
    return float(TOLERANCE / max(float(worst.min()), 1e-300))


def critical_beta_error(rng: np.random.Generator, perturb: float = 0.0) -> float:
    """Largest distance between β_c found as the root of the inverse multiplier of the REM layer map's
    orthogonal fixed point (automatic differentiation, Brent's method) and the paper's √(2/(1 − ρ)) (times
    1 + ``perturb``), at ρ = 0 (β_c = √2) and at a ρ drawn in [0, 0.9] (theory:
    docs/theory/signal_propagation.md §3.2)."""
    from attnphys.clouds.propagation import rem_fixed_points

    err = 0.0
    for rho in (0.0, float(rng.uniform(0.0, 0.9))):
        found = float(rem_fixed_points([1.0, 2.0], rho=rho).beta_c)
        err = max(err, abs(found - np.sqrt(2.0 / (1.0 - rho)) * (1 + perturb)))
    return err


__all__ = [
    "ENCODER_SEEDS",
    "TOLERANCE",
    "critical_beta_error",
    "encoder_high_beta_error",
    "encoder_low_beta_error",
    "mlp_control_ratio",
]
