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


class ResourceError(AttnphysError, MemoryError):
    """Arrays that would not fit in the memory a run may use, refused before anything is computed.
    ``field`` names the option that sets the largest of them. (Not a ValueError: a value that is valid
    on a larger machine is not a bad value.)"""

    def __init__(self, message: str, field: str | None = None):
        self.field, self.detail = field, message
        super().__init__(f"{field}: {message}" if field else message)


class OutputError(AttnphysError):
    """An output path cannot be used: it holds something else, or another run is writing it."""


class IncompleteResultError(AttnphysError, RuntimeError):
    """A stored result was not completely written (interrupted run)."""


class DamagedResultError(IncompleteResultError):
    """A stored result lacks or has changed files that it held when it was finished (an interrupted copy,
    a deleted or overwritten chunk). ``damaged`` lists what is missing or changed."""

    def __init__(self, message: str, damaged: list[str] | None = None):
        self.damaged = list(damaged or [])
        super().__init__(message)


class ExecutorError(AttnphysError, RuntimeError):
    """Where the chunks run failed: a scheduler that stopped answering, no workers, a store the workers
    cannot see. The chunks finished so far are kept."""


class MissingExtraError(AttnphysError, ImportError):
    """An optional dependency group (``attnphys[probes]``, ``attnphys[dask]``) is not installed."""

    def __init__(self, extra: str, what: str):
        self.extra = extra
        super().__init__(
            f"{what} needs the optional dependencies of attnphys[{extra}]; install them with "
            f"`pip install 'attnphys[{extra}]'`"
        )


class ExtensionError(AttnphysError, RuntimeError):
    """A registry cannot be read unambiguously: an outside package's entry point gives an existing name
    (a built-in command, task or model variant) to another object, or a member is registered twice
    under one name."""


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


class ExtensionWarning(UserWarning):
    """An outside package's entry point was skipped: it gives an existing member's name to another object
    (the existing member is kept, and every other command still runs)."""


class PrecisionWarning(UserWarning):
    """A computation that needs float64 runs in float32 (``attnphys.configure()`` was not called)."""


class FitWarning(UserWarning):
    """A fitted exponent rests on too few points to carry its interval (at least three, one degree of
    freedom beyond the line's two): the warning says how many entered and what would give more."""


MAX_MESSAGE = 2000
"""Most characters of a message printed to the user: the rest is cut with a note of how much (a value
echoed in a message can be arbitrarily large, e.g. a list built from YAML aliases)."""


