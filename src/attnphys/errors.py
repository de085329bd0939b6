"""Exceptions with enough context to act on."""

from __future__ import annotations


class NonFiniteError(FloatingPointError):
    """A trajectory produced NaN or ±inf.

    Attributes:
        step: first loop step whose new state was non-finite.
        params: parameter values of the offending trajectory.
        count: how many trajectories of the batch became non-finite.
    """

    def __init__(self, step: int, params: dict, count: int = 1):
        self.step, self.params, self.count = step, params, count
        where = ", ".join(f"{k}={v}" for k, v in params.items())
        super().__init__(f"non-finite state at step {step} ({where}); {count} trajectory(ies) affected")
