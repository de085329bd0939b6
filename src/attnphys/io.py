"""Writing and reading results safely (xarray + Zarr, NetCDF for ``.nc`` paths).

Rules, the same for every command:

* **Nothing is deleted that is not ours.** An output path that exists and is not an attnphys result of
  the same command is refused; a result of the same command is replaced only with ``overwrite``.
* **Atomic results.** A result is written into a hidden sibling (``.NAME.partial-PID``), marked complete
  (attribute :data:`COMPLETE`, or the marker file :data:`MARKER` in an output folder) and only then moved
  into place. A killed run leaves the previous result or nothing; :func:`load` refuses a store without the
  marker.
* **One writer.** :class:`OutputLock` holds ``NAME.lock`` (an exclusive ``flock``) while a run writes
  ``NAME``; a second run on the same path gets a clear message. The kernel releases the lock of a
  killed process, so a lock left behind never blocks a later run.
* **One path resolution.** Every output and input path goes through :func:`local_path` (``~`` expanded,
  ``file://`` URLs read as local paths, other URLs refused), so that the checks and the writer look at the
  same place.
* **Verified on load.** A finished result records the files it holds (:mod:`attnphys._integrity`);
  :func:`load` refuses a store that lacks or has changed any of them, naming what.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import shutil
import socket
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import xarray as xr

from attnphys._contract import COMMAND, COMPLETE, CONTENTS, MARKER
from attnphys._files import read_input
from attnphys._integrity import CHUNK_VARS, MANIFEST, store_files, verify_store, write_manifest
from attnphys._paths import check_link, check_name, check_writable_place, kind_of, local_path
from attnphys._plugins import BUILTINS
from attnphys.errors import DamagedResultError, IncompleteResultError, OutputError
from attnphys.registry import Registry

_ACTIVE_PARTIALS: set[Path] = set()
"""Hidden partial outputs of this process, removed by :func:`cleanup_partials` on an interrupt."""

_ACTIVE_LOCKS: set[Path] = set()
"""Lock files held by this process, removed by :func:`release_locks` on an interrupt."""


def read_limited(path: Path, limit: int, option: str, what: str) -> bytes:
    """The bytes of the regular file ``path``, refusing more than ``limit`` (read no further: ``/dev/zero``
    never ends) and anything that is not a regular file (:func:`attnphys._files.read_input`).

    Raises:
        InputError: naming ``option``.
    """
    return read_input(path, option, what, limit)[1]


def resolve_output(path: str | os.PathLike, option: str = "--out") -> Path:
    """An output path as every check and the writer use it (:func:`local_path`), refusing at once what no
    check could look at: a symbolic link that loops or points nowhere, a relative path while the current
    folder no longer exists.

    Raises:
        OutputError: naming ``option``.
    """
    path = local_path(path, option)
    check_link(path, option)
    if not path.is_absolute():
        try:
            os.getcwd()
        except FileNotFoundError:
            check_writable_place(path, option)
    return path


# -- what is at a path -------------------------------------------------------------------------------


def result_info(path: str | Path) -> dict | None:
    """The attnphys attributes of the result at ``path`` (store, NetCDF file or output folder), or None
    when the path holds something else. Never raises for unreadable content."""
    try:
        path = local_path(path)
    except OutputError:
        return None
    try:
        if path.is_dir() and (path / MARKER).is_file():
            info = json.loads((path / MARKER).read_text())
            return info if isinstance(info, dict) else None
        if path.suffix == ".nc" and path.is_file():
            with xr.open_dataset(path) as ds:
                return dict(ds.attrs) if "attnphys_version" in ds.attrs else None
        if path.is_dir() and ((path / "zarr.json").is_file() or (path / ".zgroup").is_file()):
            import zarr

            attrs = dict(zarr.open_group(str(path), mode="r").attrs)
            return attrs if "attnphys_version" in attrs else None
    except Exception:
        return None
    return None


def check_output(
    path: str | Path, command: str, *, overwrite: bool = False, resume: bool = False, option: str = "--out"
) -> str:
    """Decide whether ``command`` may write ``path``; returns ``"new"``, ``"replace"`` or ``"resume"``.

    Args:
        resume: the path may be an existing (resumable) result of the same command.

    Raises:
        OutputError: the path holds something else, a result of another command, or a result of this
            command while neither ``overwrite`` nor ``resume`` is set; or it cannot be written
            (:func:`check_writable_place`, a symbolic link that loops or points nowhere, a URL).
    """
    path = local_path(path, option)
    check_name(path, option)
    check_link(path, option)
    if not path.exists():
        check_writable_place(path, option)
        return "new"
    info = result_info(path)
    if info is None:
        what = kind_of(path)
        raise OutputError(
            f"{option} {path} is {what} that is not an attnphys result; refusing to touch it (choose another path)"
        )
    other = info.get(COMMAND)
    if other is not None and other != command:
        raise OutputError(
            f"{option} {path} holds a result of `attnphys {other}`, not of `attnphys {command}`; choose another path"
        )
    if resume:
        return "resume"
    flag = "--overwrite" if option.startswith("--") else "overwrite=True"
    if not overwrite:
        raise OutputError(
            f"{option} {path} already holds a result of `attnphys {command}`; pass {flag} to "
            "replace it, or choose another path"
        )
    extra = _foreign_entries(path, info)
    if extra:
        shown = ", ".join(extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
        raise OutputError(
            f"{option} {path} holds {shown} besides the result of `attnphys {command}`; {flag} replaces "
            "only the result's own files: move the others out, or choose another path"
        )
    return "replace"


ZARR_METADATA = ("zarr.json", ".zgroup", ".zattrs", ".zmetadata", ".zarray")
"""The files of a Zarr store's own metadata (format 3 and 2)."""


