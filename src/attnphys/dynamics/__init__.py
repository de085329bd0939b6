"""The dynamics toolkit: discrete-time maps, Lyapunov spectra, orbits and their classification, exact
periodic orbits with Floquet multipliers, local bifurcations in one and two parameters, attractor censuses
with basins, attractor tracks across parameter grids, global stability of attractors, finer chaos
indicators and invariant manifolds of saddles, kinetic Ising networks (theory: docs/theory/dynamics.md §1–12).

The analyses a researcher calls, each returning a labelled ``xarray.Dataset``: :func:`lyapunov_spectrum`,
:func:`census` (the attractors of a map at one parameter point, with basins), :func:`tracks` (censuses along
a parameter matched into tracks), :func:`global_continuation` (attractors followed along a parameter by basin
overlap, with seeds and user quantities; §8.1), :func:`continuation` (a periodic orbit followed in a parameter, with its
bifurcations) and :func:`bifurcation_curve` (a fold, flip or Neimark–Sacker curve in two parameters, with its
codimension-two points; §9). A map is any subclass of :class:`AbstractMap` (or a :class:`FunctionMap` of
pure functions). Global stability (§10): :func:`minimal_shock`, :func:`convergence_times`,
:func:`basin_entropy`, :func:`box_entropy`, :func:`uncertainty_exponent`. Finer chaos indicators (§11):
:func:`finite_time_lyapunov`, :func:`local_lyapunov_map`, :func:`alignment_indices` (SALI, GALI = LDI),
:func:`weighted_birkhoff`, :func:`recurrence_time_entropy`; one-dimensional stable and unstable manifolds of
saddle periodic points: :func:`invariant_manifold`; the edge state on a basin boundary:
:func:`edge_track`. Rare transitions of noisy maps (theory: docs/theory/rare_events.md §1–8):
:func:`discrete_action`, :func:`least_action_path`, :func:`quasi_potential_hessian`, :func:`eyring_kramers`,
:func:`splitting`, :func:`direct_transition`, :func:`first_passage_time`. Recorded orbits are labelled by
:func:`attnphys.dynamics.classify.classify`; :func:`regime_counts` and :func:`undetermined_values` summarise
the labels of a diagram. Kinetic Ising networks: :func:`kinetic_ising_mean_field` (naive mean field, TAP,
Plefka[t], Plefka2[t]), :func:`kinetic_ising_exact`, :func:`kinetic_ising_sample` and the asymmetric SK
benchmark :func:`asymmetric_sk` (theory: docs/theory/fluctuations.md).
"""

# The names are loaded on first use (the stub ``__init__.pyi`` lists them), so a run imports only the modules
# it uses.
import lazy_loader as _lazy

from attnphys import _deprecated

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
__getattr__ = _deprecated.extend(__name__, __getattr__)  # the names of 0.2.0 that moved
