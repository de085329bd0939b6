"""Type stub of the lazily loaded package: the one list of its public names."""

from ._api import continuation, lyapunov_spectrum
from ._census import CensusOptions, census, census_batch
from ._lyapunov import LyapunovResult
from ._tracks import tracks
from .bifurcations import BifurcationEvent, Branch, continue_orbit
from .classify import REGIMES, ClassifyOptions
from .maps import EXAMPLES, AbstractMap, FunctionMap, autonomous
from .orbits import OrbitSpec, continuation_chains, orbit, orbit_sweep
from .periodic import (
    Floquet,
    PeriodicOrbit,
    floquet,
    floquet_batch,
    floquet_direct,
    refine,
    refine_batch,
)
from .samplers import DomainSampler, ExplicitSampler, PerturbationSampler, make_sampler

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
