"""Type stub of the lazily loaded package: the one list of its public names."""

from ._api import continuation, lyapunov_spectrum
from ._census import CensusOptions, census, census_batch
from ._census_continue import global_continuation
from ._lyapunov import LyapunovResult
from ._tracks import tracks
from .bifurcations import EVENT_KINDS, BifurcationEvent, Branch, continue_orbit, event_kinds
from .classify import REGIMES, ClassifyOptions, regime_counts, undetermined_values
from .maps import EXAMPLES, AbstractMap, FunctionMap, autonomous, example_map, register_map
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
from .samplers import DomainSampler, ExplicitSampler, GridSampler, PerturbationSampler, make_sampler

__all__ = [
    # the analyses
    "lyapunov_spectrum",
    "census",
    "tracks",
    "global_continuation",
    "continuation",
    # regimes of recorded orbits (the function ``classify`` stays in :mod:`attnphys.dynamics.classify`: its
    # name is that public module's)
    "regime_counts",
    "undetermined_values",
    # maps
    "EXAMPLES",
    "example_map",
    "register_map",
    "AbstractMap",
    "FunctionMap",
    "autonomous",
    # the building blocks
    "REGIMES",
    "BifurcationEvent",
    "EVENT_KINDS",
    "event_kinds",
    "Branch",
    "CensusOptions",
    "ClassifyOptions",
    "DomainSampler",
    "ExplicitSampler",
    "GridSampler",
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
