"""Build hook: the lists a reader sees, written from the package's registries.

A page writes a placeholder where a list belongs, and the build replaces it with the registry's contents:

* ``{observables}`` — the names of the observables' registry (``attnphys.dmft.observables.observable_names``:
  the library's own and those of outside packages), as code, comma-separated (the same placeholder fills
  the commands' help texts: ``attnphys.dmft.observables.with_observables``);
* ``{example_maps}`` — the table of the example maps' registry (``attnphys.dynamics.maps.example_maps``):
  each map's ``title``, ``equation`` and ``facts`` (class attributes of the map);
* ``{claims}`` — the table of the claims ``attnphys verify`` checks (``attnphys.verify.all_claims``):
  each claim's name, paper reference and tolerance;
* ``{probe_claims}`` — the table of the claims every probe tests (``attnphys.probes.claims.CLAIMS``, the
  registry complete once its module is imported): each claim's title, statistic, null, test and whether it
  depends on training;
* ``{registries}`` — the table of the library's registries (``attnphys.registry.all_registries``): each
  one's entry-point group, what a member is and how the library adds one;
* ``{names:NOUN}`` — the names of the registry ``NOUN`` (``{names:normalization}``), as code, comma-separated;
* ``{figures}`` — the table of the figures ``attnphys reproduce`` runs (``attnphys.reproduce.FIGURES``): each
  figure's name, what it shows (``shows``, else its title) and its full run (``full_run``, else its settings).

Adding an entry to a registry adds it to every page that shows the list; ``tests/test_registries_lists.py``
checks this. Every cell of every generated table goes through :func:`cell`, so that no entry's text (a
``|`` in an equation, a line break) can break its row.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
if str(SRC) not in sys.path:  # the pages describe the source tree they are built from
    sys.path.insert(0, str(SRC))


_SPANS = re.compile(r"(`+)(?:.|\n)*?\1|\$\$(?:.|\n)*?\$\$|\$(?:\\.|[^$\\])+\$")
"""Code spans (kept as they are: a ``|`` there separates no cells) and inline or display math."""

_PIPE = re.compile(r"(?<!\\)\|")
"""A ``|`` not already escaped."""


def cell(text: object) -> str:
    """``text`` as one cell of a generated Markdown table: on one line, every ``|`` that would end the cell
    escaped — ``\\|`` in the text, ``\\vert`` in an equation (where ``\\|`` would be the norm's ‖, and a
    bare ``|`` ends the cell before the equation does) — and code spans as they are."""
    text = re.sub(r"\s*\n\s*", " ", str(text)).strip()
    out, last = [], 0
    for m in _SPANS.finditer(text):
        out.append(_PIPE.sub(r"\\|", text[last : m.start()]))
        span = m.group(0)
        out.append(span if span.startswith("`") else _PIPE.sub(r"\\vert{}", span))
        last = m.end()
    out.append(_PIPE.sub(r"\\|", text[last:]))
    return "".join(out)


def row(*cells: object) -> str:
    """One row of a generated table, every cell through :func:`cell`."""
    return "| " + " | ".join(cell(c) for c in cells) + " |"


def observables() -> str:
    from attnphys.dmft.observables import observable_names

    return ", ".join(f"`{name}`" for name in observable_names())


def example_maps() -> str:
    from attnphys.dynamics.maps import example_maps as registered

    lines = ["| map | equation | known facts |", "|---|---|---|"]
    for name, m in registered().items():
        lines.append(row(m.title or name, m.equation, m.facts))
    return "\n".join(lines)


def claims() -> str:
    from attnphys.verify import all_claims

    lines = ["| claim | paper | tolerance |", "|---|---|---|"]
    for c in all_claims():
        lines.append(row(c.name, c.reference, f"{c.tol:.0e}"))
    return "\n".join(lines)


def figures() -> str:
    from attnphys.reproduce import FIGURES

    lines = ["| name | what | settings of the full run |", "|---|---|---|"]
    for name, f in FIGURES.items():
        run = f.full_run or ", ".join(f"{k} = {v}" for k, v in f.settings().items())  # an outside figure's
        lines.append(row(f"`{name}`", f.shows or f.title, run))
    return "\n".join(lines)


def probe_claims() -> str:
    from attnphys.probes.claims import CLAIMS

    lines = ["| claim | statistic per layer | null | test | depends on training |", "|---|---|---|---|---|"]
    for c in CLAIMS.values():
        lines.append(row(c.title, c.statistic, c.null, c.test, "yes" if c.training else "no"))
    return "\n".join(lines)


def registries() -> str:
    """The table of the library's registries (:func:`attnphys.registry.all_registries`): each one's noun,
    entry-point group, what a member is and how the library adds one of its own."""
    from attnphys.registry import all_registries

    lines = ["| registry | entry-point group | a member is | in the library |", "|---|---|---|---|"]
    for noun, reg in all_registries().items():
        group = f"`{reg.group}`" if reg.group else "—"
        lines.append(row(noun, group, reg.member, reg.adding))
    return "\n".join(lines)


_NAMES = re.compile(r"\{names:([a-z ]+)\}")
"""``{names:NOUN}``: the names of the registry ``NOUN`` (``{names:normalization}``), as code, comma-separated."""


def names(noun: str) -> str:
    from attnphys.registry import all_registries

    return ", ".join(f"`{name}`" for name in all_registries()[noun].names())


PLACEHOLDERS: dict[str, Callable[[], str]] = {
    "{registries}": registries,
    "{observables}": observables,
    "{example_maps}": example_maps,
    "{claims}": claims,
    "{figures}": figures,
    "{probe_claims}": probe_claims,
}
"""Each placeholder and the function that writes its list."""


def fill(markdown: str) -> str:
    """The page with every placeholder replaced by its list."""
    for placeholder, write in PLACEHOLDERS.items():
        if placeholder in markdown:
            markdown = markdown.replace(placeholder, write())
    return _NAMES.sub(lambda m: names(m.group(1)), markdown)


def on_page_markdown(markdown: str, page, config, files) -> str:
    return fill(markdown)
