"""Parameter grids: named axes over configuration fields, flat point indices, chunks, point seeds.

Points are numbered in C order over the axes (the last axis varies fastest); a chunk is a contiguous
range of point indices, the unit of work of every executor. A point's random seed is a pure function
of the sweep's base seed and the point's index (:func:`point_seed`), so results never depend on how
the grid was chunked or scheduled.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

MAX_AXIS_VALUES = 100_000
"""Most values of one axis made by :meth:`Axis.linspace`."""

MAX_GRID_POINTS = 100_000_000
"""Most points of one grid (checked before any point is validated or computed)."""


class Axis(BaseModel):
    """One grid axis: a field and its values (kept in the given order). Values are numbers, or labels
    (e.g. the ``direction`` of a continuation)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    values: tuple[float, ...] | tuple[str, ...] = Field(min_length=1)

    @field_validator("values")
    @classmethod
    def _finite(cls, v):
        if v and not isinstance(v[0], str) and not np.all(np.isfinite(v)):
            raise ValueError(f"axis values must be finite, got {list(v)}")
        if len(set(v)) != len(v):
            raise ValueError(f"axis values must be distinct, got {list(v)}")
        return v

    @classmethod
    def linspace(cls, name: str, start: float, stop: float, num: int) -> Axis:
        """``num`` evenly spaced values from ``start`` to ``stop`` (inclusive); a reversed or empty range,
        and one value for two different ends (the stop would be dropped), are errors naming the axis."""
        if not (np.isfinite(start) and np.isfinite(stop)):
            raise ValueError(f"axis {name}: start and stop must be finite numbers, got {start}, {stop}")
        if num < 1:
            raise ValueError(f"axis {name}: num must be >= 1, got {num}")
        if num > MAX_AXIS_VALUES:
            raise ValueError(f"axis {name}: num = {num} values is more than {MAX_AXIS_VALUES}")
        if stop < start:
            raise ValueError(f"axis {name}: reversed range (stop {stop} < start {start})")
        if num > 1 and stop == start:
            raise ValueError(f"axis {name}: empty range (start = stop = {start}) with num = {num}")
        if num == 1 and stop != start:
            raise ValueError(
                f"axis {name}: one value (num = 1) cannot run from {start} to {stop}; give num >= 2, or the same "
                "start and stop"
            )
        return cls(name=name, values=tuple(np.linspace(start, stop, num).tolist()))


class Grid(BaseModel):
    """An N-dimensional outer-product grid cut into chunks of ``chunk`` points."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    axes: tuple[Axis, ...] = Field(default=(), description="the axes; none: a single point")
    chunk: int = Field(default=256, ge=1, description="points per chunk (one vectorised batch)")

    @model_validator(mode="after")
    def _distinct_names(self):
        names = [a.name for a in self.axes]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"axes repeat {sorted(dup)}")
        return self

    @property
    def names(self) -> list[str]:
        return [a.name for a in self.axes]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(a.values) for a in self.axes)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def n_chunks(self) -> int:
        return -(-self.size // self.chunk)

    def chunk_range(self, i: int) -> tuple[int, int]:
        """[lo, hi) point indices of chunk i."""
        if not 0 <= i < self.n_chunks:
            raise IndexError(f"chunk {i} out of range [0, {self.n_chunks})")
        return i * self.chunk, min((i + 1) * self.chunk, self.size)

    def points(self, lo: int, hi: int) -> dict[str, np.ndarray]:
        """Axis values of the points lo … hi−1: name → (hi − lo,) array."""
        if not self.axes:
            return {}
        idx = np.unravel_index(np.arange(lo, hi), self.shape)
        return {a.name: np.asarray(a.values)[i] for a, i in zip(self.axes, idx)}

    def coords(self) -> dict[str, np.ndarray]:
        return {a.name: np.asarray(a.values) for a in self.axes}


def point_seed(base_seed: int, index: int | Sequence[int]) -> np.ndarray:
    """Seed of point ``index``: 32-bit words from ``SeedSequence(base_seed, spawn_key=(index,))``,
    independent of chunking and scheduling (spawned sequences are statistically independent)."""
    idx = np.atleast_1d(np.asarray(index, dtype=np.int64))
    out = np.array(
        [np.random.SeedSequence(base_seed, spawn_key=(int(i),)).generate_state(1)[0] for i in idx], dtype=np.uint32
    )
    return out if np.ndim(index) else out[0]
