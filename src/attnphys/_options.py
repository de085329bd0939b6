"""One options model per analysis: each option's name, default, type, help text and bounds written once, in a
pydantic model, from which the analysis' Python function, its dry run (a ``plan_*`` function) and its
command's options all derive (theory: docs/theory/sweeps.md §5).

* :class:`AnalysisOptions` — the base of every analysis' options model; :meth:`AnalysisOptions.read` turns
  the keywords of a call into the model (a refused value raises :class:`~attnphys.errors.InputError` naming
  the keyword; a keyword renamed since the last release still works, with a :class:`DeprecationWarning`
  naming the new one).
* :func:`takes` — the decorator that gives an analysis function the model's options as keyword arguments
  (its signature and docstring list them) and hands the implementation one validated model.

Light: pydantic and the standard library only, so that a command's ``--help`` builds its options from the
models without loading the numerical engine.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import PydanticUndefined

from attnphys.errors import InputError

_R = TypeVar("_R")
_O = TypeVar("_O", bound="AnalysisOptions")


COMMAND_LINE: contextvars.ContextVar[bool] = contextvars.ContextVar("attnphys_command_line", default=False)
"""True while a command runs: the functions it calls then name their arguments as its options (the user
reads the command line's language); a Python caller reads the keywords (:func:`in_python_names`)."""


def in_python_names(e: InputError, names) -> InputError:
    """``e`` with the command-line spelling of the options among ``names`` (``--record-every``) written as
    the Python keywords (``record_every``), in its field and its text; the same error when none occurs. A
    layer shared by the commands and the functions speaks the commands' language; a function's caller
    reads its own."""
    import re

    names = set(names)

    def python(m: re.Match) -> str:
        word = m.group(1).replace("-", "_")
        return word if word in names else m.group(0)

    field = e.field
    if field and field.startswith("--") and field[2:].replace("-", "_") in names:
        field = field[2:].replace("-", "_")
    detail = re.sub(r"(?<![\w-])--([a-z][a-z0-9-]*)", python, e.detail)
    if field == e.field and detail == e.detail:
        return e
    return type(e)(detail, field)


def deprecated_name(where: str, old: str, new: str, stacklevel: int = 3) -> None:
    """Warn that ``old`` (a keyword or option of 0.3.0 and before) is now ``new`` (kept for one release)."""
    warnings.warn(
        f"{where}: {old} is deprecated since 0.4.0 and will be removed in 0.5.0: use {new}",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


_BOUNDS = {"ge": "≥", "gt": ">", "le": "≤", "lt": "<", "min_length": "length ≥", "max_length": "length ≤"}


def _bound(constraint: Any) -> str:
    """A field constraint of pydantic's metadata (annotated_types ``Ge(1)``, ``Lt(1)``, …) as text."""
    for attr, sym in _BOUNDS.items():
        v = getattr(constraint, attr, None)
        if v is not None:
            return f"{sym} {v!r}"
    return ""


def _type_name(annotation: Any) -> str:
    """An annotation as a reader writes it (``int``, ``float | None``, ``Literal['a', 'b']``)."""
    if isinstance(annotation, type) and not getattr(annotation, "__args__", None):
        return annotation.__name__
    return str(annotation).replace("typing.", "").replace("collections.abc.", "").replace("NoneType", "None")


class AnalysisOptions(BaseModel):
    """The options of one analysis, each written once: its name (the Python keyword; the command's option is
    ``--`` + the name with ``-`` for ``_``), default, type, help text (``description``) and bounds.

    Class attributes:
        renamed: keywords of earlier releases → their name now (accepted for one release with a
            :class:`DeprecationWarning`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    renamed: ClassVar[Mapping[str, str]] = {}
    late: ClassVar[bool] = False
    """Whether this class's own options come last in a signature (where a sweep runs and is stored)."""

    @classmethod
    def read(cls: type[_O], given: Mapping[str, Any], where: str = "") -> _O:
        """The model of the keywords ``given`` of a call of ``where``.

        Raises:
            InputError: naming the keyword: unknown (with the known ones), given twice under its old and
                new name, or a value the model refuses.
        """
        from attnphys._arguments import beyond_limits
        from attnphys._messages import members, validated

        data = dict(given)
        for old, new in cls.renamed.items():
            if old in data:
                if new in data:
                    raise InputError(f"given twice, as {new} and as its old name {old}: give {new} only", new)
                deprecated_name(f"{where}({old}=…)" if where else old, f"{old}=", f"{new}=", stacklevel=4)
                data[new] = data.pop(old)
        unknown = [k for k in data if k not in cls.model_fields]
        if unknown:
            known = ", ".join(cls.model_fields)
            raise InputError(
                f"{where or cls.__name__} takes no option {unknown[0]!r}; its options: {known}", unknown[0]
            )
        for name, value in data.items():  # pydantic would read "1" as 1: a Python caller meant something else
            kinds = members(cls.model_fields[name].annotation)
            if isinstance(value, str) and kinds and all(a in (int, float, type(None)) for a in kinds):
                raise InputError(f"must be a number, not the text {value!r}", name)
            beyond = beyond_limits(name, value, tuple(kinds))  # the limits every number shares (one place)
            if beyond:
                raise InputError(beyond, name)
        return validated(cls, **data)

    @classmethod
    def parameters(cls) -> list[inspect.Parameter]:
        """The options as keyword-only parameters (name, default, annotation), in the model's order."""
        out = []

        def late(name: str) -> bool:
            owner = next(c for c in reversed(cls.__mro__) if name in vars(c).get("__annotations__", {}))
            return bool(vars(owner).get("late", False))

        for name, f in sorted(cls.model_fields.items(), key=lambda item: late(item[0])):
            default = inspect.Parameter.empty if f.default is PydanticUndefined else f.default
            if f.default_factory is not None:
                default = f.default_factory()  # pyright: ignore[reportCallIssue]  (no arguments)
            out.append(
                inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=f.annotation)
            )
        return out

    @classmethod
    def default(cls, name: str) -> Any:
        """The default of option ``name`` (for a layer that types the option its own way, e.g. a command's
        parsed ``--start``)."""
        return cls.model_fields[name].get_default(call_default_factory=True)

    @classmethod
    def table(cls) -> list[dict[str, str]]:
        """The options as rows of the reference's table, in the signature's order: ``name``, ``type``,
        ``default`` (``required`` where there is none), ``bounds`` (from the field's constraints, e.g.
        ``≥ 1``) and ``help``."""
        rows = []
        for p in cls.parameters():
            f = cls.model_fields[p.name]
            rows.append(
                {
                    "name": p.name,
                    "type": _type_name(f.annotation),
                    "default": "required" if p.default is inspect.Parameter.empty else repr(p.default),
                    "bounds": ", ".join(b for b in map(_bound, f.metadata) if b),
                    "help": f.description or "",
                }
            )
        return rows

    @classmethod
    def help_lines(cls, indent: str = "    ") -> str:
        """The options as a docstring section: ``name (default): help``, one per option."""
        lines = []
        for p in cls.parameters():
            d = "required" if p.default is inspect.Parameter.empty else f"default {p.default!r}"
            lines.append(f"{indent}{p.name} ({d}): {cls.model_fields[p.name].description or ''}".rstrip())
        return "\n".join(lines)


class Execution(AnalysisOptions):
    """Where a sweep's chunks run (theory: docs/theory/sweeps.md §4); shared by the sweeping commands."""

    late = True

    chunk: int = Field(1024, ge=1, description="Points per vectorised batch (one task).")
    executor: Literal["inprocess", "processes", "dask"] = Field("inprocess", description="Where chunks run.")
    workers: int | None = Field(None, ge=1, description="Processes / Dask workers (default: CPU count).")
    scheduler: str | None = Field(None, description="Dask scheduler address, e.g. tcp://host:8786.")


class Progress(AnalysisOptions):
    """Whether a long analysis shows a progress bar (Python only: a command always does)."""

    late = True

    progress: bool = Field(False, description="Show a progress bar.")


class Storage(Progress):
    """Where a sweep's result goes (Python only: a command's store is its ``--out``)."""

    late = True

    store: str | Path | None = Field(None, description="A resumable Zarr store (the same call resumes), or None.")
    overwrite: bool = Field(False, description="Replace an existing store at ``store``.")
    store_attrs: dict | None = Field(None, description="Extra attributes of a new store.")


class _FromOptions:
    def __repr__(self) -> str:
        return "<the options model's default>"


OPTION: Any = _FromOptions()
"""The default of a leading parameter of a :func:`takes` function that is an option of its model (e.g.
``particle_flow(dynamics=OPTION, *, options)``): the public signature shows the model's default, and the
value reaches the implementation inside ``options`` only."""


def takes(
    options: type[_O], *, plan: Callable[..., Any] | None = None
) -> Callable[[Callable[..., _R]], Callable[..., _R]]:
    """Give an analysis function the options of ``options`` as keyword arguments.

    The decorated function takes its own leading parameters and a last keyword-only parameter
    ``options`` (the validated model); the function it becomes takes the leading parameters and every
    option of the model as a keyword (its ``__signature__`` lists them, its docstring gets their help),
    validates them with :meth:`AnalysisOptions.read` and calls it with the model. A leading parameter
    named like an option (default :data:`OPTION`) may be given by position; it is that option (the
    model's default, type and bounds) and reaches the implementation in ``options`` only.

    ``plan``: the analysis' ``plan_*`` function: a call with ``dry_run=True`` (0.3.0 and before) warns and
    returns its plan.
    """

    def wrap(fn: Callable[..., _R]) -> Callable[..., _R]:
        sig = inspect.signature(fn)
        shared = {p for p in sig.parameters if p in options.model_fields}
        head = [
            p.replace(default=options.default(p.name), annotation=options.model_fields[p.name].annotation)
            if p.name in shared
            else p
            for p in sig.parameters.values()
            if p.name != "options"
        ]
        head_names = {p.name for p in head}
        head_sig = inspect.Signature(head)
        where = fn.__name__

        @functools.wraps(fn)
        def call(*args: Any, **kw: Any) -> Any:
            if plan is not None and "dry_run" in kw:
                dry = kw.pop("dry_run")
                deprecated_name(f"{where}(dry_run=…)", "dry_run=True", f"{plan.__name__}(…)")
                if dry:
                    return plan(*args, **kw)
            own = {k: kw.pop(k) for k in list(kw) if k in head_names}
            if shared:  # leading options: by position or keyword, into the model
                own = dict(head_sig.bind_partial(*args, **own).arguments)
                args = ()
                kw.update({k: own.pop(k) for k in list(own) if k in shared})
            try:
                return fn(*args, **own, options=options.read(kw, where))
            except InputError as e:
                if COMMAND_LINE.get():
                    raise
                raise in_python_names(e, head_names | set(options.model_fields)) from None

        rest = [p for p in options.parameters() if p.name not in shared]
        call.__signature__ = sig.replace(parameters=head + rest)  # pyright: ignore[reportAttributeAccessIssue]
        call.__doc__ = (fn.__doc__ or "").rstrip() + (
            f"\n\n    Options (:class:`{options.__module__.split('._')[0]}.{options.__name__}`):\n"
            + options.help_lines(" " * 8)
            + "\n"
        )
        call.options = options  # pyright: ignore[reportAttributeAccessIssue]
        return call

    return wrap