def _foreign_entries(path: Path, info: dict) -> list[str]:
    """Entries of an output folder or a Zarr store that its result did not write: for a folder those its
    marker does not list, for a store the entries that are neither its metadata nor one of its arrays or
    groups (a user's notes dropped into ``traj.zarr``); none for files and for folders whose marker has no
    list."""
    if not path.is_dir():
        return []
    if any((path / m).is_file() for m in ZARR_METADATA) and not (path / MARKER).is_file():
        import zarr

        try:
            members = set(zarr.open_group(str(path), mode="r").keys())
        except Exception:  # noqa: BLE001  (an unreadable store: nothing to compare; the write refuses it later)
            return []
        return sorted(set(os.listdir(path)) - members - set(ZARR_METADATA))
    contents = info.get(CONTENTS)
    if not (path / MARKER).is_file() or not isinstance(contents, list):
        return []
    return sorted(set(os.listdir(path)) - set(contents) - {MARKER})


IMAGE_SUFFIXES = (".png", ".pdf", ".svg")
"""Figure file types."""

SIDE_FIGURES = ("_sections.png", "_snapshots.png")
"""Figures that some commands write next to ``--plot STEM.png`` (``STEM_sections.png``, …)."""


def check_figure_path(path: str | Path, option: str = "--plot", folder: bool = False, overwrite: bool = False) -> None:
    """A figure target: a folder of figures (``folder``) or an image file path.

    Refuses a file where a folder is needed, a folder where a file is needed, a non-image file name, a
    folder that holds anything but figures, and (without ``overwrite``) existing figures.

    Raises:
        OutputError: naming ``option``.
    """
    path = local_path(path, option)
    check_name(path, option)
    check_link(path, option)
    if not path.exists():
        check_writable_place(path, option)
    if folder:
        if path.exists() and not path.is_dir():
            raise OutputError(f"{option} {path} is a file; give a folder for the figures")
        if path.is_dir():
            entries = sorted(path.iterdir())
            others = [p.name for p in entries if p.is_dir() or p.suffix.lower() not in IMAGE_SUFFIXES]
            if others:
                shown = ", ".join(others[:3]) + (", …" if len(others) > 3 else "")
                raise OutputError(
                    f"{option} {path} is a folder holding other files ({shown}); give a new or empty "
                    "folder for the figures"
                )
            if entries and not overwrite:
                raise OutputError(
                    f"{option} {path} already holds figures; pass --overwrite to replace them, or choose another folder"
                )
        elif path.parent.exists() and not path.parent.is_dir():
            raise OutputError(f"{option} {path}: its parent {path.parent} is a file")
        return
    if path.is_dir():
        raise OutputError(f"{option} {path} is a folder; give a file name such as {path / 'figure.png'}")
    if path.suffix.lower() not in IMAGE_SUFFIXES:
        raise OutputError(f"{option} {path}: a figure file must end in .png, .pdf or .svg")
    if path.parent.exists() and not path.parent.is_dir():
        raise OutputError(f"{option} {path}: its parent {path.parent} is a file")
    existing = [
        p for p in [path] + [path.with_name(path.stem + s) for s in SIDE_FIGURES] if p.exists() or p.is_symlink()
    ]
    for p in existing:
        if not p.is_file():
            raise OutputError(f"{option} {path}: {p} exists and is not a file")
    if existing and not overwrite:
        raise OutputError(
            f"{option} {', '.join(map(str, existing))} exists; pass --overwrite to replace it, or choose "
            "another file name"
        )


