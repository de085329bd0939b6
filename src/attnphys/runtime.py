"""Process-level JAX settings for entry points, and splitting a batch over devices.

Nothing here runs at import: the command line, benchmarks and tests call :func:`configure`
(float64, number of host devices, compilation cache) before they compute anything.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
import warnings
from pathlib import Path
from typing import Any

import jax
import numpy as np

COMPILATION_CACHE_ENV = "ATTNPHYS_COMPILATION_CACHE"
"""Environment variable naming the directory of compiled programs the command line uses; empty or
``off`` turns the cache off."""

CACHE_MIN_COMPILE_SECONDS = 0.0
"""Programs that took at least this long to compile are written to the compilation cache: all of them. The
small programs of a run's set-up take 20–45 ms each to compile and less to read back (a repeated 175,000-step
trajectory spends about 0.5 s less; ``benchmarks/startup.py``)."""


_OFF = ("", "off", "0", "false", "no", "none")


def default_compilation_cache() -> Path | None:
    """The command line's compilation cache: ``$ATTNPHYS_COMPILATION_CACHE`` if set (None if empty, ``off``,
    ``0``, ``false``, ``no`` or ``none``), else ``$XDG_CACHE_HOME/attnphys/xla`` (an absolute
    ``XDG_CACHE_HOME`` only) or ``~/.cache/attnphys/xla``; None when there is no home directory."""
    env = os.environ.get(COMPILATION_CACHE_ENV)
    if env is not None:
        return None if env.strip().lower() in _OFF else Path(env).expanduser().absolute()
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "attnphys" / "xla"
    try:
        return Path.home() / ".cache" / "attnphys" / "xla"
    except (RuntimeError, KeyError):
        return None


def configure(
    x64: bool = True, host_devices: int | None = None, compilation_cache: str | os.PathLike | None = None
) -> None:
    """Enable float64, (on CPU) split the host into ``host_devices`` XLA devices and optionally keep compiled
    programs on disk.

    One XLA CPU device runs on one core, so a batch split over ``os.cpu_count()`` devices uses every
    core. The device count only takes effect before JAX has created its backends; later calls keep the
    existing devices.

    ``compilation_cache``: a directory (created if missing) where the compiled XLA programs (those that
    took at least :data:`CACHE_MIN_COMPILE_SECONDS` to compile) are stored and looked up, so that a later process with the
    same programs, devices and versions skips their compilation (JAX's persistent compilation cache; the
    results are the same programs, so bitwise the same numbers). Takes effect only before the process
    compiles anything. A directory that cannot be created or written, or an empty name, is reported with a
    warning and left out. The cache grows without bound; deleting the directory empties it (and clears an
    entry left truncated by a killed process).

    Also calls :func:`defer_dask_arrays`, so that building a result does not import Dask.

    Raises:
        InputError: ``host_devices`` is not an integer >= 1.
    """
    defer_dask_arrays()
    if host_devices is not None and (
        isinstance(host_devices, bool) or not isinstance(host_devices, (int, np.integer)) or host_devices < 1
    ):
        from attnphys.errors import InputError

        raise InputError(f"the number of XLA CPU devices must be an integer >= 1, got {host_devices!r}", "host_devices")
    jax.config.update("jax_enable_x64", x64)
    if host_devices is None:
        host_devices = os.cpu_count() or 1
    if host_devices > 1 and not _backends_initialised():
        try:
            jax.config.update("jax_num_cpu_devices", int(host_devices))
        except Exception:  # pragma: no cover - option absent or backend already up
            pass
    if compilation_cache is not None:
        if not str(compilation_cache).strip():
            warnings.warn("compilation cache left out: empty directory name", RuntimeWarning, stacklevel=2)
            return
        path = Path(compilation_cache).expanduser().absolute()
        try:
            path.mkdir(parents=True, exist_ok=True)
            if not os.access(path, os.W_OK | os.X_OK):
                raise PermissionError("not writable")
        except OSError as e:
            warnings.warn(
                f"compilation cache {path} left out: {e} (set {COMPILATION_CACHE_ENV}=off or pass "
                "--no-compilation-cache to the command line)",
                RuntimeWarning,
                stacklevel=2,
            )
            return
        jax.config.update("jax_compilation_cache_dir", str(path))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", CACHE_MIN_COMPILE_SECONDS)


class _DeferredDask:
    """xarray's record of the Dask module (``xarray.namedarray.pycompat.DuckArrayModule``), read from what is
    already imported instead of importing ``dask.array``: an object can only be a Dask array once
    ``dask.array`` has been imported, so until then the array type is the empty tuple and every
    ``isinstance`` check xarray makes answers the same as with the real module."""

    @property
    def module(self):
        return sys.modules.get("dask.array") and sys.modules.get("dask")

    @property
    def type(self) -> tuple[type, ...]:
        array = getattr(sys.modules.get("dask.array"), "Array", None)
        return (array,) if isinstance(array, type) else ()

    @property
    def version(self):
        from importlib.metadata import version

        from packaging.version import Version

        return Version(version("dask"))

    @property
    def available(self) -> bool:
        return importlib.util.find_spec("dask") is not None


def defer_dask_arrays() -> bool:
    """Let xarray build results without importing ``dask.array`` (about 0.5 s of a command's start-up).

    When Dask is installed, xarray imports ``dask.array`` the first time it builds a variable, only to ask
    whether the data is a Dask array. This replaces xarray's cached record of the Dask module with one that
    answers from the modules already imported (no object is a Dask array before ``dask.array`` is imported;
    after that, the real type). Dask arrays, the Dask executor and ``chunk()`` work as before; nothing
    changes when Dask is absent or already imported. Returns whether the record is deferred (False where
    xarray's internals differ from what this expects: then xarray imports Dask as usual)."""
    if "dask.array" in sys.modules or importlib.util.find_spec("dask") is None:
        return False
    try:
        from xarray.namedarray import pycompat
    except ImportError:  # pragma: no cover - xarray is a dependency
        return False
    cache = getattr(pycompat, "_cached_duck_array_modules", None)
    if not isinstance(cache, dict):  # pragma: no cover - other xarray versions
        return False
    if "dask" not in cache:
        cache["dask"] = _DeferredDask()
    _defer_collection_check()
    return isinstance(cache["dask"], _DeferredDask)


def _defer_collection_check() -> None:
    """xarray asks ``dask.base.is_dask_collection(x)`` of every array it wraps, importing Dask's core for it.
    An object without a callable ``__dask_graph__`` is no Dask collection (the first test Dask's function
    makes), so that answer is given without the import; any other object goes to Dask's function."""
    from xarray.namedarray import utils

    original = getattr(utils, "is_dask_collection", None)
    if original is None or getattr(original, "_attnphys_deferred", False):
        return

    def is_dask_collection(x) -> bool:
        if "dask.base" not in sys.modules and (isinstance(x, type) or not callable(getattr(x, "__dask_graph__", None))):
            return False
        return original(x)

    is_dask_collection._attnphys_deferred = True  # pyright: ignore[reportFunctionMemberAccess]
    utils.is_dask_collection = is_dask_collection


def compilation_cache() -> str | None:
    """The compilation cache directory this process uses (None if none), to hand on to worker processes."""
    return jax.config.jax_compilation_cache_dir or None  # pyright: ignore[reportAttributeAccessIssue]


def max_host_devices() -> int:
    """The most XLA CPU devices :func:`configure` accepts from the command line: four per core, at least 64
    (more only slow start-up down: each device is one thread)."""
    return max(64, 4 * (os.cpu_count() or 1))


def _backends_initialised() -> bool:
    try:
        from jax._src import xla_bridge

        return bool(xla_bridge._backends)
    except Exception:  # pragma: no cover
        return True


def take_rows(tree, idx, size: int | None = None):
    """Rows ``idx`` of every leaf of a pytree, as numpy arrays, padded to ``size`` rows by repeating the
    last one. Taken on the host: indexing device arrays would compile a gather for every shape."""
    idx = np.asarray(idx, dtype=np.int64)
    if size is not None and size > idx.size:
        idx = np.r_[idx, np.full(size - idx.size, idx[-1])]
    return jax.tree_util.tree_map(lambda a: np.asarray(a)[idx], tree)


def shard_batch(fn, args, B: int):
    """Call ``fn(*args)`` where every leaf of ``args`` has a leading batch axis of size B, splitting the
    batch over all local devices (padding with copies of the last element) and trimming the result.

    No device ever runs a batch of one: XLA compiles a batch axis of length 1 away, and the kernels it
    then emits may order some additions differently, so a result would depend on the batch it ran in
    (at the last bits, which a chaotic orbit amplifies). A single element is run as a batch of two on one
    device, and a split gives every device at least two."""
    devices = jax.local_devices()
    n = len(devices)
    if B < 2:
        return _padded_call(fn, args, B, 2, None)
    if n == 1:
        return fn(*args)
    mesh = jax.sharding.Mesh(np.asarray(devices), ("batch",))
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("batch"))
    return _padded_call(fn, args, B, max(2, -(-B // n)) * n, sharding)


def _padded_call(fn, args, B: int, Bp: int, sharding):
    """fn on args padded to Bp rows (copies of the last), placed with ``sharding``; the result trimmed to B."""

    # padded and trimmed on the host: on device arrays each would compile a small program per shape
    placed = jax.tree_util.tree_map(lambda x: jax.device_put(x, sharding), take_rows(args, np.arange(B), Bp))

    def trim(y):
        return jax.device_put(np.asarray(y)[:B]) if Bp > B and getattr(y, "ndim", 0) and y.shape[0] == Bp else y

    return jax.tree_util.tree_map(trim, fn(*placed))


# -- compiled programs kept beside the compilation cache ----------------------------------------------------

STORED_PROGRAMS = "programs"
"""Sub-directory of the compilation cache holding whole compiled programs (:func:`stored_jit`)."""

_source_digest: str | None = None
_loaded: dict[str, Any] = {}


def _package_digest() -> str:
    """SHA-256 of every Python source file of the package (names and contents): a stored program is only
    reused by the exact code that traced it."""
    global _source_digest
    if _source_digest is None:
        root = Path(__file__).resolve().parent
        h = hashlib.sha256()
        for p in sorted(root.rglob("*.py")):
            h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
        _source_digest = h.hexdigest()
    return _source_digest


def _program_key(name: str, leaves: list, in_tree, static: dict) -> str:
    import jaxlib

    devs = jax.devices()
    parts = [
        name,
        _package_digest(),
        jax.__version__,
        getattr(jaxlib, "__version__", ""),
        str(bool(jax.config.jax_enable_x64)),  # pyright: ignore[reportAttributeAccessIssue]
        f"{len(devs)} x {devs[0].platform} {devs[0].device_kind}",
        repr(sorted(static.items())),
        str(in_tree),
    ]
    for x in leaves:
        sharding = getattr(x, "sharding", None) if getattr(x, "committed", False) else None
        parts.append(f"{np.shape(x)} {np.result_type(x)} {getattr(x, 'weak_type', False)} {sharding}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:40]


def _read_program(path: Path):
    """The traced program stored at ``path`` (a :class:`jax.export.Exported`), or None if absent, not intact
    or not readable here."""
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    digest, sep, body = blob[:64], blob[64:65], blob[65:]
    if sep != b"\n" or hashlib.sha256(body).hexdigest().encode() != digest:
        return None
    try:
        import pickle

        return jax.export.Exported(**pickle.loads(body), _get_vjp=None)
    except Exception:
        return None


def _write_program(path: Path, exported) -> None:
    """Write atomically (a temporary file renamed over the name); a failure only loses the entry."""
    import dataclasses
    import pickle

    from attnphys._paths import write_bytes_atomic

    try:  # its fields but the derivative rule (jax.export's own format needs the flatbuffers package)
        fields = {f.name: getattr(exported, f.name) for f in dataclasses.fields(exported) if f.name != "_get_vjp"}
        body = pickle.dumps(fields)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
    except Exception:  # disk full, a program that cannot be exported: traced again next time
        pass


def stored_jit(fn, name: str, static_argnames: tuple[str, ...] = ()):
    """``jax.jit(fn, static_argnames=...)`` whose traced program is kept beside the compilation cache, so
    that a later process with the same code, arguments (shapes, types, placement), static arguments,
    devices and versions loads it without tracing ``fn`` (JAX's compilation cache skips only the
    compilation: tracing a long program takes a few tenths of a second on every start); the program it
    loads is then compiled, which the compilation cache answers.

    The program is stored under ``<cache>/programs/<name>-<key>.bin`` (:func:`jax.export.export`: StableHLO
    with its shardings, its fields pickled) with a key that digests all of the above, the package's source files included, and
    a SHA-256 of its contents; an entry that is absent, truncated, altered or not loadable is traced again and
    rewritten. Like the compilation cache, the directory must be trusted: it holds programs this process
    runs. Without a compilation cache (:func:`configure`) it is the plain jitted function. The program run
    is the one traced from ``fn``, so the numbers are the same bits.

    Returns:
        a function of ``fn``'s arguments (static ones by keyword).
    """
    jitted = jax.jit(fn, static_argnames=static_argnames)

    def call(*args, **static):
        cache = compilation_cache()
        if cache is None:
            return jitted(*args, **static)
        leaves, in_tree = jax.tree_util.tree_flatten(args)
        key = _program_key(name, leaves, in_tree, static)
        compiled = _loaded.get(key)
        if compiled is not None:
            return compiled(*args)
        path = Path(cache) / STORED_PROGRAMS / f"{name}-{key}.bin"
        exported = _read_program(path)
        if exported is not None:
            try:  # the first run of a loaded program is checked: an entry that does not run is replaced
                compiled = jax.jit(exported.call).lower(*args).compile()
                out = jax.block_until_ready(compiled(*args))
                _loaded[key] = compiled
                return out
            except Exception:
                with contextlib.suppress(OSError):
                    path.unlink()
        try:
            exported = jax.export.export(jitted)(*args, **static)
        except Exception:  # a program jax.export cannot express: the plain jitted function
            _loaded[key] = lambda *a: jitted(*a, **static)
            return jitted(*args, **static)
        _write_program(path, exported)
        compiled = jax.jit(exported.call).lower(*args).compile()
        _loaded[key] = compiled
        return compiled(*args)

    call.jitted = jitted  # pyright: ignore[reportFunctionMemberAccess]
    return call
