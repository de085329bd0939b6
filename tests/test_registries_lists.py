"""The lists a user reads are written from the registries: adding an entry to a registry adds it to the
command's help, the documentation's pages (through the build hook ``docs/_hooks/registries.py``) and the
docstrings that name the list."""

import inspect
from pathlib import Path

from attnphys.dmft.observables import OBSERVABLE_TABLE, PLACEHOLDER, Observable, with_observables

ROOT = Path(__file__).resolve().parents[1]


def test_a_new_observable_appears_in_the_help_and_the_pages(monkeypatch, hook):
    from attnphys.dmft._commands.trajectory import TrajectoryJob

    help_text = inspect.getdoc(TrajectoryJob)
    assert PLACEHOLDER not in help_text and ", ".join(OBSERVABLE_TABLE) in help_text
    last = list(OBSERVABLE_TABLE)[-1]  # the registry's last observable, whichever it is
    monkeypatch.setitem(OBSERVABLE_TABLE, "pe_mo", Observable(lambda st, eps, conv: st.pe[0], False, "test"))

    @with_observables
    class Job:
        """Records {observables}."""

    assert Job.__doc__.endswith(f"{last}, pe_mo.")
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


def test_the_figures_table_of_the_reproduce_how_to_is_written_from_the_registry(monkeypatch, hook):
    """The how-to's table of figures is the registry's: a figure added to ``FIGURES`` gets its row (what it
    shows, its full run), and the page holds no copied row."""
    from attnphys.reproduce import FIGURES
    from attnphys.reproduce.particles import ScalingFigure

    class Extra(ScalingFigure):
        name = "particles-extra"
        shows = "an extra figure ([particles §9](../theory/particles.md#9-critical-attention-scaling))"
        full_run = "one token"

    monkeypatch.setitem(FIGURES, "particles-extra", Extra())
    page = (ROOT / "docs" / "howto" / "reproduce.md").read_text(encoding="utf-8")
    section = page.split("## The figures", 1)[1].split("\n## ", 1)[0]
    assert "{figures}" in section and "| `fig3a` |" not in section
    table = hook.fill(section)
    assert (
        "| `particles-extra` | an extra figure ([particles §9](../theory/particles.md#9-critical-attention-scaling)) | one token |"
        in table
    )
    for name, f in FIGURES.items():
        assert f.shows and f.full_run, name
        assert f"| `{name}` | {f.shows} | {f.full_run} |" in table
    assert (
        "| `fig3a` | Fig. 3a: bifurcation diagram of `mo_se[0]` over β_o ∈ [0, 3] | 4001 values, each from the published β_o = 3 checkpoint; 120,000 steps, 100,000 discarded, 20,000 recorded; 3 Lyapunov exponents |"
        in table
    )
