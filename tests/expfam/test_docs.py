"""The pages of this pillar: citations in the code resolve, the outline is complete, the how-to runs."""

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [*sorted((ROOT / "src/attnphys/expfam").rglob("*.py")), *sorted((ROOT / "src/attnphys/hopfield").rglob("*.py")),
           ROOT / "src/attnphys/verify.py"]
CITATION = re.compile(r"\(theory: docs/theory/(?P<page>[\w-]+)\.md(?P<secs>(?:(?:\s*,\s*|\s+and\s+|\s*)§\s?\d+(?:\.\d+)*)*)\)")
HEADING = re.compile(r"^#{2,6}\s+(\d+(?:\.\d+)*)\.?\s+\S", re.MULTILINE)
OUTLINE = {
    "expfam": {"1", "2", "2.1", "2.2", "2.3", "2.4", "2.5", "3", "4", "4.1", "4.2", "4.3", "5"},
    "hopfield": {"1", "2", "3"},
}


def sections(page: str) -> set[str]:
    text = (ROOT / "docs/theory" / f"{page}.md").read_text(encoding="utf-8")
    return set(HEADING.findall(re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)))


def test_theory_pages_have_the_outline():
    for page, numbers in OUTLINE.items():
        assert sections(page) == numbers, page


def test_every_public_docstring_cites_a_section_that_exists():
    found = 0
    for path in SOURCES:
        for m in CITATION.finditer(path.read_text(encoding="utf-8")):
            secs = re.findall(r"\d+(?:\.\d+)*", m.group("secs"))
            assert secs, f"{path.name}: cite a section: {m.group(0)}"
            for s in secs:
                assert s in sections(m.group("page")), f"{path.name}: {m.group(0)}"
                found += 1
    assert found > 50


def _public_objects():
    import attnphys.expfam
    import attnphys.expfam.jobs
    import attnphys.hopfield
    import attnphys.verify

    for mod in (attnphys.expfam, attnphys.hopfield, attnphys.verify):
        for name in mod.__all__:
            obj = getattr(mod, name)
            if callable(obj):
                yield f"{mod.__name__}.{name}", obj
    yield "VerifyJob", attnphys.expfam.jobs.VerifyJob
    yield "claims_table", attnphys.expfam.jobs.claims_table


def test_every_public_function_class_and_method_states_its_section():
    missing = []
    for name, obj in _public_objects():
        if "(theory: docs/theory/" not in (inspect.getdoc(obj) or ""):
            missing.append(name)
        if inspect.isclass(obj):
            for meth, f in vars(obj).items():
                f = getattr(f, "__func__", f)
                if callable(f) and not meth.startswith("_") and "(theory: docs/theory/" not in (inspect.getdoc(getattr(obj, meth)) or ""):
                    missing.append(f"{name}.{meth}")
    assert not missing, missing


@pytest.mark.slow
def test_the_howto_snippets_run():
    """The Python blocks of docs/howto/expfam.md, in order, in a fresh interpreter (the how-to defines a
    base measure, which must not join this process's measure_classes())."""
    text = (ROOT / "docs/howto/expfam.md").read_text(encoding="utf-8")
    code = "\n".join(re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "False" not in res.stdout and res.stdout.count("True") >= 10, res.stdout
