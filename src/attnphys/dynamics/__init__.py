"""The dynamics toolkit: discrete-time maps, Lyapunov spectra, orbits and their classification, exact
periodic orbits with Floquet multipliers, local bifurcations, attractor censuses with basins, and attractor
tracks across parameter grids (theory: docs/theory/dynamics.md §1–8).

Submodules: :mod:`~attnphys.dynamics.maps` (the interface and example maps), :mod:`~.lyapunov`,
:mod:`~.orbits`, :mod:`~.classify`, :mod:`~.periodic`, :mod:`~.bifurcations`, :mod:`~.samplers`,
:mod:`~.settle`, :mod:`~.census`, :mod:`~.tracks`.
"""

from attnphys.dynamics.bifurcations import BifurcationEvent, Branch, continue_orbit
from attnphys.dynamics.census import CensusOptions, census, census_batch
from attnphys.dynamics.classify import REGIMES, ClassifyOptions, classify
from attnphys.dynamics.lyapunov import LyapunovResult, lyapunov
from attnphys.dynamics.maps import EXAMPLES, AbstractMap, Map, autonomous
from attnphys.dynamics.orbits import OrbitSpec, continuation, orbit, orbit_sweep
from attnphys.dynamics.periodic import Floquet, PeriodicOrbit, floquet, floquet_batch, refine, refine_batch
from attnphys.dynamics.samplers import DomainSampler, ExplicitSampler, PerturbationSampler, make_sampler
from attnphys.dynamics.tracks import tracks

__all__ = ["AbstractMap", "BifurcationEvent", "Branch", "CensusOptions", "ClassifyOptions", "DomainSampler", "EXAMPLES",
           "ExplicitSampler", "Floquet", "LyapunovResult", "Map", "OrbitSpec", "PeriodicOrbit", "PerturbationSampler",
           "REGIMES", "autonomous", "census", "census_batch", "classify", "continuation", "continue_orbit", "floquet",
           "floquet_batch", "lyapunov", "make_sampler", "orbit", "orbit_sweep", "refine", "refine_batch", "tracks"]
