"""One Zarr store per sweep: a template written once, chunk regions, an explicit ``done`` mask.

Layout: every result variable has a leading ``point`` dimension (flat C-order index over the grid),
stored in Zarr chunks of exactly one sweep chunk, so two tasks never write the same Zarr object. The
``done`` variable (dim ``chunk``, one Zarr chunk each) is set to 1 only after a chunk's data are
written; a chunk without its flag is recomputed on the next run. The store's ``sweep`` attribute
holds the full sweep definition (configuration, grid, task); a run with a different definition
refuses to write into it. :func:`open_result` reshapes ``point`` back into the grid axes.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Mapping

import numpy as np
import xarray as xr
import zarr



class StoreMismatchError(ValueError):
    """The store was created by a different sweep."""


class VarSpec(tuple):
    """(dims after ``point``, shape after ``point``, dtype, fill value)."""

    def __new__(cls, dims: tuple[str, ...], shape: tuple[int, ...], dtype, fill):
        return super().__new__(cls, (tuple(dims), tuple(shape), np.dtype(dtype), fill))


def _diff(a: dict, b: dict, prefix: str = "") -> list[str]:
    keys = sorted(set(a) | set(b))
    out = []
    for k in keys:
        if isinstance(a.get(k), dict) and isinstance(b.get(k), dict):
            out += _diff(a[k], b[k], f"{prefix}{k}.")
        elif a.get(k) != b.get(k):
            out.append(f"{prefix}{k}: store has {json.dumps(a.get(k))[:80]}, this run {json.dumps(b.get(k))[:80]}")
    return out


def create_or_check(path: str | Path, definition: dict, n_points: int, chunk: int, schema: Mapping[str, VarSpec],
                    coords: Mapping[str, tuple[tuple[str, ...], np.ndarray]], attrs: dict) -> bool:
    """Create the template at ``path``, or check that an existing store holds the same sweep.

    Returns:
        True if the store was created now.

    Raises:
        StoreMismatchError: the store exists and was written by a different sweep definition (the
            message lists the differing fields), or ``path`` is not a sweep store.
    """
    path = Path(path)
    if path.exists():
        try:
            stored = json.loads(zarr.open_group(str(path), mode="r").attrs["sweep"])
        except Exception as e:
            raise StoreMismatchError(f"{path} exists and is not a sweep store ({type(e).__name__}: {e}); "
                                     "choose another --out") from None
        if stored != definition:
            lines = "\n  ".join(_diff(stored, definition)) or "(definitions differ)"
            raise StoreMismatchError(f"{path} holds a different sweep; refusing to write into it:\n  {lines}\n"
                                     "Use another --out, or delete the store to start over.")
        return False
    n_chunks = -(-n_points // chunk)
    data = {}
    encoding = {}
    for name, (dims, shape, dtype, fill) in schema.items():
        data[name] = (("point",) + dims, np.full((n_points,) + shape, fill, dtype=dtype))
        encoding[name] = {"chunks": (chunk,) + shape}
    data["done"] = (("chunk",), np.zeros(n_chunks, np.int8))
    encoding["done"] = {"chunks": (1,)}
    ds = xr.Dataset(data, coords={k: v for k, v in coords.items()})
    ds.attrs.update(attrs)
    ds.attrs["sweep"] = json.dumps(definition, sort_keys=True)
    ds.attrs["chunk_size"] = chunk
    path.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")
        ds.to_zarr(path, mode="w-", consolidated=False, encoding=encoding, compute=True)
    return True


def done_mask(path: str | Path) -> np.ndarray:
    """(n_chunks,) bool: chunks whose data are complete."""
    return np.asarray(zarr.open_group(str(path), mode="r")["done"][:]).astype(bool)


def write_chunk(path: str | Path, i: int, lo: int, hi: int, values: Mapping[str, np.ndarray]) -> None:
    """Write one chunk's data into its region, then (only then) its ``done`` flag."""
    g = zarr.open_group(str(path), mode="r+")
    for name, v in values.items():
        g[name][lo:hi] = np.asarray(v)
    g["done"][i] = 1


def open_result(path: str | Path, require_complete: bool = True) -> xr.Dataset:
    """Load a sweep store with ``point`` reshaped into the grid axes (``done`` dropped).

    Raises:
        RuntimeError: chunks are missing and ``require_complete``.
    """
    with xr.open_zarr(str(path), consolidated=False) as ds:
        ds = ds.load()
    done = ds["done"].values.astype(bool)
    if require_complete and not done.all():
        raise RuntimeError(f"{path}: {int((~done).sum())} of {done.size} chunks are not done; re-run the sweep to finish")
    definition = json.loads(ds.attrs["sweep"])
    axes = definition["grid"]["axes"]
    names = [a["name"] for a in axes]
    shape = [len(a["values"]) for a in axes]
    out = {}
    for name, var in ds.data_vars.items():
        if name == "done" or "point" not in var.dims:
            continue
        rest = var.dims[1:]
        out[name] = (names + list(rest), var.values.reshape(shape + list(var.shape[1:])), var.attrs)
    coords = {n: np.asarray(a["values"]) for n, a in zip(names, axes)}
    coords.update({k: v for k, v in ds.coords.items() if "point" not in v.dims and k not in coords})
    res = xr.Dataset(out, coords=coords)
    res.attrs.update(ds.attrs)
    return res


__all__ = ["StoreMismatchError", "VarSpec", "create_or_check", "done_mask", "open_result", "write_chunk"]
