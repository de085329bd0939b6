"""Correlation tensors of the mean-field model (spec ``dmft.md`` §3.1, §4).

The N→∞ map needs, for every weight family α ∈ (o, v, q, k), the moments

    C^α_{B,a} = (1/N_se) Σ_i W^α_{a,i} Π_{b∈B} W^o_{b,i}            (spec §3.1)

for every *odd* subset B ⊆ {0..M-1}, and the positional weights W^{α,pe}.  With the sign table
Σ_{s,B} = Π_{b∈B} s_b over the sign vectors s ∈ {±1}^M with s_0 = +1, the semantic overlaps are
exactly

    m^α_{se,a}(A) = (1-ε) 2^{-(M-1)} Σ_s K^α_{s,a} tanh(β_o s_o s·A),   K^α = Σ C^α.

This module enumerates the subsets and sign vectors for any M, builds C from explicit ±1 weights,
or from Gaussian draws, and packs everything into :class:`Correlations`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

FAMILIES: tuple[str, ...] = ("o", "v", "q", "k")
"""Order of the weight families along every leading axis of size 4."""


def odd_subsets(M: int) -> tuple[tuple[int, ...], ...]:
    """The odd-size subsets 𝒪_M of {0..M-1}: singletons {0},…,{M-1} first, then by size and
    lexicographically (spec §3.1, the reference's ``even_corr`` row order). 2^{M-1} of them."""
    out: list[tuple[int, ...]] = []
    for size in range(1, M + 1, 2):
        out.extend(itertools.combinations(range(M), size))
    return tuple(out)


def sign_vectors(M: int) -> np.ndarray:
    """The sign vectors 𝒮_M = {s ∈ {±1}^M : s_0 = +1}, shape (2^{M-1}, M), in the reference order
    (+,+,+), (+,+,-), (+,-,+), (+,-,-) for M = 3 (spec §3.1)."""
    rows = [(1,) + tail for tail in itertools.product((1, -1), repeat=M - 1)]
    return np.asarray(rows, dtype=np.float64).reshape(2 ** (M - 1), M)


def sign_matrix(M: int) -> np.ndarray:
    """Σ_{s,B} = Π_{b∈B} s_b, shape (2^{M-1}, 2^{M-1}); rows 𝒮_M, columns 𝒪_M (spec §3.1)."""
    s = sign_vectors(M)
    return np.stack([np.prod(s[:, list(B)], axis=1) for B in odd_subsets(M)], axis=1)


def moments_from_weights(W: np.ndarray, n_se: int) -> np.ndarray:
    """C^α_{B,a} from explicit weights (spec §3.1), semantic columns only.

    Args:
        W: (4, M, N) ±1 weights in family order (o, v, q, k); the first ``n_se`` columns are semantic.
        n_se: number of semantic columns.

    Returns:
        (4, 2^{M-1}, M) array, rows in :func:`odd_subsets` order.
    """
    W = np.asarray(W, dtype=np.float64)
    M = W.shape[1]
    Wse = W[:, :, :n_se]
    prods = np.stack([np.prod(Wse[0, list(B), :], axis=0) for B in odd_subsets(M)])  # (S, N_se)
    return np.einsum("bi,xai->xba", prods, Wse) / n_se


@dataclass(frozen=True)
class Correlations:
    """Everything the mean-field map knows about the weights (spec §3.1–3.2).

    Attributes:
        C: (4, 2^{M-1}, M) moments C^α_{B,a}, family order (o, v, q, k), rows = :func:`odd_subsets`.
        W_pe: (4, M, P) positional weights W^{α,pe} (±1, or any real values).
        weights: optional (4, M, N_se + P) explicit weights these moments were computed from.
        source: a short description of where the correlations come from (stored in metadata).
    """

    C: np.ndarray
    W_pe: np.ndarray
    weights: np.ndarray | None = field(default=None, repr=False)
    source: str = "explicit"

    def __post_init__(self) -> None:
        C = np.asarray(self.C, dtype=np.float64)
        W_pe = np.asarray(self.W_pe, dtype=np.float64)
        if C.ndim != 3 or C.shape[0] != 4:
            raise ValueError(f"C must have shape (4, 2^(M-1), M), got {C.shape}")
        M = C.shape[2]
        if C.shape[1] != 2 ** (M - 1):
            raise ValueError(f"C must have 2^(M-1) = {2 ** (M - 1)} subset rows for M = {M}, got {C.shape[1]}")
        if W_pe.ndim != 3 or W_pe.shape[:2] != (4, M):
            raise ValueError(f"W_pe must have shape (4, M={M}, P), got {W_pe.shape}")
        if not (np.all(np.isfinite(C)) and np.all(np.isfinite(W_pe))):
            raise ValueError("correlations must be finite")
        object.__setattr__(self, "C", C)
        object.__setattr__(self, "W_pe", W_pe)

    @property
    def M(self) -> int:
        return int(self.C.shape[2])

    @property
    def P(self) -> int:
        return int(self.W_pe.shape[2])

    @property
    def K(self) -> np.ndarray:
        """K^α = Σ C^α, shape (4, 2^{M-1}, M) (the reference's ``corr_signed``)."""
        return np.einsum("sB,xBa->xsa", sign_matrix(self.M), self.C)

    @property
    def pair(self) -> np.ndarray:
        """Pair moments C^α_{{b},a}, shape (4, M, M): [α, b (W^o feature), a (W^α feature)]."""
        return self.C[:, : self.M, :]

    @classmethod
    def from_weights(cls, W: np.ndarray, n_se: int, source: str = "weights") -> "Correlations":
        """Correlations of explicit weights (4, M, N_se + P); positional columns after ``n_se``."""
        W = np.asarray(W)
        if W.ndim != 3 or W.shape[0] != 4:
            raise ValueError(f"weights must have shape (4, M, N_se + P), got {W.shape}")
        if not np.all(np.abs(W) == 1):
            raise ValueError("weights must be ±1")
        if not 1 <= n_se <= W.shape[2]:
            raise ValueError(f"n_se must be in [1, {W.shape[2]}], got {n_se}")
        return cls(C=moments_from_weights(W, n_se), W_pe=W[:, :, n_se:], weights=W.astype(np.int8), source=source)

    def to_attrs(self) -> dict:
        """JSON-serialisable summary for dataset metadata."""
        return {"source": self.source, "C": self.C.tolist(), "W_pe": self.W_pe.tolist()}


def paper_segment_weights(seed: int, M: int, n_se: int, P: int, n_segments: int) -> dict[str, np.ndarray]:
    """The reference's random-segment weights (spec §4.1), RNG call for RNG call.

    Uses numpy's legacy ``RandomState`` exactly as the reference's global generator: one discarded
    (M, N_se) draw, four (M, N_se) draws in family order o, v, q, k, positional columns copied from
    the last P random semantic columns, then 4·M·n_segments scalar draws setting each segment to ±1.

    Returns:
        dict with ``W`` (4, M, N_se + P) int8 final weights and ``R`` (4, M, N_se) int8 pre-segment
        random matrices (R^o row 0 is the token of the published β = 3 checkpoint, spec §4.4).
    """
    if P > n_se:
        raise ValueError(f"P = {P} positional columns are copied from the semantic ones; need P <= n_se = {n_se}")
    rs = np.random.RandomState(seed)
    rs.randint(2, size=(M, n_se))  # the unused "shared" matrix still consumes the stream
    R = np.stack([2 * rs.randint(2, size=(M, n_se)) - 1 for _ in FAMILIES]).astype(np.int8)
    W = np.concatenate([R, R[:, :, n_se - P:]], axis=2).copy()
    seg = n_se / n_segments
    for x in range(len(FAMILIES)):
        for a in range(M):
            for k in range(n_segments):
                sigma = 2 * int(rs.randint(2, size=1)[0]) - 1
                begin = int(np.floor(k * seg))
                end = int(np.floor(begin + seg))
                W[x, a, begin:end] = sigma
    return {"W": W, "R": R}


def random_weights(seed: int, M: int, n_se: int, P: int) -> np.ndarray:
    """Independent uniform ±1 weights (4, M, N_se + P) from ``numpy.random.default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    return (2 * rng.integers(0, 2, size=(4, M, n_se + P)) - 1).astype(np.int8)


def gaussian_correlations(seed: int, M: int, P: int, scale: float) -> Correlations:
    """Gaussian correlations (the reference's mode 0, generalised to any M, spec §4.3).

    Pair moments C^α_{{b},a} ~ 𝒩(0, scale²), the o–o diagonal set to 1, clipped to [-1, 1];
    higher odd moments are products of pair moments, C^α_{B,a} = Π_{b∈B} C^α_{{b},a} (for M = 3 this is
    the reference's "column product" quad term); positional weights uniform ±1.
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
