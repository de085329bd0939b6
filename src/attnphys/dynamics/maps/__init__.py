"""Discrete-time maps: the interface of the dynamics toolkit and maps with known dynamics
(theory: docs/theory/dynamics.md §1). One file per map; a new map is a subclass of
:class:`AbstractMap` (or :class:`AutonomousMap`) with a ``step`` (or ``f``).

The registry of example maps: the library's own (:data:`EXAMPLES`, in code), those registered in this
process (:func:`register_map`), and the ``attnphys.maps`` entry points of outside packages (name = the
map's name, value = ``"module:attribute"`` naming a map or a map class built with its defaults), so that an
example map — with its ``title``, ``equation`` and ``facts``, which the theory page's table shows — is one
new file."""

from typing import TYPE_CHECKING

from attnphys import _deprecated
from attnphys.dynamics.maps._base import AbstractMap, AutonomousMap, FunctionMap, ReferencePoint, autonomous
from attnphys.dynamics.maps.bistable import Bistable
from attnphys.dynamics.maps.delayed_logistic import DelayedLogistic
from attnphys.dynamics.maps.henon import Henon
from attnphys.dynamics.maps.linear import Linear
from attnphys.dynamics.maps.logistic import Logistic
from attnphys.dynamics.maps.rotation import Rotation
from attnphys.registry import Registry

HENON = Henon()
LOGISTIC = Logistic()
LINEAR = Linear()
ROTATION = Rotation()
DELAYED_LOGISTIC = DelayedLogistic()
BISTABLE = Bistable()

ENTRY_POINT_GROUP = "attnphys.maps"
"""Entry-point group of the example maps of outside packages."""


def _map_or_none(obj: object) -> AbstractMap | None:
    """A map, or an instance of a map class; None for anything else."""
    if isinstance(obj, type) and issubclass(obj, AbstractMap):
        obj = obj()
    return obj if isinstance(obj, AbstractMap) else None


EXAMPLES: Registry[AbstractMap] = Registry(
    "example map",
    group=ENTRY_POINT_GROUP,
    builtins={
        "henon": HENON,
        "logistic": LOGISTIC,
        "linear": LINEAR,
        "rotation": ROTATION,
        "delayed_logistic": DELAYED_LOGISTIC,
        "bistable": BISTABLE,
    },
    accept=_map_or_none,
    field="name",
    member="a map of the dynamics toolkit, or its class ([dynamics page](dynamics.md) §1)",
    adding="one file, one entry here",
    theory="dynamics.md §1",
)
"""The registry of example maps (:class:`attnphys.registry.Registry`): the library's own, those of
:func:`register_map` and the outside entry points, by name (the property tests run over all of them)."""


def register_map(name: str, m: AbstractMap) -> AbstractMap:
    """Make the map ``m`` an example map called ``name`` (:func:`example_map`, the theory page's table);
    returns it (theory: docs/theory/dynamics.md §1).

    Raises:
        RegistryConflictError: ``m`` is not an :class:`AbstractMap`, or ``name`` is already another map (a
            ValueError).
    """
    if not isinstance(m, AbstractMap):
        from attnphys.registry import RegistryConflictError

        raise RegistryConflictError(f"example map {name!r} must be an AbstractMap, got {type(m).__name__}")
    return EXAMPLES.register(m, name=name)


def example_names() -> tuple[str, ...]:
    """Every example map's name: the library's own in their order, then the registered and outside ones,
    sorted (theory: docs/theory/dynamics.md §1)."""
    return EXAMPLES.names()


def example_maps() -> dict[str, AbstractMap]:
    """Every example map by name (:func:`example_names`' order), the outside ones loaded now; one that fails
    to load or is not a map is skipped with a warning (theory: docs/theory/dynamics.md §1)."""
    return EXAMPLES.loaded()


def example_map(name) -> AbstractMap:
    """The example map called ``name`` (or ``name`` itself, a map) (theory: docs/theory/dynamics.md §1).

    Raises:
        InputError: an unknown name (a ValueError), listing the known ones.
    """
    return EXAMPLES.lookup(name)


__all__ = [
    "AbstractMap",
    "AutonomousMap",
    "FunctionMap",
    "ReferencePoint",
    "autonomous",
    "Bistable",
    "DelayedLogistic",
    "Henon",
    "Linear",
    "Logistic",
    "Rotation",
    "BISTABLE",
    "DELAYED_LOGISTIC",
    "HENON",
    "LOGISTIC",
    "LINEAR",
    "ROTATION",
    "EXAMPLES",
    "example_map",
    "example_maps",
    "example_names",
    "register_map",
]

if not TYPE_CHECKING:  # the names of 0.2.0 that moved, with a deprecation warning
    __getattr__ = _deprecated.module_getattr(__name__)
