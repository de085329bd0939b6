"""What a finished store holds, recorded and verified (theory: docs/theory/sweeps.md §2.3).

A result store is a folder of files (Zarr: one metadata document per array, one file per chunk). A copy
or ``rsync`` that was interrupted, a deleted chunk or a chunk overwritten with other bytes leaves a folder
that Zarr still opens: a missing chunk reads as the fill value (NaN), a missing array is simply absent.
So that such a store is never taken for a complete one:

* a **finished result** records its *manifest*, ``{file: "size:crc32"}`` of every file except the root
  metadata (which holds the manifest), in the attribute :data:`MANIFEST`;
* a **sweep store** records the manifest of its template (metadata and coordinates) when it is created,
  and per chunk the CRC-32 of each variable's chunk file (the variable ``chunk_sums``, one Zarr chunk per
  sweep chunk, written after the chunk's data and before its ``done`` flag; 0 where the chunk wrote no
  file, i.e. only fill values);
* the manifest also covers the store's **root attributes** (sweep values, configuration, job record, …):
  under the key :data:`ATTRIBUTES` it holds a digest of each, so that an edited attribute (a sweep value
  that would relabel computed points) is refused, not loaded.

:func:`verify_store` compares a store with what it recorded and lists the differences. A store naming an
attnphys version older than :data:`RECORDS_SINCE` (written before the records existed) has nothing to
compare; it is read unverified only while it holds nothing that those versions never wrote
(:func:`unwritten_contents`: a part of the records, a root attribute, a variable or a field of its sweep
definition that only later versions write, consolidated metadata): a version label is a plain attribute,
and changing it must not switch the verification off. Any other store that lacks the records is damaged
(the records were removed, or the store was written by other means than attnphys, e.g. xarray's
``to_zarr``, and cannot be verified).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

MANIFEST = "attnphys_manifest"
"""Root attribute: JSON ``{relative file: "size:crc32"}`` of the files a store held when it was finished
(results) or created (sweep templates)."""

CHUNK_SUMS = "chunk_sums"
"""Sweep-store variable (chunk, variable): CRC-32 of each variable's chunk file, written with the chunk."""

CHUNK_VARS = "attnphys_chunk_vars"
"""Root attribute of a sweep store: JSON list of the variables whose chunk files ``chunk_sums`` covers, in
its column order."""

ATTRIBUTES = ":attributes"
"""Key of the manifest holding ``{root attribute: sha256 of its JSON}`` (every root attribute but the
manifest itself); not a file."""

RECORDS_SINCE = (0, 3, 0)
"""The first attnphys version whose stores all carry the manifest (and, for sweeps, the chunk records):
a store naming this version or a later one without them is damaged. The 0.2.0 release wrote none, so a
store naming 0.2.0 without them is read as before while it holds only what 0.2.0 wrote
(:func:`unwritten_contents`; with records, they are checked)."""

ROOT_METADATA = frozenset({"zarr.json", ".zattrs", ".zgroup", ".zmetadata"})
"""Files of the root group's metadata: they hold the manifest, so they are not in it."""


def file_sum(path: str | os.PathLike) -> str:
    """``"size:crc32"`` of a file's bytes (read in blocks)."""
    crc, size = 0, 0
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            crc = zlib.crc32(block, crc)
            size += len(block)
    return f"{size}:{crc:08x}"


def crc32_of(path: str | os.PathLike) -> int:
    """CRC-32 of a file's bytes, 0 when there is no such file (a chunk of fill values only)."""
    try:
        return int(file_sum(path).split(":")[1], 16)
    except FileNotFoundError:
        return 0


def store_files(root: str | os.PathLike, skip: Iterable[str] = ()) -> dict[str, str]:
    """``{relative path: "size:crc32"}`` of every file under a store, except the root metadata and the
    chunk files of the arrays named in ``skip`` (their metadata documents are kept)."""
    root = Path(root)
    skip = set(skip)
    out = {}
    for folder, _dirs, files in os.walk(root):
        rel_folder = Path(folder).relative_to(root)
        for name in files:
            rel = (rel_folder / name).as_posix()
            if rel in ROOT_METADATA:
                continue
            top = rel.split("/", 1)[0]
            if top in skip and name not in ("zarr.json", ".zarray", ".zattrs"):
                continue
            out[rel] = file_sum(Path(folder) / name)
    return out


