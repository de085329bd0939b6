"""Type stub of the lazily loaded package: the one list of its public names."""
from .adapters import ADAPTERS, AbstractAdapter, HeadWeights, adapter_for, load_model, require_torch
from .capture import MIN_SENTENCES, Capture, builtin_corpus, capture, read_text
from .run import probe, summary, write_outputs

__all__ = [
    "ADAPTERS",
    "AbstractAdapter",
    "HeadWeights",
    "adapter_for",
    "load_model",
    "require_torch",
    "MIN_SENTENCES",
    "Capture",
    "builtin_corpus",
    "capture",
    "read_text",
    "probe",
    "summary",
    "write_outputs",
]
