"""I.i.d. Gaussian matrices (theory: docs/theory/clouds.md §6.3)."""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp

from attnphys.clouds.ensembles._base import AbstractEnsemble


class Gaussian(AbstractEnsemble):
    """W_ab ~ N(0, 1/D) independent (theory: docs/theory/clouds.md §6.3)."""

    name: ClassVar[str] = "gaussian"

    def sample(self, key, batch, dim, dtype=None):
        return jax.random.normal(key, (*batch, dim, dim), dtype or jnp.result_type(float)) / jnp.sqrt(dim)
