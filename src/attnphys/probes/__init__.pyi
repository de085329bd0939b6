"""Type stub of the lazily loaded package: the one list of its public names."""

from .adapters import ADAPTERS, AbstractAdapter, HeadWeights, adapter_for
from .adapters._base import Rotary
from .capture import MIN_SENTENCES, Capture, builtin_corpus, capture, read_text
from .claims import CLAIMS
from .jobs import write_outputs
from .models import SHORT_NAMES, load_model, model_cache_dir, model_path, require_torch
from .run import probe, summary, temperatures

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
    "probe",
    "temperatures",
    "summary",
    "write_outputs",
]
