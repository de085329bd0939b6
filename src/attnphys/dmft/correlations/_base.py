"""The interface of a correlation kind (theory: docs/theory/dmft.md §4).

A correlation kind is a small frozen pydantic model (it is part of a :class:`~attnphys.dmft.DMFTConfig`)
that builds :class:`~attnphys.dmft.correlations.Correlations` for given sizes (M, N_se, P). A new kind is
one file with a subclass, plus its name in the :data:`~attnphys.dmft.correlations.CorrelationSpec` union.
"""

from __future__ import annotations

import abc

from pydantic import BaseModel, ConfigDict

from attnphys.dmft.correlations._moments import Correlations


class AbstractCorrelations(BaseModel, abc.ABC):
    """A way to obtain the correlation tensors.

    Subclasses declare ``kind: Literal["..."]`` and implement :meth:`build`; :meth:`check` refuses sizes
    the kind cannot serve (raising ValueError with the rule), before anything is computed.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str

    @abc.abstractmethod
    def build(self, M: int, n_se: int, P: int) -> Correlations:
        """The correlations for M features, N_se semantic and P positional bits.

        Returns:
            :class:`Correlations` with C of shape (4, 2^{M-1}, M) and W_pe of shape (4, M, P).
        """

    def check(self, M: int, n_se: int, P: int) -> None:
        """Raise ValueError if this kind cannot build correlations of these sizes."""

    def build_bytes(self, M: int, n_se: int, P: int) -> int:
        """Memory :meth:`build` needs at its peak, in bytes, estimated from the sizes (the memory check's
        rule): the (4, M, N_se + P) weights as floats with their integer draws, and the products over the
        2^{M-1} odd subsets, (2^{M-1}, N_se), that the moments are averaged from (theory: docs/theory/dmft.md §3.1)."""
        return 8 * (n_se + P) * (6 * M + 2 * 2 ** (M - 1))

    @classmethod
    @abc.abstractmethod
    def example(cls) -> AbstractCorrelations:
        """An instance for the property tests (every kind gets them: docs/theory/dmft.md §4)."""

    def explicit_weights(self, M: int, n_se: int, P: int):
        """The (4, M, N_se + P) ±1 weights behind the correlations, or None for moment-only kinds
        (a finite network needs explicit weights)."""
        return self.build(M, n_se, P).weights
