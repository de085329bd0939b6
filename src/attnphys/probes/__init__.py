"""Probes of real pretrained transformers (theory: docs/theory/probes.md). Importing this package does
not import torch; the functions that run a model do."""

from attnphys.probes.adapters import ADAPTERS, AbstractAdapter, HeadWeights, adapter_for, load_model, require_torch
from attnphys.probes.capture import MIN_SENTENCES, Capture, builtin_corpus, capture, read_text
from attnphys.probes.run import probe, summary, write_outputs

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
