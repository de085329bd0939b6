"""Type stub of the lazily loaded package: the one list of its public names."""

from ._collapse import cosine_profile, decay_law_fit, length_betas, length_slopes, predicted_law
from ._warnings import AttentionImplementationWarning, ProbeWarning, TruncationWarning, UnderdeterminedFitWarning
from .adapters import ADAPTERS, AbstractAdapter, HeadWeights, adapter_for
from .adapters._base import Rotary
from .cache import activation_cache
from .capture import MAX_LENGTH, MIN_SENTENCES, Capture, builtin_corpus, capture, read_text
from .claims import CLAIMS, Claim, Evidence, Outcome, register_claim
from .controls import CONTROLS, control_model
from .jobs import write_outputs
from .metrics import head_scores, log_z_gradient
from .models import SHORT_NAMES, load_model, model_cache_dir, model_path, require_torch
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
]
