"""The delayed logistic map (theory: docs/theory/dynamics.md §1)."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from attnphys.dynamics.maps._base import AutonomousMap, ReferencePoint


@dataclass(frozen=True)
class DelayedLogistic(AutonomousMap):
    """(x, y) ↦ (a x (1 − y), x); params a. Fixed point x* = y* = 1 − 1/a with multipliers the roots of
    μ² − μ + (a − 1) = 0: a complex pair with |μ|² = a − 1 for a > 5/4, so a Neimark–Sacker bifurcation
    at a = 2 (μ = e^{±iπ/3}); an invariant circle for a slightly above 2 (theory: docs/theory/dynamics.md §1)."""

    title = "delayed logistic"
    equation = r"$(x, y)' = (a x (1-y),\; x)$"
    facts = r"fixed point $x^*=y^*=1-1/a$, multipliers $\mu^2 - \mu + (a-1) = 0$: Neimark–Sacker at $a = 2$"

    state_shape = (2,)
    param_shape = ()

    analytic_jacobian = True

    def f(self, x, a):
        return jnp.stack([a * x[0] * (1.0 - x[1]), x[0]])

    def jacobian(self, x, aux, a):
        return jnp.array([[a * (1.0 - x[1]), -a * x[0]], [1.0, 0.0]], dtype=x.dtype)

    def sample_states(self, key, n, params):
        """Uniform in the square (0, 1)²."""
        return jax.random.uniform(key, (n, 2), minval=1e-6, maxval=1.0 - 1e-6), None

    def reference_points(self):
        return {"periodic": ReferencePoint(params=1.9, x=jnp.array([0.4, 0.5]), period=1, transient=2000)}
