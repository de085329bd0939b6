"""Initial-condition samplers for attractor censuses (theory: docs/theory/dynamics.md §7.1): one file
per sampler; :func:`make_sampler` builds one by name."""

from __future__ import annotations

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
"""Samplers by name (the census's ``sampler`` argument and the command lines use these names)."""


def make_sampler(name: str | AbstractSampler, **kw) -> AbstractSampler:
    """A sampler by name (``random``, ``perturb`` with x, aux, radius; ``explicit`` with x, aux; ``grid`` with
    lo, hi, shape, aux), or the
    sampler itself (theory: docs/theory/dynamics.md §7.1)."""
    if isinstance(name, AbstractSampler):
        return name
    if name not in SAMPLERS:
        raise InputError(f"unknown sampler {name!r}; choose from {sorted(SAMPLERS)}", field="start-sampler")
    return SAMPLERS[name](**kw)


__all__ = [
    "AbstractSampler",
    "DomainSampler",
    "ExplicitSampler",
    "GridSampler",
    "PerturbationSampler",
    "SAMPLERS",
    "make_sampler",
]
