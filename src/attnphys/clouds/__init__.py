"""Token clouds: operators on N tokens as an empirical distribution, layers, statistics, and tokens as
interacting particles in continuous time (theory: docs/theory/clouds.md, docs/theory/particles.md).

Nothing here imports torch; :func:`through_model` (a cloud pushed through a pretrained model's layers,
:mod:`attnphys.clouds.pretrained`) loads a real model only when called.
"""

# The names are loaded on first use (the stub ``__init__.pyi`` lists them), so that the command line imports
# this package's command module without loading the numerical libraries.
import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
