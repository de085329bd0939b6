"""The Gaussian orthogonal ensemble (Wigner matrices) (theory: docs/theory/clouds.md §6.3)."""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp

from attnphys.clouds.ensembles._base import AbstractEnsemble


class GOE(AbstractEnsemble):
    """W = (G + Gᵀ)/√(2D), G i.i.d. N(0, 1): symmetric, off-diagonal variance 1/D, diagonal 2/D, the
    spectrum filling the semicircle on [−2, 2] (theory: docs/theory/clouds.md §6.3)."""

    name: ClassVar[str] = "goe"
    symmetric: ClassVar[bool] = True

    def sample(self, key, batch, dim, dtype=None):
        G = jax.random.normal(key, (*batch, dim, dim), dtype or jnp.result_type(float))
        return (G + jnp.swapaxes(G, -1, -2)) / jnp.sqrt(2.0 * dim)
