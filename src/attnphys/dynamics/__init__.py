"""The dynamics toolkit: discrete-time maps, Lyapunov spectra, orbits and their classification, exact
periodic orbits with Floquet multipliers, local bifurcations, attractor censuses with basins, and attractor
tracks across parameter grids (theory: docs/theory/dynamics.md §1–8).

The analyses a researcher calls, each returning a labelled ``xarray.Dataset``: :func:`lyapunov_spectrum`,
:func:`census` (the attractors of a map at one parameter point, with basins), :func:`tracks` (censuses along
a parameter matched into tracks), :func:`global_continuation` (attractors followed along a parameter by basin
overlap, with seeds and user quantities) and :func:`continuation` (a periodic orbit followed in a parameter, with its
bifurcations). A map is any subclass of :class:`AbstractMap` (or a :class:`FunctionMap` of pure functions).
Recorded orbits are labelled by :func:`attnphys.dynamics.classify.classify`; :func:`regime_counts` and
:func:`undetermined_values` summarise the labels of a diagram.
"""

# The names are loaded on first use (the stub ``__init__.pyi`` lists them), so a run imports only the modules
# it uses.
import lazy_loader as _lazy

from attnphys import _deprecated

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
__getattr__ = _deprecated.extend(__name__, __getattr__)  # the names of 0.2.0 that moved
