"""The normalization interface (theory: docs/theory/clouds.md §3)."""

from __future__ import annotations

import abc
from typing import ClassVar

import equinox as eqx
import jax


class AbstractNorm(eqx.Module):
    """A normalization acting on a whole token cloud.

    A norm maps a cloud X ∈ R^{N×D} (N tokens as rows) to a cloud of the same shape. Token-wise norms
    (LayerNorm, RMSNorm, the sphere projection) treat every row on its own; cloud-wise norms (RN and
    its diagonal version) use statistics of the whole cloud (theory: docs/theory/clouds.md §3).

    Class attributes:
        name: the registry name (``layernorm``, ``rmsnorm``, ``rn``, ``diagonal_rn``, ``sphere``,
            ``none``), used by the command line and by the probes' swapped normalizations.
        tokenwise: True when each token is normalized on its own.
    """

    name: ClassVar[str]
    tokenwise: ClassVar[bool]

    @abc.abstractmethod
    def __call__(self, X: jax.Array) -> jax.Array:
        """Normalize the cloud.

        Args:
            X: (N, D) tokens.

        Returns:
            (N, D) normalized tokens.
        """
