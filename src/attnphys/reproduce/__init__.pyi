"""Type stub of the lazily loaded package: the one list of its public names."""

from ._base import AbstractFigure, Rates, Work
from ._registry import FIGURES
from .continuation import ContinuationFigure
from .diagram import DiagramFigure
from .job import ReproduceJob
from .trajectories import PAPER_BETAS, PlanesFigure, SeriesFigure

__all__ = [
    "FIGURES",
    "PAPER_BETAS",
    "AbstractFigure",
    "ContinuationFigure",
    "DiagramFigure",
    "PlanesFigure",
    "Rates",
    "ReproduceJob",
    "SeriesFigure",
    "Work",
]