def check_plain_file(
    path: str | Path, option: str, suffixes: tuple[str, ...] | None = None, overwrite: bool = False
) -> None:
    """An output that is one ordinary file (e.g. a saved window): refuses a folder, a wrong suffix and
    (without ``overwrite``) an existing file.

    Raises:
        OutputError: naming ``option``.
    """
    path = local_path(path, option)
    check_name(path, option)
    check_link(path, option)
    if not path.exists():
        check_writable_place(path, option)
    if suffixes and path.suffix.lower() not in suffixes:
        raise OutputError(f"{option} {path}: the file name must end in {' or '.join(suffixes)}")
    if path.is_dir():
        raise OutputError(f"{option} {path} is a folder; give a file name")
    if path.parent.exists() and not path.parent.is_dir():
        raise OutputError(f"{option} {path}: its parent {path.parent} is a file")
    if (path.exists() or path.is_symlink()) and not overwrite:
        raise OutputError(f"{option} {path} exists; pass --overwrite to replace it, or choose another file name")


# -- locks ---------------------------------------------------------------------------------------------


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class OutputLock:
    """``NAME.lock`` next to the output while this process writes it (a context manager).

    The lock is an exclusive ``flock`` on that file: the kernel releases it when the process ends, even
    when it is killed, so a lock file left behind never blocks a later run. A second run on the same path
    gets :class:`OutputError` naming the process that holds it.
    """

    def __init__(self, path: str | Path, option: str = "--out"):
        self.path = local_path(path, option)
        self.lock = self.path.with_name(self.path.name + ".lock")
        self.option = option
        self._fd: int | None = None

    def _cannot(self, e: OSError) -> OutputError:
        """An OS error while taking the lock, told about the output (not the lock file)."""
        why = e.strerror or type(e).__name__
        if e.errno == errno.ENOSPC:
            why = "no space left on the device"
        elif e.errno == errno.ENAMETOOLONG:
            why = "the name is too long for this file system"
        elif e.errno in (errno.EROFS,):
            why = "read-only file system"
        return OutputError(f"{self.option} {self.path}: cannot create files in {self.path.parent} ({why})")

    def __enter__(self) -> OutputLock:
        try:
            self.lock.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise self._cannot(e) from None
        me = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}
        for _ in range(20):
            try:
                fd = os.open(self.lock, os.O_CREAT | os.O_RDWR, 0o644)
            except OSError as e:
                raise self._cannot(e) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                os.close(fd)
                if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise OutputError(f"{self.option} {self.path}: cannot lock {self.lock}: {e.strerror}") from None
                try:
                    other = json.loads(self.lock.read_text() or "{}")
                except (OSError, ValueError):
                    other = {}
                who = f"pid {other.get('pid', '?')} on {other.get('host', '?')}"
                raise OutputError(
                    f"{self.option} {self.path}: another attnphys run ({who}) is writing it; wait for it "
                    "to finish or choose another path"
                ) from None
            try:  # the file may have been removed by its previous holder between open and flock: retry
                same = os.fstat(fd).st_ino == os.stat(self.lock).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            try:
                os.ftruncate(fd, 0)
                os.write(fd, json.dumps(me).encode())
            except OSError as e:  # e.g. a full disk: leave no empty lock file behind
                self.lock.unlink(missing_ok=True)
                os.close(fd)
                raise self._cannot(e) from None
            self._fd = fd
            _ACTIVE_LOCKS.add(self.lock)
            recover_stale(self.path)
            return self
        raise OutputError(f"{self.option} {self.path}: could not take the lock {self.lock}")  # pragma: no cover

    def __exit__(self, *exc) -> None:
        _ACTIVE_LOCKS.discard(self.lock)
        self.lock.unlink(missing_ok=True)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def release_locks() -> None:
    """Remove the lock files this process holds (used when a run is interrupted)."""
    for p in list(_ACTIVE_LOCKS):
        with contextlib.suppress(OSError):
            p.unlink(missing_ok=True)
    _ACTIVE_LOCKS.clear()


