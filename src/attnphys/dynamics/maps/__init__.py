"""Discrete-time maps: the interface of the dynamics toolkit and maps with known dynamics
(theory: docs/theory/dynamics.md §1). One file per map; a new map is a subclass of
:class:`AbstractMap` (or :class:`AutonomousMap`) with a ``step`` (or ``f``)."""

from typing import TYPE_CHECKING

from attnphys import _deprecated
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
"""The example maps by name (the property tests run over all of them)."""

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
]

if not TYPE_CHECKING:  # the names of 0.2.0 that moved, with a deprecation warning
    __getattr__ = _deprecated.module_getattr(__name__)
