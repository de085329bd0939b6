"""Where sweep results go: one resumable Zarr store per sweep, or memory (theory: docs/theory/sweeps.md §2).

Zarr layout: every result variable has a leading ``point`` dimension (flat C-order index over the grid),
stored in Zarr chunks of exactly one sweep chunk, so two tasks never write the same Zarr object. The
``done`` variable (dim ``chunk``, one Zarr chunk each) is set to 1 only after a chunk's data are
written; a chunk without its flag is recomputed on the next run. The store's ``sweep`` attribute holds
the full sweep definition; a run with a different definition refuses to write into it.

Creation is atomic: the template (with its definition and completion marker) is written into a hidden
sibling and moved into place, so a run killed while creating leaves nothing half-made.
:func:`open_result` reshapes ``point`` back into the grid axes.

Damage is detected (theory: docs/theory/sweeps.md §2.3): the template records the files it holds (its
manifest), and every chunk records the CRC-32 of each variable's chunk file (``chunk_sums``) before its
flag. Opening a store verifies both; a resumed run repairs a lost variable from the template and
recomputes the chunks whose files are missing or changed, whatever their flag says.
"""

from __future__ import annotations

import errno
import json
import shutil
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import xarray as xr

from attnphys._integrity import (
    CHUNK_SUMS,
    CHUNK_VARS,
    MANIFEST,
    check_manifest,
    chunk_sums,
    damaged_chunks,
    describe_chunks,
    manifest_files,
    store_files,
    verify_attrs,
    write_manifest,
)
from attnphys.errors import DamagedResultError, IncompleteResultError, OutputError
from attnphys.io import (
    COMPLETE,
    check_store,
    local_path,
    portable,
    read_done,
    read_store,
    recover_stale,
    staged,
    unflatten_points,
)
from attnphys.sweeps.task import VarSpec


class StoreMismatchError(OutputError, ValueError):
    """The store was created by a different sweep."""


class DamagedStoreWarning(UserWarning):
    """A resumed store had damaged chunks (missing or changed files): they are computed again."""


def _record_template(path: Path, written_later: list[str]) -> None:
    """Record the template's files (metadata and coordinates; not the chunks written later) and its root
    attributes as its manifest."""
    write_manifest(path, store_files(path, skip=written_later))


def _diff(a: dict, b: dict, prefix: str = "") -> list[str]:
    keys = sorted(set(a) | set(b))
    out = []
    for k in keys:
        if isinstance(a.get(k), dict) and isinstance(b.get(k), dict):
            out += _diff(a[k], b[k], f"{prefix}{k}.")
        elif a.get(k) != b.get(k):
            out.append(f"{prefix}{k}: store has {json.dumps(a.get(k))[:80]}, this run {json.dumps(b.get(k))[:80]}")
    return out


def _same_sweep(stored: dict, definition: dict) -> bool:
    """Whether two definitions describe the same sweep: equal, or equal but for a chunk size beyond the
    number of points (one chunk either way)."""
    if stored == definition:
        return True
    try:
        a, b = json.loads(json.dumps(stored)), json.loads(json.dumps(definition))
        for d in (a, b):
            n = int(np.prod([len(ax["values"]) for ax in d["grid"]["axes"]], dtype=np.int64))
            d["grid"]["chunk"] = min(int(d["grid"]["chunk"]), max(n, 1))
        return a == b
    except (KeyError, TypeError, ValueError):
        return False


