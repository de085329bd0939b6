"""A design: the declarative description of designed weights (theory: docs/theory/designed.md §2).

A design names, for each feature q, k, v, o, an order over the M mean-field patterns, the base pattern
that each mean-field pattern decodes (its projection onto the M_se base patterns) and the position code
that each mean-field pattern responds to. It is data, read from YAML, TOML or JSON, and validated on
construction with messages that name the offending field::

    m_se: 3
    P: 2
    orders:     {q: [0,1,2,3], k: [0,1,2,3], v: [1,2,3,0], o: [0,1,2,3]}
    projection: {q: [0,1,2,1], k: [0,1,2,1], v: [0,1,2,1], o: [0,1,2,1]}
    positional: {q: [3,0,1,2], k: [3,0,1,2], v: [2,3,0,1], o: [3,0,1,2]}
    cycle: [0, 1, 2, 1]

Named designs ship with the package (:func:`list_designs`); :func:`load_design` reads one by name or
from a file.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError, model_validator

from attnphys.errors import InputError, short_repr

FEATURES: tuple[str, ...] = ("q", "k", "v", "o")
"""Feature names in the order a design lists them (the reference's order)."""

MAX_M_SE = 12
"""Largest number of base patterns: the overlaps average over 2^(M_se − 1) sign vectors."""

MAX_P = 16
"""Largest number of positional bits of a design."""

SUFFIXES: tuple[str, ...] = (".yaml", ".yml", ".toml", ".json")
"""File formats of a design."""


class PerFeature(BaseModel):
    """One list of M integers per feature q, k, v, o (theory: docs/theory/designed.md §2)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    q: tuple[StrictInt, ...] = Field(description="query feature")
    k: tuple[StrictInt, ...] = Field(description="key feature")
    v: tuple[StrictInt, ...] = Field(description="value feature")
    o: tuple[StrictInt, ...] = Field(description="output feature")

    def items(self) -> list[tuple[str, tuple[int, ...]]]:
        """(feature, list) in the order q, k, v, o."""
        return [(f, getattr(self, f)) for f in FEATURES]


class DesignSpec(BaseModel):
    """Designed weights of the mean-field model (theory: docs/theory/designed.md §2).

    Attributes:
        m_se: M_se, the number of base (semantic) patterns.
        P: positional bits; position codes run over 0 … 2^P − 1.
        orders: per feature, b_c(i) ∈ {0 … M−1} for the mean-field patterns i = 0 … M−1 (the order matrix
            B_c has a one in row i, column b_c(i)). M is the length of these lists.
        projection: per feature, p_c(j) ∈ {0 … M_se−1}: the base pattern that mean-field pattern j decodes
            (two patterns decoding the same base pattern: duplicity).
        positional: per feature, the position code r_c(i) ∈ {0 … 2^P−1} of mean-field pattern i (P bits,
            most significant first, bit 0 ↦ −1).
        strict_orders: every order is a permutation of 0 … M−1 (else repeated indices are allowed: a
            many-to-one routing).
        cycle: the intended sequence of emitted base patterns (optional), e.g. [0, 1, 2, 1].
        name, description: free text.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = Field(default=None, description="name of the design")
    description: str = Field(default="", description="what the design is meant to do")
    m_se: int = Field(ge=1, le=MAX_M_SE, strict=True, description="number of base (semantic) patterns M_se")
    P: int = Field(default=2, ge=1, le=MAX_P, strict=True, description="positional bits")
    orders: PerFeature = Field(description="order of the M mean-field patterns, per feature")
    projection: PerFeature = Field(description="base pattern decoded by each mean-field pattern, per feature")
    positional: PerFeature = Field(description="position code of each mean-field pattern, per feature")
    strict_orders: bool = Field(default=True, description="every order must be a permutation of 0..M-1")
    cycle: tuple[StrictInt, ...] | None = Field(default=None, description="intended cycle of emitted base patterns")

    @model_validator(mode="after")
    def _check(self) -> DesignSpec:
        M = len(self.orders.q)
        if M == 0:
            raise InputError("needs at least one mean-field pattern (got an empty list)", "orders.q")
        for group in ("orders", "projection", "positional"):
            for f, xs in getattr(self, group).items():
                if len(xs) != M:
                    raise InputError(
                        f"has length {len(xs)}, but orders.q has length {M} (M, the number of mean-field patterns); "
                        "every list must have length M",
                        f"{group}.{f}",
                    )
        if M < self.m_se:
            raise InputError(f"{self.m_se} base patterns need at least as many mean-field patterns (M = {M})", "m_se")
        for f, xs in self.orders.items():
            _in_range(xs, M, f"orders.{f}", "mean-field patterns 0..M-1")
            if self.strict_orders and sorted(xs) != list(range(M)):
                from collections import Counter

                repeated = sorted(x for x, n in Counter(xs).items() if n > 1)  # linear in M: orders may be long
                missing = sorted(set(range(M)) - set(xs))
                raise InputError(
                    f"{short_repr(list(xs))} is not a permutation of 0..{M - 1} (repeated {short_repr(repeated)}, "
                    f"missing {short_repr(missing)}); set strict_orders: false for a many-to-one routing",
                    f"orders.{f}",
                )
        for f, xs in self.projection.items():
            _in_range(xs, self.m_se, f"projection.{f}", "base patterns 0..m_se-1")
        for f, xs in self.positional.items():
            for i, x in enumerate(xs):
                if x < 0:
                    raise InputError(f"code {x} at index {i} is negative; codes run over 0..2^P-1", f"positional.{f}")
                if x >= 2**self.P:
                    raise InputError(
                        f"code {x} at index {i} needs {int(x).bit_length()} bits, more than P = {self.P} "
                        f"(codes run over 0..{2**self.P - 1}); raise P",
                        f"positional.{f}",
                    )
        if self.cycle is not None:
            if len(self.cycle) == 0:
                raise InputError("must name at least one base pattern", "cycle")
            _in_range(self.cycle, self.m_se, "cycle", "base patterns 0..m_se-1")
        return self

    # -- derived -------------------------------------------------------------------------------------
    @property
    def M(self) -> int:
        """Number of mean-field patterns."""
        return len(self.orders.q)

    def array(self, group: str) -> np.ndarray:
        """(4, M) int array of ``orders``, ``projection`` or ``positional``, rows in the order q, k, v, o."""
        return np.array([xs for _, xs in getattr(self, group).items()], dtype=np.int64)

    def decoded(self) -> np.ndarray:
        """(4, M): the base pattern read by mean-field pattern i of each feature, p_c(b_c(i)) (theory:
        docs/theory/designed.md §1.2); rows q, k, v, o."""
        return np.take_along_axis(self.array("projection"), self.array("orders"), axis=1)

    def position_codes(self) -> np.ndarray:
        """(4, M, P) ±1 position codes W^c_pe (most significant bit first, 0 ↦ −1); rows q, k, v, o
        (theory: docs/theory/designed.md §1.3)."""
        r = self.array("positional")
        bits = (r[..., None] >> np.arange(self.P - 1, -1, -1)) & 1
        return (2 * bits - 1).astype(np.float64)

    def to_dict(self) -> dict[str, Any]:
        """The design as plain data (what a design file holds)."""
        return self.model_dump(mode="json", exclude_none=True)


def _in_range(xs, n: int, field: str, what: str) -> None:
    for i, x in enumerate(xs):
        if not 0 <= x < n:
            raise InputError(f"index {x} at position {i} is out of range: {what} = 0..{n - 1}", field)


# -- files and presets -----------------------------------------------------------------------------------


def _designs_dir() -> Path:
    return Path(str(resources.files("attnphys") / "data" / "designs"))


def list_designs() -> list[str]:
    """Names of the designs shipped with the package (theory: docs/theory/designed.md §2.2)."""
    return sorted(p.stem for p in _designs_dir().glob("*.yaml"))


def design_summaries() -> list[dict[str, Any]]:
    """One row per shipped design: ``name``, ``m_se``, ``M``, ``P``, ``cycle`` (or None) and ``description``
    (what a listing of the presets shows; theory: docs/theory/designed.md §2.2)."""
    rows = []
    for name in list_designs():
        d = load_design(name)
        rows.append({"name": name, "m_se": d.m_se, "M": d.M, "P": d.P, "cycle": d.cycle, "description": d.description})
    return rows


MAX_DESIGN_BYTES = 1 << 20
"""Largest design file read (1 MiB): a design is a few lines; more is not a design file."""


def _read_mapping(path: Path) -> Any:
    """A design file's data through the one reader of input files (:mod:`attnphys._files`): a regular
    file of at most :data:`MAX_DESIGN_BYTES`, a key given twice, dates and binary data refused."""
    from attnphys._files import check_input_file, parse_mapping, read_input

    try:
        check_input_file(path, "design", "a design file")
        if path.suffix.lower() not in SUFFIXES:
            raise InputError(f"{path} must end in one of {', '.join(SUFFIXES)}", "design")
        path, raw = read_input(path, "design", "a design file", MAX_DESIGN_BYTES)
        return parse_mapping(raw, path, "design", "a design file")
    except InputError as e:
        raise InputError(f"design file {e.detail}", "design") from None


def design_from_mapping(data: Any, source: str = "design") -> DesignSpec:
    """A validated design from plain data.

    Raises:
        InputError: naming the field (``orders.v``, ``positional.q``, ``m_se``, an unknown key, …) and the
            rule it breaks; ``source`` prefixes the message.
    """
    if isinstance(data, DesignSpec):
        return data
    if not isinstance(data, dict):
        raise InputError(
            f"{source} must be a mapping of m_se, orders, projection, positional (got {type(data).__name__})"
        )
    try:
        return DesignSpec.model_validate(data)
    except ValidationError as e:
        raise explain(e, source) from None


def explain(e: ValidationError, source: str = "design") -> InputError:
    """The first error of a design's validation as an :class:`InputError` whose field is the dotted path
    of the offending key (``orders.v``, ``cycle``, ``colour`` for an unknown key)."""
    err = e.errors()[0]
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, InputError) and cause.field:
        return InputError(f"{source}: {cause.detail}", cause.field)
    field = ".".join(str(x) for x in err["loc"]) or None
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        msg = "unknown key (a design has name, description, m_se, P, orders, projection, positional, strict_orders, cycle)"
        if field and "." in field:
            msg = f"unknown feature (the features are {', '.join(FEATURES)})"
    elif err["type"] == "missing":
        msg = "is required"
    return InputError(f"{source}: {msg}", field)


def read_design(path: str | Path) -> DesignSpec:
    """A design from a YAML, TOML or JSON file (the file name's stem is its name unless it gives one)."""
    path = Path(path)
    data = _read_mapping(path)
    spec = design_from_mapping(data, f"design file {path}")
    return spec if spec.name else spec.model_copy(update={"name": path.stem})


def load_design(name_or_path: str | Path | DesignSpec | dict | Any) -> DesignSpec:
    """A design by preset name (:func:`list_designs`), from a file, or from a mapping (theory:
    docs/theory/designed.md §2.2).

    Raises:
        InputError: an unknown name that is not a file either, an unreadable file, or an invalid design
            (naming the field).
    """
    if not isinstance(name_or_path, (str, Path)):
        return design_from_mapping(name_or_path)
    text = str(name_or_path).strip()
    preset = _designs_dir() / f"{text}.yaml"
    if "/" not in text and preset.is_file():
        return read_design(preset)
    path = Path(text).expanduser()
    if path.suffix.lower() in SUFFIXES or path.exists():
        return read_design(path)
    raise InputError(
        f"unknown design {text!r}: not a preset ({', '.join(list_designs())}) and not a design file", "design"
    )
