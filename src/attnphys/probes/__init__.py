"""Probes of real pretrained transformers (theory: docs/theory/probes.md). Importing this package does
not import torch; the functions that run a model do.

The public functions return labelled xarray Datasets:

* :func:`probe` — every experiment and every claim's test on one model (``attnphys probe``);
* :func:`temperatures` — the particle picture's parameters read from the weights: per layer and head the
  signed effective inverse temperature of the attention, its spread over texts, its regime (particle
  heads), and the clustering of the model's clouds beside a particle flow;
* :func:`activation_cache` — every intermediate of every layer (residual stages, per-head queries and
  keys before and after the rotary rotation, scores, patterns, z, per-head outputs, MLP hidden) as
  labelled arrays;
* :func:`find_sinks` — the massive-norm (sink) positions; :func:`head_scores`, :func:`log_z_gradient` —
  a head's scores and the gradient of its log-normalizer from its weights;

and take a short name (``minilm``, ``smollm2``; :data:`SHORT_NAMES`), a local model folder, a hub name
or a loaded model.
"""

# The names are loaded on first use (the stub ``__init__.pyi`` lists them), so that the command line imports
# this package's command module without loading the numerical libraries.
import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
