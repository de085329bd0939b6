"""Names that moved out of :mod:`attnphys.dmft.designed`, kept here for one release as deprecation shims
(theory: docs/theory/designed.md §4)."""

from __future__ import annotations

import warnings


def cycle_figure(ds, ax=None, steps: int | None = None):
    """Deprecated: :func:`attnphys.plots.cycle_figure` (``cycle_figure(ds, steps=..., ax=...)``), where every
    figure of the library lives; this name forwards to it with a :class:`DeprecationWarning` and goes in
    0.5.0, with the other names deprecated since 0.3.0 (theory: docs/theory/designed.md §4)."""
    from attnphys._deprecated import UNTIL

    warnings.warn(
        "attnphys.dmft.designed.cycle_figure moved to attnphys.plots.cycle_figure(ds, *, steps=None, ax=None); "
        f"this name is deprecated since 0.3.0 and will be removed in {UNTIL}",
        DeprecationWarning,
        stacklevel=2,
    )
    from attnphys.plots import cycle_figure as moved

    return moved(ds, steps=steps, ax=ax)
