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

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

LOG_EVERY_S = 30.0
"""Longest interval, in seconds, between the progress lines written where the output is neither a terminal
nor a notebook (a log file, a batch job's output), where no live bar can be drawn; a line is also written
at every tenth of the work and one at the end (docs/theory/sweeps.md §6)."""

NOTEBOOK_EVERY_S = 0.25
"""Seconds between the updates of a live bar in a notebook."""


def _num(x: float) -> str:
    """A count as a person reads it: whole numbers as such, fractions of a unit to two decimals."""
    return f"{x:g}" if float(x).is_integer() else f"{x:.2f}"


def _clock(s: float) -> str:
    s = int(max(s, 0))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class _Meter:
    """Done, rate and time left of one bar. The rate is measured from the first report on: the time up to
    it (compilation, and the first piece of work) does not count, so the estimate is the running speed.

    rate = (done − done at the first report) / (now − time of the first report);
    eta = (total − done) / rate.
    """

    def __init__(self, total: float, unit: str, done: float):
        import time

        self.total, self.unit, self.done = float(total), unit, float(done)
        self.start = time.monotonic()
        self.t0: float | None = None
        self.d0 = self.done

    def advance(self, n: float, now: float) -> None:
        first = self.t0 is None
        self.done = min(self.done + float(n), self.total) if self.total else self.done + float(n)
        if first:  # the clock of the rate starts here, after the first piece (and its compilation)
            self.t0, self.d0 = now, self.done

    def tenth(self) -> int:
        """How many tenths of the work are done (10 for a bar of no units)."""
        return int(10 * self.done / self.total) if self.total else 10

    def rate(self, now: float) -> float:
        if self.t0 is None or now <= self.t0 or self.done <= self.d0:
            return 0.0
        return (self.done - self.d0) / (now - self.t0)

    def fields(self, now: float) -> dict[str, str]:
        d, r = self.done, self.rate(now)
        pct = 100.0 * d / self.total if self.total else 100.0
        return {
            "count": f"{_num(d)}/{_num(self.total)}",
            "pct": f"{pct:.0f} %",
            "rate": f"{r:.3g} {self.unit}/s" if r > 0 else "",
            "elapsed": _clock(now - self.start),
            "eta": _clock((self.total - d) / r) if r > 0 and d < self.total else "",
        }

    def line(self, now: float) -> str:
        f = self.fields(now)
        speed = f", {f['rate']}" if f["rate"] else ""
        eta = f", eta {f['eta']}" if f["eta"] else ""
        return f"{self.unit}: {f['count']} ({f['pct']}){speed}, elapsed {f['elapsed']}{eta}"

    def html(self, now: float) -> str:
        f = self.fields(now)
        parts = [f["count"], f["pct"], f["rate"], f"elapsed {f['elapsed']}", f"eta {f['eta']}" if f["eta"] else ""]
        text = " · ".join(p for p in parts if p)
        return (
            f'<div class="attnphys-progress"><b>{self.unit}</b> '
            f'<progress value="{self.done:g}" max="{self.total:g}" style="width:40%;vertical-align:middle">'
            f"</progress> {text}</div>"
        )


@contextmanager
def _log_lines(total: float, unit: str, done: float, stream) -> Iterator[Callable[..., None]]:
    """``advance(n)`` that writes a line ``unit: done/total (pct %), rate, elapsed, eta`` to ``stream`` at
    every tenth of the work or after :data:`LOG_EVERY_S` seconds, whichever comes first, and one at the
    end (never the same line twice)."""
    import time

    meter = _Meter(total, unit, done)
    state = {"last": meter.start, "tenth": meter.tenth(), "written": -1.0}

    def write(now: float) -> None:
        if meter.done != state["written"]:
            stream.write(meter.line(now) + "\n")
            stream.flush()
            state["written"] = meter.done
        state["last"] = now

    def advance(n: float = 1) -> None:
        now = time.monotonic()
        meter.advance(n, now)
        tenth = meter.tenth()
        if tenth > state["tenth"] or now - state["last"] >= LOG_EVERY_S:
            state["tenth"] = tenth
            write(now)

    try:
        yield advance
    finally:
        write(time.monotonic())


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (IPython's ZMQ shell), where a bar is drawn as a live HTML
    output of the cell instead of on standard error."""
    import sys

    if "ipykernel" not in sys.modules:
        return False
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


@contextmanager
def _notebook_bar(total: float, unit: str, done: float) -> Iterator[Callable[..., None]]:
    """``advance(n)`` that updates one live output of the running cell (an HTML ``<progress>`` bar with
    done/total, rate, elapsed and eta), at most every :data:`NOTEBOOK_EVERY_S` seconds and at the end."""
    import time

    from IPython.display import display

    meter = _Meter(total, unit, done)

    def bundle(now: float) -> dict[str, str]:
        return {"text/html": meter.html(now), "text/plain": meter.line(now)}

    handle = display(bundle(meter.start), raw=True, display_id=True)
    state = {"last": meter.start}

    def advance(n: float = 1) -> None:
        now = time.monotonic()
        meter.advance(n, now)
        if now - state["last"] >= NOTEBOOK_EVERY_S and handle is not None:
            handle.update(bundle(now), raw=True)
            state["last"] = now

    try:
        yield advance
    finally:
        if handle is not None:
            handle.update(bundle(time.monotonic()), raw=True)


@contextmanager
def progress_bar(total: float, unit: str, enabled: bool = True, done: float = 0):
    """Yield ``advance(n)`` (n may be fractional); shows done/total, rate, elapsed and remaining time when
    enabled: a live bar on a terminal, a live output of the cell in a Jupyter notebook, else (a log file,
    a batch job) a line at every tenth of the work (at least every :data:`LOG_EVERY_S` seconds) on
    standard error. The rate, and so the time left, is measured from the first report on, after
    compilation (docs/theory/sweeps.md §6)."""
    if not enabled:

        def skip(n: float = 1) -> None:
            return None

        yield skip
        return
    import sys

    from rich.console import Console

    if in_notebook():
        with _notebook_bar(total, unit, done) as advance:
            yield advance
        return
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
        TextColumn("eta {task.fields[eta]}"),
    )
    import time

    meter = _Meter(total, unit, done)
    with Progress(*columns, transient=False, refresh_per_second=4) as prog:
        task = prog.add_task(unit, total=total, completed=int(done), rate="", eta="")

        def advance(n: float = 1) -> None:
            now = time.monotonic()
            meter.advance(n, now)
            f = meter.fields(now)
            prog.update(task, completed=meter.done, rate=f["rate"], eta=f["eta"] or "-:--:--")

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
