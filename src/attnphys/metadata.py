"""Metadata carried by every result: full configuration, package and library versions."""

from __future__ import annotations

import json
import platform
from datetime import UTC, datetime

import jax
import numpy as np

from attnphys._version import __version__


def base_attrs(cfg=None, **extra) -> dict:
    """Dataset attributes: ``attnphys_version``, ``config`` (JSON), library versions, creation time.

    Every value is a string or number so that the attributes survive Zarr and NetCDF.
    """
    attrs = {
        "attnphys_version": __version__,
        "jax_version": jax.__version__,
        "numpy_version": np.__version__,
        "python_version": platform.python_version(),
        "x64": int(bool(jax.config.jax_enable_x64)),  # pyright: ignore[reportAttributeAccessIssue]
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if cfg is not None:
        attrs["config"] = json.dumps(cfg.to_attrs() if hasattr(cfg, "to_attrs") else cfg, sort_keys=True)
    attrs.update({k: (json.dumps(v) if isinstance(v, (dict, list, tuple)) else v) for k, v in extra.items()})
    return attrs


def config_of(ds) -> dict:
    """The configuration stored in a result's attributes."""
    return json.loads(ds.attrs["config"])
