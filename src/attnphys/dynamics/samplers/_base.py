"""The interface of initial-condition samplers for attractor censuses (theory: docs/theory/dynamics.md §7.1)."""

from __future__ import annotations

import abc
from typing import Any

import jax

from attnphys.dynamics.maps import AbstractMap


class AbstractSampler(abc.ABC):
    """K initial conditions for a census at one parameter point (theory: docs/theory/dynamics.md §7.1).

    Subclasses implement :meth:`sample`; ``name`` is the sampler's name in datasets and on the command line.
    """

    name: str = ""

    @abc.abstractmethod
    def sample(self, m: AbstractMap, key: jax.Array, n: int, params: Any) -> tuple[jax.Array, Any]:
        """n initial states.

        Args:
            m: the map. key: a JAX PRNG key. n: number of states K. params: the parameter point.

        Returns:
            (x (n, D), aux with a leading axis n).
        """

    def describe(self) -> str:
        """A one-line description stored with census results."""
        return self.name
