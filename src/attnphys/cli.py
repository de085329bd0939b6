"""The ``attnphys`` command line, generated from the registered jobs (:mod:`attnphys.jobs`).

Every command is one job model: its fields are the options (help = the field's description, defaults
from the model), ``--config FILE`` supplies any of them, and command-line values win. This module
only parses and prints: no computation lives here.
"""

from __future__ import annotations

import inspect
import os
import signal
import sys
import threading
import types
import typing
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

import typer
from pydantic import ValidationError
from pydantic_core import PydanticUndefined
from rich.console import Console
from rich.table import Table
from typer.core import TyperCommand

from attnphys.errors import AttnphysError
from attnphys.jobs import (
    AbstractJob,
    IntValues,
    Values,
    build_job,
    format_validation,
    load_jobs,
    option_name,
    rerun,
)

console = Console(stderr=True, soft_wrap=True)
app = typer.Typer(
    help="attnphys: the probabilistic and statistical-physics theory of transformer attention, executable.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
_GROUPS = {
    "dmft": "Dynamical mean-field theory of self-attention.",
    "clouds": "Token clouds: attention and normalization as operators on N tokens, and tokens as particles.",
    "reproduce": "The DMFT paper's figures, one command each.",
}


@app.callback()
def _setup(
    x64: bool = typer.Option(True, help="Compute in float64 (recommended; float32 for speed studies)."),
    devices: int | None = typer.Option(None, min=1, help="XLA CPU devices to split batches over (default: all cores)."),
    compilation_cache: bool = typer.Option(
        True,
        help="Keep compiled programs on disk, so that a later run skips their compilation (directory: "
        "$ATTNPHYS_COMPILATION_CACHE, default ~/.cache/attnphys/xla; results are bitwise the same).",
    ),
    max_memory: str | None = typer.Option(
        None,
        help="The most memory a run may use (8G, 512M, …): a run whose arrays would need more is refused "
        "before computing, naming the option to lower (default: $ATTNPHYS_MAX_MEMORY, else the memory available).",
    ),
    dask_no_workers: str | None = typer.Option(
        None,
        help="What a Dask run does when no worker has been connected for --dask-no-workers-timeout seconds: "
        "wait (report it and keep waiting; the default) or stop (the finished chunks are kept; re-run to resume).",
    ),
    dask_no_workers_timeout: float | None = typer.Option(
        None, help="Seconds without a Dask worker before it is reported (default: 60)."
    ),
) -> None:
    from attnphys.errors import AttnphysError, set_max_memory
    from attnphys.runtime import configure, default_compilation_cache, max_host_devices
    from attnphys.sweeps._executors import set_no_workers_policy

    try:  # set for every call (None: the defaults), so that nothing of an earlier call in this process lingers
        set_max_memory(max_memory)
        set_no_workers_policy(dask_no_workers, dask_no_workers_timeout)
    except AttnphysError as e:
        fail(str(e), e.exit_code)
    if devices is not None and devices > max_host_devices():
        fail(
            f"--devices: at most {max_host_devices()} XLA CPU devices (this machine has {os.cpu_count()} cores), "
            f"got {devices}"
        )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        configure(
            x64=x64, host_devices=devices, compilation_cache=default_compilation_cache() if compilation_cache else None
        )
    for w in caught:
        console.print(f"warning: {w.message}", markup=False, highlight=False)


_GLOBAL_OPTIONS = (
    "--devices",
    "--x64",
    "--no-x64",
    "--compilation-cache",
    "--no-compilation-cache",
    "--max-memory",
    "--dask-no-workers",
    "--dask-no-workers-timeout",
)
"""Options of ``attnphys`` itself (given before the command)."""


class StrictCommand(TyperCommand):
    """A command whose options each take exactly their number of values, once: an option repeated with a
    different value, or a stray value, is an error that names the option (instead of silently keeping the
    last); repeating an option with the same value is harmless and accepted."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        opts = {}
        for p in self.params:
            for o in list(getattr(p, "opts", [])) + list(getattr(p, "secondary_opts", [])):
                opts[o] = p
        n_positional = sum(1 for p in self.params if p.param_type_name == "argument")
        seen: dict[str, tuple] = {}
        positional = 0
        i = 0
        last = None
        while i < len(args):
            a = args[i]
            if a == "--":
                break
            if a.startswith("--") or (a.startswith("-") and a[1:2].isalpha()):
                name, _, inline = a.partition("=")
                p = opts.get(name)
                if p is None:
                    if name in _GLOBAL_OPTIONS:
                        raise typer.BadParameter(
                            f"{name} is an option of attnphys itself: give it before the command, e.g. "
                            f"attnphys {name}{' 2' if name == '--devices' else ''} {ctx.command_path.split(' ', 1)[-1]} …",
                            ctx=ctx,
                            param_hint=name,
                        )
                    break  # click reports the unknown option itself
                n = 0 if getattr(p, "is_flag", False) else (1 if inline else p.nargs)
                value = (inline,) if inline else tuple(args[i + 1 : i + 1 + n])
                if p.name in seen and seen[p.name] != (name, value) and name != "--help":
                    raise typer.BadParameter(
                        f"{name} is given more than once with different values; give it once"
                        + (" (several values: 0.5,1,3 or START:STOP:NUM)" if _takes_values(p) else ""),
                        ctx=ctx,
                        param_hint=name,
                    )
                seen[p.name] = (name, value)
                i += 1 + (0 if inline else n)
                last = (name, n, p)
                continue
            if positional < n_positional:
                positional += 1
                i += 1
                continue
            if last and last[1] == 0:
                flag = last[2]
                both = " or ".join(list(flag.opts) + list(getattr(flag, "secondary_opts", [])))
                raise typer.BadParameter(
                    f"unexpected value {a!r}: {last[0]} is a switch and takes no value (write {both})",
                    ctx=ctx,
                    param_hint=last[0],
                )
            where = f" after {last[0]} (which takes {last[1]} value{'s' if last[1] != 1 else ''})" if last else ""
            hint = " — give several values as 1,2,3" if last and last[1] == 1 and _takes_values(last[2]) else ""
            raise typer.BadParameter(
                f"unexpected value {a!r}{where}{hint}", ctx=ctx, param_hint=last[0] if last else None
            )
        return super().parse_args(ctx, args)


def _takes_values(p) -> bool:
    return "several" in (getattr(p, "help", "") or "")


# -- generating a command from a job model -------------------------------------------------------------


def _cli_annotation(ann: Any) -> Any:
    """The Typer type of a field annotation (Optional, since every option defaults to "not given")."""
    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if ann in (Values, IntValues) or (
        origin is typing.Annotated and args and args[0] in (tuple[float, ...], tuple[int, ...])
    ):
        return Optional[str]
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return _cli_annotation(rest[0])
        return Optional[str]
    if origin is typing.Literal:
        return Optional[str]
    if origin is typing.Annotated:
        return _cli_annotation(args[0])
    if origin is tuple and args and args[-1] is not Ellipsis:
        return Optional[ann]  # a fixed number of values, e.g. an axis FIELD START STOP NUM
    if ann is Path:
        return Optional[str]  # as typed: a Path would fold ``file://host/x`` into ``file:/host/x`` before the checks
    if ann in (int, float, str, bool):
        return Optional[ann]
    return Optional[str]


def _is_values(ann: Any) -> bool:
    """Whether a field takes one value or several (:data:`Values`, :data:`IntValues`, possibly Optional)."""
    if ann in (Values, IntValues):
        return True
    if typing.get_origin(ann) in (typing.Union, types.UnionType):
        return any(_is_values(a) for a in typing.get_args(ann) if a is not type(None))
    return False


def _help(name: str, f, several: bool = True) -> str:
    text = (f.description or "").strip()
    ann = f.annotation
    origin = typing.get_origin(ann)
    lits = typing.get_args(ann) if origin is typing.Literal else ()
    if lits:
        text += f" One of: {', '.join(map(str, lits))}."
    if _is_values(ann) and several:
        text += " One value, or several (a sweep): 0.5,1,3 or START:STOP:NUM."
    default = f.default
    if f.default_factory is not None:
        default = f.default_factory()
    if default is not PydanticUndefined and default is not None and default != () and name != "overwrite":
        shown = (
            ",".join(f"{x:g}" for x in default)
            if isinstance(default, tuple) and all(isinstance(x, (int, float)) for x in default)
            else default
        )
        text += f" (default: {shown})"
    return text


def make_command(cls: type[AbstractJob]):
    """A Typer command function for ``cls``: one option per field, plus ``--config``."""
    params = []
    arguments = getattr(cls, "cli_arguments", ())
    for name, f in cls.model_fields.items():
        if name in cls.cli_hidden:
            continue
        ann = _cli_annotation(f.annotation)
        if name in arguments:
            default = typer.Argument(None, help=_help(name, f, cls.takes_several(name)), show_default=False)
        elif f.annotation is bool or ann is Optional[bool]:
            default = typer.Option(
                None, f"{option_name(name)}/--no-{name.replace('_', '-')}", help=_help(name, f), show_default=False
            )
        else:
            default = typer.Option(
                None, option_name(name), help=_help(name, f, cls.takes_several(name)), show_default=False
            )
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=ann))
    params.append(
        inspect.Parameter(
            "config",
            inspect.Parameter.KEYWORD_ONLY,
            annotation=Optional[Path],
            default=typer.Option(
                None,
                "--config",
                help="Options file (YAML, TOML or JSON) holding any of these options; command-line values win.",
                show_default=False,
            ),
        )
    )

    def command(**kwargs):
        config = kwargs.pop("config", None)
        run_job(cls, kwargs, config)

    command.__signature__ = inspect.Signature(params)
    command.__annotations__ = {p.name: p.annotation for p in params}
    command.__doc__ = inspect.getdoc(cls)
    command.__name__ = cls.command.replace(" ", "_").replace("-", "_")
    return command


# -- running and printing ------------------------------------------------------------------------------


def fail(message: str, code: int = 2) -> typing.NoReturn:
    """Print ``error: message`` (at most :data:`attnphys.errors.MAX_MESSAGE` characters) and exit with ``code``."""
    from rich.markup import escape

    from attnphys.errors import cap_message

    console.print(f"[bold red]error:[/] {escape(cap_message(message))}", markup=True, highlight=False)
    raise typer.Exit(code=code)


@contextmanager
def user_warnings():
    """Warnings meant for the user (a damaged store being repaired, no Dask workers, float32) printed as one
    ``warning: …`` line each, without the source line Python would show."""
    from attnphys.errors import cap_message

    def show(message, category, filename, lineno, file=None, line=None):
        console.print(f"warning: {cap_message(str(message))}", markup=False, highlight=False)

    with warnings.catch_warnings():
        previous = warnings.showwarning
        warnings.showwarning = show
        try:
            yield
        finally:
            warnings.showwarning = previous


_STOP_SIGNALS: dict[int, tuple[str, int]] = {signal.SIGINT: ("interrupted", 130), signal.SIGTERM: ("terminated", 143)}
"""Signals that stop a run cleanly, with their word and exit status (128 + signal number)."""


RESUME = "re-run the same command to resume"
"""What an interrupted run that kept its finished sweep chunks is told."""


def interrupt_advice(job: AbstractJob | None) -> str:
    """What to do after an interrupted run: resume a sweep store (its finished chunks are kept), or start
    again (a result written whole at the end, or a NetCDF sweep result, has nothing to resume from)."""
    if job is not None and any(kind == "sweep" and path.suffix != ".nc" for _, path, kind in job.outputs()):
        return RESUME
    return "unfinished outputs were removed; re-run the same command to start again"


@contextmanager
def interruptible(advice: str = RESUME):
    """Ctrl-C (SIGINT) or SIGTERM at any moment: remove partial outputs and locks, print ``advice`` (how to
    resume or start again), exit 130 (143 for SIGTERM).

    The signal is acted on at once, also while the main thread is inside a long native computation (an
    XLA kernel, a Zarr write) that would delay a Python signal handler: the C-level handler writes the
    signal number to a pipe (``signal.set_wakeup_fd``), and a watcher thread that waits on that pipe does
    the clean-up and ends the process with ``os._exit`` (no interpreter teardown under running XLA
    threads). Completed sweep chunks are kept, so re-running the same command resumes."""
    from attnphys.io import cleanup_partials, release_locks

    once = threading.Lock()

    def stop(signum: int) -> None:
        if not once.acquire(blocking=False):
            return
        word, code = _STOP_SIGNALS.get(signum, ("interrupted", 130))
        try:
            cleanup_partials()
            release_locks()
            sys.stderr.write(f"\n{word}; {advice}\n")
            sys.stderr.flush()
        finally:
            os._exit(code)

    try:
        previous = {sig: signal.signal(sig, lambda signum, frame: stop(signum)) for sig in _STOP_SIGNALS}
    except ValueError:  # not the main thread (e.g. embedded): keep the default behaviour
        yield
        return
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        old_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except ValueError:  # pragma: no cover - not the main thread
        old_fd = None

    def watch() -> None:
        while True:
            try:
                data = os.read(r, 64)
            except OSError:
                return
            if not data:
                return
            for signum in data:
                if signum in _STOP_SIGNALS:
                    stop(signum)

    watcher = threading.Thread(target=watch, name="attnphys-interrupt", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        if old_fd is not None:
            signal.set_wakeup_fd(old_fd)
        for sig, h in previous.items():
            signal.signal(sig, h)
        os.close(w)
        watcher.join(timeout=1.0)
        os.close(r)


def print_report(report) -> None:
    table = Table(title=report.title, show_header=False)
    for k, v in report.rows.items():
        table.add_row(str(k), str(v))
    if report.paths:
        table.add_row("written", "\n".join(str(p) for p in report.paths))
    Console().print(table)


def _out_of_memory(e: BaseException) -> bool:
    if isinstance(e, MemoryError):
        return True
    text = str(e)
    return type(e).__name__ in ("XlaRuntimeError", "JaxRuntimeError") and (
        "RESOURCE_EXHAUSTED" in text or "Out of memory" in text or "out of memory" in text
    )


def execute(make_job: typing.Callable[[], AbstractJob]) -> None:
    """Build a job, run it under :func:`interruptible` and print its report; every user error becomes a
    message without traceback and a non-zero exit (:attr:`AttnphysError.exit_code`, 2 for bad values,
    file-system errors and exhausted memory)."""
    try:
        job = make_job()
        with interruptible(interrupt_advice(job)), user_warnings():
            report = job.run(progress=True)
    except AttnphysError as e:
        fail(str(e), e.exit_code)
    except ValidationError as e:
        fail(format_validation(e))
    except RecursionError:
        fail("an input is nested too deeply to be read (a file of lists within lists?)")
    except (ValueError, OSError) as e:
        fail(str(e))
    except Exception as e:
        if not _out_of_memory(e):
            raise
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        fail(f"out of memory ({first}); use smaller sizes (tokens, steps, grid points, paths)")
    print_report(report)


def run_job(cls: type[AbstractJob], given: dict, config: Path | None) -> None:
    """Build, run and report a job; every user error becomes a message and a non-zero exit."""
    execute(lambda: build_job(cls, given, config))


def _group(name: str) -> typer.Typer:
    for info in app.registered_groups:
        if info.name == name and info.typer_instance is not None:
            return info.typer_instance
    sub = typer.Typer(help=_GROUPS.get(name), no_args_is_help=True, rich_markup_mode=None)
    app.add_typer(sub, name=name)
    return sub


def _register_all() -> None:
    for command, cls in sorted(load_jobs().items()):
        parts = command.split(" ")
        target = app if len(parts) == 1 else _group(parts[0])
        target.command(parts[-1], cls=StrictCommand, help=inspect.getdoc(cls))(make_command(cls))


@app.command("rerun", cls=StrictCommand)
def rerun_cmd(
    store: Path = typer.Argument(
        ..., metavar="STORE", help="A result written by attnphys (it records the job that made it)."
    ),
    out: Path = typer.Option(..., "--out", help="Where to write the new result."),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace an existing result of the same command at --out."
    ),
    executor: Optional[str] = typer.Option(
        None, "--executor", help="Where a sweep's chunks run now (default: in this process, whatever made STORE)."
    ),
    workers: Optional[int] = typer.Option(None, "--workers", help="Processes / Dask workers for --executor."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Dask scheduler address for --executor dask."),
) -> None:
    """Re-run the job that produced STORE, writing to --out (figures are not redrawn). Where a sweep's chunks
    ran is not repeated: --executor, --workers and --scheduler choose it now."""
    execute(lambda: rerun(store, out, overwrite, executor, workers, scheduler))


_register_all()


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    command = typer.main.get_command(app)
    command.main(args=list(sys.argv[1:] if argv is None else argv), prog_name="attnphys")


__all__ = ["app", "main", "make_command", "run_job"]

if __name__ == "__main__":  # pragma: no cover
    main()