def _template(
    definition: dict,
    n_points: int,
    chunk: int,
    schema: Mapping[str, VarSpec],
    coords: Mapping[str, tuple[tuple[str, ...], np.ndarray]],
    attrs: dict,
    sums: bool = False,
) -> tuple[xr.Dataset, dict]:
    n_chunks = -(-n_points // chunk)
    zchunk = max(1, min(chunk, n_points))  # a Zarr chunk never larger than the grid (its buffer is allocated whole)
    data, encoding = {}, {}
    for name, spec in schema.items():
        data[name] = (
            ("point",) + spec.dims,
            np.full((n_points,) + spec.shape, spec.fill, dtype=spec.dtype),
            spec.attrs,
        )
        encoding[name] = {"chunks": (zchunk,) + spec.shape}
    data["done"] = (("chunk",), np.zeros(n_chunks, np.int8), {"long_name": "chunk completely written (1)"})
    encoding["done"] = {"chunks": (1,)}
    if sums:
        data[CHUNK_SUMS] = (
            ("chunk", "chunk_variable"),
            np.zeros((n_chunks, len(schema)), np.uint32),
            {"long_name": "CRC-32 of each variable's chunk file, written with the chunk (0: no file)"},
        )
        encoding[CHUNK_SUMS] = {"chunks": (1, len(schema))}
    ds = xr.Dataset(data, coords=dict(coords))
    ds.attrs.update(attrs)
    ds.attrs["sweep"] = json.dumps(definition, sort_keys=True)
    ds.attrs["chunk_size"] = chunk
    if sums:
        ds.attrs[CHUNK_VARS] = json.dumps(list(schema))
    return ds, encoding


def _marked_store(path: Path) -> bool:
    """A Zarr group that carries a sweep's or attnphys's records (a damaged store whose version was
    removed, say): the library wrote it."""
    try:
        import zarr

        attrs = dict(zarr.open_group(str(path), mode="r").attrs)
    except Exception:  # noqa: BLE001 - not a Zarr group
        return False
    return "sweep" in attrs or any(str(k).startswith("attnphys_") for k in attrs)


def _check_replaceable(path: Path) -> None:
    """Starting over may replace an attnphys result (any sweep, damaged or not) or an empty folder, never
    anything else a user keeps at that path (theory: docs/theory/sweeps.md §5).

    Raises:
        OutputError: ``path`` holds a file or a folder that is not an attnphys result.
    """
    from attnphys._paths import kind_of
    from attnphys.io import result_info

    if path.is_dir() and not any(path.iterdir()):
        return
    if result_info(path) is None and not _marked_store(path):
        raise OutputError(
            f"{path} is {kind_of(path)} that is not an attnphys result; starting over (overwrite) replaces only "
            "an attnphys result, never other data: choose another path"
        )


class ZarrStore:
    """A resumable sweep store at ``path``."""

    def __init__(self, path: str | Path):
        self.path = local_path(path)

    def create_or_check(
        self,
        definition: dict,
        n_points: int,
        chunk: int,
        schema: Mapping[str, VarSpec],
        coords,
        attrs: dict,
        replace: bool = False,
        as_current: Callable[[dict], dict] | None = None,
    ) -> bool:
        """Create the template, or check that an existing store holds the same sweep (``replace``: start
        over, the new template replacing the existing store atomically). ``as_current`` reads the stored
        definition through the current classes before the two are compared (the defaults of fields added
        since filled in, so that an older store of the same sweep resumes; theory: docs/theory/sweeps.md
        §2.1, rule 4); the stored attribute itself is left as it was written.

        Returns:
            True if the store was created now.

        An existing store of the same sweep is verified first (:meth:`repair`): variables lost since it was
        created are written again from the template, and chunks whose files are missing or changed lose
        their flag, so that this run recomputes them.

        Raises:
            StoreMismatchError: the store exists and was written by a different sweep definition (the
                message lists the differing fields), or ``path`` is not a sweep store.
            DamagedResultError: the store's own structure is damaged beyond what a run can repair.
        """
        path = self.path
        if path.exists() and not replace:
            try:
                import zarr

                attrs_now = dict(zarr.open_group(str(path), mode="r").attrs)
                stored = json.loads(str(attrs_now["sweep"]))
            except Exception as e:
                raise StoreMismatchError(
                    f"{path} exists and is not a sweep store ({type(e).__name__}); choose another --out"
                ) from None
            problems = verify_attrs(attrs_now, sweep=(path / "done").is_dir(), root=path)
            if problems:  # an edited sweep value would relabel computed points: never resume such a store
                raise DamagedResultError(
                    f"{path} is damaged: {'; '.join(problems)}; a run cannot repair its attributes: pass "
                    "--overwrite to start over, or choose another --out",
                    problems,
                )
            if as_current is not None:  # defaults of the fields added since filled: an older store resumes
                stored = as_current(stored)
            if not _same_sweep(stored, definition):
                diff = _diff(stored, definition)
                lines = "\n  ".join(diff) or "(definitions differ)"
                changed = [d.split(":")[0] for d in diff if d.split(":")[0].endswith(".sha256")]
                hint = "Use another --out, or pass --overwrite to start over."
                if changed:
                    hint = (
                        f"The initial-condition file ({changed[0].removesuffix('.sha256')}) changed since the "
                        "store was created: restore it, use another --out, or pass --overwrite to start over."
                    )
                raise StoreMismatchError(
                    f"{path} holds a different sweep; refusing to write into it:\n  {lines}\n{hint}"
                )
            self.repair(definition, n_points, chunk, schema, coords, attrs)
            return False
        if path.exists() and replace:
            _check_replaceable(path)
        ds, encoding = _template(definition, n_points, chunk, schema, coords, attrs, sums=True)
        ds.attrs[COMPLETE] = 1  # the template is complete; the ``done`` flags say which data are
        recover_stale(path)  # hidden partial templates of killed runs
        with staged(path, replace=replace) as tmp, warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")
            ds.to_zarr(tmp, mode="w-", consolidated=False, encoding=encoding, compute=True)
            _record_template(tmp, [*schema, "done", CHUNK_SUMS])
        return True

    def repair(self, definition, n_points, chunk, schema, coords, attrs) -> dict[int, list[str]]:
        """Make a resumed store whole again: variables whose files the template listed and that are gone
        or changed are written again from the template (all their chunks then count as damaged), and
        every done chunk whose files no longer match its sums loses its flag.

        Returns:
            The chunks unflagged: chunk → variables.

        Raises:
            DamagedResultError: the template cannot be restored (``done`` or ``chunk_sums`` lost, or
                coordinates changed); start over with ``--overwrite``.
        """
        import zarr

        path = self.path
        g = zarr.open_group(str(path), mode="r")
        stored = dict(g.attrs)
        manifest = manifest_files(json.loads(str(stored.get(MANIFEST, "{}"))))
        lost = sorted({rel.split("/", 1)[0] for rel in manifest} - {"zarr.json"})
        lost = [v for v in lost if check_manifest(path, {k: m for k, m in manifest.items() if k.split("/")[0] == v})]
        if lost:
            if not set(lost) <= set(schema):
                raise DamagedResultError(
                    f"{path} is damaged beyond repair by a run ({', '.join(lost)} missing or changed); pass "
                    "--overwrite to start over, or choose another --out",
                    lost,
                )
            tmpl, encoding = _template(definition, n_points, chunk, schema, coords, attrs)
            for name in lost:
                shutil.rmtree(path / name, ignore_errors=True)
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")
                    part = tmpl[[name]].drop_vars(list(tmpl[[name]].coords))
                    part.attrs = {}
                    part.to_zarr(path, mode="a", consolidated=False, encoding={name: encoding[name]})
            zarr.open_group(str(path), mode="r+").attrs.update(stored)  # as they were, whatever the writer did
            if check_manifest(path, manifest):
                raise DamagedResultError(
                    f"{path} is damaged beyond repair by a run; pass --overwrite to start over", lost
                )
        done = read_done(path)
        bad = damaged_chunks(path, stored, done)
        if bad:
            w = zarr.open_group(str(path), mode="r+")
            for i in bad:
                w["done"][i] = 0  # pyright: ignore[reportIndexIssue,reportArgumentType]  (an array, not a group)
            warnings.warn(
                f"{path}: {len(bad)} chunk(s) flagged done were damaged and are computed again: {describe_chunks(bad)}",
                DamagedStoreWarning,
                stacklevel=3,
            )
        return bad

    def done_mask(self) -> np.ndarray:
        return done_mask(self.path)

    def write_chunk(self, i: int, lo: int, hi: int, values: Mapping[str, np.ndarray]) -> None:
        write_chunk(self.path, i, lo, hi, values)

    def result(self, require_complete: bool = True) -> xr.Dataset:
        return open_result(self.path, require_complete)


class MemoryStore:
    """The same interface, in memory (a sweep without ``--out`` store, e.g. a trajectory batch)."""

    def __init__(self):
        self.ds: xr.Dataset | None = None

    def create_or_check(
        self, definition, n_points, chunk, schema, coords, attrs, replace: bool = False, as_current=None
    ) -> bool:
        self.ds, _ = _template(definition, n_points, chunk, schema, coords, attrs)
        return True

    def done_mask(self) -> np.ndarray:
        assert self.ds is not None, "create_or_check first"
        return self.ds["done"].values.astype(bool)

    def write_chunk(self, i: int, lo: int, hi: int, values: Mapping[str, np.ndarray]) -> None:
        assert self.ds is not None, "create_or_check first"
        for name, v in values.items():
            self.ds[name].values[lo:hi] = np.asarray(v)
        self.ds["done"].values[i] = 1

    def result(self, require_complete: bool = True) -> xr.Dataset:
        assert self.ds is not None, "create_or_check first"
        return _reshape(self.ds, "memory", require_complete)


def done_mask(path: str | Path) -> np.ndarray:
    """(n_chunks,) bool: chunks whose data are complete (a flag that cannot be read counts as not done)."""
    return read_done(local_path(path, "path"))


def _put(group, name: str, region, value) -> None:
    """Write ``value`` into ``region`` of the array ``name`` of ``group`` (the one place a chunk's bytes are
    written)."""
    group[name][region] = value


_FULL_DISK = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "the disk quota is exhausted",
    errno.EFBIG: "a file would be larger than the file system allows",
}
"""The write errors of a full disk (or quota), told as such."""


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


