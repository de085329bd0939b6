"""The dynamics toolkit: discrete-time maps, Lyapunov spectra, orbits and their classification, exact
periodic orbits with Floquet multipliers, local bifurcations, attractor censuses with basins, and attractor
tracks across parameter grids (theory: docs/theory/dynamics.md §1–8).

The analyses a researcher calls, each returning a labelled ``xarray.Dataset``: :func:`lyapunov_spectrum`,
:func:`census` (the attractors of a map at one parameter point, with basins), :func:`tracks` (censuses along
a parameter matched into tracks) and :func:`continuation` (a periodic orbit followed in a parameter, with its
bifurcations). A map is any subclass of :class:`AbstractMap` (or a :class:`FunctionMap` of pure functions).
"""

from attnphys.dynamics._api import continuation, lyapunov_spectrum
from attnphys.dynamics._census import CensusOptions, census, census_batch
from attnphys.dynamics._lyapunov import LyapunovResult
from attnphys.dynamics._tracks import tracks
from attnphys.dynamics.bifurcations import BifurcationEvent, Branch, continue_orbit
from attnphys.dynamics.classify import REGIMES, ClassifyOptions
from attnphys.dynamics.maps import EXAMPLES, AbstractMap, FunctionMap, autonomous
from attnphys.dynamics.orbits import OrbitSpec, continuation_chains, orbit, orbit_sweep
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
    # the analyses
    "lyapunov_spectrum",
    "census",
    "tracks",
    "continuation",
    # maps
    "EXAMPLES",
    "AbstractMap",
    "FunctionMap",
    "autonomous",
    # the building blocks
    "REGIMES",
    "BifurcationEvent",
    "Branch",
    "CensusOptions",
    "ClassifyOptions",
    "DomainSampler",
    "ExplicitSampler",
    "Floquet",
    "LyapunovResult",
    "OrbitSpec",
    "PeriodicOrbit",
    "PerturbationSampler",
    "census_batch",
    "continuation_chains",
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
