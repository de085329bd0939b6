"""Random perturbations of a given state (theory: docs/theory/dynamics.md §7.1)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from attnphys.dynamics.samplers._base import AbstractSampler
from attnphys.errors import InputError


@dataclass(frozen=True, eq=False)
class PerturbationSampler(AbstractSampler):
    """x_i = x + r·u_i (theory: docs/theory/dynamics.md §7.1) with u_i uniform in the unit ball of R^D
    (direction uniform on the sphere, radius
    ∝ U^{1/D}); every start shares the auxiliary state ``aux``. The first start is x itself when
    ``include_center``."""

    x: Any = None
    aux: Any = None
    radius: float = 1e-3
    include_center: bool = False
    name: str = field(default="perturb", init=False)

    def __post_init__(self):
        if self.x is None:
            raise InputError("the perturbation sampler needs a state x", field="x")
        if not (np.isfinite(self.radius) and self.radius >= 0):
            raise InputError(f"radius must be finite and >= 0 (got {self.radius})", field="radius")

    def sample(self, m, key, n, params):
        x = jnp.asarray(self.x)
        D = x.shape[-1]
        k1, k2 = jax.random.split(key)
        g = jax.random.normal(k1, (n, D), x.dtype)
        u = g / jnp.linalg.norm(g, axis=1, keepdims=True)
        rad = jax.random.uniform(k2, (n, 1), x.dtype) ** (1.0 / D)
        xs = x + self.radius * rad * u
        if self.include_center:
            xs = xs.at[0].set(x)
        aux = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(jnp.asarray(a), (n,) + jnp.shape(a)), self.aux)
        return xs, aux

    def describe(self):
        return f"perturb(radius={self.radius})"
