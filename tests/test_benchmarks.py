"""The benchmark scripts stand on the package: every name they import from attnphys exists (a script that
breaks when the package moves a name is found here, not when someone next measures)."""

import ast
import importlib
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).parents[1] / "benchmarks").glob("*.py"))


def _imports(path: Path) -> list[tuple[str, str | None]]:
    """(module, name) of every ``from attnphys… import name`` and (module, None) of every ``import attnphys…``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "attnphys":
            out += [(node.module, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names if a.name.split(".")[0] == "attnphys"]
    return out


def test_there_are_benchmarks():
    assert len(BENCHMARKS) >= 10
    assert any(_imports(p) for p in BENCHMARKS)


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.name)
def test_every_name_a_benchmark_imports_exists(path):
    for module, name in _imports(path):
        mod = importlib.import_module(module)
        if name is None or hasattr(mod, name):
            continue
        importlib.import_module(f"{module}.{name}")  # a submodule; raises ImportError naming it otherwise
