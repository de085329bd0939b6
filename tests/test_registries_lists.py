"""The lists a user reads are written from the registries: adding an entry to a registry adds it to the
command's help, the documentation's pages (through the build hook ``docs/_hooks/registries.py``) and the
docstrings that name the list."""

import importlib.util
import inspect
from pathlib import Path

import pytest

from attnphys.dmft.observables import OBSERVABLE_TABLE, PLACEHOLDER, Observable, with_observables

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def hook():
    spec = importlib.util.spec_from_file_location("registries_hook", ROOT / "docs" / "_hooks" / "registries.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_new_observable_appears_in_the_help_and_the_pages(monkeypatch, hook):
    from attnphys.dmft._commands.trajectory import TrajectoryJob

    help_text = inspect.getdoc(TrajectoryJob)
    assert PLACEHOLDER not in help_text and ", ".join(OBSERVABLE_TABLE) in help_text
    monkeypatch.setitem(OBSERVABLE_TABLE, "pe_mo", Observable(lambda st, eps, conv: st.pe[0], False, "test"))

    @with_observables
    class Job:
        """Records {observables}."""

    assert Job.__doc__.endswith("mk, pe_mo.")
    page = (ROOT / "docs" / "howto" / "dmft.md").read_text(encoding="utf-8")
    assert PLACEHOLDER in page and "`pe_mo`" in hook.fill(page) and "`mo_se`" in hook.fill(page)


def test_no_hand_written_list_of_the_observables_is_left():
    written = [
        str(p.relative_to(ROOT))
        for p in [*(ROOT / "src").rglob("*.py"), *(ROOT / "docs").rglob("*.md"), ROOT / "README.md"]
        if "mo, mo_se, mv" in p.read_text(encoding="utf-8")
    ]
    assert written == []


def test_a_new_example_map_appears_in_the_theory_page(monkeypatch, hook):
    from attnphys.dynamics.maps import EXAMPLES, LOGISTIC, Logistic

    for name, m in EXAMPLES.items():
        assert m.title and m.equation.strip() and m.facts.strip(), f"{name} does not describe itself"

    class Tent(Logistic):
        title = "tent"
        equation = r"$x' = \mu \min(x, 1-x)$"
        facts = r"$\lambda = \ln \mu$"

    monkeypatch.setitem(EXAMPLES, "tent", Tent())
    page = (ROOT / "docs" / "theory" / "dynamics.md").read_text(encoding="utf-8")
    table = hook.fill(page)
    assert "{example_maps}" in page and "| map | equation | known facts |" not in page
    assert r"| tent | $x' = \mu \min(x, 1-x)$ | $\lambda = \ln \mu$ |" in table
    assert f"| {LOGISTIC.title} | {LOGISTIC.equation} |" in table


def test_the_figures_table_of_the_reproduce_how_to_names_every_registered_figure():
    """The how-to's table of figures describes each figure in words the registry does not hold (what it shows,
    the settings of the full run); it must still name exactly the figures ``attnphys reproduce list`` shows."""
    import re

    from attnphys.reproduce import FIGURES

    page = (ROOT / "docs" / "howto" / "reproduce.md").read_text(encoding="utf-8")
    section = page.split("## The figures", 1)[1].split("\n## ", 1)[0]
    named = re.findall(r"^\| `([^`]+)` \|", section, re.M)
    assert sorted(named) == sorted(FIGURES)
