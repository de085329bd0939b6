"""Projection on a sphere (theory: docs/theory/clouds.md §3.4)."""

from __future__ import annotations

from typing import ClassVar

import jax.numpy as jnp

from attnphys.clouds.norms._base import AbstractNorm, check_cloud


class Sphere(AbstractNorm):
    """y = r x / ‖x‖ per token: the projection on the sphere of radius r
    (theory: docs/theory/clouds.md §3.4). A zero token stays zero.

    Attributes:
        radius: r.
    """

    radius: float = 1.0
    name: ClassVar[str] = "sphere"
    tokenwise: ClassVar[bool] = True

    def __call__(self, X):
        check_cloud(X)
        n = jnp.linalg.norm(X, axis=-1, keepdims=True)
        return self.radius * X / jnp.where(n > 0, n, 1.0)
