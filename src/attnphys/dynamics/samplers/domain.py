"""Random states on the map's domain (theory: docs/theory/dynamics.md §7.1)."""

from __future__ import annotations

from dataclasses import dataclass

from attnphys.dynamics.samplers._base import AbstractSampler


@dataclass(frozen=True)
class DomainSampler(AbstractSampler):
    """x_i ~ the map's own distribution on its natural domain (theory: docs/theory/dynamics.md §7.1),
    :meth:`AbstractMap.sample_states`
    (e.g. uniform on the invariant interval); raises ``NotImplementedError`` for maps without one."""

    name = "random"

    def sample(self, m, key, n, params):
        return m.sample_states(key, n, params)
