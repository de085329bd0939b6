"""The shape of the package, checked from its source: no import cycles, lower layers never name upper ones,
no private name imported across modules, no file over 900 lines, and one place that runs sweeps."""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "attnphys"

LAYERS = [
    # bottom: shared infrastructure
    ("attnphys._version", "attnphys._plugins", "attnphys._options", "attnphys._deprecated", "attnphys._contract", "attnphys._messages", "attnphys.errors", "attnphys._checks", "attnphys._arguments",
     "attnphys._paths", "attnphys._files", "attnphys._integrity", "attnphys.metadata", "attnphys.progress", "attnphys.runtime",
     "attnphys.io", "attnphys.registry"),
    # shared engines
    ("attnphys.sweeps", "attnphys.dynamics", "attnphys.expfam", "attnphys.hopfield"),
    # the pillars
    ("attnphys.dmft", "attnphys.clouds", "attnphys.probes", "attnphys.verify"),
    # the figures of every pillar's results
    ("attnphys.plots",),
    ("attnphys.reproduce",),
    # the command layer
    ("attnphys.jobs",),
    ("attnphys.demo", "attnphys.cli", "attnphys._entry", "attnphys.__main__", "attnphys"),
]
"""Layers, bottom first: a module may import its own layer and the ones below, never one above."""

SHIMS = {"attnphys.dmft.designed._moved": ("attnphys.plots",)}
"""Deprecation shims kept for one release: a name that moved up a layer forwards from its old place to the new
one (the only imports of an upper layer allowed; each goes with its shim)."""

COMMANDS = ("attnphys.jobs", "attnphys.cli")
"""The job base and the command line: the pillars' command modules (``*._commands``, ``*.jobs``) sit on it."""


def module_name(path: Path) -> str:
    rel = path.relative_to(SRC).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(name: str) -> int:
    best, depth = None, -1
    for i, layer in enumerate(LAYERS):
        for prefix in layer:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > depth:
                best, depth = i, len(prefix)
    assert best is not None, f"{name} belongs to no layer"
    if name.split(".")[-1] in ("_commands", "jobs") or "._commands." in name or name.endswith(".job"):
        return len(LAYERS) - 2  # the pillars' commands sit on the job layer
    return best


def imports(path: Path, top_level_only: bool, type_checking: bool = False):
    """(imported module, names, line) of every import of a file (inside functions too unless
    ``top_level_only``); TYPE_CHECKING blocks are left out unless ``type_checking``."""
    tree = ast.parse(path.read_text())
    name = module_name(path)
    is_pkg = path.name == "__init__.py"
    out = []

    def visit(node, top):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test) and not type_checking:
                continue
            inner = top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import) and (inner or not top_level_only):
                out.extend((a.name, [], child.lineno) for a in child.names)
            elif isinstance(child, ast.ImportFrom) and (inner or not top_level_only):
                mod = child.module or ""
                if child.level:
                    base = name.split(".") if is_pkg else name.split(".")[:-1]
                    base = base[: len(base) - child.level + 1]
                    mod = ".".join(base + ([mod] if mod else []))
                out.append((mod, [a.name for a in child.names], child.lineno))
            visit(child, inner)

    visit(tree, True)
    return out


def resolve(mod: str, names: list[str]) -> list[str]:
    """The modules of this package an import names (``from pkg import sub`` names ``pkg.sub``)."""
    if not mod.startswith("attnphys"):
        return []
    found = [f"{mod}.{n}" for n in names if f"{mod}.{n}" in MODULES]
    return found or ([mod] if mod in MODULES else [])


def test_no_import_cycle_between_modules():
    """Every import counts: at the top, inside functions and under TYPE_CHECKING (a deferred import still
    ties the two modules' designs together)."""
    graph = {m: set() for m in MODULES}
    for m, p in MODULES.items():
        for mod, names, _ in imports(p, top_level_only=False, type_checking=True):
            graph[m] |= {d for d in resolve(mod, names) if d != m and not m.startswith(d + ".")}
    state: dict[str, int] = {}
    cycles = []

    def dfs(v, stack):
        state[v] = 1
        stack.append(v)
        for w in sorted(graph[v]):
            if state.get(w) == 1:
                cycles.append(stack[stack.index(w):] + [w])
            elif w not in state:
                dfs(w, stack)
        stack.pop()
        state[v] = 2

    for v in sorted(graph):
        if v not in state:
            dfs(v, [])
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


@pytest.mark.slow
def test_lower_layers_never_name_upper_ones():
    bad = []
    for m, p in MODULES.items():
        for mod, names, line in imports(p, top_level_only=False):
            for dep in resolve(mod, names):
                if layer_of(dep) > layer_of(m) and not any(dep.startswith(s) for s in SHIMS.get(m, ())):
                    bad.append(f"{p.relative_to(SRC)}:{line}: {m} imports {dep}")
    assert not bad, "\n".join(bad)


@pytest.mark.slow
def test_no_private_name_is_imported_across_modules():
    bad = []
    for m, p in MODULES.items():
        for mod, names, line in imports(p, top_level_only=False):
            if mod.startswith("attnphys") and mod != m:
                private = [
                    n for n in names if n.startswith("_") and not n.startswith("__") and f"{mod}.{n}" not in MODULES
                ]  # a private module of the package is imported by its siblings; a private name is not
                bad += [f"{p.relative_to(SRC)}:{line}: {n} from {mod}" for n in private]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_no_source_file_over_900_lines(path):
    assert len(path.read_text().splitlines()) <= 900


def test_sweeps_run_in_one_place():
    """Only the sweep engine runs a sweep; every analysis reaches it through ``sweeps.run_task``."""
    users = [str(p.relative_to(SRC)) for p in PACKAGE.rglob("*.py")
             if "run_sweep" in p.read_text() and "sweeps" not in p.relative_to(PACKAGE).parts]
    assert users == []


def _private_part(name: str) -> bool:
    """Whether a module name below its top-level package has a private component (``attnphys.dynamics._census``)."""
    return any(part.startswith("_") and not part.startswith("__") for part in name.split(".")[2:])


def test_no_package_imports_another_packages_private_module():
    """A package reaches another one only through its public modules: every import counts (at the top, inside
    functions and under TYPE_CHECKING). The top-level private modules (``attnphys._checks`` …) are the shared
    infrastructure and are imported by everyone."""
    bad = []
    for m, p in MODULES.items():
        own = ".".join(m.split(".")[:2])
        for mod, names, line in imports(p, top_level_only=False, type_checking=True):
            for dep in resolve(mod, names):
                if ".".join(dep.split(".")[:2]) != own and _private_part(dep):
                    bad.append(f"{p.relative_to(SRC)}:{line}: {m} imports {dep}")
    assert not bad, "\n".join(bad)
