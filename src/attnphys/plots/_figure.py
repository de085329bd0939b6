"""The Figure every figure function returns: matplotlib's own, which also shows itself when it is the value
of a notebook cell (theory: docs/theory/sweeps.md §6).

A :class:`matplotlib.figure.Figure` made without pyplot has no display of its own: Jupyter shows
``<Figure size 900x740 with 2 Axes>`` unless pyplot's inline backend registered a formatter for figures.
This subclass renders itself as PNG through IPython's rich-display protocol (``_repr_png_``), with no
pyplot state and without touching the user's backend; where the inline backend is active its formatter
is used instead (one image either way).
"""

from __future__ import annotations

import io

from matplotlib.figure import Figure as _MplFigure


class Figure(_MplFigure):
    """A :class:`matplotlib.figure.Figure` that a notebook displays as a PNG image (``_repr_png_``)."""

    def _repr_png_(self) -> bytes:
        """PNG bytes of the figure (what IPython shows as the cell's output); ``bbox_inches="tight"`` as
        the inline backend draws."""
        buf = io.BytesIO()
        self.savefig(buf, format="png", bbox_inches="tight")
        return buf.getvalue()


def new_figure(figsize=None, **kw) -> Figure:
    """A new figure with constrained layout (titles, labels and colour bars never overlap), shown by a
    notebook when it is a cell's value."""
    kw.setdefault("layout", "constrained")
    return Figure(figsize=figsize, **kw)