def _partial_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.partial-{os.getpid()}")


def recover_stale(path: Path) -> None:
    """Clean up after killed writers of ``path`` (called under its lock): remove their hidden partial
    outputs, and put back a previous result that a killed replacement had moved aside
    (``.NAME.old-PID``; only with the non-atomic fallback of :func:`staged`)."""
    for p in path.parent.glob(f".{path.name}.partial-*"):
        try:
            pid = int(p.name.rsplit("-", 1)[1])
        except ValueError:
            continue
        if pid != os.getpid() and not _pid_alive(pid):
            _rmtree(p)
    for p in path.parent.glob(f".{path.name}.old-*"):
        try:
            pid = int(p.name.rsplit("-", 1)[1])
        except ValueError:
            continue
        if pid != os.getpid() and not _pid_alive(pid):
            if not path.exists() and not path.is_symlink():
                os.replace(p, path)
            else:
                _rmtree(p)


_remove_stale_partials = recover_stale


def _rmtree(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p, ignore_errors=True)
    else:
        p.unlink(missing_ok=True)


_RENAME_NOREPLACE, _RENAME_EXCHANGE = 1, 2


def _renameat2(src: Path, dst: Path, flags: int) -> bool:
    """Linux ``renameat2``: True when done, False where the system or file system lacks it.

    Raises:
        OSError: the rename failed (e.g. EEXIST with RENAME_NOREPLACE).
    """
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    if fn(at_fdcwd, os.fsencode(src), at_fdcwd, os.fsencode(dst), ctypes.c_uint(flags)) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(src), None, str(dst))


def _commit(tmp: Path, path: Path, replace: bool) -> None:
    """Move the finished ``tmp`` to ``path``. A new path is created without replacing anything that
    appeared meanwhile; an existing one (``replace``) is exchanged with ``tmp`` atomically, so that at every
    instant ``path`` holds either the previous result or the new one."""
    if not path.exists() and not path.is_symlink():
        try:
            if not _renameat2(tmp, path, _RENAME_NOREPLACE):
                if path.exists():
                    raise FileExistsError
                os.rename(tmp, path)
            return
        except (FileExistsError, OSError) as e:
            if isinstance(e, FileExistsError) or getattr(e, "errno", None) in (errno.EEXIST, errno.ENOTEMPTY):
                raise OutputError(
                    f"{path} was created by another run while this one was writing it; nothing was "
                    "replaced (re-run to resume or choose another path)"
                ) from None
            raise
    if not replace:
        raise OutputError(f"{path} exists (created by another run meanwhile?); not replacing it")
    if _renameat2(tmp, path, _RENAME_EXCHANGE):
        _rmtree(tmp)  # now the previous result
        return
    old = path.with_name(f".{path.name}.old-{os.getpid()}")  # fallback: restored by recover_stale if killed here
    _rmtree(old)
    os.replace(path, old)
    os.replace(tmp, path)
    _rmtree(old)


