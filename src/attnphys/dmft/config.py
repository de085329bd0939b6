"""Validated configuration of the DMFT model (spec ``dmft.md`` §1, §4, §7).

Every field is checked on construction; an invalid value raises :class:`pydantic.ValidationError`
whose message names the field and the constraint. Nothing in a configuration is ever executed.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

from attnphys.dmft.correlations import (
    Correlations,
    gaussian_correlations,
    paper_segment_weights,
    random_weights,
)

MAX_M = 12
"""Largest number of features accepted: the odd-subset identity costs O(4^M) per evaluation."""


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SegmentCorrelations(_Frozen):
    """The paper's random-segment weights (spec §4.1): reproduces the published seed exactly."""

    kind: Literal["segments"] = "segments"
    seed: int = Field(1, ge=0, lt=2**32, description="seed of numpy's legacy RandomState")
    n_segments: int = Field(3, ge=1, description="segments per weight row")


class RandomWeightCorrelations(_Frozen):
    """Moments of independent uniform ±1 weights (no segments)."""

    kind: Literal["random"] = "random"
    seed: int = Field(0, ge=0)


class GaussianCorrelations(_Frozen):
    """Gaussian pair correlations, higher moments as products (spec §4.3, mode 0)."""

    kind: Literal["gaussian"] = "gaussian"
    seed: int = Field(0, ge=0)
    scale: float = Field(0.5, ge=0, allow_inf_nan=False)


CorrelationSpec = Annotated[
    Union[SegmentCorrelations, RandomWeightCorrelations, GaussianCorrelations], Field(discriminator="kind")
]


class DMFTConfig(_Frozen):
    """Configuration of the simplified self-attention network and its mean-field map.

    The attention gain is γ = β_att s_att / √M (spec §1) and the positional weight is
    ε' = 1 − (1 − ε) (spec §3.2, kept so that published numbers reproduce).
    """

    M: int = Field(3, ge=1, le=MAX_M, description="number of features (rows of every weight matrix)")
    L: int = Field(4, ge=1, description="context length")
    P: int = Field(2, ge=0, le=30, description="positional bits")
    n_se: int = Field(99, ge=1, description="semantic bits per token")
    epsilon: float = Field(0.02, ge=0, lt=1, allow_inf_nan=False, description="positional weight ε")
    beta_o: float = Field(1.0, ge=0, allow_inf_nan=False, description="output inverse temperature β_o")
    beta_att: float = Field(2.2, ge=0, allow_inf_nan=False, description="attention inverse temperature β_att")
    scaling_att: float = Field(100.0, gt=0, allow_inf_nan=False, description="attention multiplier s_att")
    scaling_o: float = Field(1.0, gt=0, allow_inf_nan=False, description="output multiplier s_o")
    correlations: CorrelationSpec = Field(default_factory=SegmentCorrelations)
    mo_se_convention: Literal["plain", "paper"] = Field(
        "plain",
        description=(
            "'plain': mo_se is the semantic overlap (1/N_se) W^{o,se}·<x^se> (spec §2.3, as the finite model); "
            "'paper': it carries the factor (1-ε) as the reference's mean-field code records it (spec §3.4)"
        ),
    )

    @model_validator(mode="after")
    def _check(self) -> "DMFTConfig":
        if self.P > 0 and self.L > 2**self.P:
            raise ValueError(f"L = {self.L} needs L <= 2^P = {2 ** self.P} distinct positions (P = {self.P})")
        if self.P == 0 and self.epsilon != 0:
            raise ValueError(f"epsilon = {self.epsilon} weighs positional bits, but P = 0: set epsilon = 0")
        if self.P > self.n_se and self.correlations.kind == "segments":
            raise ValueError(f"segment weights copy P = {self.P} positional columns from n_se = {self.n_se}")
        if self.correlations.kind == "segments" and self.correlations.n_segments > self.n_se:
            raise ValueError(
                f"correlations.n_segments = {self.correlations.n_segments} exceeds n_se = {self.n_se}"
            )
        return self

    # -- derived quantities ---------------------------------------------------------------------
    @property
    def gamma(self) -> float:
        """γ = (1/√M)·β_att·s_att (spec §1; the reference's multiplication order)."""
        return gamma_of(self.beta_att, self.scaling_att, self.M)

    @property
    def state_dim(self) -> int:
        """Dimension L(M+P) of the flattened state (spec §3.3)."""
        return self.L * (self.M + self.P)

    def replace(self, **changes: Any) -> "DMFTConfig":
        """A validated copy with some fields changed."""
        return DMFTConfig.model_validate({**self.model_dump(), **changes})

    def build_correlations(self) -> Correlations:
        """The correlation tensors this configuration describes (deterministic, cached)."""
        return _build_correlations(self.correlations, self.M, self.n_se, self.P)

    def to_attrs(self) -> dict:
        """Full configuration as JSON-ready metadata."""
        return self.model_dump(mode="json")


def gamma_of(beta_att, scaling_att, M: int):
    """γ = (1/√M)·β_att·s_att, works on floats and arrays alike."""
    return (1.0 / math.sqrt(M)) * beta_att * scaling_att


@lru_cache(maxsize=64)
def _build_correlations(spec: Any, M: int, n_se: int, P: int) -> Correlations:
    if spec.kind == "segments":
        W = paper_segment_weights(spec.seed, M, n_se, P, spec.n_segments)["W"]
        return Correlations.from_weights(W, n_se, source=f"segments(seed={spec.seed}, n={spec.n_segments})")
    if spec.kind == "random":
        return Correlations.from_weights(random_weights(spec.seed, M, n_se, P), n_se, source=f"random(seed={spec.seed})")
    if spec.kind == "gaussian":
        return gaussian_correlations(spec.seed, M, P, spec.scale)
    raise ValueError(f"unknown correlations.kind {spec.kind!r}")  # pragma: no cover - pydantic rejects it first


PRESETS: dict[str, dict[str, Any]] = {
    "paper": dict(
        M=3,
        L=4,
        P=2,
        n_se=99,
        epsilon=0.02,
        beta_o=1.26,
        beta_att=2.2,
        scaling_att=100.0,
        scaling_o=1.0,
        correlations=dict(kind="segments", seed=1, n_segments=3),
        mo_se_convention="paper",
    ),
}
"""Named configurations. ``paper``: seed 1, M = 3, L = 4, P = 2, N_se = 99, β_att = 2.2, s_att = 100,
ε = 0.02, 3 segments (spec §7), with the reference's recording convention for ``mo_se``."""


def preset(name: str, **overrides: Any) -> DMFTConfig:
    """A named preset with optional overrides, validated."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    return DMFTConfig.model_validate({**PRESETS[name], **overrides})

