"""Iterating layers on a token cloud and recording its statistics (theory: docs/theory/clouds.md §1, §5)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from attnphys._arguments import checked
from attnphys._checks import check_array, check_count
from attnphys.clouds.stats import LONG_NAMES, STATISTICS, cloud_statistics
from attnphys.metadata import base_attrs
from attnphys.progress import progress_bar

INITS = ("gaussian", "sphere", "mixture")


@checked
def initial_cloud(kind: str, tokens: int, dim: int, seed: int = 0, dtype=jnp.float32) -> jax.Array:
    """``gaussian``: centred isotropic N(0, I/D) (unit expected norm); ``sphere``: uniform on the unit
    sphere; ``mixture``: 4 well-separated Gaussian blobs (theory: docs/theory/clouds.md §1).

    Raises:
        InputError: an unknown ``kind``, a size not an integer ≥ 1, a seed not an integer ≥ 0.
        ResourceError: the (tokens, dim) cloud does not fit, naming ``tokens`` or ``dim``."""
    from attnphys.clouds._inputs import choice
    from attnphys.clouds._sizes import fits_blaming

    choice(kind, INITS, "kind")
    check_count(tokens, "tokens")
    check_count(dim, "dim")
    check_count(seed, "seed", 0)
    fits_blaming(
        lambda v: 32.0 * v["tokens"] * v["dim"],
        {"tokens": tokens, "dim": dim},
        {"tokens": 512, "dim": 16},
        {
            "tokens": f"a cloud of {tokens} tokens in {dim} dimensions",
            "dim": f"a cloud of {tokens} tokens in {dim} dimensions",
        },
    )
    key = jax.random.PRNGKey(seed)
    if kind == "gaussian":
        return jax.random.normal(key, (tokens, dim), dtype) / np.sqrt(dim)
    if kind == "sphere":
        X = jax.random.normal(key, (tokens, dim), dtype)
        return X / jnp.linalg.norm(X, axis=1, keepdims=True)
    if kind == "mixture":
        k1, k2, k3 = jax.random.split(key, 3)
        centres = 2.0 * jax.random.normal(k1, (4, dim), dtype) / np.sqrt(dim)
        comp = jax.random.randint(k2, (tokens,), 0, 4)
        return centres[comp] + 0.3 * jax.random.normal(k3, (tokens, dim), dtype) / np.sqrt(dim)
    raise AssertionError(kind)  # pragma: no cover - refused above


@partial(jax.jit, static_argnames=("layer", "n"))
def _iterate(layer: Callable, X, start, n: int):
    if getattr(layer, "indexed", False):
        return jax.lax.fori_loop(start, start + n, lambda l, Y: layer(Y, l), X)
    return jax.lax.fori_loop(0, n, lambda _, Y: layer(Y), X)


@checked
def run_cloud(
    X0,
    layer: Callable,
    layers: int,
    stats_every: int = 10,
    snapshots: Sequence[int] = (),
    seed: int = 0,
    progress: bool = False,
    attrs: dict | None = None,
) -> xr.Dataset:
    """Apply ``layer`` ``layers`` times to X0 (N, D), with statistics at layers 0, s, 2s, …, ``layers``
    (theory: docs/theory/clouds.md §1, §5). ``layer`` is X ↦ X, or (X, l) ↦ X for per-layer weights
    when it carries ``indexed = True`` (:func:`~attnphys.clouds.ops.untied_layers`).

    Returns:
        Dataset: one variable per statistic over ``layer``; ``snapshot`` (snap_layer, token, dim) of the
        cloud at the requested layers (taken at the nearest recorded layer); attrs with the settings.
    """
    check_count(layers, "layers", 0)
    check_count(stats_every, "stats_every")
    check_array(X0, "X0", ndim=2, what="tokens × dimensions (N, D)", finite=True)
    for s in snapshots:
        check_count(s, "snapshots", 0)
    marks = sorted(set(list(range(0, layers + 1, stats_every)) + [layers]))
    snaps = sorted({min(marks, key=lambda m: abs(m - s)) for s in snapshots})
    X = jnp.asarray(X0)
    rows, saved, prev, t = [], {}, None, 0
    with progress_bar(len(marks), "layer blocks", enabled=progress) as advance:
        for m in marks:
            if m > t:
                X = _iterate(layer, X, t, m - t)
                t = m
            if not bool(jnp.all(jnp.isfinite(X))):
                raise FloatingPointError(f"non-finite token cloud at layer {m}")
            rows.append(cloud_statistics(X, prev, jax.random.PRNGKey(seed + m)))
            if m in snaps:
                saved[m] = np.asarray(X)
            prev = X
            advance(1)
    data = {s: (("layer",), np.array([r[s] for r in rows])) for s in STATISTICS}
    ds = xr.Dataset(data, coords={"layer": marks})
    for s in STATISTICS:
        ds[s].attrs["long_name"] = LONG_NAMES[s]
    ds["layer"].attrs["long_name"] = "layers applied"
    if snaps:
        ds["snapshot"] = (("snap_layer", "token", "dim"), np.stack([saved[s] for s in snaps]))
        ds = ds.assign_coords(snap_layer=snaps)
        ds["snapshot"].attrs["long_name"] = "token positions at the snapshot layers"
        ds["snap_layer"].attrs["long_name"] = "layer of the snapshot"
    ds.attrs.update(base_attrs(None, **(attrs or {})))
    ds["moved_apart"].attrs["description"] = "fraction of token pairs farther apart than at the previous recorded layer"
    return ds
