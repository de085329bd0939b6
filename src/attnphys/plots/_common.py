"""Helpers shared by the figure modules."""

from __future__ import annotations

import json
from pathlib import Path

import xarray as xr
from matplotlib.figure import Figure


def subplots(nrows: int = 1, ncols: int = 1, *, figsize=None, **kw):
    """(figure, axes) on a :class:`matplotlib.figure.Figure` of its own: no pyplot, no global backend
    (the user's matplotlib settings are left alone)."""
    fig = Figure(figsize=figsize)
    return fig, fig.subplots(nrows, ncols, **kw)


def check_component(component: int, n_features: int) -> int:
    """The plotted component of an M-vector observable, checked to lie in [0, n_features - 1].

    Raises:
        ValueError: naming the range.
    """
    if not 0 <= component < n_features:
        raise ValueError(f"component {component} is not in [0, {n_features - 1}]")
    return component


def config_title(ds: xr.Dataset, keys=("M", "L", "P", "beta_o", "beta_att", "epsilon")) -> str:
    """A one-line figure title from the configuration in ``ds.attrs['config']``; swept coordinates
    show their first value."""
    try:
        cfg = json.loads(ds.attrs.get("config", "{}"))
    except json.JSONDecodeError:
        cfg = {}
    for k in keys:
        if k in ds.coords and ds[k].size:
            cfg[k] = (
                float(ds[k].values.ravel()[0])
                if ds[k].size == 1
                else f"[{ds[k].values.min():g}, {ds[k].values.max():g}]"
            )
    text = ", ".join(f"{k}={cfg[k]}" for k in keys if k in cfg)
    return text + (f", start: {ds.attrs['start']}" if "start" in ds.attrs else "")


def save(fig: Figure, path: Path, dpi: int = 120) -> Path:
    """tight_layout and write, creating missing folders; returns the path."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    return Path(path)
