"""Linear maps (theory: docs/theory/dynamics.md §1)."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from attnphys.dynamics.maps._base import AutonomousMap, ReferencePoint


@dataclass(frozen=True)
class Linear(AutonomousMap):
    """x ↦ A x; params A (D, D). For diagonal A the exponents are log|A_ii| exactly
    (theory: docs/theory/dynamics.md §1)."""

    title = "linear"
    equation = r"$x' = A x$"
    facts = r"multipliers = eigenvalues of $A$"

    analytic_jacobian = True

    def check_args(self, x, A) -> None:
        from attnphys._checks import check_array

        D = check_array(x, "x", ndim=1, what="the state of the Linear map")[0]
        check_array(A, "params", (D, D), what="the matrix A of the Linear map, D × D")

    def f(self, x, A):
        return A @ x

    def jacobian(self, x, aux, A):
        return A.astype(x.dtype)

    def sample_states(self, key, n, params):
        """Standard normal states (the dimension is that of A)."""
        return jax.random.normal(key, (n, jnp.shape(params)[-1])), None

    def reference_points(self):
        """A = [[0.5, 0.3, 0], [0, −0.8, 0], [0, 0.1, 0.2]]: the origin attracts, multipliers 0.5, −0.8, 0.2."""
        A = jnp.array([[0.5, 0.3, 0.0], [0.0, -0.8, 0.0], [0.0, 0.1, 0.2]])
        return {"periodic": ReferencePoint(params=A, x=jnp.array([1.0, -0.5, 0.25]), period=1, transient=400)}