def attrs_record(attrs: Mapping) -> dict[str, str]:
    """``{attribute: sha256 of its canonical JSON}`` of a store's root attributes, the manifest excepted."""
    out = {}
    for k, v in attrs.items():
        if k == MANIFEST:
            continue
        text = json.dumps(v, sort_keys=True, default=str, ensure_ascii=True)
        out[str(k)] = hashlib.sha256(text.encode()).hexdigest()
    return out


def manifest_files(manifest: Mapping) -> dict[str, str]:
    """The file entries of a manifest (its :data:`ATTRIBUTES` record left out)."""
    return {k: v for k, v in manifest.items() if k != ATTRIBUTES}


def check_attrs(manifest: Mapping, attrs: Mapping) -> list[str]:
    """What differs between a store's root attributes and the record of them in its manifest (empty:
    none); one line naming every attribute changed, added or removed."""
    recorded = manifest.get(ATTRIBUTES)
    if not isinstance(recorded, dict):
        return [f"its record of its attributes ({MANIFEST}[{ATTRIBUTES!r}]) is missing"]
    now = attrs_record(attrs)
    changed = sorted(k for k in set(now) & set(recorded) if now[k] != recorded[k])
    added = sorted(set(now) - set(recorded))
    removed = sorted(set(recorded) - set(now))
    parts = []
    for what, names in (("changed", changed), ("added", added), ("removed", removed)):
        if names:
            shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
            parts.append(f"root attribute{'s' if len(names) > 1 else ''} {shown} {what} since it was written")
    return ["; ".join(parts)] if parts else []


def _version(text: object) -> tuple[int, ...] | None:
    m = re.match(r"\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?", str(text))
    return tuple(int(g or 0) for g in m.groups()) if m else None


def requires_records(attrs: Mapping) -> bool:
    """Whether a store must carry the manifest: it names no attnphys version older than
    :data:`RECORDS_SINCE` (a store naming none, or one that cannot be read, must carry it too)."""
    v = _version(attrs.get("attnphys_version")) if "attnphys_version" in attrs else None
    return v is None or v >= RECORDS_SINCE


def missing_records(attrs: Mapping, sweep: bool) -> list[str]:
    """The records a store of this version must carry and lacks (names of root attributes)."""
    if not requires_records(attrs):
        return []
    wanted = [MANIFEST] + ([CHUNK_VARS] if sweep else [])
    return [k for k in wanted if not attrs.get(k)]


EARLIER_LAYOUT = "stores_before_records.json"
"""Data file of the package (``attnphys/data``): what the stores of the versions before
:data:`RECORDS_SINCE` hold (the fields of their sweep definitions, by task kind, read from the models of
the 0.2.0 release), and what later versions write that they never did (root attributes; variables by task
kind, ``"*"`` for every kind)."""


@functools.cache
def earlier_layout() -> dict:
    """The contents of :data:`EARLIER_LAYOUT` (read once)."""
    from importlib.resources import files

    return json.loads(files("attnphys").joinpath("data", EARLIER_LAYOUT).read_text())


def _json(value: object) -> object:
    try:
        return json.loads(str(value))
    except (TypeError, ValueError):
        return None


def _unknown_fields(value: object, allowed: set[str], at: str, out: list[str]) -> None:
    """Paths under ``at`` of ``value`` (a JSON document; lists as ``[]``) that ``allowed`` does not list; a
    path listed as ``P.*`` is a free mapping whose keys are not looked at."""
    if isinstance(value, list):
        for item in value:
            _unknown_fields(item, allowed, f"{at}[]", out)
        return
    if not isinstance(value, dict) or (at and f"{at}.*" in allowed):
        return
    for key, item in value.items():
        path = f"{at}.{key}" if at else str(key)
        if path not in allowed:
            out.append(path)
            continue
        _unknown_fields(item, allowed, path, out)


