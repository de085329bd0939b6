"""The interface of a reproducible figure (theory: docs/theory/dmft.md §8).

A figure is a small frozen object with a name, a one-line summary, its settings at full size and in the
``--quick`` reduction, and three steps: :meth:`AbstractFigure.compute` (a dataset, every variable with
``long_name``), :meth:`AbstractFigure.figure` (a matplotlib :class:`~matplotlib.figure.Figure`) and
:meth:`AbstractFigure.caption` (a short text stating the settings). A new figure is one file with a
subclass and its instances in :data:`attnphys.reproduce.FIGURES`.
"""

from __future__ import annotations

import abc
import json
from dataclasses import dataclass
from typing import Any

import xarray as xr
from matplotlib.figure import Figure


@dataclass(frozen=True)
class Rates:
    """Measured speeds of this machine (point-steps per second) used to estimate run times.

    plain: vectorised steps without tangent vectors (P = 2, a batch of 128).
    lyapunov: vectorised steps with three tangent vectors and the orbit records (P = 2).
    sequential: steps of a single trajectory (a continuation chain, P = 2).
    pe5: cost factor of a P = 5, L = 32 step relative to P = 2 (per kind above).
    overhead: seconds of compilation and bookkeeping per run.
    """

    plain: float
    lyapunov: float
    sequential: float
    pe5: dict
    overhead: float


@dataclass(frozen=True)
class Work:
    """The work of a run: point-steps without and with Lyapunov vectors, sequential steps, compilations."""

    plain: float = 0.0
    lyapunov: float = 0.0
    sequential: float = 0.0
    compiles: int = 1
    pe5: bool = False

    def seconds(self, r: Rates) -> float:
        f = r.pe5 if self.pe5 else {"plain": 1.0, "lyapunov": 1.0, "sequential": 1.0}
        return (
            self.plain / r.plain * f["plain"]
            + self.lyapunov / r.lyapunov * f["lyapunov"]
            + self.sequential / r.sequential * f["sequential"]
            + self.compiles * r.overhead
        )


class AbstractFigure(abc.ABC):
    """One figure of the paper (or one of the authors' newer experiments) as a reproducible run.

    Attributes:
        name: the command's NAME (``fig3a``, …). title: what it shows (the figure's title). source: where it
            comes from. shows, full_run: the figure and its full run in words (the how-to's table).
    """

    name: str
    title: str
    source: str
    figure_options: tuple[str, ...] = ()
    """The options of :meth:`figure` that this figure uses (``component``, ``pair``, …); the command
    refuses the others."""
    shows: str = ""
    """What the figure shows, in a sentence (Markdown; a link to its theory section is relative to
    ``docs/howto/``). The how-to's table of figures is written from it and :attr:`full_run`."""
    full_run: str = ""
    """The settings of the full run, in words."""

    @abc.abstractmethod
    def settings(self, quick: bool = False) -> dict[str, Any]:
        """The run's settings (JSON-ready): the full published size, or the ``--quick`` reduction."""

    @abc.abstractmethod
    def work(self, quick: bool = False) -> Work:
        """How much computing a run needs (for run-time estimates)."""

    @abc.abstractmethod
    def compute(self, settings: dict[str, Any], progress: bool = True) -> xr.Dataset:
        """Run the computation; returns the dataset that the figure is drawn from.

        Returns:
            Dataset with ``long_name`` (and ``units`` where they apply) on every variable and the full
            configuration in its attributes (``config``, ``settings``).
        """

    @abc.abstractmethod
    def figure(self, ds: xr.Dataset, **options: Any) -> Figure:
        """Draw the figure from the dataset (plot options: see the job)."""

    @abc.abstractmethod
    def caption(self, ds: xr.Dataset) -> str:
        """A short caption stating what is shown and the settings."""

    # -- helpers -------------------------------------------------------------------------------------
    @staticmethod
    def stamp(ds: xr.Dataset, settings: dict[str, Any], **extra: Any) -> xr.Dataset:
        """Record the settings (and anything else) in the dataset's attributes."""
        ds.attrs["settings"] = json.dumps(settings)
        for k, v in extra.items():
            ds.attrs[k] = v if isinstance(v, (str, int, float)) else json.dumps(v)
        return ds


def settings_of(ds: xr.Dataset) -> dict[str, Any]:
    """The settings a dataset was computed with."""
    return json.loads(ds.attrs.get("settings", "{}"))


def describe_seconds(s: float) -> str:
    """``42 s``, ``3.5 min``, ``1.2 h``."""
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"
