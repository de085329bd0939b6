"""Normalizations of a token cloud, one class per variant over :class:`AbstractNorm`
(theory: docs/theory/clouds.md §3).

The registry of normalizations: the library's own (listed in :data:`attnphys._plugins.BUILTINS`, so that
the command line names them without importing JAX), those registered in this process
(:func:`register_norm`), and the ``attnphys.norms`` entry points of outside packages (name = the class's
``name``, value = ``"module:Class"``)."""

from typing import TypeVar

from attnphys._arguments import checked
from attnphys._plugins import BUILTINS, find, load, names
from attnphys.clouds.norms._base import AbstractNorm
from attnphys.clouds.norms.diagonal_rn import DiagonalRN
from attnphys.clouds.norms.identity import Identity
from attnphys.clouds.norms.layernorm import LayerNorm
from attnphys.clouds.norms.rmsnorm import RMSNorm
from attnphys.clouds.norms.rn import RN, sym_power
from attnphys.clouds.norms.sphere import Sphere

ENTRY_POINT_GROUP = "attnphys.norms"
"""Entry-point group of the normalizations of outside packages."""

NORMS: dict[str, type[AbstractNorm]] = {name: load(ref) for name, ref in BUILTINS[ENTRY_POINT_GROUP].items()}
"""The normalization classes registered in this process by name (the library's own: ``layernorm``,
``rmsnorm``, ``rn``, ``diagonal_rn``, ``sphere``, ``none``; :func:`norm_class` finds outside ones too)."""

N = TypeVar("N", bound="type[AbstractNorm]")


def register_norm(cls: N) -> N:
    """Class decorator: make a normalization available by its ``name`` to :func:`make_norm`, the clouds
    analyses and commands."""
    NORMS[cls.name] = cls
    return cls


def norm_names() -> list[str]:
    """Every normalization's name: the library's own, registered ones and outside entry points."""
    return names(ENTRY_POINT_GROUP, NORMS)


def norm_class(name: str) -> type[AbstractNorm]:
    """The normalization class called ``name``.

    Raises:
        ValueError: an unknown name, listing the known ones.
    """
    cls = NORMS.get(name) or find(ENTRY_POINT_GROUP, name, NORMS)
    if cls is None:
        raise ValueError(f"unknown normalization {name!r}; choose from {', '.join(norm_names())}")
    return cls


@checked
def make_norm(name: str, **params) -> AbstractNorm:
    """The normalization called ``name`` with ``params`` (e.g. ``gamma``, ``radius``); a clear error
    listing the names for an unknown one (theory: docs/theory/clouds.md §3)."""
    return norm_class(name)(**params)


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
    "norm_class",
    "norm_names",
    "register_norm",
    "sym_power",
]
