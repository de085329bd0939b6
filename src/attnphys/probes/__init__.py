"""Probes of real pretrained transformers (theory: docs/theory/probes.md). Importing this package does
not import torch; the functions that run a model do."""

# The names are loaded on first use (the stub ``__init__.pyi`` lists them), so that the command line imports
# this package's command module without loading the numerical libraries.
import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
