"""Dynamical mean-field theory of a simplified self-attention network (theory: docs/theory/dmft.md).

The public surface: a configuration (:class:`DMFTConfig`, :func:`preset`), the model it defines
(:class:`DMFTModel`), typed starts, the map and its engine, and the analyses — trajectories, Lyapunov
spectra, orbit diagrams, the finite-N network and its convergence — each also a sweep task.
"""

from attnphys.dmft.analysis import analyse, lyapunov_spectrum
from attnphys.dmft.config import BATCHED, PRESETS, DMFTConfig, preset
from attnphys.dmft.converge import converge, fitted_slope
from attnphys.dmft.correlations import (
    FAMILIES,
    AbstractCorrelations,
    Correlations,
    ExplicitWeights,
    GaussianCorrelations,
    RandomWeightCorrelations,
    SegmentCorrelations,
    gaussian_correlations,
    moments_from_weights,
    odd_subsets,
    paper_segment_weights,
    random_weights,
    sign_matrix,
    sign_vectors,
)
from attnphys.dmft.finite import finite_trajectories, random_network, repeated_network
from attnphys.dmft.initial import (
    CheckpointStart,
    FileStart,
    Start,
    TokenStart,
    WindowStart,
    from_file,
    from_json,
    from_token,
    from_window,
    initial_window,
    paper_checkpoint,
    parse_start,
    position_code,
    save_window,
    token_positions,
    window_to_json,
)
from attnphys.dmft.maps import AttentionMap, FullStateMap
from attnphys.dmft.meanfield import (
    OBSERVABLES,
    Couplings,
    Scalars,
    State,
    Window,
    couplings,
    overlaps,
    scalars,
    semantic_overlap,
    step,
)
from attnphys.dmft.model import DMFTModel
from attnphys.dmft.simulate import Schedule, run, run_batch
from attnphys.dmft.tasks import ConvergeTask, FiniteTask, LyapunovTask, OrbitTask, TrajectoryTask, orbit_spec
from attnphys.dmft.trajectory import SWEEPABLE, final_windows, trajectories

__all__ = [
    "analyse", "lyapunov_spectrum", "BATCHED", "PRESETS", "DMFTConfig", "preset", "converge", "fitted_slope",
    "FAMILIES", "AbstractCorrelations", "Correlations", "ExplicitWeights", "GaussianCorrelations",
    "RandomWeightCorrelations", "SegmentCorrelations", "gaussian_correlations", "moments_from_weights", "odd_subsets",
    "paper_segment_weights", "random_weights", "sign_matrix", "sign_vectors", "finite_trajectories", "random_network",
    "repeated_network", "CheckpointStart", "FileStart", "Start", "TokenStart", "WindowStart", "from_file", "from_json",
    "from_token", "from_window", "initial_window", "paper_checkpoint", "parse_start", "position_code", "save_window",
    "token_positions", "window_to_json", "AttentionMap", "FullStateMap", "OBSERVABLES", "Couplings", "Scalars",
    "State", "Window", "couplings", "overlaps", "scalars", "semantic_overlap", "step", "DMFTModel", "Schedule", "run",
    "run_batch", "ConvergeTask", "FiniteTask", "LyapunovTask", "OrbitTask", "TrajectoryTask", "orbit_spec", "SWEEPABLE",
    "final_windows", "trajectories",
]
