"""The random-weight ensemble interface (theory: docs/theory/clouds.md §6.3)."""

from __future__ import annotations

import abc
from typing import ClassVar

import equinox as eqx
import jax


class AbstractEnsemble(eqx.Module):
    """A distribution of random D × D weight matrices whose entries have variance ≈ 1/D, so that a
    matrix has operator norm O(1) for large D (theory: docs/theory/clouds.md §6.3).

    Class attributes:
        name: registry name (``gaussian``, ``goe``, ``pm_kq``).
    """

    name: ClassVar[str]

    @abc.abstractmethod
    def sample(self, key: jax.Array, batch: tuple[int, ...], dim: int, dtype=None) -> jax.Array:
        """Independent matrices.

        Args:
            key: PRNG key. batch: leading shape (e.g. (layers, heads)). dim: D.

        Returns:
            (*batch, D, D) matrices.
        """
