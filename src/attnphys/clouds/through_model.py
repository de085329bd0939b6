"""Deprecated since 0.3.0, removed in 0.5.0: the module ``attnphys.clouds.through_model`` of 0.2.0. Its names answer with a
warning that names their replacement (the table of :mod:`attnphys._deprecated`)."""

from attnphys import _deprecated

__getattr__ = _deprecated.shim(__name__)