def _store_members(root: Path) -> set[str]:
    """The arrays and groups at the top of a store's folder (entries holding Zarr metadata)."""
    try:
        entries = list(os.scandir(root))
    except OSError:
        return set()
    meta = ("zarr.json", ".zarray", ".zgroup")
    return {e.name for e in entries if e.is_dir() and any((Path(e.path) / m).is_file() for m in meta)}


def _consolidated(root: Path) -> bool:
    """Whether a store's root metadata holds consolidated metadata (which versions before
    :data:`RECORDS_SINCE` never wrote)."""
    if (root / ".zmetadata").is_file():
        return True
    try:
        return bool(json.loads((root / "zarr.json").read_text()).get("consolidated_metadata"))
    except (OSError, ValueError, AttributeError):
        return False


def _shown(names: list[str], limit: int = 4) -> str:
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


def unwritten_contents(attrs: Mapping, root: str | os.PathLike | None = None) -> list[str]:
    """What a store naming a version before :data:`RECORDS_SINCE` holds that no store of those versions
    held (empty: nothing), one phrase per kind of content: root attributes and variables first written by
    later versions (:data:`EARLIER_LAYOUT`; among them the parts of the records), a sweep task kind those
    versions did not have, fields of the sweep definition or of the configuration attribute their models
    did not have, consolidated metadata. ``root``: the store's folder (without it, the variables and the
    metadata are not looked at).

    The rule (theory: docs/theory/sweeps.md §2.3): without records, a store is read unverified only
    while everything it holds is what the version it names wrote; a store that also holds what only a later
    version writes was written by a later version, whose records are missing."""
    layout = earlier_layout()
    out = []
    later_attrs = sorted(k for k in layout["later_attributes"] if k in attrs)
    if later_attrs:
        out.append(f"root attribute{'s' if len(later_attrs) > 1 else ''} {_shown(later_attrs)}")
    fields = layout["definition_fields"]
    sweep = _json(attrs.get("sweep")) if "sweep" in attrs else None
    kind = None
    if "sweep" in attrs:
        task = sweep.get("task") if isinstance(sweep, dict) else None
        kind = task.get("kind") if isinstance(task, dict) else None
        if not isinstance(sweep, dict):
            out.append("a sweep definition it cannot have written (not a JSON object)")
        elif kind not in fields or kind == "(sweep)":
            out.append(f"a sweep of task kind {kind!r}, which that version did not have")
        else:
            unknown: list[str] = []
            _unknown_fields(sweep, set(fields["(sweep)"]) | set(fields[kind]), "", unknown)
            if unknown:
                out.append(f"field{'s' if len(unknown) > 1 else ''} {_shown(unknown)} of its sweep definition")
    config = _json(attrs.get("config")) if "config" in attrs else None
    if isinstance(config, dict):
        kinds = [kind] if kind in fields and kind != "(sweep)" else [k for k in fields if k != "(sweep)"]
        allowed = {p for k in kinds for p in fields[k] if p.startswith("task.config.")}
        if allowed:
            unknown = []
            _unknown_fields({"task": {"config": config}}, allowed | {"task", "task.config"}, "", unknown)
            if unknown:
                shown = [p.removeprefix("task.config.") for p in unknown]
                out.append(f"field{'s' if len(shown) > 1 else ''} {_shown(shown)} of its config attribute")
    if root is not None:
        root = Path(root)
        members = _store_members(root)
        later = layout["later_variables"]
        names = sorted(members & (set(later.get("*", [])) | set(later.get(str(kind), []))))
        if names:
            out.append(f"variable{'s' if len(names) > 1 else ''} {_shown(names)}")
        if _consolidated(root):
            out.append("consolidated metadata")
    return out


def _variable(rel: str) -> str:
    return rel.split("/", 1)[0]


