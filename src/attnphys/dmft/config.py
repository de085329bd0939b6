"""Validated configuration of the DMFT model (theory: docs/theory/dmft.md §1, §4, §5, §8).

Every field is checked on construction; an invalid value raises :class:`attnphys.errors.InputError`
whose message names the field and the constraint. Nothing in a configuration is ever executed. The
same rules validate every swept value (:meth:`DMFTConfig.check_axis`), so a sweep cannot reach a point
that a single run would refuse.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field, model_validator

from attnphys.dmft._variant import AbstractConfig
from attnphys.dmft.correlations import Correlations, CorrelationSpec, SegmentCorrelations
from attnphys.errors import InputError

MAX_M = 12
"""Largest number of features accepted: the odd-subset identity costs O(4^M) per evaluation."""

BATCHED: tuple[str, ...] = ("beta_o", "beta_att", "epsilon")
"""Fields that vary per trajectory inside one vectorised batch (the map's scalars). Every other field
(``M``, ``L``, ``n_se``, …, and ``seed``: the correlations' seed) changes the couplings: sweeping it
splits a chunk into groups, one model each."""

MoSeConvention = Literal["plain", "paper"]
Era = Literal["head", "2024"]


class DMFTConfig(AbstractConfig):
    """Configuration of the simplified self-attention network and its mean-field map.

    The attention gain is γ = β_att s_att / √M and the positional weight is ε' = 1 − (1 − ε)
    (theory: docs/theory/dmft.md §5.3–5.4).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    variant: Literal["paper"] = Field(default="paper", description="model variant (the paper's network)")
    M: int = Field(default=3, ge=1, le=MAX_M, description="number of features (rows of every weight matrix)")
    L: int = Field(default=4, ge=1, description="context length")
    P: int = Field(default=2, ge=0, le=30, description="positional bits")
    n_se: int = Field(default=99, ge=1, description="semantic bits per token")
    epsilon: float = Field(default=0.02, ge=0, lt=1, allow_inf_nan=False, description="positional weight ε")
    beta_o: float = Field(default=1.0, ge=0, allow_inf_nan=False, description="output inverse temperature β_o")
    beta_att: float = Field(default=2.2, ge=0, allow_inf_nan=False, description="attention inverse temperature β_att")
    scaling_att: float = Field(default=100.0, gt=0, allow_inf_nan=False, description="attention multiplier s_att")
    scaling_o: float = Field(default=1.0, gt=0, allow_inf_nan=False, description="output multiplier s_o")
    correlations: CorrelationSpec = Field(default_factory=SegmentCorrelations)
    mo_se_convention: MoSeConvention = Field(
        default="plain",
        description=(
            "'plain': mo_se is the semantic overlap (1/N_se) W^{o,se}·<x^se>, as the finite model records it; "
            "'paper': it carries the factor (1-ε), as the reference's mean-field code records it"
        ),
    )
    era: Era = Field(
        default="head",
        description=(
            "window and position conventions: 'head' (the reference code today: x0 only leaves its trace A0, "
            "token k at position (k-1) mod L) or '2024' (x0 kept in the window, token k at position k mod L)"
        ),
    )

    @model_validator(mode="after")
    def _check(self) -> DMFTConfig:
        if self.P > 0 and self.L > 2**self.P:
            raise ValueError(f"L = {self.L} needs L <= 2^P = {2**self.P} distinct positions (P = {self.P})")
        if self.P == 0 and self.epsilon != 0:
            raise ValueError(f"epsilon = {self.epsilon} weighs positional bits, but P = 0: set epsilon = 0")
        self.correlations.check(self.M, self.n_se, self.P)
        gain = self.beta_att * self.scaling_att / math.sqrt(self.M)
        if not math.isfinite(gain) or gain > 1e300:
            raise ValueError(f"attention gain γ = β_att·s_att/√M = {gain:.3g} overflows; lower beta_att or scaling_att")
        if not math.isfinite(self.beta_o * self.scaling_o):
            raise ValueError("output gain β_o·s_o overflows; lower beta_o or scaling_o")
        return self

    # -- the model variant ----------------------------------------------------------------------
    @classmethod
    def batched_fields(cls) -> tuple[str, ...]:
        """The fields that vary per trajectory inside one vectorised batch (:data:`BATCHED`)."""
        return BATCHED

    @classmethod
    def sweepable(cls) -> frozenset[str]:
        """The fields a sweep may vary: every scalar field (of this class, a variant's own included) and
        ``seed`` (:func:`sweepable_fields` for the paper's)."""
        return frozenset(n for n in cls.model_fields if n not in NOT_SWEPT) | {"seed"}

    model: ClassVar[Any] = "attnphys.dmft.model:DMFTModel"
    """The model of this configuration: :class:`~attnphys.dmft.DMFTModel`."""

    # -- derived quantities ---------------------------------------------------------------------
    @property
    def gamma(self) -> float:
        """γ = (1/√M)·β_att·s_att (the reference's multiplication order; theory: docs/theory/dmft.md §5.4)."""
        return gamma_of(self.beta_att, self.scaling_att, self.M)

    @property
    def state_dim(self) -> int:
        """Dimension L(M+P) of the flattened state (theory: docs/theory/dmft.md §3.3)."""
        return self.L * (self.M + self.P)

    def replace(self, **changes: Any) -> DMFTConfig:
        """A validated copy with some fields changed (of this configuration's own variant)."""
        return type(self).model_validate({**self.model_dump(), **changes})

    def with_field(self, name: str, value: Any) -> DMFTConfig:
        """A validated copy with one (sweepable) field set. ``seed`` sets the correlations' seed; integer
        fields refuse non-integers."""
        if name == "seed":
            if float(value) != int(value):
                raise ValueError(f"seed must be an integer, got {value}")
            if "seed" not in type(self.correlations).model_fields:
                raise ValueError(f"the {self.correlations.kind} correlation kind has no seed to sweep")
            return self.replace(correlations={**self.correlations.model_dump(), "seed": int(value)})
        check_sweepable(name, self.sweepable())
        if isinstance(getattr(self, name), int) and not isinstance(getattr(self, name), bool):
            if float(value) != int(value):
                raise ValueError(f"{name} is an integer field, got {value}")
            value = int(value)
        return self.replace(**{name: value})

    def build_correlations(self) -> Correlations:
        """The correlation tensors this configuration describes (deterministic, cached).

        Raises:
            InputError: naming ``--n-se`` when building them would not fit in the memory available.
        """
        from attnphys.errors import check_fits

        check_fits(
            self.correlations.build_bytes(self.M, self.n_se, self.P),
            f"the weights of N_se = {self.n_se} semantic bits × M = {self.M} features and their moments",
            "lower --n-se",
            "--n-se",
        )
        return _build_correlations(self.correlations, self.M, self.n_se, self.P)  # pyright: ignore[reportArgumentType]  (frozen pydantic models are hashable)


NOT_SWEPT: tuple[str, ...] = ("variant", "correlations", "mo_se_convention", "era")
"""Fields of :class:`DMFTConfig` that are not numbers a sweep could vary."""


@lru_cache(maxsize=1)
def sweepable_fields() -> frozenset[str]:
    """Every scalar configuration field, and ``seed`` (the correlations' seed)."""
    return DMFTConfig.sweepable()


def check_schedule(steps: int, transient: int) -> None:
    """The one rule relating a run's steps and transient: at least one recorded step (transient < steps).

    Raises:
        ValueError: naming both options.
    """
    if not 0 <= transient < steps:
        raise ValueError(
            f"--transient ({transient}) must be smaller than --steps ({steps}): at least one step is recorded"
        )


def check_sweepable(name: str, allowed=None) -> str:
    """``name`` if it is a field that may be swept (of ``allowed``, default :func:`sweepable_fields`).

    Raises:
        ValueError: naming the field and the sweepable ones.
    """
    names = sorted(sweepable_fields() if allowed is None else allowed)
    if name not in names:
        from attnphys.dmft._variant import variant_class, variant_names

        others = [
            t
            for t in variant_names()
            if t != "paper" and name in variant_class(t).sweepable() and set(variant_class(t).sweepable()) != set(names)
        ]
        if others:
            raise ValueError(
                f"{name} is a field of {others[0]} models, not of the paper's network: sweep it with a "
                f"{others[0]} configuration"
                + (" (attnphys.dmft.designed.designed_config)" if others[0] == "designed" else "")
            )
        raise ValueError(f"unknown sweep field {name!r}; choose from {names}")
    return name


def gamma_of(beta_att, scaling_att, M: int):
    """γ = (1/√M)·β_att·s_att, works on floats and arrays alike (theory: docs/theory/dmft.md §5.4)."""
    return (1.0 / math.sqrt(M)) * beta_att * scaling_att


@lru_cache(maxsize=64)
def _build_correlations(spec: Any, M: int, n_se: int, P: int) -> Correlations:
    return spec.build(M, n_se, P)


_PAPER: dict[str, Any] = dict(
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
    era="head",
)

PRESETS: dict[str, dict[str, Any]] = {
    "paper": _PAPER,
    "paper-2024": {**_PAPER, "mo_se_convention": "plain", "era": "2024"},
    "paper-pe5": {**_PAPER, "L": 32, "P": 5, "beta_o": 1.4},
}
"""Named configurations (theory: docs/theory/dmft.md §8). ``paper``: seed 1, M = 3, L = 4, P = 2,
N_se = 99, β_att = 2.2, s_att = 100, ε = 0.02, 3 segments, with the reference's recording convention for
``mo_se``; ``paper-2024``: the same network with the 2024 code's conventions (x₀ kept in the window,
token k at position k mod L, ``mo_se`` without the (1 − ε) factor); ``paper-pe5``: the authors' newer
experiments with P = 5 positional bits and a context of L = 32."""


def preset(name: str, **overrides: Any) -> DMFTConfig:
    """A named preset with optional overrides, validated. ``variant=`` names a registered variant of the
    paper's network (a subclass of :class:`DMFTConfig`, :func:`~attnphys.dmft.variant_class`) to build
    instead of the paper's.

    Raises:
        ValueError: an unknown preset; a variant that is not a variant of the paper's network.
    """
    if name not in PRESETS:
        raise InputError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}", "name")
    cls: type[DMFTConfig] = DMFTConfig
    tag = overrides.get("variant")
    if tag is not None and tag != "paper":
        from attnphys.dmft._variant import variant_class

        found = variant_class(tag)
        if not issubclass(found, DMFTConfig):
            raise InputError(
                f"the variant {tag!r} is not a variant of the paper's network: it has no presets", "variant"
            )
        cls = found
    return cls(**{**PRESETS[name], **overrides})
