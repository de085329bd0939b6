"""Random weight ensembles, one class per variant over :class:`AbstractEnsemble`, and per-layer weights
resampled every n layers (theory: docs/theory/clouds.md §6.3, §6.4)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from attnphys.clouds.ensembles._base import AbstractEnsemble
from attnphys.clouds.ensembles.gaussian import Gaussian
from attnphys.clouds.ensembles.goe import GOE
from attnphys.clouds.ensembles.pm_kq import PlusMinusKQ
from attnphys.clouds.registries import ENSEMBLES

ENSEMBLES = ENSEMBLES
"""The registry of ensembles of random weights by name (:class:`attnphys.registry.Registry`; its names:
``ENSEMBLES.names()``)."""


def layer_weights(
    ensemble: AbstractEnsemble, key, layers: int, heads: int, dim: int, resample_every: int = 0, dtype=None
) -> jax.Array:
    """(layers, heads, D, D) weights: a fresh draw every ``resample_every`` layers (1: untied layers,
    every layer its own weights), or one draw for all layers (0: tied) (theory: docs/theory/clouds.md §6.4).

    Raises:
        InputError: a size not an integer (``layers``, ``resample_every`` ≥ 0; ``heads``, ``dim`` ≥ 1), ``key``
            not a JAX random key. ResourceError: the weights do not fit, naming the size to blame."""
    from attnphys._checks import check_count
    from attnphys.clouds._inputs import check_key
    from attnphys.clouds._sizes import fits_blaming

    check_count(layers, "layers", 0)
    check_count(heads, "heads")
    check_count(dim, "dim")
    check_count(resample_every, "resample_every", 0)
    check_key(key)
    draws = 1 if resample_every == 0 else -(-layers // resample_every)
    fits_blaming(  # the draws, and the (layers, heads, D, D) array gathered from them
        lambda v: (
            8.0
            * ((1 if resample_every == 0 else -(-v["layers"] // resample_every)) + v["layers"])
            * v["heads"]
            * v["dim"] ** 2
        ),
        {"layers": layers, "heads": heads, "dim": dim},
        {"layers": 100, "heads": 1, "dim": 16},
        {
            "layers": f"the weights of {layers} layers ({draws} draw(s)) of {heads} head(s) of {dim}×{dim}",
            "heads": f"{heads} heads of {dim}×{dim} weights in {layers} layers",
            "dim": f"{dim}×{dim} weights of {heads} head(s) in {layers} layers",
        },
        least={"layers": 0},
    )
    W = ensemble.sample(key, (draws, heads), dim, dtype)
    idx = jnp.zeros(layers, int) if resample_every == 0 else jnp.arange(layers) // resample_every
    return W[idx]


__all__ = ["AbstractEnsemble", "Gaussian", "GOE", "PlusMinusKQ", "ENSEMBLES", "layer_weights"]
