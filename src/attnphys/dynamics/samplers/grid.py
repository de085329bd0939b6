"""Starts on a regular grid of a box (theory: docs/theory/dynamics.md §7.1)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from attnphys.dynamics.samplers._base import AbstractSampler
from attnphys.errors import InputError


@dataclass(frozen=True, eq=False)
class GridSampler(AbstractSampler):
    """x on the regular grid lo + (hi − lo)·i/(n − 1), i = 0…n − 1 per dimension (both ends included; one
    point per dimension with n = 1 sits at lo), in C order: the last dimension varies fastest, so a census
    label reshaped to ``shape`` is the basin picture (theory: docs/theory/dynamics.md §7.1). Every start
    shares the auxiliary state ``aux``; the key is not used.

    Attributes:
        lo, hi: (D,) corners of the box. shape: (D,) points per dimension; K = prod(shape) starts.
    """

    lo: Any = None
    hi: Any = None
    shape: tuple[int, ...] = ()
    aux: Any = None
    name: str = field(default="grid", init=False)

    def __post_init__(self):
        lo, hi = np.atleast_1d(np.asarray(self.lo, float)), np.atleast_1d(np.asarray(self.hi, float))
        given = np.atleast_1d(np.asarray(self.shape, dtype=object))
        if any(isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) for n in given):
            raise InputError(f"points per dimension must be integers, got shape={self.shape!r}", field="grid.shape")
        shape = tuple(int(n) for n in given)
        if self.lo is None or self.hi is None or lo.shape != hi.shape or len(shape) != lo.size:
            raise InputError("a grid needs lo, hi and shape of one length each (the state dimension D)", field="grid")
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(hi >= lo)):
            raise InputError(f"the grid box must be finite with hi >= lo (got lo={lo}, hi={hi})", field="grid")
        if min(shape) < 1:
            raise InputError(f"points per dimension must be >= 1 (got {shape})", field="grid")
        object.__setattr__(self, "shape", shape)

    @property
    def size(self) -> int:
        """K, the number of starts."""
        return int(np.prod(self.shape))

    def states(self) -> np.ndarray:
        """(K, D) the grid points in C order."""
        lo, hi = np.atleast_1d(np.asarray(self.lo, float)), np.atleast_1d(np.asarray(self.hi, float))
        axes = [np.linspace(a, b, n) if n > 1 else np.array([a]) for a, b, n in zip(lo, hi, self.shape)]
        return np.stack([g.ravel() for g in np.meshgrid(*axes, indexing="ij")], axis=-1)

    def sample(self, m, key, n, params):
        if n != self.size:
            raise InputError(f"the grid has {self.size} points but {n} starts were requested", field="ics")
        x = jnp.asarray(self.states())
        aux = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(jnp.asarray(a), (n,) + jnp.shape(a)), self.aux)
        return x, aux

    def describe(self):
        lo, hi = np.atleast_1d(self.lo).tolist(), np.atleast_1d(self.hi).tolist()
        return f"grid(lo={lo}, hi={hi}, shape={list(self.shape)})"