def _full_disk(path: Path, e: OSError, what: str, i: int, lo: int, hi: int) -> OutputError:
    """A full disk while chunk ``i`` was written, told with what was being written, where, the room left
    and what is kept: the chunks flagged done before it (their flags are written last, rule 3 of
    docs/theory/sweeps.md §2.1) are complete, this chunk is not flagged and is computed again on resume."""
    try:
        room = f"{_size(shutil.disk_usage(path).free)} free"
    except OSError:
        room = "the room left is unknown"
    try:
        done = read_done(path)
        kept = int(done.sum()) - int(bool(done[i]))
        total = done.size
    except Exception:  # noqa: BLE001 - the flags themselves unreadable: say nothing wrong about them
        kept, total = None, None
    points = f"point {lo}" if hi - lo == 1 else f"points {lo}–{hi - 1}"
    finished = (
        f"the {kept} of {total} chunks finished before are kept (flagged done)"
        if kept is not None
        else "the chunks finished before are kept (flagged done)"
    )
    return OutputError(
        f"{path}: {_FULL_DISK.get(e.errno or 0, e.strerror)} while writing {what} of chunk {i} ({points}); "
        f"{room} on its file system. {finished[0].upper() + finished[1:]}; chunk {i} is not, and is computed "
        "again: free space (or move the store, folder and all, to a larger disk) and run the same command "
        "or call again, which resumes from the finished points"
    )