def check_manifest(root: str | os.PathLike, manifest: Mapping[str, str]) -> list[str]:
    """What differs between a store and its manifest, one line per variable (empty: none). Files the
    manifest does not list are not looked at."""
    root = Path(root)
    missing: dict[str, list[str]] = {}
    changed: dict[str, list[str]] = {}
    for rel, expected in manifest_files(manifest).items():
        p = root / rel
        try:
            got = file_sum(p)
        except FileNotFoundError:
            missing.setdefault(_variable(rel), []).append(rel)
            continue
        except OSError:
            got = None
        if got != expected:
            changed.setdefault(_variable(rel), []).append(rel)
    lines = []
    for var in sorted(set(missing) | set(changed)):
        parts = []
        for what, files in (("missing", missing.get(var, [])), ("changed", changed.get(var, []))):
            if not files:
                continue
            meta = [f for f in files if f.rsplit("/", 1)[-1] in ("zarr.json", ".zarray", ".zattrs")]
            if meta:
                parts.append(f"its metadata ({meta[0]}) is {what}")
            n = len(files) - len(meta)
            if n:
                shown = ", ".join(f for f in files if f not in meta)[:120]
                parts.append(f"{n} chunk file{'s' if n > 1 else ''} {what} ({shown})")
        lines.append(f"variable {var}: " + "; ".join(parts))
    return lines


def chunk_file(root: str | os.PathLike, name: str, index: tuple[int, ...]) -> Path:
    """Path of the file that holds chunk ``index`` of array ``name`` (local stores)."""
    import zarr

    arr = zarr.open_array(store=str(root), path=name, mode="r")
    meta = arr.metadata
    encode = getattr(meta, "encode_chunk_key", None)
    if encode is not None:
        key = encode(index)
    else:  # pragma: no cover - Zarr v2 metadata without the method
        key = ".".join(map(str, index))
    return Path(root) / name / key


def _chunk_sum(group, root, name: str, i: int) -> int | None:
    """CRC-32 of chunk ``i`` of array ``name``; None when the array itself cannot be opened."""
    try:
        arr = group[name]
        index = (i,) + (0,) * (len(arr.shape) - 1)
        return crc32_of(chunk_file(root, name, index))
    except Exception:  # noqa: BLE001 - metadata missing or unreadable
        return None


def chunk_sums(root: str | os.PathLike, names: Iterable[str], i: int) -> np.ndarray:
    """(n_names,) uint32: CRC-32 of chunk ``i`` (along the first axis, the whole of the others) of each
    array."""
    import zarr

    g = zarr.open_group(str(root), mode="r")
    return np.asarray([_chunk_sum(g, root, n, i) or 0 for n in names], dtype=np.uint32)


def damaged_chunks(root: str | os.PathLike, attrs: Mapping, done: np.ndarray) -> dict[int, list[str]]:
    """Chunks flagged done whose files no longer match the sums written with them: chunk → variables.
    Empty for a store without ``chunk_sums`` (written before they existed)."""
    import zarr

    names = json.loads(str(attrs.get(CHUNK_VARS, "[]")))
    if not names:
        return {}
    g = zarr.open_group(str(root), mode="r")
    try:
        recorded = np.asarray(g[CHUNK_SUMS][:])  # pyright: ignore[reportArgumentType,reportIndexIssue]
    except Exception:  # noqa: BLE001 - the sums themselves unreadable: every done chunk is suspect
        recorded = None
    out: dict[int, list[str]] = {}
    for i in np.flatnonzero(done):
        i = int(i)
        if recorded is None or recorded.shape[0] <= i:
            out[i] = list(names)
            continue
        bad = [n for n, a in zip(names, recorded[i]) if _chunk_sum(g, root, n, i) != int(a)]
        if bad:
            out[i] = bad
    return out


def describe_chunks(damaged: Mapping[int, list[str]]) -> str:
    """``"chunk 0 (mo_se, att), chunk 3 (att)"``, shortened."""
    items = sorted(damaged.items())
    shown = ", ".join(f"chunk {i} ({', '.join(v[:3])}{', …' if len(v) > 3 else ''})" for i, v in items[:5])
    return shown + (f" and {len(items) - 5} more chunks" if len(items) > 5 else "")


