"""Dynamical mean-field theory of a simplified self-attention network (spec ``dmft.md``)."""

from attnphys.dmft.config import DMFTConfig, PRESETS, preset
from attnphys.dmft.correlations import (
    FAMILIES,
    Correlations,
    gaussian_correlations,
    moments_from_weights,
    odd_subsets,
    paper_segment_weights,
    random_weights,
    sign_matrix,
    sign_vectors,
)
from attnphys.dmft.initial import (
    from_json,
    from_token,
    from_window,
    initial_window,
    paper_checkpoint,
    position_code,
    token_positions,
    window_to_json,
)
from attnphys.dmft.meanfield import (
    OBSERVABLES,
    Couplings,
    Scalars,
    Window,
    couplings,
    overlaps,
    scalars,
    semantic_overlap,
    step,
)
from attnphys.dmft.simulate import Schedule, run, run_batch
from attnphys.dmft.trajectory import SWEEPABLE, final_windows, trajectories

__all__ = [
    "DMFTConfig", "PRESETS", "preset", "FAMILIES", "Correlations", "gaussian_correlations",
    "moments_from_weights", "odd_subsets", "paper_segment_weights", "random_weights", "sign_matrix",
    "sign_vectors", "from_json", "from_token", "from_window", "initial_window", "paper_checkpoint",
    "position_code", "token_positions", "window_to_json", "OBSERVABLES", "Couplings", "Scalars", "Window",
    "couplings", "overlaps", "scalars", "semantic_overlap", "step", "Schedule", "run", "run_batch",
    "SWEEPABLE", "final_windows", "trajectories",
]