@contextlib.contextmanager
def staged(path: str | Path, replace: bool = True) -> Iterator[Path]:
    """Yield a hidden sibling to write into; on success move it to ``path``, on failure remove it.

    Args:
        replace: an existing ``path`` may be replaced (atomically). The caller decides beforehand, with
            :func:`check_output`, that replacing is allowed; without ``replace`` a path that appeared
            meanwhile is an :class:`OutputError`.

    Raises:
        OutputError: naming ``path`` (not the hidden sibling) when the disk fills up or a quota is
            exhausted while writing; the partial copy is removed.
    """
    path = local_path(path, "path")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _partial_name(path)
    _rmtree(tmp)
    _ACTIVE_PARTIALS.add(tmp)
    try:
        yield tmp
        _commit(tmp, path, replace)
    except OSError as e:
        if e.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            raise
        why = {errno.ENOSPC: "no space left on the device", errno.EDQUOT: "the disk quota is exhausted"}.get(
            e.errno, "the file is larger than the file system allows"
        )
        raise OutputError(
            f"{path}: {why} while writing it; nothing was kept (the partial copy is removed): free space or "
            "choose another place"
        ) from None
    finally:
        _ACTIVE_PARTIALS.discard(tmp)
        _rmtree(tmp)


def cleanup_partials(after_exit: bool = True) -> None:
    """Remove this process's partial outputs (used when a run is interrupted, just before the process ends).

    Another thread may still be writing into a partial while it is removed (the main thread in a Zarr
    write, when a signal's handler runs in a watcher thread), and recreate files in it. So the removal is
    repeated until the partial stays gone for a moment, and (``after_exit``) a small process is left that
    removes whatever is still there once this process has ended."""
    paths = list(_ACTIVE_PARTIALS)
    for p in paths:
        for _ in range(20):
            _rmtree(p)
            time.sleep(0.005)
            if not p.exists():
                break
    _ACTIVE_PARTIALS.clear()
    if after_exit and paths:
        remove_after_exit(paths)


_REAPER = """
import os, shutil, sys, time
pid, paths = int(sys.argv[1]), sys.argv[2:]
def alive():
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True
deadline = time.time() + 60
while alive() and time.time() < deadline:
    time.sleep(0.02)
for p in paths:
    if os.path.isdir(p) and not os.path.islink(p):
        shutil.rmtree(p, ignore_errors=True)
    elif os.path.lexists(p):
        try:
            os.unlink(p)
        except OSError:
            pass
"""


def remove_after_exit(paths: list[Path]) -> None:
    """Start a detached process that removes ``paths`` once this process has ended (at most a minute's
    wait). Only hidden partial outputs named with this process's id are ever handed to it."""
    import subprocess
    import sys

    paths = [p for p in paths if p.name.endswith(f".partial-{os.getpid()}")]
    if not paths:
        return
    try:
        subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _REAPER, str(os.getpid()), *map(str, paths)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:  # pragma: no cover - no process can be started: the next run's recovery removes them
        pass


# -- datasets ------------------------------------------------------------------------------------------


def write_dataset(ds: xr.Dataset, path: Path, netcdf: bool = False) -> None:
    """Write ``ds`` with its completion marker to a fresh ``path`` (no checks: see :func:`save`)."""
    ds = ds.drop_encoding()  # a fresh store: the encodings of wherever ``ds`` was read from do not apply
    if netcdf:
        ds = _netcdf3_types(ds)
        ds.attrs[COMPLETE] = 1
        ds.to_netcdf(path)
        return
    ds.attrs.pop(COMPLETE, None)
    with warnings.catch_warnings():
        # short label coordinates (``direction``, ``pair``) are fixed-length strings, which Zarr v3
        # stores fine but flags as not yet in its specification
        warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")
        warnings.filterwarnings("ignore", message=".*Consolidated metadata.*")
        ds.to_zarr(path, mode="w-", consolidated=False)
        mark_complete(path, manifest=store_files(path))
        # last, with the marker in it: ``xr.open_zarr(path)`` reads one metadata document, without a warning
        import zarr

        zarr.consolidate_metadata(str(path))


def _netcdf3_types(ds: xr.Dataset) -> xr.Dataset:
    """Integer variables in the types of the NetCDF-3 format that the built-in writer uses (no unsigned or
    64-bit integers): int32 where the values fit, float64 (exact below 2^53) otherwise; the original type
    is kept in the attribute ``dtype``."""
    import numpy as np

    for name in list(ds.variables):
        v = ds[name]
        if v.dtype.kind not in "iu" or (v.dtype.kind == "i" and v.dtype.itemsize <= 4):
            continue
        vals = np.asarray(v.values)
        fits = vals.size == 0 or (vals.min() >= np.iinfo(np.int32).min and vals.max() <= np.iinfo(np.int32).max)
        new = vals.astype(np.int32 if fits else np.float64)
        attrs = {**v.attrs, "dtype": str(v.dtype)}
        if name in ds.coords:
            ds = ds.assign_coords({name: (v.dims, new, attrs)})
        else:
            ds[name] = (v.dims, new, attrs)
    return ds


