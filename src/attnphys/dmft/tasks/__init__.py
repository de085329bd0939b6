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
:class:`ConvergeTask` (finite N vs mean field). A new task is one file here, one line in the stub ``__init__.pyi`` and one
entry point (``attnphys.sweep_tasks``) in ``pyproject.toml``.
"""

# The names are loaded on first use (the stub ``__init__.pyi`` lists them), so a run imports only the modules
# it uses.
import lazy_loader as _lazy

from attnphys import _deprecated

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
__getattr__ = _deprecated.extend(__name__, __getattr__)  # the names of 0.2.0 that moved
