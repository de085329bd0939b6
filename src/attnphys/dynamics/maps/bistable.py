"""A symmetric bistable map (theory: docs/theory/dynamics.md §1)."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from attnphys.dynamics.maps._base import AutonomousMap, ReferencePoint


@dataclass(frozen=True)
class Bistable(AutonomousMap):
    """x ↦ a x − x³ on a (1,) state; params a. Odd (x ↦ −x commutes with it). For 1 < a < 2 the fixed
    points ±√(a − 1) (multiplier 3 − 2a) are the two attractors, exchanged by the symmetry, so their
    basins in the invariant interval [−√(a+1), √(a+1)] have equal measure; x = 0 (multiplier a) undergoes
    a pitchfork at a = 1, ±√(a − 1) a flip at a = 2 (theory: docs/theory/dynamics.md §1)."""

    title = "bistable"
    equation = r"$x' = a x - x^3$"
    facts = r"for $1<a<2$ attractors $\pm\sqrt{a-1}$ (multiplier $3-2a$) with equal basins; pitchfork at $a = 1$, flips at $a = 2$"

    state_shape = (1,)
    param_shape = ()

    analytic_jacobian = True

    def f(self, x, a):
        return a * x - x**3

    def jacobian(self, x, aux, a):
        return (a - 3.0 * x**2).reshape(1, 1)

    def sample_states(self, key, n, params):
        """Uniform on the open invariant interval (−√(a+1), √(a+1))."""
        c = jnp.sqrt(jnp.asarray(params) + 1.0)
        return jax.random.uniform(key, (n, 1), minval=-1.0, maxval=1.0) * c * (1.0 - 1e-9), None

    def reference_points(self):
        return {"periodic": ReferencePoint(params=1.8, x=jnp.array([0.3]), period=1, transient=200)}
