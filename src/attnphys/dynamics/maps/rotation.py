"""Rotations of the plane (theory: docs/theory/dynamics.md §1)."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from attnphys.dynamics.maps._base import AutonomousMap, ReferencePoint


@dataclass(frozen=True)
class Rotation(AutonomousMap):
    """Rotation by the angle 2πω; params ω. Quasi-periodic for irrational ω (exponents 0, 0), period q
    for ω = p/q (theory: docs/theory/dynamics.md §1)."""

    title = "rotation"
    equation = r"rotation by $2\pi\omega$"
    facts = r"exponents $(0, 0)$; period $q$ for $\omega = p/q$"

    state_shape = (2,)
    param_shape = ()

    def f(self, x, omega):
        c, s = jnp.cos(2 * jnp.pi * omega), jnp.sin(2 * jnp.pi * omega)
        return jnp.stack([c * x[0] - s * x[1], s * x[0] + c * x[1]])

    def sample_states(self, key, n, params):
        """Uniform in the square [−1, 1]²."""
        return jax.random.uniform(key, (n, 2), minval=-1.0, maxval=1.0), None

    def reference_points(self):
        """ω = 0.1234: the origin is a neutral fixed point with multipliers e^{±2πiω}."""
        return {"periodic": ReferencePoint(params=0.1234, x=jnp.zeros(2), period=1, transient=0)}
