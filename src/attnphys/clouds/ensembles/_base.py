"""The random-weight ensemble interface (theory: docs/theory/clouds.md §6.3)."""

from __future__ import annotations

import abc
from typing import ClassVar

import equinox as eqx
import jax


class AbstractEnsemble(eqx.Module):
    """A distribution of random D × D weight matrices whose entries have variance ≈ 1/D, so that a
    matrix has operator norm O(1) for large D (theory: docs/theory/clouds.md §6.3).

    Class attributes (the contract of the entries, read by the tests of every registered ensemble):
        name: the name in the registry (:data:`attnphys.clouds.registries.ENSEMBLES`).
        entry_variance: D × the variance of an off-diagonal entry (1: entries of variance 1/D); entries
            have mean 0.
        symmetric: every matrix equals its transpose.

    Shapes: ``sample`` returns (*batch, D, D) matrices of the dtype asked (default: the float default).
    """

    name: ClassVar[str]
    entry_variance: ClassVar[float] = 1.0
    symmetric: ClassVar[bool] = False

    @abc.abstractmethod
    def sample(self, key: jax.Array, batch: tuple[int, ...], dim: int, dtype=None) -> jax.Array:
        """Independent matrices.

        Args:
            key: PRNG key. batch: leading shape (e.g. (layers, heads)). dim: D.

        Returns:
            (*batch, D, D) matrices.
        """
