"""Independent uniform ±1 weights (theory: docs/theory/dmft.md §4.2)."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from attnphys.dmft.correlations._base import AbstractCorrelations
from attnphys.dmft.correlations._moments import Correlations


def random_weights(seed: int, M: int, n_se: int, P: int) -> np.ndarray:
    """Independent uniform ±1 weights (4, M, N_se + P) from ``numpy.random.default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    return (2 * rng.integers(0, 2, size=(4, M, n_se + P)) - 1).astype(np.int8)


class RandomWeightCorrelations(AbstractCorrelations):
    """Moments of independent uniform ±1 weights (no segments) (theory: docs/theory/dmft.md §4.2)."""

    kind: Literal["random"] = "random"
    seed: int = Field(default=0, ge=0, lt=2**63, description="seed of numpy's default_rng")

    def build(self, M: int, n_se: int, P: int) -> Correlations:
        return Correlations.from_weights(
            random_weights(self.seed, M, n_se, P), n_se, source=f"random(seed={self.seed})"
        )

    @classmethod
    def example(cls) -> RandomWeightCorrelations:
        return cls(seed=3)
