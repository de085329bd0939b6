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
import types
import typing
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

import typer
from pydantic_core import PydanticUndefined
from rich.console import Console
from rich.table import Table
from typer.core import TyperCommand

from attnphys.errors import AttnphysError
from attnphys.jobs import JOBS, AbstractJob, Values, IntValues, build_job, load_jobs, option_name, rerun

console = Console(stderr=True, soft_wrap=True)
app = typer.Typer(help="attnphys: the probabilistic and statistical-physics theory of transformer attention, "
                       "executable.", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  rich_markup_mode=None)
_GROUPS = {
    "dmft": "Dynamical mean-field theory of self-attention.",
    "clouds": "Token clouds: attention and normalization as operators on N tokens, and tokens as particles.",
    "reproduce": "The DMFT paper's figures, one command each.",
}


@app.callback()
def _setup(
    x64: bool = typer.Option(True, help="Compute in float64 (recommended; float32 for speed studies)."),
    devices: Optional[int] = typer.Option(None, min=1, help="XLA CPU devices to split batches over (default: all cores)."),
) -> None:
    from attnphys.runtime import configure

    configure(x64=x64, host_devices=devices)


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
                    i += 1
                    continue  # click reports unknown options itself
                n = 0 if getattr(p, "is_flag", False) else (1 if inline else p.nargs)
                value = (inline,) if inline else tuple(args[i + 1:i + 1 + n])
                if p.name in seen and seen[p.name] != (name, value) and name != "--help":
                    raise typer.BadParameter(
                        f"{name} is given more than once with different values; give it once"
                        + (" (several values: 0.5,1,3 or START:STOP:NUM)" if _takes_values(p) else ""),
                        ctx=ctx, param_hint=name)
                seen[p.name] = (name, value)
                i += 1 + (0 if inline else n)
                last = (name, p.nargs)
                continue
            if positional < n_positional:
                positional += 1
                i += 1
                continue
            where = f" after {last[0]} (which takes {last[1]} value{'s' if last[1] != 1 else ''})" if last else ""
            hint = " — give several values as 1,2,3" if last and last[1] == 1 else ""
            raise typer.BadParameter(f"unexpected value {a!r}{where}{hint}", ctx=ctx,
                                     param_hint=last[0] if last else None)
        return super().parse_args(ctx, args)


def _takes_values(p) -> bool:
    return "several" in (getattr(p, "help", "") or "")


# -- generating a command from a job model -------------------------------------------------------------

def _cli_annotation(ann: Any) -> Any:
    """The Typer type of a field annotation (Optional, since every option defaults to "not given")."""
    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if ann in (Values, IntValues) or (origin is typing.Annotated and args and args[0] in (tuple[float, ...], tuple[int, ...])):
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
    if ann in (int, float, str, bool, Path):
        return Optional[ann]
    return Optional[str]


def _help(name: str, f) -> str:
    text = (f.description or "").strip()
    ann = f.annotation
    origin = typing.get_origin(ann)
    lits = typing.get_args(ann) if origin is typing.Literal else ()
    if lits:
        text += f" One of: {', '.join(map(str, lits))}."
    if ann in (Values, IntValues):
        text += " One value, or several (a sweep): 0.5,1,3 or START:STOP:NUM."
    default = f.default
    if f.default_factory is not None:
        default = f.default_factory()
    if default is not PydanticUndefined and default is not None and default != () and name != "overwrite":
        shown = ",".join(f"{x:g}" for x in default) if isinstance(default, tuple) and all(
            isinstance(x, (int, float)) for x in default) else default
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
            default = typer.Argument(None, help=_help(name, f), show_default=False)
        elif f.annotation is bool or ann is Optional[bool]:
            default = typer.Option(None, f"{option_name(name)}/--no-{name.replace('_', '-')}", help=_help(name, f),
                                   show_default=False)
        else:
            default = typer.Option(None, option_name(name), help=_help(name, f), show_default=False)
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=ann))
    params.append(inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY, annotation=Optional[Path],
                                    default=typer.Option(None, "--config", help="Options file (YAML, TOML or JSON) "
                                                         "holding any of these options; command-line values win.",
                                                         show_default=False)))

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
    from rich.markup import escape

    console.print(f"[bold red]error:[/] {escape(message)}", markup=True, highlight=False)
    raise typer.Exit(code=code)


@contextmanager
def interruptible():
    """Ctrl-C at any moment: remove partial outputs and locks, say how to resume, exit 130."""
    from attnphys.io import cleanup_partials, release_locks

    def handler(signum, frame):
        cleanup_partials()
        release_locks()
        sys.stderr.write("\ninterrupted; re-run the same command to resume\n")
        sys.stderr.flush()
        os._exit(130)

    try:
        previous = signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread (e.g. embedded): keep the default behaviour
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def print_report(report) -> None:
    table = Table(title=report.title, show_header=False)
    for k, v in report.rows.items():
        table.add_row(str(k), str(v))
    if report.paths:
        table.add_row("written", "\n".join(str(p) for p in report.paths))
    Console().print(table)


def run_job(cls: type[AbstractJob], given: dict, config: Path | None) -> None:
    """Build, run and report a job; every user error becomes a message and a non-zero exit."""
    try:
        job = build_job(cls, given, config)
        with interruptible():
            report = job.run(progress=True)
    except AttnphysError as e:
        fail(str(e), e.exit_code)
    except (ValueError, FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as e:
        fail(str(e))
    print_report(report)


def _group(name: str) -> typer.Typer:
    for info in app.registered_groups:
        if info.name == name:
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
    store: Path = typer.Argument(..., help="A result written by attnphys (it records the job that made it)."),
    out: Path = typer.Option(..., "--out", help="Where to write the new result."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing result of the same command at --out."),
) -> None:
    """Re-run the job that produced STORE, writing to --out (figures are not redrawn)."""
    try:
        job = rerun(store, out, overwrite)
        with interruptible():
            report = job.run(progress=True)
    except AttnphysError as e:
        fail(str(e), e.exit_code)
    except (ValueError, FileNotFoundError) as e:
        fail(str(e))
    print_report(report)


_register_all()


def main(argv: Optional[list[str]] = None) -> None:
    """Console-script entry point."""
    command = typer.main.get_command(app)
    command.main(args=list(sys.argv[1:] if argv is None else argv), prog_name="attnphys")


__all__ = ["app", "main", "make_command", "run_job"]

if __name__ == "__main__":  # pragma: no cover
    main()
