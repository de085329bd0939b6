"""Type stub of the lazily loaded package: the one list of its public names."""

from ._collapse import cosine_profile, decay_law_fit, length_betas, length_slopes, predicted_law
from ._warnings import AttentionImplementationWarning, ProbeWarning, TruncationWarning, UnderdeterminedFitWarning
from .adapters import (
    ADAPTERS,
    AbstractAdapter,
    GenericAdapter,
    GenericAdapterWarning,
    HeadWeights,
    adapter_for,
    generic_adapter,
)
from .adapters._base import Rotary
from .cache import activation_cache
from .cache_names import cache_names, hook
from .capture import MAX_LENGTH, MIN_SENTENCES, Capture, builtin_corpus, capture, read_text
from .claims import CLAIMS, Claim, Evidence, Outcome, register_claim
from .controls import CONTROLS, control_model
from .critical import critical_claim, critical_rows, critical_section, critical_temperatures, plot_critical
from .dmft_placement import (
    dmft_claim,
    dmft_placement,
    dmft_section,
    paper_head,
    place_layers,
    plot_dmft_placement,
    read_layer,
)
from .jobs import write_outputs
from .metrics import head_scores, log_z_gradient
from .models import SHORT_NAMES, load_model, model_cache_dir, model_path, require_torch
from .propagation_placement import plot_propagation_placement, propagation_placement, propagation_section
from .run import control_prefixes, probe, summary, temperatures
from .sinks import SINK_ATTENTION_MIN_SHARE, SINK_ATTENTION_RATIO, SINK_NORM_RATIO, find_sinks

__all__ = [
    "ADAPTERS",
    "AbstractAdapter",
    "HeadWeights",
    "Rotary",
    "adapter_for",
    "SHORT_NAMES",
    "load_model",
    "model_cache_dir",
    "model_path",
    "require_torch",
    "MIN_SENTENCES",
    "Capture",
    "builtin_corpus",
    "capture",
    "read_text",
    "CLAIMS",
    "Claim",
    "Evidence",
    "Outcome",
    "register_claim",
    "CONTROLS",
    "control_model",
    "MAX_LENGTH",
    "activation_cache",
    "head_scores",
    "log_z_gradient",
    "SINK_NORM_RATIO",
    "SINK_ATTENTION_RATIO",
    "SINK_ATTENTION_MIN_SHARE",
    "find_sinks",
    "probe",
    "temperatures",
    "summary",
    "control_prefixes",
    "ProbeWarning",
    "TruncationWarning",
    "AttentionImplementationWarning",
    "UnderdeterminedFitWarning",
    "write_outputs",
    "cosine_profile",
    "decay_law_fit",
    "length_betas",
    "length_slopes",
    "predicted_law",
    # the generic adapter and the cache's TransformerLens-style names
    "GenericAdapter",
    "GenericAdapterWarning",
    "generic_adapter",
    "cache_names",
    "hook",
    # the placements on the theory's diagrams
    "critical_rows",
    "critical_temperatures",
    "critical_claim",
    "critical_section",
    "plot_critical",
    "propagation_placement",
    "propagation_section",
    "plot_propagation_placement",
    "dmft_placement",
    "dmft_claim",
    "dmft_section",
    "plot_dmft_placement",
    "paper_head",
    "read_layer",
    "place_layers",
]