def mark_complete(path: str | Path, manifest: dict[str, str] | None = None) -> None:
    """Set the completion marker of a Zarr store, after everything else in it was written, with the record
        of the files it holds (``manifest``, :func:`attnphys._integrity.store_files`) and of its root attributes,
    which :func:`load` verifies."""
    import zarr

    zarr.open_group(str(path), mode="r+").attrs[COMPLETE] = 1
    if manifest is not None:
        write_manifest(path, manifest)


def save(ds: xr.Dataset, path: str | Path, overwrite: bool = False, command: str | None = None) -> Path:
    """Write ``ds`` atomically to ``path``: NetCDF when it ends in ``.nc``, else a Zarr store.

    Args:
        overwrite: replace an existing attnphys result at ``path`` (never anything else).
        command: the command the result belongs to (default: the dataset's :data:`COMMAND` attribute).

    Raises:
        OutputError: the path holds something that may not be replaced.
    """
    path = local_path(path, "path")
    command = command or str(ds.attrs.get(COMMAND, "python"))
    check_output(path, command, overwrite=overwrite, option="path")
    with OutputLock(path, "path"):
        check_output(path, command, overwrite=overwrite, option="path")  # again, now that no other run can write it
        with staged(path, replace=overwrite) as tmp:
            write_dataset(ds, tmp, netcdf=path.suffix == ".nc")
    return path


def load(path: str | Path) -> xr.Dataset:
    """Open a result written by :func:`save` (loaded into memory).

    Raises:
        FileNotFoundError: nothing at ``path``.
        IncompleteResultError: the result lacks its completion marker, or only the hidden partial output
            of an interrupted first write exists.
        DamagedResultError: the store lacks or has changed files it held when it was finished, or chunks
            of a sweep flagged done no longer hold what was written (the message names them).
    """
    path = local_path(path, "path")
    if not path.exists():
        if any(path.parent.glob(f".{path.name}.partial-*")):
            raise IncompleteResultError(
                f"no result at {path}: a run writing it was interrupted (its hidden partial "
                f".{path.name}.partial-* is left); re-run the command that makes it"
            )
        raise FileNotFoundError(f"no result at {path}")
    if path.suffix == ".nc":
        try:
            ds = xr.load_dataset(path)
        except Exception as e:
            raise IncompleteResultError(f"{path} is not a readable result ({type(e).__name__}: {e})") from None
    else:
        check_store(path)
        ds = read_store(path)
    if not ds.attrs.get(COMPLETE):
        raise IncompleteResultError(
            f"{path} is incomplete (no completion marker): it was interrupted while being "
            "written; re-run the command that makes it"
        )
    if "sweep" in ds.attrs and "done" in ds:
        done = ds["done"].values.astype(bool)
        if not done.all():
            raise IncompleteResultError(
                f"{path}: {int((~done).sum())} of {done.size} chunks are not done; re-run the command to finish"
            )
        ds = unflatten_points(ds)
        for view in _result_views():
            ds = view(ds)
    for key in (MANIFEST, CHUNK_VARS):  # records of the store, not of the data (a copy has other files)
        ds.attrs.pop(key, None)
    return portable(ds)


