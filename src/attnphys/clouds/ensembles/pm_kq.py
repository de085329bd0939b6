"""Products of random sign matrices, W = Qᵀ K (theory: docs/theory/clouds.md §6.3)."""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp

from attnphys.clouds.ensembles._base import AbstractEnsemble


class PlusMinusKQ(AbstractEnsemble):
    """W = Qᵀ K with Q, K independent D × D matrices of i.i.d. ±1/√D entries (Rademacher): the
    bilinear score form of a head with sign-valued query and key maps; entries of W have variance 1/D
    (theory: docs/theory/clouds.md §6.3)."""

    name: ClassVar[str] = "pm_kq"

    def sample(self, key, batch, dim, dtype=None):
        dtype = dtype or jnp.result_type(float)
        kq, kk = jax.random.split(key)
        Q = jax.random.rademacher(kq, (*batch, dim, dim), dtype) / jnp.sqrt(dim)
        K = jax.random.rademacher(kk, (*batch, dim, dim), dtype) / jnp.sqrt(dim)
        return jnp.swapaxes(Q, -1, -2) @ K
