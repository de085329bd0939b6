"""The reference implementation's five ways of obtaining the correlations, with its own random draws
(theory: docs/theory/dmft.md §4, §8).

The reference seeds numpy's global legacy generator and draws, in this order: a discarded (M, N_se)
matrix, the semantic columns of W^o, W^v, W^q, W^k ((M, N_se) each), then — for positional mode 0
outside the segment mode — their positional columns ((M, P) each, same family order). Positional mode 1
(and mode 0 with segments) copies the positional columns from the last P semantic ones instead. Then,
by correlation mode:

* **0** — Gaussian pair moments drawn o–o, o–v, o–k, o–q ((M, M) each, standard deviation ``scale``),
  the o–o diagonal set to 1, clipped to [-1, 1]; the triple moment of M = 3 is the product of the
  pair moments over the W^o features, C^α_{{0,1,2},a} = Π_b C^α_{{b},a}.
* **1** — the moments of the drawn weights themselves (semantic columns).
* **2** — uniform means μ^o, μ^v, μ^q, μ^k ~ U[0, 1) (M each): C^α_{{b},a} = μ^o_b μ^α_a with the o–o
  diagonal 1; for M = 3, C^o_{{0,1,2},a} = Π_{b≠a} μ^o_b and C^α_{{0,1,2},a} = μ^o_0 μ^o_1 μ^o_2 μ^α_a (α ≠ o).
* **3** — every row set to ±1 on ``n_segments`` segments (one scalar draw each, families o, v, q, k,
  row by row); with positional mode 1 the positional columns then take the value of the semantic
  column the reference's right-to-left copy ends on.
* **4** — hand-set permutation correlations, no draw: W^o, W^q, W^k hold the patterns in order, W^v
  holds them rolled by one (C^v_{{b},a} = 1 if b = a + 1 mod M), no moment beyond the pairs, every
  positional weight 0.

The reference's mean-field model serves M = 1, 2, 3 only; so does this kind.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from attnphys.dmft.correlations._base import AbstractCorrelations
from attnphys.dmft.correlations._moments import FAMILIES, Correlations, moments_from_weights

REFERENCE_MODES: dict[int, str] = {
    0: "Gaussian pair moments",
    1: "moments of random ±1 weights",
    2: "products of uniform random means",
    3: "random ±1 segments",
    4: "hand-set permutation correlations",
}
"""The reference's correlation modes (its ``correlations_from_weights``) and what each draws."""


def _check(mode: int, M: int, n_se: int, P: int, pe_mode: int) -> None:
    if mode not in REFERENCE_MODES:
        raise ValueError(f"mode must be one of {sorted(REFERENCE_MODES)}, got {mode}")
    if pe_mode not in (0, 1):
        raise ValueError(f"pe_mode must be 0 or 1, got {pe_mode}")
    if not 1 <= M <= 3:
        raise ValueError(f"M = {M}: the reference's mean-field model has 1, 2 or 3 features")
    if mode != 4 and not 1 <= P <= n_se:
        raise ValueError(
            f"P = {P}, n_se = {n_se}: the reference's weights need 1 <= P <= n_se (it slices the last P columns)"
        )


def reference_weights(seed: int, M: int, n_se: int, P: int, pe_mode: int = 0, segments: bool = False):
    """The reference's first draws: (state, W) with W the (4, M, N_se + P) ±1 weights before any segment,
    and ``state`` the generator after them (theory: docs/theory/dmft.md §4).

    Positional columns: copied from the last P semantic columns (``pe_mode`` 1, or 0 with ``segments``),
    else drawn, one (M, P) matrix per family in order o, v, q, k.
    """
    rs = np.random.RandomState(seed)
    rs.randint(2, size=(M, n_se))  # the reference's unused shared matrix still consumes the stream
    W = np.zeros((4, M, n_se + P), dtype=np.int8)
    for x in range(len(FAMILIES)):
        W[x, :, :n_se] = 2 * rs.randint(2, size=(M, n_se)) - 1
    if pe_mode == 1 or segments:
        W[:, :, n_se:] = W[:, :, n_se - P : n_se]
    else:
        for x in range(len(FAMILIES)):
            W[x, :, n_se:] = 2 * rs.randint(2, size=(M, P)) - 1
    return rs, W


def _segments(rs: np.random.RandomState, W: np.ndarray, n_se: int, P: int, n_segments: int, pe_mode: int) -> None:
    seg = n_se / n_segments
    n_pe = int(P / seg) + 1
    shift = n_segments - n_pe
    E = n_se + P
    for x in range(W.shape[0]):
        for a in range(W.shape[1]):
            for k in range(n_segments):
                sigma = 2 * int(rs.randint(2, size=1)[0]) - 1
                begin = int(k * seg)
                W[x, a, begin : int(begin + seg)] = sigma
            if pe_mode == 1:  # the reference's right-to-left copy of segment values onto the positional columns
                for s in range(n_pe):
                    end = int(E - s * seg + 1)
                    begin = max(n_se, int(P - (s + 1) * seg))
                    W[x, a, begin:end] = W[x, a, int((s + shift) * seg)]


