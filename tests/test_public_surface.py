"""The public surface holds still: every name of the 0.2.0 release imports (a moved or removed one with a
deprecation warning naming its replacement), and the signatures of every package's ``__all__`` match the
committed snapshot."""

import importlib
import sys
import tomllib
import types
import warnings
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import attnphys
from attnphys import _deprecated

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"
SCRIPT = ROOT / "scripts" / "public_surface.py"


def _script():
    spec = importlib.util.spec_from_file_location("public_surface", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _released(version: str) -> list[str]:
    return (DATA / f"surface_{version}.txt").read_text(encoding="utf-8").split()


@pytest.fixture
def restored_modules():
    """Importing a module of 0.2.0 whose name is now a function replaces the package's attribute with a
    callable module: undo it, so the other tests see the package as it is."""
    before = {}
    for shim in _deprecated.MODULES:
        package, _, name = shim.rpartition(".")
        before[package, name] = importlib.import_module(package).__dict__.get(name)
    yield
    for shim in _deprecated.MODULES:
        sys.modules.pop(shim, None)
    for (package, name), value in before.items():
        module = importlib.import_module(package)
        if value is None:
            module.__dict__.pop(name, None)
        else:
            setattr(module, name, value)


def test_every_name_of_0_2_0_imports_and_a_moved_one_warns(restored_modules):
    names = _released("0.2.0")
    assert len(names) > 800 and "attnphys.dynamics.lyapunov" in names
    problems = []
    for line in names:
        module, _, name = line.partition(":")
        key = f"{module}:{name}"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                obj = importlib.import_module(module)
                if name:
                    obj = getattr(obj, name)
            except Exception as e:  # noqa: BLE001 - every failure is listed
                problems.append(f"{line}: {type(e).__name__}: {e}")
                continue
        messages = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
        if not name:
            expected = module in _deprecated.MODULES
            text = _deprecated.MODULES.get(module, "")
        else:
            expected = key in _deprecated.MOVED or key in _deprecated.REMOVED
            text = _deprecated.MOVED[key][1] if key in _deprecated.MOVED else _deprecated.REMOVED.get(key, "")
        if expected and not any(text in m and _deprecated.UNTIL in m for m in messages):
            problems.append(f"{line}: no deprecation warning naming {text!r} (got {messages})")
        if not expected and any("deprecated" in m for m in messages):
            problems.append(f"{line}: unchanged, yet warns {messages}")
        if name and key in _deprecated.REMOVED:
            with pytest.raises(NotImplementedError, match="use "):
                obj()
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("version", ["0.3.0", "0.4.0", "0.4.1", "0.4.2"])
def test_every_name_of_a_later_release_still_imports(restored_modules, version):
    """The 0.3.0, 0.4.0 and 0.4.1 surfaces hold still too: each of their public modules and names imports from this
    version."""
    names = _released(version)
    assert len(names) > 800 and "attnphys.dmft:bifurcation" in names
    problems = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for line in names:
            module, _, name = line.partition(":")
            try:
                obj = importlib.import_module(module)
                if name:
                    getattr(obj, name)
            except Exception as e:  # noqa: BLE001 - every failure is listed
                problems.append(f"{line}: {type(e).__name__}: {e}")
    assert not problems, "\n".join(problems)


def test_the_table_names_only_names_of_0_2_0():
    names = set(_released("0.2.0"))
    stale = [k for k in (*_deprecated.MOVED, *_deprecated.REMOVED, *_deprecated.MODULES) if k not in names]
    assert not stale, f"entries of attnphys._deprecated that 0.2.0 never had: {stale}"


def test_a_moved_name_is_the_same_object(restored_modules):
    from attnphys import dynamics
    from attnphys.dmft import starts

    with pytest.warns(DeprecationWarning, match=r"attnphys\.dynamics\.lyapunov_spectrum"):
        from attnphys.dynamics.lyapunov import lyapunov
    from attnphys.dynamics._lyapunov import lyapunov as now

    assert lyapunov is now
    with pytest.warns(DeprecationWarning, match="census"):
        from attnphys.dynamics.census import CensusOptions, census
    assert CensusOptions is dynamics.CensusOptions
    assert census is dynamics.census.__wrapped__
    with pytest.warns(DeprecationWarning, match=r"attnphys\.dmft\.starts\.window_start"):
        from attnphys.dmft.initial import window_start
    assert window_start is starts.window_start
    with pytest.warns(DeprecationWarning, match="FunctionMap"):
        assert dynamics.Map is dynamics.FunctionMap


def test_a_module_that_became_a_function_still_calls_it(restored_modules):
    """``import attnphys.dynamics.tracks`` (0.2.0's module) leaves ``attnphys.dynamics.tracks`` callable, with
    the function's signature."""
    import inspect

    from attnphys import dynamics

    function = dynamics.tracks
    with pytest.warns(DeprecationWarning, match="the module attnphys.dynamics.tracks"):
        importlib.import_module("attnphys.dynamics.tracks")
    assert isinstance(dynamics.tracks, types.ModuleType)
    assert dynamics.tracks.__wrapped__ is function
    assert inspect.signature(dynamics.tracks) == inspect.signature(function)


def test_continuation_in_its_0_2_0_form_runs_the_chains():
    from attnphys.dynamics import continuation, continuation_chains
    from attnphys.dynamics.maps import LOGISTIC
    from attnphys.dynamics.orbits import OrbitSpec

    rs = jnp.asarray([3.1, 3.3])
    spec = OrbitSpec(steps=50, transient=20, n_orbit=5)
    with pytest.warns(DeprecationWarning, match=r"attnphys\.dynamics\.continuation_chains"):
        old = continuation(LOGISTIC, spec, jnp.array([0.3]), None, rs)
    new = continuation_chains(LOGISTIC, spec, jnp.array([0.3]), None, rs)
    np.testing.assert_array_equal(np.asarray(old["orbit"]), np.asarray(new["orbit"]))


def test_one_version_everywhere():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "attnphys._version.__version__"}
    citation = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert f"\nversion: {attnphys.__version__}\n" in citation
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"## [{attnphys.__version__}]" in changelog
    assert attnphys.__version__ == "0.4.7"


