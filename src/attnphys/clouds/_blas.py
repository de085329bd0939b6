"""Thread count of the OpenBLAS libraries behind jaxlib's and numpy's LAPACK calls on the CPU.

jaxlib runs ``eigh`` and ``cholesky`` through scipy's bundled OpenBLAS. For the D × D covariance of a
token cloud (D of a few hundred) a multi-threaded call costs far more than it gains, and on a busy
machine its threads spin while they wait for each other: the statistics of
:mod:`attnphys.clouds.stats` run with one BLAS thread (:func:`single_threaded`).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import glob
import importlib
import os
from collections.abc import Iterator

_C_API = (
    ("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
    ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
    ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
    ("openblas_set_num_threads", "openblas_get_num_threads"),
)


def _loaded_paths() -> list[str]:
    """OpenBLAS shared objects mapped into this process (Linux), else those bundled with scipy and numpy."""
    paths: set[str] = set()
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower() and line.split()[-1].startswith("/")}
    except OSError:
        pass
    if not paths:
        for mod in ("scipy", "numpy"):
            try:
                m = importlib.import_module(mod)
            except ImportError:  # pragma: no cover - both are dependencies
                continue
            libs = os.path.join(os.path.dirname(os.path.dirname(m.__file__)), f"{mod}.libs")
            paths.update(glob.glob(os.path.join(libs, "*openblas*")))
    return sorted(paths)


@functools.cache
def _controls() -> tuple[tuple, ...]:
    """(set, get) function pairs of every OpenBLAS library found; empty with another BLAS."""
    out = []
    for path in _loaded_paths():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for setter, getter in _C_API:
            if hasattr(lib, setter) and hasattr(lib, getter):
                s, g = getattr(lib, setter), getattr(lib, getter)
                s.argtypes, s.restype, g.argtypes, g.restype = [ctypes.c_int], None, [], ctypes.c_int
                out.append((s, g))
                break
    return tuple(out)


def blas_threads() -> list[int]:
    """Current thread count of every OpenBLAS library found (empty list: none found)."""
    return [g() for _, g in _controls()]


@contextlib.contextmanager
def single_threaded() -> Iterator[None]:
    """Run the enclosed BLAS/LAPACK calls on one thread, restoring the previous counts after. The count is
    process-wide: block on the enclosed results (``float(...)``, ``block_until_ready``) before leaving."""
    ctl = _controls()
    before = [g() for _, g in ctl]
    for s, _ in ctl:
        s(1)
    try:
        yield
    finally:
        for (s, _), n in zip(ctl, before):
            s(n)
