"""Every tutorial notebook under docs/tutorials runs against the current library, in a fresh kernel (its run
time is stored in the notebook and shown on its page), and its stored outputs are those of its code (the hash the docs build
checks): a tutorial whose code changed without a new run would show stale outputs."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "docs" / "tutorials").glob("*.ipynb"))
nbformat = pytest.importorskip("nbformat")


def _hook():
    spec = importlib.util.spec_from_file_location("tutorials_hook", ROOT / "docs" / "_hooks" / "tutorials.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def test_there_is_a_tutorial_per_pillar():
    names = " ".join(p.stem for p in NOTEBOOKS)
    for topic in ("dmft", "exponential_family", "particles", "probing", "finite_size", "own_map"):
        assert topic in names, topic


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_a_tutorials_stored_outputs_are_those_of_its_code(path):
    hook = _hook()
    nb = nbformat.read(path, as_version=4)
    assert hook.stored_hash(nb) == hook.source_hash(nb), f"{path.name}: run `python docs/_hooks/tutorials.py run {path}`"
    assert not [c for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.outputs)


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_a_tutorial_runs(path, tmp_path):
    pytest.importorskip("nbclient")
    copy = tmp_path / path.name
    shutil.copy(path, copy)
    _hook().execute(copy)  # raises on a failing cell
    nb = nbformat.read(copy, as_version=4)
    assert not [c for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
