"""Messages that name what the user gave: the command-line option of a field, and validation errors as
``--option: message (got value)`` lines (theory: docs/theory/sweeps.md §5). A light module (pydantic only),
used by the command layer and by the library's own checks alike."""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError

from attnphys.errors import short_repr

_M = typing.TypeVar("_M", bound=BaseModel)


def option_name(field_name: str) -> str:
    """The command-line option of a field: ``beta_o`` → ``--beta-o``."""
    return "--" + field_name.replace("_", "-")


def members(ann: Any) -> list[Any]:
    """The types a field annotation admits: ``Annotated`` unwrapped and unions flattened (``None`` kept)."""
    out, stack = [], [ann]
    while stack:
        a = stack.pop()
        if typing.get_origin(a) is typing.Annotated:
            stack.append(typing.get_args(a)[0])
        elif typing.get_origin(a) in (typing.Union, types.UnionType):
            stack.extend(reversed(typing.get_args(a)))
        else:
            out.append(a)
    return out


def _union_field(cls: type[BaseModel] | None, name: str) -> bool:
    """Whether field ``name`` of ``cls`` is a union of several types (pydantic then puts the member's tag,
    e.g. ``file`` or ``literal[...]``, after the field name in an error's location)."""
    f = getattr(cls, "model_fields", {}).get(name)
    if f is None:
        return False
    return len([a for a in members(f.annotation) if a is not type(None)]) > 1


def format_validation(e: ValidationError, cls: type[BaseModel] | None = None, source: str | None = None) -> str:
    """A pydantic error as lines ``--option: message (got value)``, without documentation links.

    The tags of union members are left out of the location, and only the first error of each option is
    kept (a value that fits no member of a union fails once per member)."""
    lines = []
    named = set()
    fields = set(getattr(cls, "model_fields", {})) if cls is not None else set()
    from attnphys.errors import InputError

    for err in e.errors():
        loc = [str(x) for x in err["loc"]]
        msg = _plain(err)
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, InputError) and cause.field and not cause.field.startswith("-"):
            loc, msg = loc + cause.field.split("."), cause.detail  # a nested configuration's own error
        if err["type"] == "extra_forbidden":
            where = f" in {source}" if source else ""
            known = ", ".join(sorted(fields)) if fields else ""
            lines.append(f"unknown option {'.'.join(loc)!r}{where}" + (f" (known: {known})" if known else ""))
            continue
        if loc and loc[0] in fields:
            if len(loc) > 1 and _union_field(cls, loc[0]):
                loc = [loc[0]] + loc[2:]
            positional = loc[0] in getattr(cls, "cli_arguments", ())
            opt = loc[0].upper() if positional else option_name(loc[0])
            # the config file's spelling beside the option's, only where a config file was read
            name = (f"{opt} ({loc[0]} in {source})" if source and opt[2:] != loc[0] and not positional else opt) + (
                "." + ".".join(loc[1:]) if len(loc) > 1 else ""
            )
            if name in named:
                continue
            named.add(name)
        else:
            name = ".".join(loc)
        got = err.get("input")
        shown = (
            "" if got is None or isinstance(got, (dict, BaseModel)) or "got " in msg else f" (got {short_repr(got)})"
        )
        lines.append(f"{name}: {msg}{shown}" if name else f"{msg}")
    return "\n".join(lines)


def _plain(err: Any) -> str:
    """An error's message without pydantic's internal words (discriminators, tags, prefixes)."""
    msg = str(err["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
    ctx = err.get("ctx") or {}
    key = str(ctx.get("discriminator", "")).strip("'")
    if err["type"] == "union_tag_not_found":
        return f"must be a mapping that names its {key} (the {key!r} key is missing)"
    if err["type"] == "union_tag_invalid":
        return f"{key} {ctx.get('tag')!r} is not one of {ctx.get('expected_tags')}"
    return msg


MAX_LOOP = 2**31 - 1
"""Largest loop count (steps, transient, …): the device counts steps in 32-bit integers."""

LOOP_FIELDS = ("steps", "transient", "n_orbit", "lyap_steps")
"""Arguments that are loop counts (:data:`MAX_LOOP`)."""


def too_long_loops(data: dict) -> list[str]:
    """Loop counts beyond :data:`MAX_LOOP`, as ``field: must be at most …`` lines (the device would
    overflow before anything is computed)."""
    out = []
    for name in LOOP_FIELDS:
        v = data.get(name)
        if isinstance(v, int) and not isinstance(v, bool) and v > MAX_LOOP:
            out.append(
                f"{name}: must be at most {MAX_LOOP:,} (the device counts steps in 32-bit integers), got {v:.3g}"
            )
    return out


def stray_booleans(cls: type[BaseModel], data: Any) -> list[str]:
    """The fields of ``data`` given a boolean that do not take one (pydantic would read ``True`` as 1:
    ``steps=True`` would run one step), as ``field: must be a number, not the boolean True`` lines."""
    if not isinstance(data, dict):
        return []
    out = []
    for name, value in data.items():
        f = cls.model_fields.get(name) if isinstance(name, str) else None
        if f is None or not isinstance(value, bool):
            continue
        if not any(a is bool or a is Any for a in members(f.annotation)):
            out.append(f"{name}: must be a number or text, not the boolean {value}")
    return out


def config_error(e: ValidationError, cls: type[BaseModel] | None = None) -> Exception:
    """A configuration's validation error as :class:`~attnphys.errors.InputError` naming the field as
    the Python argument (``beta_o: Input should be …``); the pydantic error stays in its ``validation``
    attribute for the command line, which names options instead."""
    from attnphys.errors import InputError

    lines = format_validation(e).split("\n")
    if cls is not None:
        known = ", ".join(sorted(cls.model_fields))
        lines = [
            line.replace("unknown option ", "").rstrip() + f": not a field of {cls.__name__} (its fields: {known})"
            if line.startswith("unknown option ")
            else line
            for line in lines
        ]
        lines = [line.replace("': not a field", ": not a field").removeprefix("'") for line in lines]
    first = lines[0].split(":", 1)
    field = first[0] if len(first) == 2 and " " not in first[0] else None
    detail = "\n".join([first[1].strip() if field else lines[0], *lines[1:]])
    err = InputError(detail, field)
    err.validation = e  # pyright: ignore[reportAttributeAccessIssue]
    return err


def validated(cls: type[_M], /, arguments: dict[str, str] | None = None, **fields: Any) -> _M:
    """``cls(**fields)`` for a pydantic model built from a function's arguments; a refused value raises
    :class:`~attnphys.errors.InputError` naming the argument (``steps: Input should be greater than 0 (got
    -1)``), never pydantic's own error (theory: docs/theory/sweeps.md §5). ``arguments``: field → the name of
    the function's argument where they differ."""
    from attnphys.errors import InputError

    stray = stray_booleans(cls, fields) + too_long_loops(fields)
    try:
        if stray:
            raise InputError("\n".join(stray))
        return cls(**fields)
    except (ValidationError, InputError) as e:
        lines = format_validation(e).split("\n") if isinstance(e, ValidationError) else stray
        for field, arg in (arguments or {}).items():
            lines = [
                arg + line[len(field) :] if line.startswith((f"{field}:", f"{field}.")) else line for line in lines
            ]
        name, _, detail = lines[0].partition(": ")
        if len(lines) == 1 and detail and name.isidentifier():  # one argument: named as the error's field
            raise InputError(detail, name) from None
        raise InputError("\n".join(lines)) from None
