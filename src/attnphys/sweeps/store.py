"""Where sweep results go: one resumable Zarr store per sweep, or memory (theory: docs/theory/sweeps.md §2).

Zarr layout: every result variable has a leading ``point`` dimension (flat C-order index over the grid),
stored in Zarr chunks of exactly one sweep chunk, so two tasks never write the same Zarr object. The
``done`` variable (dim ``chunk``, one Zarr chunk each) is set to 1 only after a chunk's data are
written; a chunk without its flag is recomputed on the next run. The store's ``sweep`` attribute holds
the full sweep definition; a run with a different definition refuses to write into it.

Creation is atomic: the template (with its definition and completion marker) is written into a hidden
sibling and moved into place, so a run killed while creating leaves nothing half-made.
:func:`open_result` reshapes ``point`` back into the grid axes.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import xarray as xr

from attnphys.errors import IncompleteResultError, OutputError
from attnphys.io import COMPLETE, _recover_stale, staged, unflatten_points
from attnphys.sweeps.task import VarSpec


class StoreMismatchError(OutputError, ValueError):
    """The store was created by a different sweep."""


def _diff(a: dict, b: dict, prefix: str = "") -> list[str]:
    keys = sorted(set(a) | set(b))
    out = []
    for k in keys:
        if isinstance(a.get(k), dict) and isinstance(b.get(k), dict):
            out += _diff(a[k], b[k], f"{prefix}{k}.")
        elif a.get(k) != b.get(k):
            out.append(f"{prefix}{k}: store has {json.dumps(a.get(k))[:80]}, this run {json.dumps(b.get(k))[:80]}")
    return out


def _template(
    definition: dict,
    n_points: int,
    chunk: int,
    schema: Mapping[str, VarSpec],
    coords: Mapping[str, tuple[tuple[str, ...], np.ndarray]],
    attrs: dict,
) -> tuple[xr.Dataset, dict]:
    n_chunks = -(-n_points // chunk)
    data, encoding = {}, {}
    for name, spec in schema.items():
        data[name] = (
            ("point",) + spec.dims,
            np.full((n_points,) + spec.shape, spec.fill, dtype=spec.dtype),
            spec.attrs,
        )
        encoding[name] = {"chunks": (chunk,) + spec.shape}
    data["done"] = (("chunk",), np.zeros(n_chunks, np.int8), {"long_name": "chunk completely written (1)"})
    encoding["done"] = {"chunks": (1,)}
    ds = xr.Dataset(data, coords=dict(coords))
    ds.attrs.update(attrs)
    ds.attrs["sweep"] = json.dumps(definition, sort_keys=True)
    ds.attrs["chunk_size"] = chunk
    return ds, encoding


class ZarrStore:
    """A resumable sweep store at ``path``."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def create_or_check(
        self,
        definition: dict,
        n_points: int,
        chunk: int,
        schema: Mapping[str, VarSpec],
        coords,
        attrs: dict,
        replace: bool = False,
    ) -> bool:
        """Create the template, or check that an existing store holds the same sweep (``replace``: start
        over, the new template replacing the existing store atomically).

        Returns:
            True if the store was created now.

        Raises:
            StoreMismatchError: the store exists and was written by a different sweep definition (the
                message lists the differing fields), or ``path`` is not a sweep store.
        """
        path = self.path
        if path.exists() and not replace:
            try:
                import zarr

                stored = json.loads(str(zarr.open_group(str(path), mode="r").attrs["sweep"]))
            except Exception as e:
                raise StoreMismatchError(
                    f"{path} exists and is not a sweep store ({type(e).__name__}); choose another --out"
                ) from None
            if stored != definition:
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
            return False
        ds, encoding = _template(definition, n_points, chunk, schema, coords, attrs)
        ds.attrs[COMPLETE] = 1  # the template is complete; the ``done`` flags say which data are
        _recover_stale(path)  # hidden partial templates of killed runs
        with staged(path, replace=replace) as tmp, warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")
            ds.to_zarr(tmp, mode="w-", consolidated=False, encoding=encoding, compute=True)
        return True

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

    def create_or_check(self, definition, n_points, chunk, schema, coords, attrs, replace: bool = False) -> bool:
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
    """(n_chunks,) bool: chunks whose data are complete."""
    import zarr

    return np.asarray(zarr.open_group(str(path), mode="r")["done"][:]).astype(bool)  # pyright: ignore[reportArgumentType]  (an array, not a group)


def write_chunk(path: str | Path, i: int, lo: int, hi: int, values: Mapping[str, np.ndarray]) -> None:
    """Write one chunk's data into its region, then (only then) its ``done`` flag."""
    import zarr

    g = zarr.open_group(str(path), mode="r+")
    for name, v in values.items():
        g[name][lo:hi] = np.asarray(v)  # pyright: ignore[reportArgumentType]  (an array, not a group)
    g["done"][i] = 1  # pyright: ignore[reportArgumentType]  (an array, not a group)


def open_result(path: str | Path, require_complete: bool = True) -> xr.Dataset:
    """Load a sweep store with ``point`` reshaped into the grid axes (``done`` dropped).

    Raises:
        IncompleteResultError: chunks are missing and ``require_complete``, or the store is not one.
    """
    try:
        with xr.open_zarr(str(path), consolidated=False) as ds:
            ds = ds.load()
    except Exception as e:
        raise IncompleteResultError(f"{path} is not a readable sweep store ({type(e).__name__}: {e})") from None
    if "sweep" not in ds.attrs or "done" not in ds:
        raise IncompleteResultError(f"{path} is not a sweep store")
    return _reshape(ds, path, require_complete)


def _reshape(ds: xr.Dataset, where, require_complete: bool) -> xr.Dataset:
    done = ds["done"].values.astype(bool)
    if require_complete and not done.all():
        raise IncompleteResultError(
            f"{where}: {int((~done).sum())} of {done.size} chunks are not done; re-run the sweep to finish"
        )
    return unflatten_points(ds)


__all__ = ["StoreMismatchError", "VarSpec", "ZarrStore", "MemoryStore", "done_mask", "open_result", "write_chunk"]
