"""Build hook: serve the vendored KaTeX with the site, so that equations are typeset offline.

``make docs-vendor`` installs the pinned KaTeX package (``docs/_hooks/package.json``) from the npm
registry into ``build/docs-vendor``; this hook adds its ``dist`` folder (script, style sheet, fonts) to
the site under ``assets/katex/``. Nothing is fetched at build time or when a page is viewed: the pages
load KaTeX from the site itself (``extra_javascript`` / ``extra_css`` in ``mkdocs.yml``), and
``javascripts/katex-render.js`` typesets the ``arithmatex`` elements.

Every page's HTML is read once more before it is written: a TeX delimiter (``$$``, ``\\(``, ``\\[``)
left in the text outside the ``arithmatex`` elements and code is an equation that Markdown did not hand
to KaTeX (a display formula inside a line, say) and would be shown raw, so the build stops there naming
the page and the text around it, before the browser check.
"""

from __future__ import annotations

import os
from html.parser import HTMLParser
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
VENDOR = Path(os.environ.get("ATTNPHYS_DOCS_VENDOR", ROOT / "build" / "docs-vendor"))
DIST = VENDOR / "node_modules" / "katex" / "dist"
WANTED = ("katex.min.js", "katex.min.css")


def on_files(files: Files, config) -> Files:
    if not all((DIST / name).is_file() for name in WANTED):
        raise PluginError(f"KaTeX is not installed in {VENDOR}; run `make docs-vendor` (npm) first")
    for path in sorted(DIST.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(DIST).as_posix()
        if rel in WANTED or rel.startswith("fonts/") and path.suffix in (".woff2", ".woff", ".ttf"):
            files.append(File.generated(config, f"assets/katex/{rel}", abs_src_path=str(path)))
    return files


RAW_DELIMITERS = ("$$", "\\(", "\\[")


class _VisibleText(HTMLParser):
    """The text of a page outside the ``arithmatex`` elements, code and scripts."""

    SKIPPED = frozenset({"pre", "code", "script", "style"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[bool] = []  # one entry per open element: is it (inside) a skipped one
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        classes = (dict(attrs).get("class") or "").split()
        skipped = bool(self.stack and self.stack[-1]) or tag in self.SKIPPED or "arithmatex" in classes
        if tag not in ("br", "img", "hr", "input", "meta", "link", "wbr", "source"):
            self.stack.append(skipped)

    def handle_endtag(self, tag) -> None:
        if tag not in ("br", "img", "hr", "input", "meta", "link", "wbr", "source") and self.stack:
            self.stack.pop()

    def handle_data(self, data) -> None:
        if not (self.stack and self.stack[-1]):
            self.parts.append(data)


def raw_tex(html: str) -> list[str]:
    """The places (with 30 characters either side) where a TeX delimiter survives outside formulas."""
    parser = _VisibleText()
    parser.feed(html)
    text = "".join(parser.parts)
    found = []
    for delimiter in RAW_DELIMITERS:
        at = text.find(delimiter)
        while at >= 0:
            found.append(" ".join(text[max(0, at - 30) : at + 30].split()))
            at = text.find(delimiter, at + len(delimiter))
    return found


def on_page_content(html: str, page, config, files) -> str:
    raw = raw_tex(html)
    if raw:
        raise PluginError(
            f"{page.file.src_uri}: TeX outside a formula would be shown raw (a display equation must "
            f"stand in its own paragraph, $$ on their own lines): {raw[:3]}"
        )
    return html
