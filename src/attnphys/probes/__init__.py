"""Probes of real pretrained transformers (spec ``probabilistic-attention.md`` §5)."""

from attnphys.probes.adapters import ADAPTERS, HeadWeights, adapter_for, load_model
from attnphys.probes.capture import Capture, builtin_corpus, capture, read_text
from attnphys.probes.run import probe, summary, write_outputs

__all__ = ["ADAPTERS", "HeadWeights", "adapter_for", "load_model", "Capture", "builtin_corpus", "capture", "read_text",
           "probe", "summary", "write_outputs"]
