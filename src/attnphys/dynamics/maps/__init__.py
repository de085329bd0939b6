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
from attnphys._plugins import load_member, outside, put
from attnphys.dynamics.maps._base import AbstractMap, AutonomousMap, FunctionMap, ReferencePoint, autonomous
from attnphys.dynamics.maps.bistable import Bistable
from attnphys.dynamics.maps.delayed_logistic import DelayedLogistic
from attnphys.dynamics.maps.henon import Henon
from attnphys.dynamics.maps.linear import Linear
from attnphys.dynamics.maps.logistic import Logistic
from attnphys.dynamics.maps.rotation import Rotation

HENON = Henon()
LOGISTIC = Logistic()
LINEAR = Linear()
ROTATION = Rotation()
DELAYED_LOGISTIC = DelayedLogistic()
BISTABLE = Bistable()

EXAMPLES: dict[str, AbstractMap] = {
    "henon": HENON,
    "logistic": LOGISTIC,
    "linear": LINEAR,
    "rotation": ROTATION,
    "delayed_logistic": DELAYED_LOGISTIC,
    "bistable": BISTABLE,
}
"""The library's own example maps by name, and those of :func:`register_map` (the property tests run over
all of them; :func:`example_maps` adds the outside ones)."""

ENTRY_POINT_GROUP = "attnphys.maps"
"""Entry-point group of the example maps of outside packages."""


def register_map(name: str, m: AbstractMap) -> AbstractMap:
    """Make the map ``m`` an example map called ``name`` (:func:`example_map`, the theory page's table);
    returns it (theory: docs/theory/dynamics.md §1).

    Raises:
        ValueError: ``m`` is not an :class:`AbstractMap`, or ``name`` is already another map.
    """
    if not isinstance(m, AbstractMap):
        raise ValueError(f"example map {name!r} must be an AbstractMap, got {type(m).__name__}")
    return put(EXAMPLES, name, m, f"example map {name!r}", "map")


def _map_or_none(obj: object) -> AbstractMap | None:
    """A map, or an instance of a map class; None for anything else."""
    if isinstance(obj, type) and issubclass(obj, AbstractMap):
        obj = obj()
    return obj if isinstance(obj, AbstractMap) else None


def _as_map(name: str, ref: str) -> AbstractMap:
    return load_member(ENTRY_POINT_GROUP, name, ref, _map_or_none, "neither an AbstractMap nor a map class")


def example_names() -> tuple[str, ...]:
    """Every example map's name: the library's own in their order, then the registered and outside ones,
    sorted (theory: docs/theory/dynamics.md §1)."""
    extra = outside(ENTRY_POINT_GROUP, EXAMPLES)
    return tuple(EXAMPLES) + tuple(sorted(set(extra) - set(EXAMPLES)))


def example_maps() -> dict[str, AbstractMap]:
    """Every example map by name (:func:`example_names`' order), the outside ones loaded now
    (theory: docs/theory/dynamics.md §1).

    Raises:
        ExtensionError: an entry point naming something that is not a map, or giving a registered map's
            name to another object.
    """
    table: dict[str, AbstractMap] = dict(EXAMPLES)
    for name, ref in sorted(outside(ENTRY_POINT_GROUP, EXAMPLES).items()):
        table.setdefault(name, _as_map(name, ref))
    return table


def example_map(name: str) -> AbstractMap:
    """The example map called ``name``: registered in code, else an outside entry point
    (theory: docs/theory/dynamics.md §1).

    Raises:
        InputError: an unknown name (a ValueError), listing the known ones.
    """
    if isinstance(name, str) and name in EXAMPLES:
        return EXAMPLES[name]
    table = example_maps()
    if not isinstance(name, str) or name not in table:
        import difflib

        from attnphys.errors import InputError

        near = difflib.get_close_matches(str(name), list(table), n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise InputError(f"unknown example map {name!r}{hint}; choose from {', '.join(table)}", "name")
    return table[name]


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
