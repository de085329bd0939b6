"""The DMFT paper's figures and the authors' newer experiments, one command each (theory: docs/theory/dmft.md §8).

``attnphys reproduce list`` names them with the time a full run takes on this machine;
``attnphys reproduce NAME [--quick] --out DIR`` writes the data, the figure and its caption. From Python::

    from attnphys.reproduce import FIGURES
    fig = FIGURES["fig5"]
    ds = fig.compute(fig.settings(quick=True))
    fig.figure(ds).savefig("fig5.png")

Every figure is an :class:`AbstractFigure` (one file per kind: the bifurcation diagrams of Fig. 3, the
trajectory figures 4 and 5, the continuation diagrams).
"""

from attnphys.reproduce._base import AbstractFigure, Rates, Work
from attnphys.reproduce.continuation import CONTINUATIONS, ContinuationFigure
from attnphys.reproduce.diagram import FIG3A, FIG3B, DiagramFigure
from attnphys.reproduce.job import ReproduceJob
from attnphys.reproduce.trajectories import FIG4, FIG5, PAPER_BETAS, PlanesFigure, SeriesFigure

FIGURES: dict[str, AbstractFigure] = {f.name: f for f in (FIG3A, FIG3B, FIG4, FIG5, *CONTINUATIONS)}
"""Everything ``attnphys reproduce`` can make, by name."""

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
