"""Gaussian pair correlations (theory: docs/theory/dmft.md §4.3)."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from attnphys.dmft.correlations._base import AbstractCorrelations
from attnphys.dmft.correlations._moments import Correlations, odd_subsets


def gaussian_correlations(seed: int, M: int, P: int, scale: float) -> Correlations:
    """Gaussian correlations, the reference's mode 0 generalised to any M (theory: docs/theory/dmft.md §4.3).

    Pair moments C^α_{{b},a} ~ 𝒩(0, scale²), the o–o diagonal set to 1, clipped to [-1, 1]; higher odd
    moments are products of pair moments, C^α_{B,a} = Π_{b∈B} C^α_{{b},a}; positional weights uniform ±1.
    """
    if not scale >= 0 or not np.isfinite(scale):
        raise ValueError(f"scale must be a finite number >= 0, got {scale}")
    rng = np.random.default_rng(seed)
    pair = rng.normal(0.0, scale, size=(4, M, M))
    pair[0][np.diag_indices(M)] = 1.0
    pair = np.clip(pair, -1.0, 1.0)
    C = np.stack([np.prod(pair[:, list(B), :], axis=1) for B in odd_subsets(M)], axis=1)
    W_pe = (2 * rng.integers(0, 2, size=(4, M, P)) - 1).astype(np.float64)
    return Correlations(C=C, W_pe=W_pe, source=f"gaussian(seed={seed}, scale={scale})")


class GaussianCorrelations(AbstractCorrelations):
    """Gaussian pair correlations, higher moments as products (theory: docs/theory/dmft.md §4.3)."""

    kind: Literal["gaussian"] = "gaussian"
    seed: int = Field(default=0, ge=0, lt=2**63, description="seed of numpy's default_rng")
    scale: float = Field(default=0.5, ge=0, allow_inf_nan=False, description="standard deviation of the pair moments")

    def build(self, M: int, n_se: int, P: int) -> Correlations:
        return gaussian_correlations(self.seed, M, P, self.scale)

    def build_bytes(self, M: int, n_se: int, P: int) -> int:
        """Moments only: (4, 2^{M-1}, M) and (4, M, P) floats, whatever N_se."""
        return 8 * 4 * M * (2 ** (M - 1) + P) * 4

    @classmethod
    def example(cls) -> GaussianCorrelations:
        return cls(seed=2, scale=0.4)