def reference_correlations(
    mode: int,
    seed: int,
    M: int,
    n_se: int,
    P: int,
    *,
    n_segments: int = 3,
    pe_mode: int = 0,
    scale: float = 0.5,
) -> Correlations:
    """The correlations of the reference's mode ``mode``, RNG call for RNG call (theory:
    docs/theory/dmft.md §4, §8).

    Args:
        mode: the reference's ``correlations_from_weights`` (0–4; see :data:`REFERENCE_MODES`).
        seed: the seed of numpy's legacy ``RandomState`` (the reference's ``np.random.seed``).
        M, n_se, P: features (1–3), semantic bits, positional bits.
        n_segments: segments per row (mode 3).
        pe_mode: 0 (positional columns drawn; copied with mode 3) or 1 (copied).
        scale: standard deviation of the Gaussian pair moments (mode 0).

    Returns:
        :class:`Correlations` with C of shape (4, 2^{M-1}, M) (rows: singletons, then {0, 1, 2}) and
        W_pe of shape (4, M, P); ``weights`` (4, M, N_se + P) for the weight modes 1 and 3; for the moment
        modes 0 and 2, ``token_pair``: the overlaps of the drawn rows of W^o, which the reference's first
        token is taken from. Mode 4 has no weights to take a token from: start it from a pattern
        (:class:`~attnphys.dmft.starts.PatternStart`).
    """
    _check(mode, M, n_se, P, pe_mode)
    src = f"reference(mode={mode}, seed={seed}, pe_mode={pe_mode})"
    S = 2 ** (M - 1)
    if mode == 4:
        order = np.arange(M)
        orders = {"o": order, "v": np.roll(order, -1), "q": order, "k": order}
        C = np.zeros((4, S, M))
        for x, name in enumerate(FAMILIES):
            C[x, :M, :] = (orders["o"][:, None] == orders[name][None, :]).astype(np.float64)
        return Correlations(C=C, W_pe=np.zeros((4, M, P)), source=src)
    rs, W = reference_weights(seed, M, n_se, P, pe_mode, segments=mode == 3)
    if mode in (1, 3):
        if mode == 3:
            if n_segments > n_se:
                raise ValueError(f"n_segments = {n_segments} exceeds n_se = {n_se}")
            _segments(rs, W, n_se, P, n_segments, pe_mode)
            src = src[:-1] + f", n_segments={n_segments})"
        return Correlations.from_weights(W, n_se, source=src)
    W_pe = W[:, :, n_se:].astype(np.float64)
    pair = np.zeros((4, M, M))  # [family, W^o feature b, W^α feature a]
    triple = np.zeros((4, M))
    if mode == 0:
        if not (np.isfinite(scale) and scale >= 0):
            raise ValueError(f"scale must be a finite number >= 0, got {scale}")
        for x in (0, 1, 3, 2):  # the reference draws o–o, o–v, o–k, o–q
            pair[x] = rs.normal(0, scale, (M, M))
        pair[0][np.diag_indices(M)] = 1.0
        pair = np.clip(pair, -1.0, 1.0)
        triple = np.prod(pair, axis=1)
        src = src[:-1] + f", scale={scale})"
    else:  # mode 2
        mu = np.stack([rs.rand(M) for _ in FAMILIES])  # o, v, q, k
        pair = mu[0][None, :, None] * mu[:, None, :]
        pair[0][np.diag_indices(M)] = 1.0
        if M == 3:
            prod_o = float(np.prod(mu[0]))
            triple = prod_o * mu
            triple[0] = [mu[0][(a + 1) % 3] * mu[0][(a + 2) % 3] for a in range(3)]
    C = np.zeros((4, S, M))
    C[:, :M, :] = pair
    if M == 3:
        C[:, 3, :] = triple
    token_pair = moments_from_weights(W, n_se)[:, :M, :]  # the first token is a drawn row of W^o
    return Correlations(C=C, W_pe=W_pe, source=src, token_pair=token_pair)


class ReferenceCorrelations(AbstractCorrelations):
    """One of the reference's correlation modes 0–4 with its own random draws, so that its networks
    reproduce record by record (theory: docs/theory/dmft.md §4, §8)."""

    kind: Literal["reference"] = "reference"
    mode: Literal[0, 1, 2, 3, 4] = Field(description="the reference's correlations_from_weights (0-4)")
    seed: int = Field(default=1, ge=0, lt=2**32, description="seed of numpy's legacy RandomState")
    n_segments: int = Field(default=3, ge=1, description="segments per weight row (mode 3)")
    pe_mode: Literal[0, 1] = Field(default=0, description="positional columns: 0 drawn (copied with mode 3), 1 copied")
    scale: float = Field(default=0.5, ge=0, allow_inf_nan=False, description="Gaussian standard deviation (mode 0)")

    def check(self, M: int, n_se: int, P: int) -> None:
        _check(self.mode, M, n_se, P, self.pe_mode)
        if self.mode == 3 and self.n_segments > n_se:
            raise ValueError(f"n_segments = {self.n_segments} exceeds n_se = {n_se}; lower --n-segments")

    def build(self, M: int, n_se: int, P: int) -> Correlations:
        return reference_correlations(
            self.mode, self.seed, M, n_se, P, n_segments=self.n_segments, pe_mode=self.pe_mode, scale=self.scale
        )

    @classmethod
    def example(cls) -> ReferenceCorrelations:
        return cls(mode=2, seed=4)
