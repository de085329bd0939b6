"""A list of explicit states (theory: docs/theory/dynamics.md §7.1)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp

from attnphys.dynamics.samplers._base import AbstractSampler
from attnphys.errors import InputError


@dataclass(frozen=True, eq=False)
class ExplicitSampler(AbstractSampler):
    """The given states (theory: docs/theory/dynamics.md §7.1): x (K, D) with aux (leading axis K, or one aux
    shared by all); n must equal K
    (the key is not used)."""

    x: Any = None
    aux: Any = None
    name: str = field(default="explicit", init=False)

    def __post_init__(self):
        if self.x is None or jnp.ndim(self.x) != 2:
            raise InputError("explicit states must be an array of shape (K, D)", field="x")

    def sample(self, m, key, n, params):
        x = jnp.asarray(self.x)
        if n != x.shape[0]:
            raise InputError(f"{x.shape[0]} explicit states given but {n} requested", field="ics")
        aux = self.aux
        leaves = jax.tree_util.tree_leaves(aux)
        if leaves and not all(jnp.ndim(a) >= 1 and jnp.shape(a)[0] == n for a in leaves):
            aux = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(jnp.asarray(a), (n,) + jnp.shape(a)), aux)
        return x, aux
