"""Every figure ``attnphys reproduce`` can make, by name (theory: docs/theory/dmft.md §8)."""

from attnphys.reproduce._base import AbstractFigure
from attnphys.reproduce.continuation import CONTINUATIONS
from attnphys.reproduce.diagram import FIG3A, FIG3B
from attnphys.reproduce.noisy import NOISY_FIGURES
from attnphys.reproduce.particle_laws import PARTICLE_LAW_FIGURES
from attnphys.reproduce.particles import PARTICLE_FIGURES
from attnphys.reproduce.propagation import PROPAGATION_FIGURES
from attnphys.reproduce.trajectories import FIG4, FIG5

FIGURES: dict[str, AbstractFigure] = {
    f.name: f
    for f in (
        FIG3A,
        FIG3B,
        FIG4,
        FIG5,
        *CONTINUATIONS,
        *PARTICLE_FIGURES,
        *PARTICLE_LAW_FIGURES,
        *NOISY_FIGURES,
        *PROPAGATION_FIGURES,
    )
}
"""Everything ``attnphys reproduce`` can make, by name."""
