"""Build hook: the lists a reader sees, written from the package's registries.

A page writes a placeholder where a list belongs, and the build replaces it with the registry's contents:

* ``{observables}`` — the names of the observables' registry (``attnphys.dmft.observables.observable_names``:
  the library's own and those of outside packages), as code, comma-separated (the same placeholder fills
  the commands' help texts: ``attnphys.dmft.observables.with_observables``);
* ``{example_maps}`` — the table of the example maps' registry (``attnphys.dynamics.maps.example_maps``):
  each map's ``title``, ``equation`` and ``facts`` (class attributes of the map);
* ``{claims}`` — the table of the claims ``attnphys verify`` checks (``attnphys.verify.all_claims``):
  each claim's name, paper reference and tolerance;
* ``{figures}`` — the table of the figures ``attnphys reproduce`` runs (``attnphys.reproduce.FIGURES``): each
  figure's name, what it shows (``shows``, else its title) and its full run (``full_run``, else its settings).

Adding an entry to a registry adds it to every page that shows the list; ``tests/test_registries_lists.py``
checks this.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
if str(SRC) not in sys.path:  # the pages describe the source tree they are built from
    sys.path.insert(0, str(SRC))


def observables() -> str:
    from attnphys.dmft.observables import observable_names

    return ", ".join(f"`{name}`" for name in observable_names())


def example_maps() -> str:
    from attnphys.dynamics.maps import example_maps as registered

    lines = ["| map | equation | known facts |", "|---|---|---|"]
    for name, m in registered().items():
        lines.append(f"| {m.title or name} | {m.equation} | {m.facts} |")
    return "\n".join(lines)


def claims() -> str:
    from attnphys.verify import all_claims

    lines = ["| claim | paper | tolerance |", "|---|---|---|"]
    for c in all_claims():
        lines.append(f"| {c.name.replace('|', '∣')} | {c.reference} | {c.tol:.0e} |")
    return "\n".join(lines)


def figures() -> str:
    from attnphys.reproduce import FIGURES

    lines = ["| name | what | settings of the full run |", "|---|---|---|"]
    for name, f in FIGURES.items():
        run = f.full_run or ", ".join(f"{k} = {v}" for k, v in f.settings().items())  # an outside figure's
        lines.append(f"| `{name}` | {f.shows or f.title} | {run} |")
    return "\n".join(lines)


PLACEHOLDERS: dict[str, Callable[[], str]] = {
    "{observables}": observables,
    "{example_maps}": example_maps,
    "{claims}": claims,
    "{figures}": figures,
}
"""Each placeholder and the function that writes its list."""


def fill(markdown: str) -> str:
    """The page with every placeholder replaced by its list."""
    for placeholder, write in PLACEHOLDERS.items():
        if placeholder in markdown:
            markdown = markdown.replace(placeholder, write())
    return markdown


def on_page_markdown(markdown: str, page, config, files) -> str:
    return fill(markdown)
