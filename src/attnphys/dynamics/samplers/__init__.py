"""Initial-condition samplers for attractor censuses (theory: docs/theory/dynamics.md §7.1): one file
per sampler; :func:`make_sampler` builds one by name.

The registry of samplers: the library's own (:data:`SAMPLERS`, in code), those registered in this process
(:func:`register_sampler`), and the ``attnphys.samplers`` entry points of outside packages (name = the
sampler's name, value = ``"module:Class"`` naming an :class:`AbstractSampler` subclass), so that a sampler
is one new file."""

from __future__ import annotations

from typing import TypeVar

from attnphys._plugins import find, names
from attnphys.dynamics.samplers._base import AbstractSampler
from attnphys.dynamics.samplers.domain import DomainSampler
from attnphys.dynamics.samplers.explicit import ExplicitSampler
from attnphys.dynamics.samplers.grid import GridSampler
from attnphys.dynamics.samplers.perturbation import PerturbationSampler
from attnphys.errors import InputError

SAMPLERS: dict[str, type[AbstractSampler]] = {
    "random": DomainSampler,
    "perturb": PerturbationSampler,
    "explicit": ExplicitSampler,
    "grid": GridSampler,
}
"""The sampler classes registered in this process by name: the library's own and those of
:func:`register_sampler` (the census's ``sampler`` argument and the command lines use these names;
:func:`sampler_class` finds outside ones too)."""

ENTRY_POINT_GROUP = "attnphys.samplers"
"""Entry-point group of the samplers of outside packages."""

S = TypeVar("S", bound="type[AbstractSampler]")


def register_sampler(cls: S) -> S:
    """Class decorator: make a sampler available by its ``name`` to :func:`make_sampler` and the censuses
    (theory: docs/theory/dynamics.md §7.1).

    Raises:
        ValueError: the class has no ``name``, or the name is already another sampler's.
    """
    if not cls.name:
        raise ValueError(f"the sampler {cls.__qualname__} has no name (a class attribute `name`)")
    if SAMPLERS.get(cls.name, cls) is not cls:
        raise ValueError(f"the sampler {cls.name!r} is already registered (one name, one sampler)")
    SAMPLERS[cls.name] = cls
    return cls


def sampler_names() -> list[str]:
    """Every sampler's name: the library's own, registered ones and outside entry points
    (theory: docs/theory/dynamics.md §7.1)."""
    own = list(SAMPLERS)
    return own + sorted(set(names(ENTRY_POINT_GROUP, SAMPLERS)) - set(own))


def sampler_class(name: str) -> type[AbstractSampler]:
    """The sampler class called ``name`` (theory: docs/theory/dynamics.md §7.1).

    Raises:
        InputError: an unknown name, listing the known ones (field ``start-sampler``).
    """
    cls = SAMPLERS.get(name) or find(ENTRY_POINT_GROUP, name, SAMPLERS)
    if cls is None:
        raise InputError(f"unknown sampler {name!r}; choose from {', '.join(sampler_names())}", field="start-sampler")
    return cls


def make_sampler(name: str | AbstractSampler, **kw) -> AbstractSampler:
    """A sampler by name (``random``, ``perturb`` with x, aux, radius; ``explicit`` with x, aux; ``grid`` with
    lo, hi, shape, aux; or one of the registry's), or the sampler itself
    (theory: docs/theory/dynamics.md §7.1)."""
    if isinstance(name, AbstractSampler):
        return name
    return sampler_class(name)(**kw)


__all__ = [
    "AbstractSampler",
    "DomainSampler",
    "ExplicitSampler",
    "GridSampler",
    "PerturbationSampler",
    "SAMPLERS",
    "make_sampler",
    "register_sampler",
    "sampler_class",
    "sampler_names",
]
