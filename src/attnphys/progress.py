"""Progress bars (rich) for long runs: points done, rate and time remaining, with progress reported from
inside a unit of work (theory: docs/theory/sweeps.md §3).

A bar counts units (sweep points, steps). Work that runs one unit for a long time (a chunk of sweep
points stepped together, a census, a flow) reports the fraction of it done from the layer that knows
(a loop over step blocks, rounds of a settle run, segments of an integration) with :func:`report_fraction`;
the bar of the enclosing :func:`nested_progress` then moves within the unit and its time estimate stays
live. Where no bar is active, :func:`report_fraction` does nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

LOG_EVERY_S = 5.0
"""Seconds between the progress lines written where the output is not a terminal (a log file, a batch
job's output): a live bar cannot be drawn there."""


def _clock(s: float) -> str:
    s = int(max(s, 0))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


@contextmanager
def _log_lines(total: float, unit: str, done: float, stream) -> Iterator[Callable[..., None]]:
    """``advance(n)`` that writes a line ``unit: done/total (pct %), rate, elapsed, eta`` to ``stream``
    every :data:`LOG_EVERY_S` seconds, and one at the end."""
    import time

    start = last = time.monotonic()
    state = {"done": float(done), "first": float(done)}

    def line(now: float) -> None:
        d, elapsed = state["done"], now - start
        rate = (d - state["first"]) / elapsed if elapsed > 0 else 0.0
        pct = 100.0 * d / total if total else 100.0
        eta = f", eta {_clock((total - d) / rate)}" if rate > 0 and d < total else ""
        speed = f", {rate:.3g} {unit}/s" if rate > 0 else ""
        stream.write(f"{unit}: {d:g}/{total:g} ({pct:.0f} %){speed}, elapsed {_clock(elapsed)}{eta}\n")
        stream.flush()

    def advance(n: float = 1) -> None:
        nonlocal last
        state["done"] += n
        now = time.monotonic()
        if now - last >= LOG_EVERY_S:
            last = now
            line(now)

    try:
        yield advance
    finally:
        line(time.monotonic())


@contextmanager
def progress_bar(total: float, unit: str, enabled: bool = True, done: float = 0):
    """Yield ``advance(n)`` (n may be fractional); shows done/total, rate, elapsed and remaining time when
    enabled: a live bar on a terminal, else (a log file, a batch job) a line every :data:`LOG_EVERY_S`
    seconds on standard error."""
    if not enabled:

        def skip(n: float = 1) -> None:
            return None

        yield skip
        return
    import sys

    from rich.console import Console

    if not Console(stderr=True).is_terminal and not Console().is_terminal:
        with _log_lines(total, unit, done, sys.stderr) as advance:
            yield advance
        return
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, transient=False, refresh_per_second=4) as prog:
        task = prog.add_task(unit, total=total, completed=int(done), rate="")

        def advance(n: float = 1) -> None:
            prog.update(task, advance=n)
            t = prog.tasks[task]
            if t.speed:
                prog.update(task, rate=f"{t.speed:.3g} {unit}/s")

        yield advance


class _Nested:
    """The units of the running piece of work and how much of them inner reports have advanced."""

    def __init__(self, advance: Callable[[float], None]):
        self.advance = advance
        self.units = 0.0
        self.reported = 0.0

    def fraction(self, f: float) -> None:
        target = self.units * min(max(float(f), 0.0), 1.0)
        if target > self.reported:
            self.advance(target - self.reported)
            self.reported = target

    def complete(self, units: float) -> None:
        """The piece of ``units`` is done: advance what its inner reports have not."""
        if units > self.reported:
            self.advance(units - self.reported)
        self.units = self.reported = 0.0


_CURRENT: ContextVar[_Nested | None] = ContextVar("attnphys_progress", default=None)
_RANGE: ContextVar[tuple[float, float]] = ContextVar("attnphys_progress_range", default=(0.0, 1.0))
_HOST: list[Callable[[float], None] | None] = []
"""Reporters reachable from threads that do not see this context (XLA host callbacks run off the main
thread): the innermost :func:`host_reporter`."""


@contextmanager
def nested_progress(advance: Callable[[float], None]) -> Iterator[_Nested]:
    """Let inner layers move the bar of ``advance`` (of :func:`progress_bar`) within each piece of work:
    bracket each piece with :func:`piece` and finish it with ``tracker.complete(units)``."""
    tracker = _Nested(advance)
    token = _CURRENT.set(tracker)
    try:
        yield tracker
    finally:
        _CURRENT.reset(token)


@contextmanager
def piece(units: float) -> Iterator[None]:
    """Mark the start of a piece of ``units`` units of the enclosing :func:`nested_progress` bar (a sweep
    chunk of that many points); a no-op without one."""
    tracker = _CURRENT.get()
    if tracker is not None:
        tracker.units, tracker.reported = float(units), 0.0
    yield


def active() -> bool:
    """Whether a bar listens to :func:`report_fraction` here."""
    return _CURRENT.get() is not None


def report_fraction(done: float, total: float) -> None:
    """Report that ``done`` of ``total`` of the current piece of work (or of the current :func:`subrange`
    of it) is finished; a no-op when no bar is active (e.g. in a worker process)."""
    tracker = _CURRENT.get()
    if tracker is not None and total > 0:
        a, b = _RANGE.get()
        tracker.fraction(a + (b - a) * min(max(done / total, 0.0), 1.0))


@contextmanager
def subrange(lo: float, hi: float) -> Iterator[None]:
    """Fractions reported inside map to [lo, hi] of the enclosing range (stages of one piece of work:
    integration, then statistics); on exit the bar stands at ``hi``."""
    a, b = _RANGE.get()
    token = _RANGE.set((a + (b - a) * lo, a + (b - a) * hi))
    try:
        yield
    finally:
        _RANGE.reset(token)
    tracker = _CURRENT.get()
    if tracker is not None:
        tracker.fraction(a + (b - a) * hi)


@contextmanager
def host_reporter() -> Iterator[bool]:
    """Make this context's bar reachable from other threads for the duration (yields whether a bar is
    active): :func:`report_from_host` (called by an XLA host callback) then reports into it."""
    tracker, (a, b) = _CURRENT.get(), _RANGE.get()
    _HOST.append(None if tracker is None else (lambda f: tracker.fraction(a + (b - a) * min(max(f, 0.0), 1.0))))
    try:
        yield tracker is not None
    finally:
        _HOST.pop()


def report_from_host(fraction) -> None:
    """:func:`report_fraction` from any thread, into the innermost :func:`host_reporter`."""
    if _HOST and _HOST[-1] is not None:
        _HOST[-1](float(fraction))


@contextmanager
def step_bar(total: float, unit: str, enabled: bool = True) -> Iterator[Callable[[float, float], None]]:
    """A bar of its own for one long computation that reports through :func:`report_fraction` (a census,
    a flow): yields ``report(done, total)``; inside an enclosing :func:`nested_progress` the enclosing bar
    moves instead."""
    if _CURRENT.get() is not None or not enabled:
        yield report_fraction
        return
    with progress_bar(total, unit, enabled=True) as advance, nested_progress(advance) as tracker:
        tracker.units = float(total)
        yield report_fraction
        tracker.complete(float(total))
