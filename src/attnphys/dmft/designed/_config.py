"""Configuration of the designed mean-field model (theory: docs/theory/designed.md §3): the design and the
parameters β_o, γ, ε and the context length L. A light module (no JAX): the command line reads it."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field, model_validator

from attnphys.dmft._variant import AbstractConfig, make_config
from attnphys.dmft.designed._design import MAX_P, DesignSpec, load_design
from attnphys.errors import InputError

BATCHED: tuple[str, ...] = ("beta_o", "gamma", "epsilon")
"""Fields of a :class:`DesignedConfig` that vary per trajectory inside one vectorised batch."""

MAX_GAIN = 1e300
"""Largest β_o or γ accepted (larger products overflow the softmax)."""


class DesignedConfig(AbstractConfig):
    """Configuration of the designed mean-field model (theory: docs/theory/designed.md §1, §3).

    ``design`` is a :class:`~attnphys.dmft.designed.DesignSpec`, a preset name or a design file; it is
    stored in full, so that a result's configuration does not depend on the file or the preset later.
    L defaults to 2^P (every position once in a window).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    variant: Literal["designed"] = Field(default="designed", description="model variant (designed weights)")
    design: DesignSpec = Field(description="the designed weights (preset name, design file or mapping)")
    beta_o: float = Field(default=100.0, ge=0, allow_inf_nan=False, description="output gain β_o")
    gamma: float = Field(default=100.0, ge=0, allow_inf_nan=False, description="attention gain γ")
    epsilon: float = Field(default=0.5, ge=0, le=1, allow_inf_nan=False, description="positional weight ε")
    L: int = Field(ge=1, description="context length (default 2^P)")

    @model_validator(mode="before")
    @classmethod
    def _resolve(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if data.get("kind") == "designed" and "variant" not in data:  # stored by 0.2.0
            data["variant"] = data.pop("kind")
        d = data.get("design")
        if isinstance(d, str):
            data["design"] = load_design(d)  # InputError naming the field: design
        if data.get("L") is None:
            spec = data.get("design")
            P = spec.P if isinstance(spec, DesignSpec) else spec.get("P", 2) if isinstance(spec, dict) else 2
            data["L"] = 2**P if isinstance(P, int) and 1 <= P <= MAX_P else 4  # a bad P is refused by the design
        return data

    @model_validator(mode="after")
    def _check(self) -> DesignedConfig:
        for name in ("beta_o", "gamma"):
            if getattr(self, name) > MAX_GAIN:
                raise InputError(
                    f"{getattr(self, name):g} is too large (at most {MAX_GAIN:g}; larger gains overflow)", name
                )
        if self.L > 2**self.P:
            raise InputError(
                f"L = {self.L} needs L <= 2^P = {2**self.P} distinct positions (the design has P = {self.P})", "L"
            )
        return self

    # -- derived -------------------------------------------------------------------------------------
    @property
    def M(self) -> int:
        """Number of mean-field patterns (the length of an attention row)."""
        return self.design.M

    @property
    def M_se(self) -> int:
        """Number of base patterns."""
        return self.design.m_se

    @property
    def P(self) -> int:
        """Positional bits (the design's)."""
        return self.design.P

    @property
    def era(self) -> Literal["head"]:
        """Window convention: the first token only leaves its trace A₀ (theory: docs/theory/dmft.md §5.2)."""
        return "head"

    @property
    def state_dim(self) -> int:
        """Dimension L·M of the map's state (the positional window is auxiliary)."""
        return self.L * self.M

    def replace(self, **changes: Any) -> DesignedConfig:
        """A validated copy with some fields changed."""
        return type(self).model_validate({**dict(self), **changes})

    def with_field(self, name: str, value: Any) -> DesignedConfig:
        """A validated copy with one sweepable field (β_o, γ, ε or L) set."""
        if name not in SWEEPABLE:
            raise ValueError(f"unknown sweep field {name!r}; choose from {sorted(SWEEPABLE)}")
        if name == "L":
            if float(value) != int(value):
                raise ValueError(f"L is an integer field, got {value}")
            value = int(value)
        return self.replace(**{name: value})

    @property
    def mo_se_convention(self) -> Literal["paper"]:
        """How ``mo_se`` is recorded: as the map computes it, the unweighted semantic overlap (the ``paper``
        convention of :func:`~attnphys.dmft.observables.record_mo_se`: no rescaling)."""
        return "paper"

    @classmethod
    def batched_fields(cls) -> tuple[str, ...]:
        """The fields that vary per trajectory inside one vectorised batch (:data:`BATCHED`)."""
        return BATCHED

    @classmethod
    def sweepable(cls) -> frozenset[str]:
        """The fields a sweep may vary (:data:`SWEEPABLE`)."""
        return SWEEPABLE

    model: ClassVar[Any] = "attnphys.dmft.designed._model:DesignedModel"
    """The model of this configuration: :class:`~attnphys.dmft.designed.DesignedModel`."""


SWEEPABLE: frozenset[str] = frozenset(BATCHED) | {"L"}
"""Fields a sweep may vary (β_o, γ and ε inside a batch; L changes the model)."""


def designed_config(design: str | DesignSpec | dict, **fields: Any) -> DesignedConfig:
    """A validated :class:`DesignedConfig` of a design (preset name, file, mapping) and parameters.

    Raises:
        InputError: naming the field (``design``, ``beta_o``, ``design.orders.v``, …).
    """
    return make_config("designed", design=load_design(design), **fields)  # pyright: ignore[reportReturnType]
