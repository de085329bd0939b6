"""The logistic map (theory: docs/theory/dynamics.md §1)."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from attnphys.dynamics.maps._base import AutonomousMap, ReferencePoint


@dataclass(frozen=True)
class Logistic(AutonomousMap):
    """x ↦ r x (1 − x) on a (1,) state; params r. r = 4: λ = ln 2; period doubling at r = 3 and 1 + √6
    (theory: docs/theory/dynamics.md §1)."""

    title = "logistic"
    equation = r"$x' = r x (1-x)$"
    facts = r"$\lambda = \ln 2$ at $r=4$; flips at $r = 3$ and $r = 1+\sqrt6$; period-3 fold at $r = 1+\sqrt8$"

    state_shape = (1,)
    param_shape = ()

    analytic_jacobian = True

    def f(self, x, r):
        return r * x * (1.0 - x)

    def jacobian(self, x, aux, r):
        return (r * (1.0 - 2.0 * x)).reshape(1, 1)

    def sample_states(self, key, n, params):
        """Uniform on (0, 1), the invariant interval for 0 ≤ r ≤ 4."""
        return jax.random.uniform(key, (n, 1), minval=1e-6, maxval=1.0 - 1e-6), None

    def reference_points(self):
        """r = 3.5: the stable period-4 orbit; r = 4: chaos with λ = ln 2."""
        return {
            "periodic": ReferencePoint(params=3.5, x=jnp.array([0.3]), period=4, transient=2000),
            "chaotic": ReferencePoint(params=4.0, x=jnp.array([0.3]), period=0, transient=100),
        }
