"""Every figure ``attnphys reproduce`` can make, by name (theory: docs/theory/dmft.md §8)."""

from attnphys.registry import Registry
from attnphys.reproduce._base import AbstractFigure
from attnphys.reproduce.continuation import CONTINUATIONS
from attnphys.reproduce.diagram import FIG3A, FIG3B
from attnphys.reproduce.noisy import NOISY_FIGURES
from attnphys.reproduce.particle_laws import PARTICLE_LAW_FIGURES
from attnphys.reproduce.particles import PARTICLE_FIGURES
from attnphys.reproduce.propagation import PROPAGATION_FIGURES
from attnphys.reproduce.trajectories import FIG4, FIG5


def _is_figure(obj: object) -> AbstractFigure | None:
    if isinstance(obj, type) and issubclass(obj, AbstractFigure):
        obj = obj()
    return obj if isinstance(obj, AbstractFigure) else None


FIGURES: Registry[AbstractFigure] = Registry(
    "figure",
    group="attnphys.figures",
    accept=_is_figure,
    field="name",
    member="an `attnphys.reproduce.AbstractFigure`, or its class ([DMFT page](dmft.md) §8)",
    adding="one file, one entry here",
    theory="dmft.md §8",
    builtins=(
        FIG3A,
        FIG3B,
        FIG4,
        FIG5,
        *CONTINUATIONS,
        *PARTICLE_FIGURES,
        *PARTICLE_LAW_FIGURES,
        *NOISY_FIGURES,
        *PROPAGATION_FIGURES,
    ),
)
"""The registry of everything ``attnphys reproduce`` can make, by name (:class:`attnphys.registry.Registry`)."""
