"""Linear maps (theory: docs/theory/dynamics.md §1)."""

from __future__ import annotations

from dataclasses import dataclass

from attnphys.dynamics.maps._base import AutonomousMap


@dataclass(frozen=True)
class Linear(AutonomousMap):
    """x ↦ A x; params A (D, D). For diagonal A the exponents are log|A_ii| exactly."""

    analytic_jacobian = True

    def f(self, x, A):
        return A @ x

    def jacobian(self, x, aux, A):
        return A.astype(x.dtype)
