"""Griffe extension of the API reference: an analysis shows its real keyword signature and a table of its
options, and an options model lists its fields.

The analyses are written ``fn(cfg, …, *, options: XOptions)`` and decorated with ``@takes(XOptions)``
(``attnphys._options``), which gives the function every option as a keyword at run time. mkdocstrings
reads the sources, where none of that is visible; this extension imports the decorated function and
takes its run-time ``__signature__``, and appends to its docstring the table that
:meth:`attnphys._options.AnalysisOptions.table` makes (name, type, default, bounds, help). Every class
derived from ``AnalysisOptions`` gets the same table of its fields (its own and inherited). A module that
cannot be imported is left as the sources show it, with a warning (the build is strict: it fails).
"""

from __future__ import annotations

import html
import importlib
import inspect
import logging

import griffe

log = logging.getLogger("mkdocs.plugins.attnphys.options")


def _runtime(path: str):
    module, _, name = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except Exception as e:  # noqa: BLE001  (reported, the page still builds)
        log.warning("options reference: cannot import %s (%s)", path, e)
        return None


def _cell(text: str) -> str:
    """Markdown of one table cell: a ``|`` as its HTML entity (an escaped pipe stays escaped in code)."""
    return str(text).replace("|", "&#124;").replace("\n", " ")


def _code(text: str) -> str:
    return f"<code>{_cell(html.escape(str(text), quote=False))}</code>"


def options_table(model) -> str:
    """The markdown table of an options model's fields."""
    lines = ["| option | type | default | bounds | help |", "|---|---|---|---|---|"]
    for r in model.table():
        lines.append(
            f"| {_code(r['name'])} | {_code(r['type'])} | {_code(r['default'])} | {_cell(r['bounds'])} | "
            f"{_cell(r['help'])} |"
        )
    return "\n".join(lines)


def _append(obj, title: str, text: str) -> None:
    extra = f"**{title}**\n\n{text}"
    if obj.docstring is None:
        obj.docstring = griffe.Docstring(extra, parent=obj)
    else:
        obj.docstring.value = obj.docstring.value.rstrip() + "\n\n" + extra


def _kind(p: inspect.Parameter) -> griffe.ParameterKind:
    return {
        p.POSITIONAL_ONLY: griffe.ParameterKind.positional_only,
        p.POSITIONAL_OR_KEYWORD: griffe.ParameterKind.positional_or_keyword,
        p.VAR_POSITIONAL: griffe.ParameterKind.var_positional,
        p.KEYWORD_ONLY: griffe.ParameterKind.keyword_only,
        p.VAR_KEYWORD: griffe.ParameterKind.var_keyword,
    }[p.kind]


class OptionsExtension(griffe.Extension):
    def on_function_instance(self, *, node, func, agent, **kwargs) -> None:
        if not any(str(d.value).startswith("takes(") for d in func.decorators):
            return
        fn = _runtime(func.path)
        model = getattr(fn, "options", None)
        if fn is None or model is None:
            return
        from attnphys._options import _type_name

        params = []
        for p in inspect.signature(fn).parameters.values():
            ann = None if p.annotation is p.empty else _type_name(p.annotation)
            default = None if p.default is p.empty else repr(p.default)
            params.append(griffe.Parameter(p.name, annotation=ann, kind=_kind(p), default=default))
        func.parameters = griffe.Parameters(*params)
        _append(func, f"Options ({model.__name__})", options_table(model))

    def on_class_members(self, *, node, cls, agent, **kwargs) -> None:
        if not any(str(b).endswith(("Options", "Point", "AnalysisOptions")) for b in cls.bases) and not (
            cls.name.endswith("Options")
        ):
            return
        obj = _runtime(cls.path)
        from attnphys._options import AnalysisOptions

        if not (isinstance(obj, type) and issubclass(obj, AnalysisOptions)) or obj is AnalysisOptions:
            return
        _append(cls, "Fields", options_table(obj))
