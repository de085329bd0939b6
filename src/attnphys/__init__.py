"""attnphys: the probabilistic and statistical-physics theory of transformer attention, executable.

Subpackages: :mod:`attnphys.dmft` (mean-field theory of self-attention), :mod:`attnphys.dynamics`
(maps, Lyapunov spectra, diagrams), :mod:`attnphys.sweeps` (grids and executors), :mod:`attnphys.plots`.
Call :func:`attnphys.configure` in scripts to enable float64 and use every CPU core; :func:`attnphys.rerun`
repeats the job recorded in a stored result.

Importing the package is light (no JAX yet): :func:`configure` is loaded on first use, so that the
command line answers Ctrl-C cleanly from its first moment.
"""

from typing import TYPE_CHECKING

from attnphys._version import __version__
from attnphys.errors import NonFiniteError

if TYPE_CHECKING:
    from attnphys.jobs import rerun_result as rerun
    from attnphys.runtime import configure


def __getattr__(name: str):
    if name == "configure":
        from attnphys.runtime import configure

        return configure
    if name == "rerun":
        from attnphys.jobs import rerun_result

        return rerun_result
    raise AttributeError(f"module 'attnphys' has no attribute {name!r}")


__all__ = ["__version__", "NonFiniteError", "configure", "rerun"]