def verify_attrs(attrs: Mapping, sweep: bool, root: str | os.PathLike | None = None) -> list[str]:
    """What is wrong with a store's root attributes: records it must carry and lacks
    (:func:`missing_records`), attributes that differ from the manifest's record of them (empty: none).
    A store without records that names an earlier version must hold only what that version wrote
    (:func:`unwritten_contents`; ``root``: its folder, so that its variables and metadata are looked at
    too)."""
    missing = missing_records(attrs, sweep)
    version = attrs.get("attnphys_version", "(no version)")
    if missing:
        return [
            f"it names attnphys {version} but lacks "
            f"{' and '.join(missing)}, which every store of that version carries: either they were removed "
            "from it, or it is a copy written by other means than attnphys (such as xarray's to_zarr), which "
            "cannot be verified"
        ]
    manifest = attrs.get(MANIFEST)
    if not manifest:
        foreign = unwritten_contents(attrs, root)
        if foreign:
            records = " and ".join([MANIFEST] + ([CHUNK_VARS] if sweep and not attrs.get(CHUNK_VARS) else []))
            return [
                f"it names attnphys {version}, whose stores carry no records, but it holds what no store of "
                f"that version holds ({'; '.join(foreign)}): it was written by a later attnphys, or copied by "
                "other means than attnphys (such as xarray's to_zarr), and lacks "
                f"{records}, which every store since {'.'.join(map(str, RECORDS_SINCE))} carries; its version "
                "label alone does not vouch for its data, which cannot be verified"
            ]
        return []
    try:
        parsed = json.loads(str(manifest))
        if not isinstance(parsed, dict):
            raise TypeError
    except (ValueError, TypeError):
        return [f"its record of its files ({MANIFEST}) is unreadable"]
    if ATTRIBUTES not in parsed and not requires_records(attrs):
        return []
    return check_attrs(parsed, attrs)


def write_manifest(root: str | os.PathLike, files: Mapping[str, str] | None = None) -> None:
    """Record in a store's root attributes its manifest: ``files`` (default: the files it lists already)
    and the digest of every root attribute as they are now. Call it after the last change of attributes."""
    import zarr

    g = zarr.open_group(str(root), mode="r+")
    attrs = dict(g.attrs)
    if files is None:
        try:
            files = manifest_files(json.loads(str(attrs.get(MANIFEST, "{}"))))
        except (ValueError, TypeError, AttributeError):
            files = {}
    manifest = {**files, ATTRIBUTES: attrs_record(attrs)}
    g.attrs[MANIFEST] = json.dumps(manifest, sort_keys=True)


def verify_store(
    root: str | os.PathLike, attrs: Mapping, done: np.ndarray | None = None, sweep: bool | None = None
) -> list[str]:
    """Every difference between a store and what it recorded: its root attributes
    (:func:`verify_attrs`), its manifest and, for a sweep store (``sweep``; default: whether ``done`` is
    given), the sums of its done chunks (``done``: the flags, when already read). Empty for an intact
    store."""
    problems = verify_attrs(attrs, sweep=done is not None if sweep is None else sweep, root=root)
    if problems and not attrs.get(MANIFEST):
        return problems
    manifest = attrs.get(MANIFEST)
    if manifest:
        try:
            problems += check_manifest(root, json.loads(str(manifest)))
        except (ValueError, TypeError, AttributeError):
            pass  # said by verify_attrs
    if done is not None:
        bad = damaged_chunks(root, attrs, done)
        if bad:
            problems.append(f"{len(bad)} done chunk(s) no longer match what was written: {describe_chunks(bad)}")
    return problems


__all__ = [
    "ATTRIBUTES",
    "CHUNK_SUMS",
    "CHUNK_VARS",
    "MANIFEST",
    "RECORDS_SINCE",
    "attrs_record",
    "check_attrs",
    "check_manifest",
    "chunk_sums",
    "damaged_chunks",
    "describe_chunks",
    "earlier_layout",
    "file_sum",
    "manifest_files",
    "missing_records",
    "requires_records",
    "store_files",
    "unwritten_contents",
    "verify_attrs",
    "verify_store",
    "write_manifest",
]
