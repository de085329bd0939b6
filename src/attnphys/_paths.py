"""Where an output goes: one resolution of a path for every check and writer, and the checks that an
output can be created there before anything is computed (theory: docs/theory/sweeps.md §5)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from attnphys.errors import OutputError

_SPECIAL_FS = {
    "proc": "the kernel's process information (proc)",
    "sysfs": "the kernel's device information (sysfs)",
    "devtmpfs": "the device folder (devtmpfs)",
    "devpts": "the terminal devices (devpts)",
    "cgroup": "the control groups (cgroup)",
    "cgroup2": "the control groups (cgroup2)",
    "debugfs": "the kernel's debugging interface (debugfs)",
    "tracefs": "the kernel's tracing interface (tracefs)",
    "securityfs": "the kernel's security interface (securityfs)",
    "configfs": "the kernel's configuration interface (configfs)",
    "pstore": "the kernel's crash records (pstore)",
    "bpf": "the kernel's BPF objects (bpf)",
    "fusectl": "the FUSE control interface (fusectl)",
    "mqueue": "the message queues (mqueue)",
}
"""File systems that are kernel interfaces, not storage: an output there is refused by name."""


def local_path(path: str | os.PathLike, option: str = "--out") -> Path:
    """The local file-system path that ``path`` names, as every check and writer uses it: ``~`` and
    ``~user`` expanded, ``file:///abs/path`` (or ``file://localhost/abs/path``) read as ``/abs/path``.

    Raises:
        OutputError: another URL (``memory://``, ``zip://``, ``s3://``, ``http://``, chained ``a::b``), a
            ``file://`` URL of another host or without an absolute path, or a ``~`` that cannot be expanded;
            naming ``option``.
    """
    import re
    from urllib.parse import unquote, urlsplit

    text = os.fspath(path)
    if isinstance(text, bytes):  # pragma: no cover - bytes paths are not produced by the command line
        text = os.fsdecode(text)
    # a URL, also as a Path has it (``Path("file:///a")`` is ``file:/a``): a scheme of two or more letters
    m = re.match(r"^([A-Za-z][A-Za-z0-9+.-]+):/", text)
    if m or "::" in text:
        scheme = m.group(1).lower() if m else ""
        if scheme == "file":
            parts = urlsplit(text)
            if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
                raise OutputError(
                    f"{option} {text}: a file:// URL must name an absolute path on this machine (file:///abs/path)"
                )
            return Path(unquote(parts.path))
        raise OutputError(
            f"{option} {text}: only local paths are supported (a file or folder name, or file:///abs/path); "
            f"{scheme + '://' if scheme else 'chained'} URLs are not"
        )
    if text.startswith("~"):
        try:
            return Path(text).expanduser()
        except RuntimeError:
            raise OutputError(f"{option} {text}: cannot expand ~ (no home folder is known)") from None
    return Path(text)


def _mount_of(path: Path) -> tuple[str, set[str]] | None:
    """(file-system type, mount options) of the mount that holds ``path`` (Linux), or None."""
    try:
        real = os.path.realpath(path)
        best, found = "", None
        with open("/proc/self/mountinfo") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                fields, rfields = left.split(), right.split()
                if len(fields) < 6 or not rfields:
                    continue
                mount = fields[4].replace("\\040", " ")
                inside = real == mount or real.startswith(mount.rstrip("/") + "/")
                if inside and len(mount) >= len(best):
                    best, found = mount, (rfields[0], set(fields[5].split(",")))
        return found
    except (OSError, ValueError):
        return None


_DERIVED_NAME_EXTRA = len(".") + len(".partial-") + 7
"""Characters that the hidden siblings of an output (``.NAME.partial-PID``) add to its name (PIDs up to
7 digits)."""


def check_writable_place(path: str | Path, option: str = "--out") -> None:
    """Refuse, before anything is computed, an output that cannot be created: a relative path while the
    current folder was deleted, a name too long for the file system (with the hidden sibling it is first
    written to), a parent that is a file, a folder without write permission, a read-only file system, and
    kernel interfaces such as ``/proc`` and ``/sys``.

    Raises:
        OutputError: naming ``option`` and the reason.
    """
    path = Path(path)
    if not path.is_absolute():
        try:
            os.getcwd()
        except FileNotFoundError:
            raise OutputError(
                f"{option} {path}: the current folder no longer exists; give an absolute path, or change to an "
                "existing folder"
            ) from None
    ancestor = path.parent
    while not ancestor.exists() and not ancestor.is_symlink() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if ancestor.exists() and not ancestor.is_dir():
        raise OutputError(f"{option} {path}: its parent {ancestor} is a file")
    mount = _mount_of(ancestor)
    if mount is not None and mount[0] in _SPECIAL_FS:
        raise OutputError(
            f"{option} {path}: {ancestor} belongs to {_SPECIAL_FS[mount[0]]}, not to storage; choose a path in "
            "an ordinary folder"
        )
    try:
        name_max = os.pathconf(ancestor, "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    longest = max([len(os.fsencode(p)) for p in path.relative_to(ancestor).parts] or [0])
    if len(os.fsencode(path.name)) + _DERIVED_NAME_EXTRA > name_max or longest > name_max:
        raise OutputError(
            f"{option} {path.name[:40]}…: the name is too long for this file system (at most "
            f"{name_max - _DERIVED_NAME_EXTRA} bytes for an output, whose hidden sibling adds "
            f"{_DERIVED_NAME_EXTRA})"
        )
    if mount is not None and "ro" in mount[1]:
        raise OutputError(f"{option} {path}: {ancestor} is on a read-only file system")
    if ancestor.exists() and not os.access(ancestor, os.W_OK | os.X_OK):
        raise OutputError(f"{option} {path}: no permission to create files in {ancestor}")


def kind_of(path: Path) -> str:
    """What a path that exists is, in words."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "something unreadable"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISREG(mode):
        return "a file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "something other than a file or folder"  # pragma: no cover


def check_link(path: Path, option: str) -> None:
    """Refuse a symbolic link that loops or points nowhere (nothing could be written through it)."""
    if not path.is_symlink():
        return
    try:
        os.stat(path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise OutputError(f"{option} {path} is a symbolic link that points (through others) to itself") from None
        target = os.readlink(path)
        raise OutputError(
            f"{option} {path} is a symbolic link to {target}, which does not exist; remove the link or choose "
            "another path"
        ) from None


def check_name(path: Path, option: str) -> None:
    if path.name.startswith("-"):
        raise OutputError(
            f"{option} {path}: a name that starts with '-' looks like an option (was a value forgotten after "
            f"{option}?); write ./{path} if it is meant"
        )


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that the file is there whole or not at all: a hidden temporary file in
    the same folder, renamed over the name (removed if anything fails)."""
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


__all__ = ["check_writable_place", "local_path", "write_bytes_atomic"]