def write_chunk(path: str | Path, i: int, lo: int, hi: int, values: Mapping[str, np.ndarray]) -> None:
    """Write one chunk's data into its region, then the CRC-32 of its files (``chunk_sums``), then (only
    then) its ``done`` flag.

    Raises:
        OutputError: the disk (or quota) filled up: the message names what was being written, the store,
            the room left, and that the chunks finished before are kept and a new run resumes from them.
    """
    import zarr

    g = zarr.open_group(str(path), mode="r+")
    what = "the store"
    try:
        for name, v in values.items():
            what = f"variable {name}"
            _put(g, name, slice(lo, hi), np.asarray(v))
        names = json.loads(str(g.attrs.get(CHUNK_VARS, "[]")))
        if names and CHUNK_SUMS in g:
            what = f"the checksums ({CHUNK_SUMS})"
            _put(g, CHUNK_SUMS, i, chunk_sums(path, names, i))
        what = "the done flag"
        _put(g, "done", i, 1)
    except OSError as e:
        if e.errno not in _FULL_DISK:
            raise
        raise _full_disk(Path(path), e, what, i, lo, hi) from None


def open_result(path: str | Path, require_complete: bool = True) -> xr.Dataset:
    """Load a sweep store with ``point`` reshaped into the grid axes (``done`` dropped), encoded so that
    plain ``to_netcdf`` (the core install's NetCDF-3 writer) and ``to_zarr`` write it
    (:func:`attnphys.io.portable`).

    Raises:
        IncompleteResultError: chunks are missing and ``require_complete``, or the store is not one.
        DamagedResultError: files the store held are missing or changed (an interrupted copy, a deleted or
            overwritten chunk): the message names the variables and chunks; re-running the sweep repairs it.
    """
    path = local_path(path, "path")
    if not path.exists():
        raise IncompleteResultError(f"{path} does not exist")
    check_store(path)
    ds = read_store(path, "sweep store")
    if "sweep" not in ds.attrs or "done" not in ds:
        raise IncompleteResultError(f"{path} is not a sweep store")
    return portable(_reshape(ds, path, require_complete))


def _reshape(ds: xr.Dataset, where, require_complete: bool) -> xr.Dataset:
    done = ds["done"].values.astype(bool)
    if require_complete and not done.all():
        raise IncompleteResultError(
            f"{where}: {int((~done).sum())} of {done.size} chunks are not done; re-run the sweep to finish"
        )
    return unflatten_points(ds)


__all__ = [
    "DamagedStoreWarning",
    "StoreMismatchError",
    "VarSpec",
    "ZarrStore",
    "MemoryStore",
    "done_mask",
    "open_result",
    "write_chunk",
]
