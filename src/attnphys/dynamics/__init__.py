"""The dynamics toolkit: discrete-time maps, Lyapunov spectra, orbits and their classification, exact
periodic orbits with Floquet multipliers, local bifurcations, attractor censuses with basins, and attractor
tracks across parameter grids (theory: docs/theory/dynamics.md §1–8).

Submodules: :mod:`~attnphys.dynamics.maps` (the interface and example maps), :mod:`~.lyapunov`,
:mod:`~.orbits`, :mod:`~.classify`, :mod:`~.periodic`, :mod:`~.bifurcations`, :mod:`~.samplers`,
:mod:`~.settle`, :mod:`~.census`, :mod:`~.tracks`.
"""

# Functions named like their submodule (lyapunov, classify, census, tracks) are not re-exported here, so that
# ``attnphys.dynamics.<name>`` stays the submodule; import them from it.
from attnphys.dynamics.bifurcations import BifurcationEvent, Branch, continue_orbit
from attnphys.dynamics.census import CensusOptions, census_batch
from attnphys.dynamics.classify import REGIMES, ClassifyOptions
from attnphys.dynamics.lyapunov import LyapunovResult
from attnphys.dynamics.maps import EXAMPLES, AbstractMap, Map, autonomous
from attnphys.dynamics.orbits import OrbitSpec, continuation, orbit, orbit_sweep
from attnphys.dynamics.periodic import (
    Floquet,
    PeriodicOrbit,
    floquet,
    floquet_batch,
    floquet_direct,
    refine,
    refine_batch,
)
from attnphys.dynamics.samplers import DomainSampler, ExplicitSampler, PerturbationSampler, make_sampler

__all__ = [
    "EXAMPLES",
    "REGIMES",
    "AbstractMap",
    "BifurcationEvent",
    "Branch",
    "CensusOptions",
    "ClassifyOptions",
    "DomainSampler",
    "ExplicitSampler",
    "Floquet",
    "LyapunovResult",
    "Map",
    "OrbitSpec",
    "PeriodicOrbit",
    "PerturbationSampler",
    "autonomous",
    "census_batch",
    "continuation",
    "continue_orbit",
    "floquet",
    "floquet_batch",
    "floquet_direct",
    "make_sampler",
    "orbit",
    "orbit_sweep",
    "refine",
    "refine_batch",
]
