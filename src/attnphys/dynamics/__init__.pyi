"""Type stub of the lazily loaded package: the one list of its public names."""

from ._action import discrete_action, eyring_kramers, least_action_path, quasi_potential_hessian
from ._api import continuation, lyapunov_spectrum
from ._boundaries import basin_entropy, box_entropy, uncertainty_exponent
from ._census import CensusOptions, census, census_batch
from ._census_continue import global_continuation
from ._codim2 import CODIM2_TESTS, CURVE_KINDS, bifurcation_curve, normal_form_coefficient
from ._edge import edge_track
from ._indicators import (
    alignment_indices,
    bump_weight,
    finite_time_lyapunov,
    local_lyapunov_map,
    recurrence_time_entropy,
    weighted_birkhoff,
)
from ._kinetic_ising import (
    KINETIC_ISING_METHODS,
    asymmetric_sk,
    kinetic_ising_errors,
    kinetic_ising_exact,
    kinetic_ising_mean_field,
    kinetic_ising_sample,
)
from ._lyapunov import LyapunovResult
from ._manifolds import invariant_manifold
from ._noisy import AbstractNoise, GaussianNoise
from ._splitting import direct_transition, first_passage_time, splitting
from ._stability import convergence_times, minimal_shock
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
    "KINETIC_ISING_METHODS",
    "asymmetric_sk",
    "kinetic_ising_errors",
    "kinetic_ising_exact",
    "kinetic_ising_mean_field",
    "kinetic_ising_sample",
    # the analyses
    "lyapunov_spectrum",
    "census",
    "tracks",
    "global_continuation",
    "continuation",
    # chaos indicators
    "finite_time_lyapunov",
    "local_lyapunov_map",
    "alignment_indices",
    "weighted_birkhoff",
    "recurrence_time_entropy",
    "edge_track",
    "invariant_manifold",
    # rare transitions of noisy maps
    "discrete_action",
    "least_action_path",
    "quasi_potential_hessian",
    "eyring_kramers",
    "splitting",
    "direct_transition",
    "first_passage_time",
    # global stability of attractors
    "minimal_shock",
    "convergence_times",
    "basin_entropy",
    "box_entropy",
    "uncertainty_exponent",
    "bifurcation_curve",
    # regimes of recorded orbits (the function ``classify`` stays in :mod:`attnphys.dynamics.classify`: its
    # name is that public module's)
    "regime_counts",
    "undetermined_values",
    # maps
    "EXAMPLES",
    "example_map",
    "register_map",
    "AbstractMap",
    "AbstractNoise",
    "GaussianNoise",
    "FunctionMap",
    "autonomous",
    # the building blocks
    "REGIMES",
    "BifurcationEvent",
    "CODIM2_TESTS",
    "CURVE_KINDS",
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
    "bump_weight",
    "census_batch",
    "continuation_chains",
    "continue_orbit",
    "floquet",
    "floquet_batch",
    "floquet_direct",
    "make_sampler",
    "normal_form_coefficient",
    "orbit",
    "orbit_sweep",
    "refine",
    "refine_batch",
]