def cap_message(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` cut to at most about ``limit`` characters: its start and its last line, with the number of
    characters left out between them."""
    text = str(text)
    if len(text) <= limit:
        return text
    tail = text[-min(200, limit // 4) :]
    head = text[: limit - len(tail) - 40]
    return f"{head} … [{len(text) - len(head) - len(tail):,} characters left out] … {tail}"


def short_repr(value, limit: int = 80) -> str:
    """``repr(value)`` of at most ``limit`` characters, computed without building the whole text for large
    containers (a value from YAML aliases can expand to billions of items)."""
    import reprlib

    r = reprlib.Repr()
    r.maxlevel, r.maxlist, r.maxtuple, r.maxdict, r.maxset = 3, 6, 6, 6, 6
    r.maxstring, r.maxother = limit, limit
    text = r.repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- memory ------------------------------------------------------------------------------------------

MAX_MEMORY_ENV = "ATTNPHYS_MAX_MEMORY"
"""Environment variable with the most memory one run may use (``8G``, ``512M``, ``1.5GiB`` or bytes), where
:func:`set_max_memory` (the command line's ``--max-memory``) set none."""

_SETTINGS: dict[str, str | None] = {"max_memory": None}
"""This process's memory limit, set by :func:`set_max_memory` (a process-level setting, like
:func:`attnphys.configure`'s)."""


def set_max_memory(size: str | int | None) -> None:
    """Set the most memory a run of this process may use (``8G``, ``512M``, bytes; None: the environment's
    :data:`MAX_MEMORY_ENV`, else only what is available). Checked by :func:`check_fits` before computing.

    Raises:
        InputError: not a size, naming ``--max-memory``.
    """
    if size is not None:
        parse_size(size, "--max-memory")
    _SETTINGS["max_memory"] = None if size is None else str(size).strip()


_UNITS = {"": 1, "B": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_size(text: str | int | float, field: str = "--max-memory") -> int:
    """Bytes of a size written ``8G``, ``512M``, ``1.5GiB``, ``2 GB`` or a number of bytes (binary units:
    K = 1024).

    Raises:
        InputError: naming ``field``.
    """
    import re

    if isinstance(text, bool):
        raise InputError(f"a size such as 8G, 512M or 1000000 (bytes), not {text}", field)
    if isinstance(text, (int, float)):
        value, unit = float(text), ""
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([KMGTkmgt]?)(?:i?[Bb])?\s*", str(text))
        if m is None:
            raise InputError(f"a size such as 8G, 512M or 1000000 (bytes), got {short_repr(text)}", field)
        value, unit = float(m.group(1)), m.group(2).upper()
    size = value * _UNITS[unit]
    if not (size >= 1 and size < 2**63):
        raise InputError(f"a size of at least 1 byte and below 8 EiB, got {short_repr(text)}", field)
    return int(size)


def machine_memory() -> int | None:
    """Physical memory of this machine in bytes (None where the platform does not say)."""
    import os

    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - platforms without sysconf
        return None


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        import psutil  # pyright: ignore[reportMissingModuleSource]

        return int(psutil.virtual_memory().available)
    except Exception:  # noqa: BLE001 - not installed, or the platform does not say
        return None


def _cgroup_room() -> int | None:
    """Room left under this process's cgroup (v2) memory limit, or None without one."""
    from pathlib import Path

    try:
        rel = next(
            line.split(":", 2)[2].strip()
            for line in Path("/proc/self/cgroup").read_text().splitlines()
            if line[:3] == "0::"
        )
        folder = Path("/sys/fs/cgroup") / rel.lstrip("/")
        limit = (folder / "memory.max").read_text().strip()
        if limit == "max":
            return None
        return max(0, int(limit) - int((folder / "memory.current").read_text()))
    except (OSError, ValueError, StopIteration):
        return None


def _rlimit_room() -> int | None:
    """Room left under this process's address-space and data limits (``ulimit -v``), or None without one."""
    try:
        import resource

        limits = [resource.getrlimit(r)[0] for r in (resource.RLIMIT_AS, resource.RLIMIT_DATA)]
        limits = [v for v in limits if v not in (resource.RLIM_INFINITY, -1) and v > 0]
        if not limits:
            return None
        with open("/proc/self/status") as f:
            used = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
        return max(0, min(limits) - used)
    except (ImportError, OSError, ValueError, StopIteration):
        return None


def memory_budget() -> tuple[int | None, str]:
    """(bytes, where the bound comes from) that a run may still allocate: the least of the memory this
    machine has available now (MemAvailable), the room under a cgroup limit and under ``ulimit -v``, and
    the user's limit (:func:`set_max_memory`, ``--max-memory``, :data:`MAX_MEMORY_ENV`); (None, "") where
    nothing is known."""
    import os

    found: list[tuple[int, str]] = []
    user = _SETTINGS["max_memory"] or os.environ.get(MAX_MEMORY_ENV, "").strip()
    if user:
        found.append((parse_size(user, "--max-memory"), f"--max-memory {user}"))
    for value, source in (
        (_meminfo_available(), "the memory available on this machine"),
        (_cgroup_room(), "the room left under this process's memory limit (cgroup)"),
        (_rlimit_room(), "the room left under this process's address-space limit (ulimit -v)"),
    ):
        if value is not None:
            found.append((value, source))
    if not found:
        total = machine_memory()
        return (None, "") if total is None else (total // 2, "half of this machine's memory")
    return min(found, key=lambda vs: vs[0])


def _gib(n: float) -> str:
    return f"{n / 2**30:.3g} GiB"


def check_fits(need: float, what: str, hint: str, field: str | None = None) -> None:
    """Refuse, before anything is computed, arrays that cannot fit: the one rule for every command.

    Raises :class:`ResourceError` (naming ``field``) when ``need`` bytes exceed :func:`memory_budget`;
    the message reads ``{what} need … GiB, more than {the bound} (… GiB); {hint}``.
    """
    budget, source = memory_budget()
    if budget is not None and need > budget:
        raise ResourceError(f"{what} need {_gib(need)}, more than {source} ({_gib(budget)}); {hint}", field)


def is_out_of_memory(e: BaseException) -> bool:
    """Whether ``e`` says that memory ran out: Python's ``MemoryError`` or XLA's ``RESOURCE_EXHAUSTED``
    (host or device memory), as opposed to a bug."""
    if isinstance(e, MemoryError) and not isinstance(e, AttnphysError):
        return True
    text = str(e)
    return type(e).__name__ in ("XlaRuntimeError", "JaxRuntimeError") and (
        "RESOURCE_EXHAUSTED" in text or "Out of memory" in text or "out of memory" in text
    )


def find_stack_level() -> int:
    """The ``stacklevel`` of :func:`warnings.warn` that points at the first frame outside the attnphys
    package: the user's line, however many of the library's own frames (entry checks, options, helpers) are
    between (the rule pandas follows). Call it directly in the ``warnings.warn(...)`` call."""
    import inspect
    import os

    root = os.path.dirname(os.path.abspath(__file__))
    frame = inspect.currentframe()
    level = 0  # this function's frame is not counted: warnings.warn's stacklevel=1 is its caller
    try:
        while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(root):
            frame = frame.f_back
            level += 1
    finally:
        del frame
    return max(level, 1)
