"""Build hook: the gallery's figures are made from code, by the scripts the pages show.

Every ``docs/gallery/NAME.py`` (names starting with ``_`` excepted) is an ordinary script that uses
the library and saves its figures as PNG files in its working directory. The build runs the scripts
(all in one Python process, so the library is imported once; see ``run_gallery.py``), each in its own
folder ``docs/gallery/_built/NAME/``, and adds to the site

* ``gallery/NAME/*.png``: the figures, and ``gallery/NAME/NAME.py``: the script;
* ``gallery/NAME.md``: a page with the script's docstring (first line: the title), its figures and
  its source;
* ``gallery/index.md``: the first figure of every script, linking to its page.

The figures are kept in the repository beside the scripts, keyed by a hash of the script and the runner: a
script runs again when it (or the runner) changed, so a build of a fresh clone with unchanged scripts takes
no time for the gallery. A change of the library alone does not re-run the scripts; ``make docs-gallery``
(``ATTNPHYS_DOCS_RERUN=1``) runs every script again, and ``tests/docs/test_gallery.py`` (``slow``) runs
each against the current library. ``ATTNPHYS_DOCS_GALLERY`` moves the folder. A failing script fails the
build with its traceback.
"""

from __future__ import annotations

import ast
import hashlib
import html
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "docs" / "gallery"
RUNNER = Path(__file__).with_name("run_gallery.py")
OUT = Path(os.environ.get("ATTNPHYS_DOCS_GALLERY", SCRIPTS / "_built"))
RERUN = os.environ.get("ATTNPHYS_DOCS_RERUN", "") not in ("", "0")
SECTION = "Gallery"

log = logging.getLogger("mkdocs.hooks.gallery")


def _scripts() -> list[Path]:
    return sorted(p for p in SCRIPTS.glob("*.py") if not p.name.startswith("_"))


def _key(script: Path) -> str:
    return hashlib.sha256(script.read_bytes() + RUNNER.read_bytes()).hexdigest()


def _meta(script: Path) -> dict | None:
    f = OUT / script.stem / "_meta.json"
    return json.loads(f.read_text()) if f.is_file() else None


def _run(scripts: list[Path]) -> None:
    todo = [s for s in scripts if RERUN or (_meta(s) or {}).get("key") != _key(s)]
    if not todo:
        log.info("gallery: %d scripts up to date", len(scripts))
        return
    log.info("gallery: running %s", ", ".join(s.name for s in todo))
    cmd = [sys.executable, str(RUNNER), str(OUT)] + [f"{s}={_key(s)}" for s in todo]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src")] + [p for p in [env.get("PYTHONPATH")] if p])
    env.setdefault("MPLBACKEND", "Agg")
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise PluginError(f"a gallery script failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}")


def _doc_and_source(script: Path) -> tuple[str, str, str]:
    text = script.read_text(encoding="utf-8")
    tree = ast.parse(text)
    doc = ast.get_docstring(tree) or script.stem
    title, _, body = doc.partition("\n")
    source = text
    if tree.body and isinstance(tree.body[0], ast.Expr) and isinstance(getattr(tree.body[0], "value", None),
                                                                        ast.Constant):
        end = tree.body[0].end_lineno
        source = "\n".join(text.splitlines()[end:]).strip("\n")
    return title.strip().rstrip("."), body.strip(), source


def _page(script: Path, meta: dict) -> str:
    title, body, source = _doc_and_source(script)
    stem = script.stem
    lines = [f"# {title}", "", body, ""]
    for fig in meta["figures"]:
        lines += [f"![{title}: {fig}]({stem}/{fig})", ""]
    lines += [
        f"The figures above were made by this script when the site was built "
        f"({meta['seconds']:.1f} s; [download]({stem}/{stem}.py)):",
        "",
        "```python",
        source,
        "```",
        "",
    ]
    return "\n".join(lines)


def _index(entries: list[tuple[Path, dict]]) -> str:
    lines = [
        "# Gallery",
        "",
        "Every figure here is drawn by a short script when the documentation is built, so the pictures "
        "always show what the current library computes. Each page shows the script; run it yourself "
        "with `python NAME.py` in an environment with attnphys installed.",
        "",
        '<div class="gallery-grid" markdown>',
        "",
    ]
    for script, meta in entries:
        title, _, _ = _doc_and_source(script)
        first = meta["figures"][0]
        lines += [
            '<figure markdown="span">',
            f"[![{title}]({script.stem}/{first})]({script.stem}.md)",
            f'<figcaption><a href="{script.stem}/">{html.escape(title)}</a></figcaption>',
            "</figure>",
            "",
        ]
    lines += ["</div>", ""]
    return "\n".join(lines)


def on_files(files: Files, config) -> Files:
    scripts = _scripts()
    if not scripts:
        raise PluginError(f"no gallery scripts in {SCRIPTS}")
    _run(scripts)
    entries = []
    for script in scripts:
        meta = _meta(script)
        if not meta or not meta["figures"]:
            raise PluginError(f"gallery script {script.name} saved no PNG figure in its working directory")
        folder = OUT / script.stem
        for fig in meta["figures"]:
            files.append(File.generated(config, f"gallery/{script.stem}/{fig}", abs_src_path=str(folder / fig)))
        files.append(File.generated(config, f"gallery/{script.stem}/{script.name}", abs_src_path=str(script)))
        files.append(File.generated(config, f"gallery/{script.stem}.md", content=_page(script, meta)))
        entries.append((script, meta))
    files.append(File.generated(config, "gallery/index.md", content=_index(entries)))
    _extend_nav(config, [f"gallery/{s.stem}.md" for s, _ in entries])
    return files


def _extend_nav(config, pages: list[str]) -> None:
    for item in config["nav"] or []:
        if isinstance(item, dict) and SECTION in item:
            section = item[SECTION]
            present = {v if isinstance(v, str) else next(iter(v.values())) for v in section}
            section.extend(p for p in pages if p not in present)
            return
    raise PluginError(f"mkdocs.yml: the nav has no {SECTION!r} section for the gallery pages")
