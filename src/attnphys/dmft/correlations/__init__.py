"""Correlation tensors of the mean-field model: the moments and one file per way of obtaining them
(theory: docs/theory/dmft.md §3.1, §4)."""

from typing import Annotated

from pydantic import Field

from attnphys.dmft.correlations._base import AbstractCorrelations
from attnphys.dmft.correlations._moments import (
    FAMILIES,
    Correlations,
    moments_from_weights,
    odd_subsets,
    sign_matrix,
    sign_vectors,
)
from attnphys.dmft.correlations.explicit import ExplicitWeights, file_sha256, read_weights
from attnphys.dmft.correlations.gaussian import GaussianCorrelations, gaussian_correlations
from attnphys.dmft.correlations.random import RandomWeightCorrelations, random_weights
from attnphys.dmft.correlations.reference import (
    REFERENCE_MODES,
    ReferenceCorrelations,
    reference_correlations,
    reference_weights,
)
from attnphys.dmft.correlations.segments import SegmentCorrelations, paper_segment_weights

CorrelationSpec = Annotated[
    SegmentCorrelations | RandomWeightCorrelations | GaussianCorrelations | ExplicitWeights | ReferenceCorrelations,
    Field(discriminator="kind"),
]
"""Any correlation kind (the ``correlations`` field of a configuration); add new kinds here."""

__all__ = [
    "AbstractCorrelations",
    "CorrelationSpec",
    "FAMILIES",
    "Correlations",
    "moments_from_weights",
    "odd_subsets",
    "sign_matrix",
    "sign_vectors",
    "ExplicitWeights",
    "file_sha256",
    "read_weights",
    "GaussianCorrelations",
    "gaussian_correlations",
    "RandomWeightCorrelations",
    "random_weights",
    "REFERENCE_MODES",
    "ReferenceCorrelations",
    "reference_correlations",
    "reference_weights",
    "SegmentCorrelations",
    "paper_segment_weights",
]
