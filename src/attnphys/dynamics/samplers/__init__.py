"""Initial-condition samplers for attractor censuses (theory: docs/theory/dynamics.md §7.1): one file
per sampler; :func:`make_sampler` builds one by name.

The registry of samplers: the library's own (:data:`SAMPLERS`, in code), those registered in this process
(:func:`register_sampler`), and the ``attnphys.samplers`` entry points of outside packages (name = the
sampler's name, value = ``"module:Class"`` naming an :class:`AbstractSampler` subclass), so that a sampler
is one new file."""

from __future__ import annotations

from typing import TypeVar

from attnphys.dynamics.samplers._base import AbstractSampler
from attnphys.dynamics.samplers.domain import DomainSampler
from attnphys.dynamics.samplers.explicit import ExplicitSampler
from attnphys.dynamics.samplers.grid import GridSampler
from attnphys.dynamics.samplers.perturbation import PerturbationSampler
from attnphys.registry import Registry

ENTRY_POINT_GROUP = "attnphys.samplers"
"""Entry-point group of the samplers of outside packages."""


def _is_sampler(obj: object) -> object:
    return obj if isinstance(obj, type) and issubclass(obj, AbstractSampler) else None


SAMPLERS: Registry[type[AbstractSampler]] = Registry(
    "sampler",
    group=ENTRY_POINT_GROUP,
    builtins={
        "random": DomainSampler,
        "perturb": PerturbationSampler,
        "explicit": ExplicitSampler,
        "grid": GridSampler,
    },
    accept=_is_sampler,
    field="start-sampler",
    member="a sampler class ([dynamics page](dynamics.md) §7.1), name = its `name`",
    adding="one file, one entry here",
    theory="dynamics.md §7.1",
)
"""The registry of sampler classes (:class:`attnphys.registry.Registry`): the library's own, those of
:func:`register_sampler` and the outside entry points, by name (the census's ``sampler`` argument and the
command lines use these names)."""

S = TypeVar("S", bound="type[AbstractSampler]")


def register_sampler(cls: S) -> S:
    """Class decorator: make a sampler available by its ``name`` to :func:`make_sampler` and the censuses
    (theory: docs/theory/dynamics.md §7.1).

    Raises:
        RegistryConflictError: the class has no ``name``, or the name is already another sampler's (a ValueError).
    """
    return SAMPLERS.register(cls)


def sampler_names() -> list[str]:
    """Every sampler's name: the library's own, registered ones and outside entry points
    (theory: docs/theory/dynamics.md §7.1)."""
    return list(SAMPLERS.names())


def sampler_class(name) -> type[AbstractSampler]:
    """The sampler class called ``name`` (or ``name`` itself, a sampler class) (theory: docs/theory/dynamics.md §7.1).

    Raises:
        InputError: an unknown name, listing the known ones (field ``start-sampler``).
    """
    return SAMPLERS.lookup(name)


def make_sampler(name: str | AbstractSampler, **kw) -> AbstractSampler:
    """A sampler by its name in :data:`SAMPLERS` with its keywords (each class's own, e.g. ``x``, ``aux``,
    ``radius`` for a perturbation of a point), or the sampler itself
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
