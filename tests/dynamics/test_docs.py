"""Every theory citation in the dynamics package resolves to a section of docs/theory/dynamics.md."""

import pathlib
import re

ROOT = pathlib.Path(__file__).parents[2]
CITE = re.compile(r"\(theory: (docs/theory/[\w.]+\.md) §([\d.–\-, ]+)\)")


def _sections(page: pathlib.Path) -> set[str]:
    heads = re.findall(r"^##+ (\d+(?:\.\d+)?)\.? ", page.read_text(), flags=re.MULTILINE)
    return set(heads)


def test_citations_resolve():
    sources = sorted((ROOT / "src/attnphys/dynamics").rglob("*.py"))
    n = 0
    for src in sources:
        for page, refs in CITE.findall(src.read_text()):
            path = ROOT / page
            assert path.exists(), f"{src}: {page} missing"
            secs = _sections(path)
            for ref in re.split(r"[,–\-]", refs):
                ref = ref.strip()
                if ref:
                    n += 1
                    assert ref in secs, f"{src.name}: {page} §{ref} does not exist"
    assert n > 50


def test_every_public_function_cites_the_theory():
    import importlib
    import inspect
    import pkgutil

    import attnphys.dynamics as pkg
    from attnphys import _deprecated

    walked = pkgutil.walk_packages(pkg.__path__, "attnphys.dynamics.")
    mods = [i.name for i in walked if i.name not in _deprecated.MODULES]  # 0.2.0's modules kept as shims
    assert {"attnphys.dynamics._lyapunov", "attnphys.dynamics.maps.henon", "attnphys.dynamics.samplers.grid"} <= set(mods)
    for mod in mods:
        m = importlib.import_module(mod)
        assert "(theory: docs/theory/dynamics.md §" in " ".join((m.__doc__ or "").split()), mod
        for name, obj in vars(m).items():
            if name.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if getattr(obj, "__module__", "") != mod:  # a re-export is checked where it is defined
                continue
            doc = " ".join((obj.__doc__ or "").split())
            assert "(theory: docs/theory/dynamics.md §" in doc, f"{mod}.{name} cites no theory section"
