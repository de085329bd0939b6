"""Rotations of the plane (theory: docs/theory/dynamics.md §1)."""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp

from attnphys.dynamics.maps._base import AutonomousMap


@dataclass(frozen=True)
class Rotation(AutonomousMap):
    """Rotation by the angle 2πω; params ω. Quasi-periodic for irrational ω (exponents 0, 0), period q
    for ω = p/q."""

    def f(self, x, omega):
        c, s = jnp.cos(2 * jnp.pi * omega), jnp.sin(2 * jnp.pi * omega)
        return jnp.stack([c * x[0] - s * x[1], s * x[0] + c * x[1]])
