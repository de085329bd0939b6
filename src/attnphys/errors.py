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


def machine_memory() -> int | None:
    """Physical memory of this machine in bytes (None where the platform does not say)."""
    import os

    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - platforms without sysconf
        return None


def check_fits(need: float, what: str, hint: str, field: str | None = None) -> None:
    """Refuse, before anything is computed, arrays that cannot fit: the one rule for every command.

    Raises :class:`InputError` (naming ``field``) when ``need`` bytes exceed half of this machine's
    memory; the message reads ``{what} need … GiB, more than half of this machine's memory (… GiB); {hint}``.
    """
    avail = machine_memory()
    if avail is not None and need > avail // 2:
        raise InputError(
            f"{what} need {need / 2**30:.3g} GiB, more than half of this machine's memory "
            f"({avail / 2**30:.3g} GiB); {hint}",
            field,
        )
