"""attnphys: the probabilistic and statistical-physics theory of transformer attention, executable.

Subpackages: :mod:`attnphys.dmft` (mean-field theory of self-attention), :mod:`attnphys.dynamics`
(maps, Lyapunov spectra, diagrams), :mod:`attnphys.sweeps` (grids and executors), :mod:`attnphys.plots`.
Call :func:`attnphys.configure` in scripts to enable float64 and use every CPU core.
"""

from attnphys._version import __version__
from attnphys.errors import NonFiniteError
from attnphys.runtime import configure

__all__ = ["__version__", "NonFiniteError", "configure"]
