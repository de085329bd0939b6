"""The built site (``make docs`` → ``site/``) and its browser check. Skipped where the site is not built or
Chromium is missing, unless ``ATTNPHYS_REQUIRE_SITE=1`` (``make docs-check`` sets it, after building both),
which turns the skips into failures."""

from __future__ import annotations

import html
import importlib.util
import os
import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "site"
REQUIRED = os.environ.get("ATTNPHYS_REQUIRE_SITE", "") not in ("", "0")


def _need(ok: bool, why: str) -> None:
    if not ok:
        if REQUIRED:
            pytest.fail(why)
        pytest.skip(why)


@pytest.fixture(scope="module")
def site() -> Path:
    _need((SITE / "index.html").is_file(), "the site is not built (make docs)")
    return SITE


def _load_checker():
    spec = importlib.util.spec_from_file_location("docs_check", ROOT / "scripts" / "docs_check.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


@pytest.fixture(scope="module")
def checker():
    mod = _load_checker()
    _need(Path(mod.CHROMIUM).exists() and Path(mod.CHROMEDRIVER).exists(), "chromium is missing (make docs-browser)")
    pytest.importorskip("selenium")
    return mod


def _text(page: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))


def _rows(page: Path) -> set[tuple[str, ...]]:
    """The rows of every table of a page, as tuples of their cells' text."""
    s = page.read_text(encoding="utf-8")
    rows = set()
    for tr in re.findall(r"<tr>(.*?)</tr>", s, re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)
        rows.add(tuple(html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in cells))
    return rows


def test_the_dmft_reference_shows_every_option_with_its_default(site):
    from attnphys.dmft import BifurcationOptions

    page = site / "reference" / "dmft" / "index.html"
    rows = _rows(page)
    for r in BifurcationOptions.table():
        help_text = r["help"].replace("`", "")  # markdown code in the help renders as code
        assert (r["name"], r["type"], r["default"], r["bounds"], help_text) in rows, r
    # the signature is the real one: the options are keywords of bifurcation(...)
    text = _text(page).replace("\n", " ")
    assert re.search(r"bifurcation\(\s*cfg\b[^)]*?\bsweep\b[^)]*?section_tol: float = 0\.001", text)


def test_an_options_class_lists_its_fields(site):
    text = _text(site / "reference" / "dmft" / "index.html")
    i = text.index("BifurcationOptions")
    assert "section_tol" in text[i:]


def _planted(site: Path, tmp_path: Path, page: str, fragment: str) -> Path:
    copy = tmp_path / "site"
    shutil.copytree(site, copy)
    f = copy / page / "index.html"
    s = f.read_text(encoding="utf-8")
    i = s.index(">", s.index("<article")) + 1
    f.write_text(s[:i] + fragment + s[i:], encoding="utf-8")
    return copy


def _problems(checker, site_dir: Path) -> list[str]:
    with checker.serve(site_dir) as base, checker.browser() as driver:
        return checker.check_site(driver, base, None)


def test_the_check_finds_a_katex_error_on_a_page_of_the_navigation(site, checker, tmp_path):
    # theory/dynamics is in no list of the checker: it is found through the navigation
    assert "theory/dynamics/" not in checker.MINIMUM
    planted = _planted(site, tmp_path, "theory/dynamics", r'<p><span class="arithmatex">\(\frac{1}{\)</span></p>')
    problems = _problems(checker, planted)
    assert any("/theory/dynamics/" in p and "KaTeX errors" in p for p in problems), problems


def test_the_check_finds_raw_markdown_and_a_broken_link(site, checker, tmp_path):
    planted = _planted(site, tmp_path, "gallery", '<p>**not bold** <a href="../no-such-page/">x</a></p>')
    problems = _problems(checker, planted)
    assert any("/gallery/" in p and "raw markdown" in p for p in problems), problems
    assert any("broken link" in p and "no-such-page" in p for p in problems), problems


def test_the_check_finds_a_control_character_in_a_source_page(tmp_path):
    checker = _load_checker()
    (tmp_path / "page.md").write_text("a formula $\tau$ that lost its backslash\n", encoding="utf-8")
    (tmp_path / "fine.md").write_text("$\\tau$\n", encoding="utf-8")
    bad = checker.control_characters(tmp_path)
    assert len(bad) == 1 and "page.md:1" in bad[0] and "U+0009" in bad[0]


def test_the_repository_pages_hold_no_control_character():
    assert _load_checker().control_characters(ROOT / "docs") == []


def _load_katex_hook():
    pytest.importorskip("mkdocs")
    spec = importlib.util.spec_from_file_location("katex_hook", ROOT / "docs" / "_hooks" / "katex.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


@pytest.mark.parametrize(
    ("page", "found"),
    [
        ('<p>weights <span class="arithmatex">\\(P\\)</span> and</p>', 0),
        ('<div class="arithmatex">\\[\nP = 1\n\\]</div>', 0),
        ("<p>the code <code>$$x$$</code> and <pre>\\(y\\)</pre></p>", 0),
        ("<li>attention weights $$P_{ij} = 1,$$ the rotary</li>", 2),
        ("<p>inline \\(x\\) left by Markdown</p>", 1),
        ('<p><span class="arithmatex">\\(a\\)</span> then raw \\[b\\]<br>after</p>', 1),
    ],
)
def test_the_build_refuses_tex_left_outside_a_formula(page, found):
    """``make docs`` stops on a page whose equation Markdown did not hand to KaTeX (the browser check
    would see it shown raw); formulas and code are not read."""
    assert len(_load_katex_hook().raw_tex(page)) == found
