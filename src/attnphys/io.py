"""Writing and reading results (xarray + Zarr, NetCDF for ``.nc`` paths)."""

from __future__ import annotations

import warnings
from pathlib import Path

import xarray as xr


def save(ds: xr.Dataset, path: str | Path, overwrite: bool = True) -> Path:
    """Write ``ds`` to ``path``: NetCDF when it ends in ``.nc``, else a Zarr store."""
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists; choose another path or allow overwriting")
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".nc":
        ds.to_netcdf(path)
    else:
        with warnings.catch_warnings():
            # short label coordinates (``direction``, ``pair``) are fixed-length strings, which Zarr v3
            # stores fine but flags as not yet in its specification
            warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")
            ds.to_zarr(path, mode="w", consolidated=False)
    return path


def load(path: str | Path) -> xr.Dataset:
    """Open a result written by :func:`save` (loaded into memory)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no result at {path}")
    if path.suffix == ".nc":
        return xr.load_dataset(path)
    with xr.open_zarr(path, consolidated=False) as ds:
        return ds.load()
