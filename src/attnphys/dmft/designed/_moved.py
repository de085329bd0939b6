"""Names that moved out of :mod:`attnphys.dmft.designed`, kept here for one release as deprecation shims
(theory: docs/theory/designed.md §4)."""

from __future__ import annotations

import warnings


def cycle_figure(ds, ax=None, steps: int | None = None):
    """Deprecated: :func:`attnphys.plots.cycle_figure` (``cycle_figure(ds, steps=..., ax=...)``), where every
    figure of the library lives; this name forwards to it with a :class:`DeprecationWarning` and goes in
    the next release (theory: docs/theory/designed.md §4)."""
    warnings.warn(
        "attnphys.dmft.designed.cycle_figure moved to attnphys.plots.cycle_figure(ds, *, steps=None, ax=None); "
        "this name is removed in the next release",
        DeprecationWarning,
        stacklevel=2,
    )
    from attnphys.plots import cycle_figure as moved

    return moved(ds, steps=steps, ax=ax)
