"""Every theory citation in the source resolves to a page and a numbered section in docs/theory.

Docstrings and comments cite the theory pages as ``(theory: docs/theory/dmft.md §3.4)``; several
sections may follow one page (``§3.4, §5.1`` or ``§3.4 and §5.1``), and a page may be cited without a
section. A cited page must exist, and every cited section number must be the number of one of its
headings (``## 3. Title`` or ``### 3.4 Title``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
DOCS = ROOT / "docs"

CITATION = re.compile(
    r"docs/theory/(?P<page>[A-Za-z0-9_-]+)\.md"
    r"(?P<secs>(?:(?:\s*,\s*|\s+and\s+|\s*)§\s?\d+(?:\.\d+)*)*)"
)
SECTION = re.compile(r"§\s?(\d+(?:\.\d+)*)")
HEADING = re.compile(r"^#{2,6}\s+(\d+(?:\.\d+)*)\.?\s+\S", re.MULTILINE)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)


def citations(text: str) -> list[tuple[str, tuple[str, ...]]]:
    """(page, section numbers) of every citation in ``text``; no sections for a bare page citation."""
    return [(m.group("page"), tuple(SECTION.findall(m.group("secs") or ""))) for m in CITATION.finditer(text)]


def section_numbers(markdown: str) -> set[str]:
    """Numbers of the numbered headings of a page (headings inside code fences do not count)."""
    return set(HEADING.findall(FENCE.sub("", markdown)))


def unresolved(src: Path, docs: Path) -> list[str]:
    """One line per citation under ``src`` that names a missing page or section."""
    pages: dict[str, set[str] | None] = {}
    problems = []
    for path in sorted(src.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for page, secs in citations(text):
            if page not in pages:
                f = docs / "theory" / f"{page}.md"
                pages[page] = section_numbers(f.read_text(encoding="utf-8")) if f.is_file() else None
            where = path.relative_to(src.parent) if src.parent in path.parents else path
            if pages[page] is None:
                problems.append(f"{where}: docs/theory/{page}.md does not exist")
                continue
            for s in secs:
                if s not in pages[page]:
                    problems.append(f"{where}: docs/theory/{page}.md has no section {s}")
    return problems


# -- the repository ----------------------------------------------------------------------------------

def test_every_theory_citation_in_src_resolves():
    problems = unresolved(SRC, DOCS)
    assert not problems, "theory citations that do not resolve:\n" + "\n".join(problems)


def test_the_source_cites_the_theory_pages():
    """The scan finds the citations that exist (a scan that finds nothing would pass vacuously)."""
    found = [c for p in SRC.rglob("*.py") for c in citations(p.read_text(encoding="utf-8"))]
    assert len(found) >= 5


# -- the checker itself ------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text, expected",
    [
        ("(theory: docs/theory/dmft.md §3.4)", [("dmft", ("3.4",))]),
        ("see docs/theory/dmft.md §3.4, §5.1 and §6", [("dmft", ("3.4", "5.1", "6"))]),
        ("docs/theory/sweeps.md §2.1 and docs/theory/io.md", [("sweeps", ("2.1",)), ("io", ())]),
        ("(theory: docs/theory/dynamics.md)", [("dynamics", ())]),
        ("docs/theory/dmft.md §3.4 step 3", [("dmft", ("3.4",))]),
        ("docs/theory/dmft.md §1.2.3.", [("dmft", ("1.2.3",))]),
        ("spec §3.4 (not a theory citation)", []),
    ],
)
def test_citation_parser(text, expected):
    assert citations(text) == expected


def test_heading_numbers():
    md = "# Title\n\n## 1. One\n\n### 1.1 Sub\n\n## 2. Two\n\n```\n## 9. in code\n```\n\n#### 2.1.3 Deep\n"
    assert section_numbers(md) == {"1", "1.1", "2", "2.1.3"}


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "docs" / "theory").mkdir(parents=True)
    (tmp_path / "docs" / "theory" / "dmft.md").write_text("# DMFT\n\n## 3. Map\n\n### 3.4 One step\n")
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    return tmp_path


def _write(tree: Path, text: str) -> list[str]:
    (tree / "src" / "pkg" / "mod.py").write_text(f'"""{text}"""\n')
    return unresolved(tree / "src", tree / "docs")


def test_checker_accepts_existing_sections(tree):
    assert _write(tree, "(theory: docs/theory/dmft.md §3.4) and docs/theory/dmft.md §3") == []


def test_checker_accepts_a_page_without_section(tree):
    assert _write(tree, "(theory: docs/theory/dmft.md)") == []


def test_checker_fails_on_a_missing_section(tree):
    problems = _write(tree, "(theory: docs/theory/dmft.md §3.5)")
    assert len(problems) == 1 and "no section 3.5" in problems[0]


def test_checker_fails_on_a_missing_subsection_of_a_list(tree):
    problems = _write(tree, "(theory: docs/theory/dmft.md §3.4, §7.1)")
    assert len(problems) == 1 and "no section 7.1" in problems[0]


def test_checker_fails_on_a_missing_page(tree):
    problems = _write(tree, "(theory: docs/theory/nowhere.md §1)")
    assert len(problems) == 1 and "nowhere.md does not exist" in problems[0]


# -- no citation of the external specification ------------------------------------------------------

OLD_CITATION = re.compile(r"\bspec(?:ification)?\.md\b|\bspec\s?§|\bthe spec\b", re.IGNORECASE)


def test_no_citation_of_the_external_spec():
    """The specification is not part of the repository: source and docs cite the theory pages instead."""
    found = []
    for path in sorted(SRC.rglob("*.py")) + sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OLD_CITATION.search(line):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "citations of the external spec:\n" + "\n".join(found)


# -- command lines in the documentation ---------------------------------------------------------------

COMMAND_DOCS = [ROOT / "README.md", *sorted((DOCS / "howto").glob("*.md")), DOCS / "index.md"]


def _documented_command_lines(path: Path) -> list[tuple[int, list[str]]]:
    """(line number, words) of every ``attnphys …`` command line in the code blocks of a page (fenced or
    indented; ``$ `` prompts, ``\\`` continuations and trailing ``#`` comments handled; HTML comments
    skipped)."""
    import shlex

    text = re.sub(r"<!--.*?-->", lambda m: "\n" * m.group(0).count("\n"), path.read_text(encoding="utf-8"),
                  flags=re.DOTALL)
    lines = text.splitlines()
    out, i, fenced = [], 0, False
    while i < len(lines):
        raw = lines[i]
        if raw.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            i += 1
            continue
        line = raw.strip()
        start = i + 1
        if line.startswith("$ "):
            line = line[2:]
        if (fenced or raw.startswith("    ")) and (line.startswith("attnphys ") or line == "attnphys"):
            while line.endswith("\\") and i + 1 < len(lines):
                i += 1
                line = line[:-1] + " " + lines[i].strip()
            line = line.split(" #")[0]
            try:
                words = shlex.split(line.replace("`", ""))
            except ValueError:
                words = line.split()
            out.append((start, words[1:]))
        i += 1
    return out


def _check_command_line(root, words: list[str]) -> list[str]:
    """Problems of one command line against the click tree of the ``attnphys`` command."""
    cmd, problems = root, []
    ctx_opts = {o for p in root.params for o in (*p.opts, *p.secondary_opts)}
    while hasattr(cmd, "commands") and words:   # a group (typer's own click classes)
        w = words[0]
        if w.startswith("-"):
            if w.split("=")[0] not in ctx_opts and w != "--help":
                problems.append(f"unknown global option {w}")
            words = words[1:]
            continue
        sub = cmd.get_command(None, w)  # the command groups load their commands on demand
        if sub is None:
            return [f"unknown command {w!r}"]
        cmd, words = sub, words[1:]
    opts = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)} | {"--help"}
    for w in words:
        if w.startswith("--") and w.split("=")[0] not in opts:
            problems.append(f"{cmd.name}: unknown option {w}")
    return problems


@pytest.mark.slow
def test_documented_command_lines_use_real_commands_and_options():
    """Every ``attnphys …`` line of the README and the how-to pages names an existing command and only
    options that command has (checked against the command line itself, without running anything)."""
    import typer

    from attnphys.cli import app

    root = typer.main.get_command(app)
    problems, checked = [], 0
    for path in COMMAND_DOCS:
        for n, words in _documented_command_lines(path):
            checked += 1
            problems += [f"{path.relative_to(ROOT)}:{n}: {p}" for p in _check_command_line(root, words)]
    assert checked >= 20, "the scan finds the documented command lines"
    assert not problems, "documented command lines that do not match the command:\n" + "\n".join(problems)


def test_the_command_line_checker_fails_on_wrong_lines():
    import typer

    from attnphys.cli import app

    root = typer.main.get_command(app)
    assert _check_command_line(root, ["dmft", "trajectory", "--beta-o", "1", "--out", "x.zarr"]) == []
    assert _check_command_line(root, ["dmft", "trajectory", "--no-such-option", "1"]) == \
        ["trajectory: unknown option --no-such-option"]
    assert _check_command_line(root, ["dmft", "nonsense"]) == ["unknown command 'nonsense'"]
