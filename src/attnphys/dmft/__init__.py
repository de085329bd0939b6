"""Dynamical mean-field theory of a simplified self-attention network (theory: docs/theory/dmft.md).

What a researcher calls: a configuration (:class:`DMFTConfig`, :func:`preset`), typed starts, and one
function per analysis, each returning a labelled ``xarray.Dataset``:

* :func:`trajectories` — records of the mean-field map over a parameter grid; :func:`final_windows`;
* :func:`lyapunov_spectrum` — Lyapunov spectra;
* :func:`bifurcation` — the orbit diagram along one parameter (cold starts or continuation), with regimes
  and exponents; :func:`phase_diagram` — the same over two fields; :func:`compare_diagrams` — what changed
  between two stored diagrams of the same grid; :func:`diagram_portraits` — chosen points of a stored
  diagram rerun exactly, for phase portraits;
* :func:`attractors` — the attractor census at one point; :func:`basins` — censuses along a parameter,
  matched into tracks; :func:`orbit_continuation` — one periodic orbit and its bifurcations;
  :func:`boundary` — a fold, flip or Neimark–Sacker curve of one orbit in two parameters (a boundary of
  the phase diagram) with its codimension-two points;
* :func:`finite_trajectories` — the finite-N network; :func:`converge` — its approach to the mean field;
  :func:`fluctuations` — its predicted O(1/N) bias and covariance (the system-size expansion),
  :func:`compare_fluctuations` — prediction and simulation side by side, :func:`predicted_horizon`.

The engine (the map, its cached state, the sweep tasks) lives in the submodules; :class:`DMFTModel` owns a
configuration's derived state and gives the map to the dynamics toolkit (:mod:`attnphys.dynamics`). A model
variant (the paper's, the designed-weights model of :mod:`attnphys.dmft.designed`) is a configuration class
(:class:`AbstractConfig`), its model object (:class:`AbstractModel`) and its map
(:class:`~attnphys.dmft.maps.WindowMap`): every analysis above runs on any variant.
"""

# The names are loaded on first use (the stub ``__init__.pyi`` lists them): the command line imports the light
# modules of this package (configuration, starts, observables) without loading the numerical engine.
import lazy_loader as _lazy

from attnphys import _deprecated

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
__getattr__ = _deprecated.extend(__name__, __getattr__)  # the names of 0.2.0 that moved
