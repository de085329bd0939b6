"""The paper's random-segment weights (theory: docs/theory/dmft.md §4.1)."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from attnphys.dmft.correlations._base import AbstractCorrelations
from attnphys.dmft.correlations._moments import FAMILIES, Correlations


def paper_segment_weights(seed: int, M: int, n_se: int, P: int, n_segments: int) -> dict[str, np.ndarray]:
    """The reference's random-segment weights, RNG call for RNG call (theory: docs/theory/dmft.md §4.1).

    Uses numpy's legacy ``RandomState`` exactly as the reference's global generator: one discarded
    (M, N_se) draw, four (M, N_se) draws in family order o, v, q, k, positional columns copied from
    the last P random semantic columns, then 4·M·n_segments scalar draws setting each segment to ±1.

    Returns:
        dict with ``W`` (4, M, N_se + P) int8 final weights and ``R`` (4, M, N_se) int8 pre-segment
        random matrices (R^o row 0 is the token of the published β = 3 checkpoint).
    """
    if P > n_se:
        raise ValueError(f"P = {P} positional columns are copied from the semantic ones; need P <= n_se = {n_se}")
    rs = np.random.RandomState(seed)
    rs.randint(2, size=(M, n_se))  # the unused "shared" matrix still consumes the stream
    R = np.stack([2 * rs.randint(2, size=(M, n_se)) - 1 for _ in FAMILIES]).astype(np.int8)
    W = np.concatenate([R, R[:, :, n_se - P :]], axis=2).copy()
    seg = n_se / n_segments
    for x in range(len(FAMILIES)):
        for a in range(M):
            for k in range(n_segments):
                sigma = 2 * int(rs.randint(2, size=1)[0]) - 1
                begin = int(np.floor(k * seg))
                end = int(np.floor(begin + seg))
                W[x, a, begin:end] = sigma
    return {"W": W, "R": R}


class SegmentCorrelations(AbstractCorrelations):
    """Every weight row constant on ``n_segments`` segments with random signs: reproduces the published
    seed exactly (theory: docs/theory/dmft.md §4.1)."""

    kind: Literal["segments"] = "segments"
    seed: int = Field(default=1, ge=0, lt=2**32, description="seed of numpy's legacy RandomState")
    n_segments: int = Field(default=3, ge=1, description="segments per weight row")

    def check(self, M: int, n_se: int, P: int) -> None:
        if P > n_se:
            raise ValueError(
                f"n_se = {n_se} must be >= P = {P}: the segment weights copy their P positional columns from the "
                "semantic ones; raise --n-se or lower --P"
            )
        if self.n_segments > n_se:
            raise ValueError(
                f"n_segments = {self.n_segments} exceeds n_se = {n_se} (a segment holds at least one semantic "
                "bit); lower --n-segments or raise --n-se"
            )

    def build(self, M: int, n_se: int, P: int) -> Correlations:
        W = paper_segment_weights(self.seed, M, n_se, P, self.n_segments)["W"]
        return Correlations.from_weights(W, n_se, source=f"segments(seed={self.seed}, n={self.n_segments})")

    @classmethod
    def example(cls) -> SegmentCorrelations:
        return cls(seed=1, n_segments=3)