def test_public_signatures_match_the_snapshot():
    script = _script()
    snapshot = (DATA / "public_signatures.txt").read_text(encoding="utf-8").splitlines()
    now = script.signature_lines()
    if now != snapshot:
        import difflib

        diff = "\n".join(difflib.unified_diff(snapshot, now, "snapshot", "package", lineterm="", n=0))
        pytest.fail(
            "the public signatures changed:\n"
            f"{diff}\n"
            "If the change is deliberate, regenerate the snapshot with\n"
            "    PYTHONPATH=src python scripts/public_surface.py signatures\n"
            "and commit it with a line in CHANGELOG.md (Changed or Removed; a renamed or removed name keeps a "
            "deprecation shim in attnphys._deprecated for one release)."
        )


def test_the_changelog_has_the_migration_table():
    table = _script().migration_table()
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert table in changelog, (
        "CHANGELOG.md's migration table differs from attnphys._deprecated: paste the output of "
        "`PYTHONPATH=src python scripts/public_surface.py migration` under 0.3.0's Removed"
    )
    assert "| `attnphys.dynamics.lyapunov` | (the module), `lyapunov` |" in table


def test_orbit_continuation_plan_is_typed():
    from attnphys.dmft import ContinuationPlan, TokenStart, plan_orbit_continuation, preset

    cfg = preset("paper")
    plan = plan_orbit_continuation(cfg, "beta_o", 1.25, 1.2, start="token", transient=100)
    assert isinstance(plan, ContinuationPlan)
    assert (plan.param, plan.start_value, plan.stop_value, plan.transient) == ("beta_o", 1.25, 1.2, 100)
    assert isinstance(plan.start, TokenStart) and plan.config == cfg


def test_the_names_the_docs_use_are_exported():
    import attnphys.dynamics as dynamics
    from attnphys.dynamics.classify import regime_counts
    from attnphys.dynamics.samplers import GridSampler

    assert dynamics.GridSampler is GridSampler and dynamics.regime_counts is regime_counts
    assert {"GridSampler", "regime_counts", "undetermined_values", "event_kinds"} <= set(dynamics.__all__)
    assert callable(dynamics.classify.classify)  # the function, in its public module of the same name
