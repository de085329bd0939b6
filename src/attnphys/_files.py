"""Every input file through one reader (theory: docs/theory/sweeps.md §5).

Options files (``--config``), design files, weight files (JSON and ``.npz``), window files, probe texts:
each is read by :func:`read_input`, which

* refuses anything but a regular file before reading a byte, naming what the path is: a folder, a named
  pipe (FIFO: reading it can wait forever), a character or block device (``/dev/zero`` never ends), a
  socket, a symbolic link to any of these or to nothing;
* opens without blocking and checks the opened file again (the path cannot be swapped in between);
* reads at most a size cap (more is refused, never read);

and :func:`read_npz` reads an ``.npz`` archive only after checking the size each array unpacks to (a zip
bomb of 10 MB can unpack to gigabytes). :func:`parse_mapping` reads YAML, TOML or JSON text the same way
for every kind of file: a key given twice is refused (the last would silently win), YAML aliases that
expand without bound are refused, and values that are neither text, numbers, booleans, lists nor mappings
(YAML and TOML dates, YAML ``!!binary``) are refused by name rather than passed on as numbers.
"""

from __future__ import annotations

import datetime as _dt
import io as _io
import json
import os
import stat
import tomllib
from pathlib import Path
from typing import Any

import numpy as np

from attnphys.errors import InputError, OutputError

MAX_NODES = 100_000
"""Most values a mapping file may hold once YAML aliases are expanded."""

MAX_DEPTH = 100
"""Deepest nesting of lists and mappings in a mapping file."""


def _size(n: int) -> str:
    return f"{n / 2**20:g} MiB" if n >= 2**20 else f"{n / 2**10:g} KiB"