def portable(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with an encoding that every xarray writer accepts: integer variables whose values the
    NetCDF-3 format cannot hold (unsigned or 64-bit beyond int32, e.g. a sweep's ``point_seed``) are
    encoded as float64 (exact below 2^53), so that ``ds.to_netcdf(...)`` works with the core install's
    engine (scipy). The values in memory keep their type."""
    lo, hi = np.iinfo(np.int32).min, np.iinfo(np.int32).max
    for name in ds.variables:
        v = ds.variables[name]
        if v.dtype.kind not in "iu" or (v.dtype.kind == "i" and v.dtype.itemsize <= 4) or v.size == 0:
            continue
        vals = np.asarray(v.values)
        if vals.min() < lo or vals.max() > hi:
            v.encoding = {k: x for k, x in v.encoding.items() if k in ("chunks", "preferred_chunks")}
            v.encoding["dtype"] = np.dtype("float64")
    return ds


def read_done(path: str | Path) -> np.ndarray:
    """(n_chunks,) bool: the ``done`` flags of a sweep store; a flag whose chunk cannot be read (overwritten
    with other bytes) counts as not done."""
    import zarr

    arr = zarr.open_array(store=str(path), path="done", mode="r")
    try:
        return np.asarray(arr[:]).astype(bool)  # pyright: ignore[reportArgumentType,reportIndexIssue]
    except Exception:  # noqa: BLE001 - read flag by flag
        out = np.zeros(arr.shape[0], dtype=bool)
        for i in range(arr.shape[0]):
            try:
                out[i] = bool(np.asarray(arr[i]))  # pyright: ignore[reportArgumentType,reportIndexIssue]
            except Exception:  # noqa: BLE001
                out[i] = False
        return out


def read_store(path: str | Path, what: str = "result") -> xr.Dataset:
    """A Zarr store loaded into memory; a sweep store's ``done`` flags read one by one where needed
    (:func:`read_done`) and its chunk sums left out.

    Raises:
        IncompleteResultError: the store cannot be read.
    """
    from attnphys._integrity import CHUNK_SUMS

    try:
        with xr.open_zarr(path, consolidated=False) as ds:
            sweep = "sweep" in ds.attrs and "done" in ds
            ds = ds.drop_vars([v for v in ("done", CHUNK_SUMS) if v in ds] if sweep else []).load()
    except Exception as e:
        raise IncompleteResultError(f"{path} is not a readable {what} ({type(e).__name__}: {e})") from None
    if sweep:
        ds["done"] = (("chunk",), read_done(path).astype(np.int8), {"long_name": "chunk completely written (1)"})
    return ds


def check_store(path: str | Path, what: str | None = None) -> None:
    """Refuse a Zarr store that lacks or has changed files it recorded when it was finished, or whose done
    sweep chunks no longer hold what was written (:mod:`attnphys._integrity`).

    Raises:
        DamagedResultError: naming every variable and chunk concerned.
    """
    import zarr

    try:
        attrs = dict(zarr.open_group(str(path), mode="r").attrs)
    except Exception as e:
        raise IncompleteResultError(f"{path} is not a readable result ({type(e).__name__}: {e})") from None
    if not attrs.get(COMPLETE):
        return  # reported as incomplete by the caller
    done = None
    sweep = "sweep" in attrs and (Path(path) / "done").is_dir()
    if sweep:
        try:
            done = read_done(path)
        except Exception:  # noqa: BLE001 - the done flags' own metadata is gone: the manifest says so
            done = None
    from attnphys._integrity import verify_attrs

    wrong = verify_attrs(attrs, sweep=sweep, root=path)
    if wrong:
        raise DamagedResultError(
            f"{what or path} is damaged: {'; '.join(wrong)}. Its attributes no longer vouch for its data: "
            "copy the store's folder itself (cp -r, rsync) from a complete copy, or write copies with "
            "attnphys.io.save; else re-run the command that makes it, replacing this store",
            wrong,
        )
    problems = verify_store(path, attrs, done, sweep=sweep)
    if problems:
        again = (
            "re-run the same command: it recomputes the damaged chunks"
            if "sweep" in attrs
            else "copy it again from a complete copy, or re-run the command that makes it"
        )
        raise DamagedResultError(
            f"{what or path} is damaged (files missing or changed since it was written, e.g. by an interrupted "
            f"copy): {'; '.join(problems)}; {again}",
            problems,
        )


RESULT_VIEWS = "attnphys.result_views"
"""Entry-point group of functions ``Dataset → Dataset`` applied by :func:`load` to a complete sweep store,
for outside packages; the library's own (the sweep engine adds its task's derived quantities) are listed
in :data:`attnphys._plugins.BUILTINS`."""


def _is_view(obj: object) -> object:
    return obj if callable(obj) else None


VIEWS = Registry(
    "result view",
    group=RESULT_VIEWS,
    builtins=BUILTINS[RESULT_VIEWS],
    accept=_is_view,
    member="a function applied to a loaded sweep store",
    adding="one line in `_plugins.py`",
    theory="sweeps.md §1",
)
"""The registry of the functions ``Dataset → Dataset`` :func:`load` applies to a complete sweep store
(:class:`attnphys.registry.Registry`)."""


def _result_views() -> list:
    return list(VIEWS.loaded().values())


def unflatten_points(ds: xr.Dataset) -> xr.Dataset:
    """A sweep store's variables with their leading ``point`` dimension reshaped into the grid axes of
    the sweep definition in ``ds.attrs["sweep"]`` (``done`` dropped)."""
    definition = json.loads(ds.attrs["sweep"])
    axes = definition["grid"]["axes"]
    names = [a["name"] for a in axes]
    shape = [len(a["values"]) for a in axes]
    out = {}
    for name, var in ds.data_vars.items():
        if name == "done" or "point" not in var.dims:
            continue
        out[name] = (names + list(var.dims[1:]), var.values.reshape(shape + list(var.shape[1:])), var.attrs)
    coords = {n: np.asarray(a["values"]) for n, a in zip(names, axes)}
    coords.update({k: v for k, v in ds.coords.items() if "point" not in v.dims and k not in coords})
    res = xr.Dataset(out, coords=coords)
    res.attrs.update(ds.attrs)
    return res


def write_marker(folder: Path, command: str, **extra) -> None:
    """Mark an output folder as a complete result of ``command`` (see :data:`MARKER`)."""
    from attnphys._version import __version__

    contents = sorted(n for n in os.listdir(folder) if n != MARKER)
    (folder / MARKER).write_text(
        json.dumps(
            {COMMAND: command, COMPLETE: 1, "attnphys_version": __version__, CONTENTS: contents, **extra}, indent=1
        )
    )


def stamp_result(path: str | Path, attrs: dict, folder: bool = False) -> None:
    """Give the result at ``path`` (a Zarr store, a NetCDF file, or an output folder) every attribute of
    ``attrs`` and of :func:`attnphys.metadata.base_attrs` that it lacks, keeping those it has: the result
    contract of a command (theory: docs/theory/sweeps.md §5). A NetCDF file is rewritten atomically; a
    store's attributes are updated in place, its record of them written again (a store the job wrote with
    plain calls gets its manifest now) and its metadata consolidated again."""
    from attnphys.metadata import base_attrs

    path = Path(path)
    wanted = {**base_attrs(), **attrs, COMPLETE: 1}
    wanted.pop("created", None)
    if folder:
        if not path.is_dir():
            return
        marker = path / MARKER
        info = json.loads(marker.read_text()) if marker.is_file() else {}
        missing = {k: v for k, v in wanted.items() if k not in info}
        if missing or COMPLETE not in info:
            contents = sorted(n for n in os.listdir(path) if n != MARKER)
            info = {COMPLETE: 1, CONTENTS: contents, **missing, **info}
            marker.write_text(json.dumps(info, indent=1))
        return
    if path.suffix == ".nc" and path.is_file():
        with xr.open_dataset(path) as ds:
            missing = {k: v for k, v in wanted.items() if k not in ds.attrs}
            if not missing:
                return
            ds = ds.load()
        ds.attrs.update(missing)
        with staged(path, replace=True) as tmp:
            write_dataset(ds, tmp, netcdf=True)
        return
    if path.is_dir():
        import zarr

        g = zarr.open_group(str(path), mode="r+")
        missing = {k: v for k, v in wanted.items() if k not in g.attrs}
        if missing:
            from attnphys._integrity import verify_attrs

            intact = not verify_attrs(dict(g.attrs), sweep="sweep" in g.attrs and (path / "done").is_dir(), root=path)
            bare = COMPLETE not in g.attrs and not g.attrs.get(MANIFEST) and "sweep" not in g.attrs
            g.attrs.update(missing)
            if bare:  # written just now by the job with plain calls: record what it holds, so that it loads verified
                write_manifest(path, store_files(path))
            elif intact and g.attrs.get(MANIFEST):
                write_manifest(path)  # the record of the attributes, as they are now (never of edited ones)
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=".*Consolidated metadata.*")
                zarr.consolidate_metadata(str(path))
