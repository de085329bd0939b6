"""Write the committed lists of the public surface that the tests hold still.

    python scripts/public_surface.py signatures    tests/data/public_signatures.txt from the working tree
    python scripts/public_surface.py released      tests/data/surface_<version>.txt of each release in git
    python scripts/public_surface.py migration     print the changelog's migration table (old name -> new)

``signatures``: every name of every public package's or module's ``__all__`` with its signature (``inspect.signature``), one
line each. ``tests/test_public_surface.py`` compares the package with this snapshot and fails on any change:
run this after a deliberate change of the public surface, and commit the snapshot with a changelog line
(and a deprecation shim for a renamed or removed name).

``released``: the public modules and names of each release of ``RELEASES`` (the commit that released it), read from the
sources in git without importing them: every module outside a private (``_name``) module, and in each the
names of its ``__all__``, or else the functions, classes and constants it defines. The tests import each of
them from the working tree (a moved or renamed one through its deprecation shim). The list only changes
when a release is added to ``RELEASES``.

Run from the repository root with the package importable (``PYTHONPATH=src``).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"

RELEASES = {
    "0.2.0": "9ad9e28",
    "0.3.0": "9491da3",
    "0.4.0": "5c25689",
    "0.4.1": "6545340",
    "0.4.2": "1c85255",
    "0.4.3": "afbab93",
    "0.4.4": "270a356",
    "0.4.5": "96a8806",
    "0.4.6": "6abab86",
}
"""Each release whose names are kept importable, and the commit that released it."""


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def _defined(tree: ast.Module) -> list[str]:
    """The names a module's ``__all__`` lists, or else the public names it defines at top level."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return sorted(ast.literal_eval(node.value))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return sorted(n for n in names if not n.startswith("_"))


def released(version: str) -> list[str]:
    """``module`` and ``module:name`` lines of a release's public surface."""
    commit = RELEASES[version]
    lines = []
    files = set(_git("ls-tree", "-r", "--name-only", commit, "src/attnphys").split())
    for path in sorted(files):
        parts = Path(path).relative_to("src").with_suffix("").parts
        if not path.endswith(".py") or parts[-1] == "__main__":
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if any(p.startswith("_") for p in parts):
            continue
        module = ".".join(parts)
        lines.append(module)
        stub = path[:-3] + ".pyi"  # a lazily loaded package lists its public names in its stub
        tree = ast.parse(_git("show", f"{commit}:{stub if stub in files else path}"))
        lines += [f"{module}:{name}" for name in _defined(tree)]
    return lines


def _has_all(path: Path) -> bool:
    stub = path.with_suffix(".pyi")  # a lazily loaded package lists its public names in its stub
    tree = ast.parse((stub if stub.is_file() else path).read_text(encoding="utf-8"))
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        for t in targets:
            names = t.elts if isinstance(t, ast.Tuple) else [t]
            if any(isinstance(n, ast.Name) and n.id == "__all__" for n in names):
                return True
    return False


def packages() -> list[str]:
    """Every public package and module of the working tree that declares ``__all__`` (no private part)."""
    src = ROOT / "src"
    out = []
    for path in sorted((src / "attnphys").rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not any(p.startswith("_") for p in parts) and _has_all(path):
            out.append(".".join(parts))
    return out


def signature_lines() -> list[str]:
    """``package:name  signature`` for every name of every package's ``__all__``."""
    import importlib
    import warnings

    lines = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for package in packages():
            module = importlib.import_module(package)
            for name in sorted(getattr(module, "__all__", ())):
                obj = getattr(module, name)
                lines.append(f"{package}:{name}  {describe(obj)}")
    return lines


def describe(obj: object) -> str:
    """The text that stands for a public name: its kind and signature, or its type for a constant."""
    import inspect

    if inspect.ismodule(obj):
        if not hasattr(obj, "__wrapped__"):
            return "module"
        obj = obj.__wrapped__  # a module of 0.2.0 imported over the package's function of the same name
    kind = "class" if inspect.isclass(obj) else "function" if callable(obj) else type(obj).__name__
    if not callable(obj):
        return kind
    try:
        sig = str(inspect.signature(obj))
    except (TypeError, ValueError):
        sig = "(...)"
    return f"{kind}{re.sub(r' at 0x[0-9a-fA-F]+', '', sig)}"


def migration_table() -> str:
    """The changelog's migration table, from the table of :mod:`attnphys._deprecated`: one row per old
    module and replacement."""
    from attnphys import _deprecated

    rows: dict[tuple[str, str], list[str]] = {}
    for module, replacement in _deprecated.MODULES.items():
        rows.setdefault((module, replacement), []).insert(0, "(the module)")
    for key, (_target, replacement) in _deprecated.MOVED.items():
        module, _, name = key.partition(":")
        new_module = replacement.rpartition(".")[0]
        if replacement == f"{new_module}.{name}":  # the same name in another module
            replacement = f"{new_module}, same name"
        rows.setdefault((module, replacement), []).append(f"`{name}`")
    for key, replacement in _deprecated.REMOVED.items():
        module, _, name = key.partition(":")
        rows.setdefault((module, f"{replacement}; calling the old name raises"), []).append(f"`{name}`")
    lines = ["| 0.2.0 | names | 0.3.0 |", "|---|---|---|"]
    for (module, replacement), names in sorted(rows.items()):
        lines.append(f"| `{module}` | {', '.join(names)} | {_code(replacement)} |")
    return "\n".join(lines)


def _code(text: str) -> str:
    """Dotted names of the replacement text in backticks."""
    return re.sub(r"(attnphys(?:\.\w+)+(?:\((?:[^()]|\([^()]*\))*\))?)", r"`\1`", text)


def main(argv: list[str]) -> int:
    what = argv[1] if len(argv) > 1 else ""
    if what == "signatures":
        out = DATA / "public_signatures.txt"
        out.write_text("\n".join(signature_lines()) + "\n", encoding="utf-8")
    elif what == "released":
        for version in RELEASES:
            out = DATA / f"surface_{version}.txt"
            out.write_text("\n".join(released(version)) + "\n", encoding="utf-8")
    elif what == "migration":
        print(migration_table())
        return 0
    else:
        print(__doc__)
        return 2
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
