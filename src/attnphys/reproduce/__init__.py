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

# The names are loaded on first use (the stub ``__init__.pyi`` lists them), so that the command line imports
# the reproduce command without loading the numerical libraries.
import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
