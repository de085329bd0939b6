"""Build hook: the API reference pages, generated from the package's docstrings.

For every module listed in ``MODULES`` the page ``reference/NAME.md`` is made here (the navigation in
``mkdocs.yml`` names these pages). A package that declares ``__all__`` in its ``__init__.py`` is
documented through it (the objects a user calls, wherever they are defined); a package without
``__all__`` is documented module by module (its public submodules, recursively). mkdocstrings reads
the sources statically, so nothing is imported (the probes' optional torch is not needed).
"""

from __future__ import annotations

import ast
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
MODULES = ("dmft", "dynamics", "sweeps", "expfam", "clouds", "hopfield", "probes", "plots", "jobs", "io")


def _path(module: str) -> Path:
    base = SRC / Path(*module.split("."))
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    raise PluginError(f"API reference: no module {module} under {SRC}")


def _has_all(path: Path) -> bool:
    stub = path.with_suffix(".pyi")  # a lazily loaded package lists its public names in its stub
    if stub.is_file():
        path = stub
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return True
    return False


def _submodules(module: str) -> list[str]:
    folder = _path(module).parent
    out = []
    for p in sorted(folder.iterdir()):
        if p.name.startswith("_"):
            continue
        if p.suffix == ".py":
            out.append(f"{module}.{p.stem}")
        elif p.is_dir() and (p / "__init__.py").is_file():
            out.append(f"{module}.{p.name}")
    return out


def _blocks(module: str, level: int) -> list[str]:
    path = _path(module)
    if path.name != "__init__.py" or _has_all(path):
        return [f"::: {module}", "    options:", f"      heading_level: {level}", ""]
    lines = [f"::: {module}", "    options:", f"      heading_level: {level}", "      members: false", ""]
    for sub in _submodules(module):
        lines += [f"{'#' * level} `{sub}`", ""] + _blocks(sub, level + 1)
    return lines


def page(name: str) -> str:
    module = f"attnphys.{name}"
    lines = [f"# `{module}`", "", f"::: {module}", "    options:", "      show_root_heading: false",
             "      show_root_toc_entry: false", "      members: false", ""]
    path = _path(module)
    if path.name == "__init__.py" and not _has_all(path):
        for sub in _submodules(module):
            lines += [f"## `{sub}`", ""] + _blocks(sub, 3)
    else:
        lines = [f"# `{module}`", "", f"::: {module}", "    options:", "      show_root_heading: false",
                 "      show_root_toc_entry: false", ""]
    return "\n".join(lines)


def on_files(files: Files, config) -> Files:
    for name in MODULES:
        files.append(File.generated(config, f"reference/{name}.md", content=page(name)))
    return files
