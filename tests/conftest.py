import os
import pathlib
import tempfile

import pytest

from attnphys.runtime import COMPILATION_CACHE_ENV, configure

# Compiled programs are shared by the test processes (the xdist workers and the command lines they start)
# through one compilation cache outside the user's home: a program compiled once in a run is read back by
# every other process, and a later run on the same machine starts warm. ATTNPHYS_TEST_COMPILATION_CACHE
# moves it; "off" compiles everything in every process.
_TEST_CACHE = os.environ.get(
    "ATTNPHYS_TEST_COMPILATION_CACHE", str(pathlib.Path(tempfile.gettempdir()) / f"attnphys-test-xla-{os.getuid()}")
)
os.environ[COMPILATION_CACHE_ENV] = _TEST_CACHE

# float64 everywhere, and two XLA host devices so that the sharded batch path is exercised
configure(x64=True, host_devices=2, compilation_cache=None if _TEST_CACHE.lower() == "off" else _TEST_CACHE)

DATA = pathlib.Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def hook():
    """The docs build's registries hook (docs/_hooks/registries.py), loaded as a module."""
    import importlib.util

    path = pathlib.Path(__file__).resolve().parents[1] / "docs" / "_hooks" / "registries.py"
    spec = importlib.util.spec_from_file_location("registries_hook", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def data_dir() -> pathlib.Path:
    return DATA


def _mappings() -> tuple[int, int] | None:
    """(memory mappings of this process, the kernel's per-process limit), or None where unknown."""
    try:
        with open("/proc/self/maps") as f:
            used = sum(1 for _ in f)
        limit = int(pathlib.Path("/proc/sys/vm/max_map_count").read_text())
    except (OSError, ValueError):
        return None
    return used, limit


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop the compiled XLA programs once a test module is done, if they fill half the process's
    memory mappings. Every program keeps about nine, and the suite in one process compiles thousands: kept
    for the whole session they reach the kernel's limit (vm.max_map_count, 65,530 by default), where the
    next compilation crashes the process."""
    yield
    maps = _mappings()
    if maps is not None and maps[0] > maps[1] // 2:
        import jax

        jax.clear_caches()


@pytest.fixture(autouse=True)
def _registries_as_they_were():
    """Every member a test registers (a norm, a command, a variant …) is forgotten after it: each test
    sees the registries as the library and the installed packages make them."""
    from contextlib import ExitStack

    from attnphys.registry import all_registries

    with ExitStack() as stack:
        for reg in all_registries().values():  # members registered by importing a module of the library stay
            keep = lambda name, member, reg=reg: (reg.origin(name) or "").startswith("attnphys.")  # noqa: E731
            stack.enter_context(reg.scoped(keep=keep))
        yield


def pytest_collection_modifyitems(config, items):
    """A ``long`` check is a ``slow`` one too: ``make test`` never runs it."""
    for item in items:
        if item.get_closest_marker("long") is not None and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
