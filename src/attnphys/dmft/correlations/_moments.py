"""Moments of the weights that the mean-field map needs (theory: docs/theory/dmft.md §3.1, §4).

The N→∞ map needs, for every weight family α ∈ (o, v, q, k), the moments

    C^α_{B,a} = (1/N_se) Σ_i W^α_{a,i} Π_{b∈B} W^o_{b,i}

for every *odd* subset B ⊆ {0..M-1}, and the positional weights W^{α,pe}. With the sign table
Σ_{s,B} = Π_{b∈B} s_b over the sign vectors s ∈ {±1}^M with s_0 = +1, the semantic overlaps are exactly

    m^α_{se,a}(A) = (1-ε) 2^{-(M-1)} Σ_s K^α_{s,a} tanh(β_o s_o s·A),   K^α = Σ C^α.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

FAMILIES: tuple[str, ...] = ("o", "v", "q", "k")
"""Order of the weight families along every leading axis of size 4."""


def odd_subsets(M: int) -> tuple[tuple[int, ...], ...]:
    """The odd-size subsets 𝒪_M of {0..M-1}: singletons {0},…,{M-1} first, then by size and
    lexicographically (the reference's row order). 2^{M-1} of them (theory: docs/theory/dmft.md §3.1)."""
    out: list[tuple[int, ...]] = []
    for size in range(1, M + 1, 2):
        out.extend(itertools.combinations(range(M), size))
    return tuple(out)


def sign_vectors(M: int) -> np.ndarray:
    """The sign vectors 𝒮_M = {s ∈ {±1}^M : s_0 = +1}, shape (2^{M-1}, M), in the reference order
    (+,+,+), (+,+,-), (+,-,+), (+,-,-) for M = 3 (theory: docs/theory/dmft.md §3.1)."""
    rows = [(1,) + tail for tail in itertools.product((1, -1), repeat=M - 1)]
    return np.asarray(rows, dtype=np.float64).reshape(2 ** (M - 1), M)


def sign_matrix(M: int) -> np.ndarray:
    """Σ_{s,B} = Π_{b∈B} s_b, shape (2^{M-1}, 2^{M-1}); rows 𝒮_M, columns 𝒪_M
    (theory: docs/theory/dmft.md §3.1)."""
    s = sign_vectors(M)
    return np.stack([np.prod(s[:, list(B)], axis=1) for B in odd_subsets(M)], axis=1)


def moments_from_weights(W: np.ndarray, n_se: int) -> np.ndarray:
    """C^α_{B,a} from explicit weights, semantic columns only (theory: docs/theory/dmft.md §3.1).

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
    """Everything the mean-field map knows about the weights (theory: docs/theory/dmft.md §3.1–3.2).

    Attributes:
        C: (4, 2^{M-1}, M) moments C^α_{B,a}, family order (o, v, q, k), rows = :func:`odd_subsets`.
        W_pe: (4, M, P) positional weights W^{α,pe} (±1, or any real values).
        weights: optional (4, M, N_se + P) explicit weights these moments were computed from.
        source: a short description of where the correlations come from (stored in metadata).
        token_pair: optional (4, M, M) semantic overlaps (1/N_se) W^{o,se}_b·W^{α,se}_a of the rows of W^o used
            as first tokens, where they are not the pair moments (the reference's modes 0 and 2 draw the
            moments apart from the weights its first token is taken from); None: the pair moments.
    """

    C: np.ndarray
    W_pe: np.ndarray
    weights: np.ndarray | None = field(default=None, repr=False)
    source: str = "explicit"
    token_pair: np.ndarray | None = field(default=None, repr=False)

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
        if self.token_pair is not None:
            tp = np.asarray(self.token_pair, dtype=np.float64)
            if tp.shape != (4, M, M) or not np.all(np.isfinite(tp)):
                raise ValueError(f"token_pair must be finite with shape (4, M={M}, M), got {tp.shape}")
            object.__setattr__(self, "token_pair", tp)

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
    def from_weights(cls, W: np.ndarray, n_se: int, source: str = "weights") -> Correlations:
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
