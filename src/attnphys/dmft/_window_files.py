"""Window files: reading the file of an initial condition (JSON or the reference's ``.npz`` checkpoint),
bounded in size and depth (theory: docs/theory/dmft.md §3.5). A light module (no JAX, no xarray: the
command line validates starts with it), read by the starts and by :mod:`attnphys.dmft.initial`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from attnphys._paths import local_path
from attnphys.errors import InputError

__all__ = ["MAX_START_BYTES", "MAX_START_DEPTH", "read_start_bytes", "read_window_file"]

MAX_START_BYTES = 16 << 20
"""Largest window file read (16 MiB): a window holds L·(M + P) numbers and a few cached overlaps."""

MAX_START_DEPTH = 8
"""Deepest nesting of lists in a JSON window file (a window is a list of rows)."""


def read_window_file(path: str | Path) -> dict:
    """A window file: JSON with ``att_window``, ``pe_window`` (optional ``n``, ``beta_o``), or the
    reference's ``.npz`` checkpoint (``att_window``, ``pe_window``, ``mo_window``, …, ``beta``)."""
    path = local_path(path, "--start")
    raw = read_start_bytes(path)
    if path.suffix == ".npz":
        from attnphys._files import read_npz

        try:
            data = read_npz(raw, path, "--start", MAX_START_BYTES)
        except InputError as e:
            raise ValueError(f"initial-condition file {e.detail}") from None
    else:
        try:
            from attnphys._files import unique_keys

            data = json.loads(raw.decode("utf-8"), object_pairs_hook=unique_keys)
        except UnicodeDecodeError:
            raise ValueError(f"initial-condition file {path} is not a text (JSON) file") from None
        except RecursionError:
            raise ValueError(f"initial-condition file {path} nests lists too deeply") from None
        except (json.JSONDecodeError, ValueError) as e:
            raise ValueError(f"initial-condition file {path} is not valid JSON: {e}") from None
        _check_depth(data, path)
    if not isinstance(data, dict):
        raise ValueError(
            f"initial-condition file {path} must hold an object with att_window and pe_window, "
            f"not {type(data).__name__}"
        )
    missing = {"att_window", "pe_window"} - set(data)
    if missing:
        raise ValueError(f"initial-condition file {path} lacks {sorted(missing)}")
    return data


def read_start_bytes(path: Path) -> bytes:
    """A window file's bytes, at most :data:`MAX_START_BYTES` (as a ValueError naming the file)."""
    from attnphys.io import read_limited

    try:
        return read_limited(path, MAX_START_BYTES, "--start", "a window file")
    except InputError as e:
        raise ValueError(f"initial-condition file {e.detail}") from None


def _check_depth(data: Any, path: Path) -> None:
    """Refuse lists nested deeper than :data:`MAX_START_DEPTH` (a window is a list of rows)."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        v, d = stack.pop()
        if d > MAX_START_DEPTH:
            raise ValueError(f"initial-condition file {path} nests lists more than {MAX_START_DEPTH} levels deep")
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v)
