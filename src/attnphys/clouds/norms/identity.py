"""No normalization (theory: docs/theory/clouds.md §3)."""

from __future__ import annotations

from typing import ClassVar

from attnphys.clouds.norms._base import AbstractNorm, check_cloud


class Identity(AbstractNorm):
    """y = x: the layer without a normalization (theory: docs/theory/clouds.md §3)."""

    name: ClassVar[str] = "none"
    tokenwise: ClassVar[bool] = True

    def __call__(self, X):
        check_cloud(X)
        return X
