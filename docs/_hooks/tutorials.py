"""Build hook: the tutorials, Jupyter notebooks under ``docs/tutorials/`` kept with their outputs.

A tutorial is an ordinary notebook. It is stored executed: its outputs (figures, tables, progress) are those
of its last run, and its metadata holds the hash of its code cells (``attnphys.source_hash``). The build
re-executes a notebook (nbclient, a fresh kernel of this Python, working directory ``docs/tutorials``) only
when its code changed since that run, or with ``ATTNPHYS_DOCS_RERUN=1`` (``make docs-gallery``); otherwise
the stored outputs are shown, so a build with unchanged notebooks costs no computation.
``tests/docs/test_tutorials.py`` (``slow``) executes every notebook against the current library.

Each notebook becomes a page ``tutorials/NAME.md``: its markdown cells as written (the equations typeset
like every page), its code cells as Python blocks, and its outputs: figures as PNG files beside the page,
text as text blocks, the live progress bar as its final HTML. The pages are added to the navigation's
"Tutorials" section in file-name order.

    python docs/_hooks/tutorials.py run docs/tutorials/NAME.ipynb [...]   executes and stores notebooks
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "docs" / "tutorials"
SECTION = "Tutorials"
RERUN = os.environ.get("ATTNPHYS_DOCS_RERUN", "") not in ("", "0")
TIMEOUT_S = 600


def source_hash(nb) -> str:
    """The hash of a notebook's code cells (what its outputs depend on)."""
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    return hashlib.sha256(json.dumps(code).encode()).hexdigest()


def stored_hash(nb) -> str | None:
    return nb.metadata.get("attnphys", {}).get("source_hash")


def execute(path: Path) -> float:
    """Run the notebook at ``path`` in a fresh kernel and store it with its outputs and the hash of its code
    (written to a sibling first, then renamed). Returns the seconds it ran."""
    import nbclient
    import nbformat

    nb = nbformat.read(path, as_version=4)
    t0 = time.perf_counter()
    env_backend = os.environ.pop("MPLBACKEND", None)  # the notebook sees the kernel's own default backend
    try:
        nbclient.NotebookClient(
            nb, timeout=TIMEOUT_S, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
        ).execute()
    finally:
        if env_backend is not None:
            os.environ["MPLBACKEND"] = env_backend
    seconds = time.perf_counter() - t0
    nb.metadata["attnphys"] = {"source_hash": source_hash(nb), "seconds": round(seconds, 1)}
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        nbformat.write(nb, tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return seconds


def _text_block(text: str) -> list[str]:
    text = text.rstrip("\n")
    return ["```text", text, "```", ""] if text.strip() else []


def page(nb, stem: str) -> tuple[str, dict[str, bytes]]:
    """The markdown page of an executed notebook and its figures (file name → PNG bytes)."""
    lines: list[str] = []
    files: dict[str, bytes] = {}
    seconds = nb.metadata.get("attnphys", {}).get("seconds")
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            lines += [cell.source, ""]
            if i == 0 and seconds is not None:
                lines += [
                    f'<p class="tutorial-note">A notebook: <a href="../{stem}.ipynb" download>download</a> it and '
                    f"run it with attnphys installed; the outputs below are those of its last run ({seconds:.0f} s "
                    "on a 2-core machine).</p>",
                    "",
                ]
            continue
        if cell.cell_type != "code":
            continue
        lines += ["```python", cell.source, "```", ""]
        for j, out in enumerate(cell.get("outputs", [])):
            kind = out.get("output_type")
            if kind == "stream":
                lines += _text_block(out.get("text", ""))
            elif kind == "error":
                lines += _text_block(f"{out.get('ename')}: {out.get('evalue')}")
            elif kind in ("execute_result", "display_data"):
                data = out.get("data", {})
                if "image/png" in data:
                    name = f"{stem}_{i}_{j}.png"
                    files[name] = base64.b64decode(data["image/png"])
                    lines += [f"![output of cell {i}]({stem}/{name})", ""]
                elif "attnphys-progress" in data.get("text/html", ""):
                    lines += [data["text/html"], ""]
                elif "text/plain" in data:
                    lines += _text_block(data["text/plain"])
    return "\n".join(lines), files


def _notebooks() -> list[Path]:
    return sorted(p for p in NOTEBOOKS.glob("*.ipynb") if not p.name.startswith((".", "_")))


def on_files(files, config):
    import nbformat
    from mkdocs.exceptions import PluginError
    from mkdocs.structure.files import File

    pages = []
    for path in _notebooks():
        nb = nbformat.read(path, as_version=4)
        if RERUN or stored_hash(nb) != source_hash(nb):
            try:
                execute(path)
            except Exception as e:  # noqa: BLE001
                raise PluginError(f"tutorial {path.name} failed: {e}") from None
            nb = nbformat.read(path, as_version=4)
        text, figures = page(nb, path.stem)
        for name, data in figures.items():
            files.append(File.generated(config, f"tutorials/{path.stem}/{name}", content=data))
        files.append(File.generated(config, f"tutorials/{path.stem}.md", content=text))
        pages.append(f"tutorials/{path.stem}.md")
    for item in config["nav"] or []:
        if isinstance(item, dict) and SECTION in item:
            section = item[SECTION]
            present = {v if isinstance(v, str) else next(iter(v.values())) for v in section}
            section.extend(p for p in pages if p not in present)
            return files
    raise PluginError(f"mkdocs.yml: the nav has no {SECTION!r} section for the tutorials")


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] != "run":
        print(__doc__.rsplit("\n\n", 1)[-1], file=sys.stderr)
        return 2
    for p in argv[1:]:
        print(f"{p}: {execute(Path(p).resolve()):.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
