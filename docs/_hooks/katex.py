"""Build hook: serve the vendored KaTeX with the site, so that equations are typeset offline.

``make docs-vendor`` installs the pinned KaTeX package (``docs/_hooks/package.json``) from the npm
registry into ``build/docs-vendor``; this hook adds its ``dist`` folder (script, style sheet, fonts) to
the site under ``assets/katex/``. Nothing is fetched at build time or when a page is viewed: the pages
load KaTeX from the site itself (``extra_javascript`` / ``extra_css`` in ``mkdocs.yml``), and
``javascripts/katex-render.js`` typesets the ``arithmatex`` elements.
"""

from __future__ import annotations

import os
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
