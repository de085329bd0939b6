"""Normalizations of a token cloud, one class per variant over :class:`AbstractNorm`
(theory: docs/theory/clouds.md §3)."""

from attnphys.clouds.norms._base import AbstractNorm
from attnphys.clouds.norms.diagonal_rn import DiagonalRN
from attnphys.clouds.norms.identity import Identity
from attnphys.clouds.norms.layernorm import LayerNorm
from attnphys.clouds.norms.rmsnorm import RMSNorm
from attnphys.clouds.norms.rn import RN, sym_power
from attnphys.clouds.norms.sphere import Sphere

NORMS: dict[str, type[AbstractNorm]] = {c.name: c for c in (LayerNorm, RMSNorm, RN, DiagonalRN, Sphere, Identity)}
"""Every normalization class by its name (``layernorm``, ``rmsnorm``, ``rn``, ``diagonal_rn``, ``sphere``, ``none``)."""


def make_norm(name: str, **params) -> AbstractNorm:
    """The normalization called ``name`` with ``params`` (e.g. ``gamma``, ``radius``); a clear error
    listing the names for an unknown one (theory: docs/theory/clouds.md §3)."""
    if name not in NORMS:
        raise ValueError(f"unknown normalization {name!r}; choose from {', '.join(NORMS)}")
    return NORMS[name](**params)


__all__ = [
    "AbstractNorm",
    "DiagonalRN",
    "Identity",
    "LayerNorm",
    "RMSNorm",
    "RN",
    "Sphere",
    "NORMS",
    "make_norm",
    "sym_power",
]
