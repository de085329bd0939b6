"""The normalization interface (theory: docs/theory/clouds.md §3)."""

from __future__ import annotations

import abc
from typing import ClassVar

import equinox as eqx
import jax


class AbstractNorm(eqx.Module):
    """A normalization acting on a whole token cloud.

    A norm maps a cloud X ∈ R^{N×D} (N tokens as rows) to a cloud of the same shape. Token-wise norms
    (LayerNorm, RMSNorm, the sphere projection) treat every row on its own; cloud-wise norms (RN and
    its diagonal version) use statistics of the whole cloud (theory: docs/theory/clouds.md §3).

    Class attributes:
        name: the name in the registry (:data:`attnphys.clouds.registries.NORMS`), used by the command line
            and by the probes' swapped normalizations.
        tokenwise: True when each token is normalized on its own (the result on a sub-cloud is the
            sub-cloud of the result).
        standardizes: True when, with its default parameters, the result has zero mean and unit variance
            in every feature over the cloud (the cloud-wise RN and its diagonal version).
        idempotent: True when normalizing a normalized cloud changes nothing (up to rounding).

    Every norm maps an (N, D) cloud to an (N, D) cloud of the same dtype; the tests read these attributes
    and run over every registered normalization.
    """

    name: ClassVar[str]
    tokenwise: ClassVar[bool]
    standardizes: ClassVar[bool] = False
    idempotent: ClassVar[bool] = True

    @abc.abstractmethod
    def __call__(self, X: jax.Array) -> jax.Array:
        """Normalize the cloud.

        Args:
            X: (N, D) tokens.

        Returns:
            (N, D) normalized tokens.
        """


def check_cloud(X, name: str = "X", dim: int | None = None) -> tuple[int, int]:
    """Refuse a cloud that is not (N, D) real numbers (``dim``: the D required); returns (N, D).
    Static shapes only: works on traced arrays (theory: docs/theory/clouds.md §1).

    Raises:
        attnphys.errors.InputError: naming ``name`` with the expected and the given shape.
    """
    from attnphys._checks import check_array

    N, D = check_array(X, name, (None, dim) if dim is not None else None, ndim=2, what="tokens × dimensions (N, D)")
    return N, D
