"""Probes of real pretrained transformers (theory: docs/theory/probes.md). Importing this package does
not import torch; the functions that run a model do.

The public functions return labelled xarray Datasets:

* :func:`probe` — every experiment and every claim's test on one model (``attnphys probe``);
* :func:`temperatures` — the particle picture's parameters read from the weights: per layer and head the
  effective inverse temperature of the attention, its regime, and the clustering of the model's clouds
  beside a particle flow;

and take a short name (``minilm``, ``smollm2``; :data:`SHORT_NAMES`), a local model folder, a hub name
or a loaded model.
"""

from attnphys.probes.adapters import ADAPTERS, AbstractAdapter, HeadWeights, adapter_for
from attnphys.probes.adapters._base import Rotary
from attnphys.probes.capture import MIN_SENTENCES, Capture, builtin_corpus, capture, read_text
from attnphys.probes.claims import CLAIMS
from attnphys.probes.models import SHORT_NAMES, load_model, model_cache_dir, model_path, require_torch
from attnphys.probes.run import probe, summary, temperatures, write_outputs

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
