"""The Hénon map (theory: docs/theory/dynamics.md §1)."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from attnphys.dynamics.maps._base import AutonomousMap, ReferencePoint


@dataclass(frozen=True)
class Henon(AutonomousMap):
    """(x, y) ↦ (1 − a x² + y, b x); params (a, b). At a = 1.4, b = 0.3: λ ≈ 0.419, −1.623
    (theory: docs/theory/dynamics.md §1)."""

    title = "Hénon"
    equation = r"$(x, y)' = (1 - a x^2 + y,\; b x)$"
    facts = r"$\lambda \approx (0.419, -1.623)$ at $(1.4, 0.3)$; fixed point flips at $a = \tfrac34 (1-b)^2$"

    state_shape = (2,)
    param_shape = (2,)

    analytic_jacobian = True

    def f(self, x, p):
        a, b = p[0], p[1]
        return jnp.stack([1.0 - a * x[0] ** 2 + x[1], b * x[0]])

    def jacobian(self, x, aux, p):
        return jnp.array([[-2.0 * p[0] * x[0], 1.0], [p[1], 0.0]], dtype=x.dtype)

    def sample_states(self, key, n, params):
        """Uniform in the box [−1.5, 1.5] × [−0.5, 0.5] (contains the attractor at a = 1.4, b = 0.3)."""
        u = jax.random.uniform(key, (n, 2), minval=-1.0, maxval=1.0)
        return u * jnp.array([1.5, 0.5]), None

    def reference_points(self):
        """(1.0, 0.3): a stable period-4 orbit; (1.4, 0.3): the chaotic attractor (λ ≈ 0.419, −1.623)."""
        return {
            "periodic": ReferencePoint(params=jnp.array([1.0, 0.3]), x=jnp.array([0.1, 0.1]), period=4, transient=3000),
            "chaotic": ReferencePoint(params=jnp.array([1.4, 0.3]), x=jnp.array([0.1, 0.1]), period=0, transient=1000),
        }
