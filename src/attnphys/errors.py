"""Exceptions with enough context to act on.

Every error a user can cause derives from :class:`AttnphysError`; the command line prints its message
(no traceback) and exits with :attr:`AttnphysError.exit_code`.
"""

from __future__ import annotations


class AttnphysError(Exception):
    """Base of the errors a user can cause (bad input, an occupied output path, …)."""

    exit_code: int = 2


class InputError(AttnphysError, ValueError):
    """A bad value. ``field`` names the option or configuration field when known.

    The message names the field first, so that it reads ``--steps: must be >= 1 (got 0)``.
    """

    def __init__(self, message: str, field: str | None = None):
        self.field, self.detail = field, message
        super().__init__(f"{field}: {message}" if field else message)


class OutputError(AttnphysError):
    """An output path cannot be used: it holds something else, or another run is writing it."""


class IncompleteResultError(AttnphysError, RuntimeError):
    """A stored result was not completely written (interrupted run)."""


class MissingExtraError(AttnphysError, ImportError):
    """An optional dependency group (``attnphys[probes]``, ``attnphys[dask]``) is not installed."""

    def __init__(self, extra: str, what: str):
        self.extra = extra
        super().__init__(
            f"{what} needs the optional dependencies of attnphys[{extra}]; install them with "
            f"`pip install 'attnphys[{extra}]'`"
        )


class NonFiniteError(AttnphysError, FloatingPointError):
    """A trajectory produced NaN or ±inf.

    Attributes:
        step: first loop step whose new state was non-finite.
        params: parameter values of the offending trajectory.
        count: how many trajectories of the batch became non-finite.
    """

    exit_code = 3

    def __init__(self, step: int, params: dict, count: int = 1, what: str = "state"):
        self.step, self.params, self.count = step, params, count
        where = ", ".join(f"{k}={v}" for k, v in params.items())
        super().__init__(f"non-finite {what} at step {step} ({where}); {count} trajectory(ies) affected")


class PrecisionWarning(UserWarning):
    """A computation that needs float64 runs in float32 (``attnphys.configure()`` was not called)."""
