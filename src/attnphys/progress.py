"""Progress bars (rich) for long runs: points done, rate and time remaining."""

from __future__ import annotations

from contextlib import contextmanager

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


@contextmanager
def progress_bar(total: int, unit: str, enabled: bool = True, done: int = 0):
    """Yield ``advance(n)``; shows done/total, rate, elapsed and remaining time when enabled."""
    if not enabled:
        yield lambda n=1: None
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
    with Progress(*columns, transient=False) as prog:
        task = prog.add_task(unit, total=total, completed=done, rate="")

        def advance(n: int = 1) -> None:
            prog.update(task, advance=n)
            t = prog.tasks[task]
            if t.speed:
                prog.update(task, rate=f"{t.speed:.3g} {unit}/s")

        yield advance
