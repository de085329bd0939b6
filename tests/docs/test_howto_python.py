"""Every Python snippet of the how-to pages and the README is valid as written: it compiles, and every name
it imports from attnphys exists and is public (in its module's ``__all__``)."""

import ast
import importlib
import importlib.util
import re
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs" / "howto").glob("*.md")) + [ROOT / "README.md"]
BLOCK = re.compile(r"^(?P<indent>[ ]*)```python\n(?P<code>.*?)^(?P=indent)```", re.S | re.M)


def snippets():
    out = []
    for page in PAGES:
        for i, m in enumerate(BLOCK.finditer(page.read_text(encoding="utf-8"))):
            code = textwrap.dedent("\n".join(line[len(m["indent"]):] for line in m["code"].splitlines()))
            out.append(pytest.param(code, id=f"{page.relative_to(ROOT)}#{i}"))
    return out


SNIPPETS = snippets()


def test_the_pages_show_python():
    assert len(SNIPPETS) >= 15


@pytest.mark.parametrize("code", SNIPPETS)
def test_a_snippet_compiles_and_imports_public_names(code):
    tree = ast.parse(code)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("attnphys"):
            mod = importlib.import_module(node.module)
            public = set(getattr(mod, "__all__", dir(mod)))
            for alias in node.names:
                if hasattr(mod, "__path__") and importlib.util.find_spec(f"{node.module}.{alias.name}"):
                    continue  # a subpackage
                assert alias.name in public, f"{node.module}.{alias.name} is not public"
