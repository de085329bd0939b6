"""Process-level JAX settings for entry points, and splitting a batch over devices.

Nothing here runs at import: the command line, benchmarks and tests call :func:`configure`
(float64, number of host devices, compilation cache) before they compute anything.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

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

    Raises:
        InputError: ``host_devices`` is not an integer >= 1.
    """
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
