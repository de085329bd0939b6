"""Attention as an exponential family: base measures, their log-normalizers and duality
(theory: docs/theory/expfam.md §1).

A base measure is a subclass of :class:`AbstractBaseMeasure` (one file per variant under
``_measure/``); :func:`measure_classes` lists them all. The duality functions (§4) and the
Monte-Carlo estimators (§5) take any of them.
"""

# The names are loaded on first use (the stub ``__init__.pyi`` lists them), so that the command line imports
# this package's command module without loading the numerical libraries.
import lazy_loader as _lazy

from attnphys import _deprecated

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
__getattr__ = _deprecated.extend(__name__, __getattr__)  # the names of 0.2.0 that moved
