"""The building blocks of the dynamics toolkit that other packages compose into their own analyses and stores
(theory: docs/theory/dynamics.md §2, §5.4, §7, §8).

The analyses of :mod:`attnphys.dynamics` (``lyapunov_spectrum``, ``census``, ``tracks`` …) return labelled
datasets; a package that runs the same computations as a sweep task, point by point, needs the jit-able kernel
and the specification of the variables it stores. They are here, under their own names, so that no package
reaches into the toolkit's private modules:

- :func:`lyapunov`: the leading k Lyapunov exponents of a map from a state (traceable, vmappable), λ_i =
  (1/T) Σ_QR log|R_ii| (§2.1), returning a :class:`~attnphys.dynamics.LyapunovResult`;
  :func:`sorted_evidence` sorts its exponents descending with their evidence, the variables of
  :data:`LYAPUNOV_EVIDENCE` (dtype, fill value and attrs of each, §2.3).
- :data:`CENSUS_ATTRS`: the attrs of every variable of a census (§7); :data:`OUTCOMES`: the outcome codes of a
  start; :func:`continued_ids`: attractor ids made continuous along a parameter by basin overlap (§8.1).
- :func:`radius_bound`: an upper bound on a spectral radius that holds under round-off (Gelfand, §5.4).
"""

from attnphys.dynamics._census import CENSUS_ATTRS, OUTCOMES
from attnphys.dynamics._census_continue import continued_ids
from attnphys.dynamics._linalg import radius_bound
from attnphys.dynamics._lyapunov import EVIDENCE as LYAPUNOV_EVIDENCE
from attnphys.dynamics._lyapunov import lyapunov, sorted_evidence

__all__ = [
    "CENSUS_ATTRS",
    "LYAPUNOV_EVIDENCE",
    "OUTCOMES",
    "continued_ids",
    "lyapunov",
    "radius_bound",
    "sorted_evidence",
]