def _kind(mode: int) -> str | None:
    """What a file of mode ``mode`` is, when it is not a regular file."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO), whose reading can wait forever"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if not stat.S_ISREG(mode):
        return "not a regular file"
    return None


def input_path(path: str | os.PathLike, argument: str) -> Path:
    """The local path an input names (``~`` expanded, ``file://`` read), as an :class:`InputError`."""
    from attnphys._paths import local_path

    try:
        return local_path(path, argument)
    except OutputError as e:
        raise InputError(str(e).removeprefix(f"{argument} ").removeprefix(f"{argument}: "), argument) from None


def check_input_file(path: str | os.PathLike, argument: str, what: str) -> Path:
    """``path`` if it names an existing regular file (through links); else :class:`InputError` naming
    ``argument`` and what the path is instead (see the module's description)."""
    p = input_path(path, argument)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        if p.is_symlink():
            raise InputError(f"{p} is a symbolic link to {os.readlink(p)}, which does not exist", argument) from None
        raise InputError(f"{p} does not exist", argument) from None
    except OSError as e:
        raise InputError(f"cannot read {p}: {e.strerror or e}", argument) from None
    kind = _kind(st.st_mode)
    if kind is not None:
        link = f" (a symbolic link to {os.path.realpath(p)})" if p.is_symlink() else ""
        raise InputError(f"{p}{link} is {kind}, not {what}", argument)
    return p


def read_input(path: str | os.PathLike, argument: str, what: str, limit: int) -> tuple[Path, bytes]:
    """The bytes of the regular file ``path`` (:func:`check_input_file`), at most ``limit`` of them.

    Returns:
        (the resolved path, its bytes).

    Raises:
        InputError: naming ``argument``: not a regular file, unreadable, or larger than ``limit``.
    """
    p = check_input_file(path, argument, what)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        raise InputError(f"cannot read {p}: {e.strerror or e}", argument) from None
    with os.fdopen(fd, "rb") as f:
        kind = _kind(os.fstat(f.fileno()).st_mode)  # what was opened, not what the path named a moment ago
        if kind is not None:
            raise InputError(f"{p} is {kind}, not {what}", argument)
        try:
            data = f.read(limit + 1)
        except OSError as e:
            raise InputError(f"cannot read {p}: {e.strerror or e}", argument) from None
    if len(data) > limit:
        raise InputError(f"{p} is larger than {_size(limit)}; that is not {what}", argument)
    return p, data


def read_npz(raw: bytes, path: Path, argument: str, unpacked_limit: int) -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` archive's bytes, refusing one whose arrays unpack to more than
    ``unpacked_limit`` bytes in all (checked from the archive's directory before anything is unpacked),
    and pickled objects.

    Raises:
        InputError: naming ``argument``.
    """
    import zipfile

    try:
        with zipfile.ZipFile(_io.BytesIO(raw)) as zf:
            total = sum(i.file_size for i in zf.infolist())
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        raise InputError(f"{path} is not a readable .npz archive ({e})", argument) from None
    if total > unpacked_limit:
        raise InputError(
            f"{path} unpacks to {total / 2**20:,.0f} MiB, more than {_size(unpacked_limit)}; refusing to unpack it",
            argument,
        )
    try:
        with np.load(_io.BytesIO(raw), allow_pickle=False) as z:
            return {k: np.asarray(z[k]) for k in z.files}
    except Exception as e:  # noqa: BLE001 - numpy's errors for a damaged archive vary
        raise InputError(f"{path} is not a readable .npz archive ({type(e).__name__}: {e})", argument) from None


class Refused(ValueError):
    """A value the readers refuse although the format allows it (a key given twice, a date, binary data)."""


def _yaml_loader():
    """PyYAML's safe loader that refuses a key given twice in one mapping, dates and ``!!binary`` (a date
    becomes a Python date, binary becomes bytes: neither is an option's value)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def mapping(loader, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            try:
                twice = key in seen
            except TypeError:  # an unhashable key: the base constructor reports it
                break
            if twice:
                raise Refused(f"line {key_node.start_mark.line + 1}: the key {key!r} is given twice")
            seen.add(key)
        return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)

    def refuse(what):
        def construct(loader, node):
            raise Refused(
                f"line {node.start_mark.line + 1}: {node.value!r} is {what}, which no option takes "
                "(quote it to give text)"
            )

        return construct

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    Loader.add_constructor("tag:yaml.org,2002:timestamp", refuse("a date"))
    Loader.add_constructor("tag:yaml.org,2002:binary", refuse("binary data (!!binary)"))
    return Loader


def unique_keys(pairs: list[tuple[str, object]]) -> dict:
    """A JSON object's pairs as a dict, refusing a key given twice (``json.loads(…, object_pairs_hook=…)``).

    Raises:
        Refused: a ValueError naming the key.
    """
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise Refused(f"the key {k!r} is given twice")
        out[k] = v
    return out


def _check_values(value: Any, path: Path, argument: str) -> None:
    """Refuse more than :data:`MAX_NODES` values once aliases are expanded, nesting deeper than
    :data:`MAX_DEPTH`, and values of types no option takes (TOML dates)."""
    count = 0
    stack: list[tuple[Any, int, str]] = [(value, 0, "")]
    while stack:
        v, d, where = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise InputError(
                f"{path} expands to more than {MAX_NODES:,} values (YAML aliases repeat their whole value each "
                "time they are used)",
                argument,
            )
        if d > MAX_DEPTH:
            raise InputError(f"{path} nests lists or mappings more than {MAX_DEPTH} levels deep", argument)
        if isinstance(v, dict):
            stack.extend((x, d + 1, f"{where}.{k}" if where else str(k)) for k, x in v.items())
        elif isinstance(v, (list, tuple)):
            stack.extend((x, d + 1, f"{where}[{i}]") for i, x in enumerate(v))
        elif isinstance(v, (_dt.date, _dt.time, bytes)):
            what = "binary data" if isinstance(v, bytes) else "a date or time"
            raise InputError(f"{path}: {where or 'the value'} is {what} ({v!s}), which no option takes", argument)


FORMATS = {".yaml": "YAML", ".yml": "YAML", ".toml": "TOML", ".json": "JSON"}
"""The formats of mapping files, by suffix."""


def parse_mapping(raw: bytes, path: Path, argument: str, what: str, default: str = "JSON") -> Any:
    """The data of a YAML, TOML or JSON file (by suffix, else ``default``), read by the rules of the
    module's description (no value checked to be a mapping: the caller says what it needs).

    Raises:
        InputError: naming ``argument``.
    """
    kind = FORMATS.get(path.suffix.lower(), default)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(
            f"{path} is not a text file ({e.reason} at byte {e.start}); that is not {what}", argument
        ) from None
    try:
        if kind == "YAML":
            import yaml

            data = yaml.load(text, Loader=_yaml_loader())  # noqa: S506 - a SafeLoader subclass
        elif kind == "TOML":
            data = tomllib.loads(text)
        else:
            data = json.loads(text, object_pairs_hook=unique_keys)
    except RecursionError:
        raise InputError(f"{path} nests lists or mappings too deeply", argument) from None
    except Refused as e:
        raise InputError(f"{path}, {e}" if str(e).startswith("line") else f"{path}: {e}", argument) from None
    except Exception as e:  # noqa: BLE001 - each parser has its own error type; all mean "not this format"
        first = " ".join(str(e).split()) or type(e).__name__
        raise InputError(f"{path} is not valid {kind}: {first}", argument) from None
    _check_values(data, path, argument)
    return data


__all__ = [
    "FORMATS",
    "MAX_DEPTH",
    "MAX_NODES",
    "Refused",
    "check_input_file",
    "input_path",
    "parse_mapping",
    "read_input",
    "read_npz",
    "unique_keys",
]
