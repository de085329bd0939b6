"""The DMFT sweep tasks: what a sweep computes at each point of a grid over configuration fields, one file
per task over the common base :class:`DMFTTask` (theory: docs/theory/sweeps.md §1; docs/theory/dmft.md).

A task's points are a grid (:class:`attnphys.sweeps.Grid`) over configuration fields: the fields of
:data:`~attnphys.dmft.config.BATCHED` vary inside one vectorised batch; any other sweepable field
(``M``, ``L``, ``n_se``, …, ``seed``) changes the couplings, so a chunk is split into groups, one
:class:`~attnphys.dmft.model.DMFTModel` each. Every swept value is validated by the configuration's own
rules before anything runs. Variables with a feature, lag or bit axis are padded with NaN to the largest
M, L, P of the grid.

Tasks: :class:`TrajectoryTask` (records), :class:`LyapunovTask` (spectra), :class:`OrbitTask` (orbit
diagrams, exponents, regimes; cold starts or continuation chains along a ``direction`` axis),
:class:`AttractorTask` (censuses with basins), :class:`FiniteTask` (finite-N sample paths),
:class:`ConvergeTask` (finite N vs mean field). A new task is one file here, one line below and one
entry point (``attnphys.sweep_tasks``) in ``pyproject.toml``.
"""

from attnphys.dmft.tasks._base import PAPER_SECTION_PAIRS, DMFTTask
from attnphys.dmft.tasks._evidence import evidence, exponent_schema, orbit_spec
from attnphys.dmft.tasks.attractors import AttractorTask, WindowSampler
from attnphys.dmft.tasks.converge import ConvergeTask
from attnphys.dmft.tasks.finite import FiniteTask
from attnphys.dmft.tasks.lyapunov import LyapunovTask
from attnphys.dmft.tasks.orbits import OrbitTask
from attnphys.dmft.tasks.trajectory import TrajectoryTask

__all__ = [
    "PAPER_SECTION_PAIRS",
    "AttractorTask",
    "ConvergeTask",
    "DMFTTask",
    "FiniteTask",
    "LyapunovTask",
    "OrbitTask",
    "TrajectoryTask",
    "WindowSampler",
    "evidence",
    "exponent_schema",
    "orbit_spec",
]
