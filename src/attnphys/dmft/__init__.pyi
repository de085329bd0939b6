"""Type stub of the lazily loaded package: the one list of its public names."""

from ._abstract_model import AbstractModel
from ._analysis_options import (
    AttractorsOptions,
    BasinsOptions,
    BifurcationOptions,
    BoundaryOptions,
    CompareFluctuationsOptions,
    ContinuationOptions,
    ConvergeOptions,
    FiniteOptions,
    FluctuationsOptions,
    LyapunovOptions,
    PhaseDiagramOptions,
    StabilityOptions,
    SwitchingOptions,
    TrajectoriesOptions,
)
from ._api.attractors import (
    ContinuationPlan,
    attractors,
    basins,
    orbit_continuation,
    plan_attractors,
    plan_basins,
    plan_orbit_continuation,
)
from ._api.boundary import BoundaryPlan, boundary, plan_boundary
from ._api.compare import compare_diagrams
from ._api.diagrams import bifurcation, phase_diagram, plan_bifurcation, plan_phase_diagram
from ._api.finite import converge, finite_trajectories, plan_converge, plan_finite_trajectories
from ._api.fluctuation_check import compare_fluctuations
from ._api.fluctuations import fluctuations, predicted_horizon
from ._api.portraits import diagram_portraits
from ._api.spectra import lyapunov_spectrum, plan_lyapunov_spectrum
from ._api.stability import plan_stability, stability
from ._api.trajectories import final_windows, plan_trajectories, trajectories
from ._variant import AbstractConfig, register_variant, variant_class, variant_names
from .config import BATCHED, PRESETS, DMFTConfig, preset, sweepable_fields
from .correlations import (
    AbstractCorrelations,
    ExplicitWeights,
    GaussianCorrelations,
    RandomWeightCorrelations,
    SegmentCorrelations,
)
from .initial import from_file, from_window, paper_checkpoint, save_window
from .meanfield import Window
from .model import DMFTModel
from .observables import OBSERVABLES
from .starts import CheckpointStart, FileStart, PatternStart, PrerunStart, Start, TokenStart, WindowStart
from .switching import switching

__all__ = [
    # configuration
    "BATCHED",
    "PRESETS",
    "DMFTConfig",
    "preset",
    "sweepable_fields",
    "AbstractCorrelations",
    "ExplicitWeights",
    "GaussianCorrelations",
    "RandomWeightCorrelations",
    "SegmentCorrelations",
    # starts
    "CheckpointStart",
    "FileStart",
    "PatternStart",
    "PrerunStart",
    "Start",
    "TokenStart",
    "Window",
    "WindowStart",
    "from_file",
    "from_window",
    "paper_checkpoint",
    "save_window",
    # the model (and the interface of a model variant)
    "AbstractConfig",
    "AbstractModel",
    "register_variant",
    "variant_class",
    "variant_names",
    "DMFTModel",
    "OBSERVABLES",
    # analyses
    "trajectories",
    "plan_trajectories",
    "TrajectoriesOptions",
    "final_windows",
    "lyapunov_spectrum",
    "plan_lyapunov_spectrum",
    "LyapunovOptions",
    "bifurcation",
    "phase_diagram",
    "plan_bifurcation",
    "plan_phase_diagram",
    "BifurcationOptions",
    "PhaseDiagramOptions",
    "compare_diagrams",
    "diagram_portraits",
    "attractors",
    "plan_attractors",
    "AttractorsOptions",
    "basins",
    "plan_basins",
    "BasinsOptions",
    "orbit_continuation",
    "plan_orbit_continuation",
    "ContinuationOptions",
    "ContinuationPlan",
    "stability",
    "plan_stability",
    "StabilityOptions",
    "boundary",
    "plan_boundary",
    "BoundaryOptions",
    "BoundaryPlan",
    "finite_trajectories",
    "plan_finite_trajectories",
    "FiniteOptions",
    "converge",
    "plan_converge",
    "ConvergeOptions",
    "fluctuations",
    "FluctuationsOptions",
    "compare_fluctuations",
    "CompareFluctuationsOptions",
    "predicted_horizon",
    "switching",
    "SwitchingOptions",
]
