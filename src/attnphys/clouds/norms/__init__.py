"""Normalizations of a token cloud, one class per variant over :class:`AbstractNorm`
(theory: docs/theory/clouds.md §3).

The registry of normalizations: the library's own (listed in :data:`attnphys._plugins.BUILTINS`, so that
the command line names them without importing JAX), those registered in this process
(:func:`register_norm`), and the ``attnphys.norms`` entry points of outside packages (name = the class's
``name``, value = ``"module:Class"``)."""

from typing import TypeVar

from attnphys._arguments import checked
from attnphys.clouds.norms._base import AbstractNorm
from attnphys.clouds.norms.diagonal_rn import DiagonalRN
from attnphys.clouds.norms.identity import Identity
from attnphys.clouds.norms.layernorm import LayerNorm
from attnphys.clouds.norms.rmsnorm import RMSNorm
from attnphys.clouds.norms.rn import RN, sym_power
from attnphys.clouds.norms.sphere import Sphere
from attnphys.clouds.registries import NORMS as _NORMS

ENTRY_POINT_GROUP = "attnphys.norms"
"""Entry-point group of the normalizations of outside packages."""


NORMS = _NORMS
"""The registry of normalization classes (:class:`attnphys.registry.Registry`): the library's own, those of
:func:`register_norm` and the outside entry points, by name."""

N = TypeVar("N", bound="type[AbstractNorm]")


def register_norm(cls: N) -> N:
    """Class decorator: make a normalization available by its ``name`` to :func:`make_norm`, the clouds
    analyses and commands (theory: docs/theory/clouds.md §3).

    Raises:
        RegistryConflictError: the name is another normalization's (a ValueError).
    """
    return NORMS.register(cls)


def norm_names() -> list[str]:
    """Every normalization's name: the library's own, registered ones and outside entry points
    (theory: docs/theory/clouds.md §3)."""
    return list(NORMS.names())


def norm_class(name) -> type[AbstractNorm]:
    """The normalization class called ``name`` (or ``name`` itself, a normalization class)
    (theory: docs/theory/clouds.md §3).

    Raises:
        InputError: an unknown name (a ValueError), listing the known ones.
    """
    return NORMS.lookup(name)


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
