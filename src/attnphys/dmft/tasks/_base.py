"""The base of the DMFT sweep tasks: grouping of a chunk's points by configuration, validation, NaN
padding, and the rules every task shares (theory: docs/theory/sweeps.md §1; docs/theory/dmft.md §3.6)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from attnphys.dmft._abstract_model import AbstractModel
from attnphys.dmft._variant import AbstractConfig, AnyConfig
from attnphys.dmft.model import model_of
from attnphys.dmft.starts import StartSpec, TokenStart
from attnphys.sweeps.grid import Grid
from attnphys.sweeps.task import AbstractTask

PAPER_SECTION_PAIRS: tuple[tuple[int, int], ...] = ((0, 1), (0, 2), (1, 0), (2, 0))
"""(plotted component, filtering component) pairs of the paper's zero-plane sections
(theory: docs/theory/dmft.md §7.1)."""


class DMFTTask(AbstractTask):
    """Base of the DMFT tasks: grouping of points by configuration, validation, NaN padding.

    Subclasses implement :meth:`compute_group` (one model, a batch of points) and :meth:`schema`.
    """

    config: AnyConfig = Field(
        description="the model's configuration, of any registered variant (read back by its `variant` tag)"
    )
    start: StartSpec = Field(default_factory=TokenStart, description="initial condition")
    point_starts: tuple[StartSpec, ...] = Field(
        default=(), description="one initial condition per grid point (in point order), instead of ``start``"
    )

    extra_axes: ClassVar[tuple[str, ...]] = ()
    """Grid axes the task interprets itself (not configuration fields)."""

    dim_options: ClassVar[dict[str, str]] = {
        "step": "steps",
        "path": "paths",
        "sample": "n_orbit",
        "crossing": "max_section",
    }
    """The options that set the sizes of result dimensions, named when the results would not fit."""

    # -- grid ---------------------------------------------------------------------------------------
    def check_grid(self, grid: Grid) -> None:
        for ax in grid.axes:
            if ax.name not in self.extra_axes:
                self.config.check_axis(ax.name, ax.values)
        if self.point_starts and len(self.point_starts) != grid.size:
            raise ValueError(f"point_starts has {len(self.point_starts)} starts for {grid.size} grid points")
        for cfg in self.configs(grid):
            self.check_config(cfg, grid)
            for start in self.point_starts or (self.start,):
                try:
                    model_of(cfg).check_start(start)
                except ValueError as e:
                    raise ValueError(f"start {start.describe()}: {e}") from None

    def starts_for(self, idx: np.ndarray):
        """The start of the points with global indices ``idx``: one start, or one per point."""
        if not self.point_starts:
            return self.start
        return [self.point_starts[int(i)] for i in idx]

    def check_config(self, cfg: AbstractConfig, grid: Grid) -> None:
        """Task-specific checks of one structural configuration of the grid (override)."""

    def structural(self, grid: Grid) -> list[str]:
        batched = self.config.batched_fields()
        return [a for a in grid.names if a not in batched and a not in self.extra_axes]

    def configs(self, grid: Grid) -> list[AbstractConfig]:
        """The distinct configurations of the grid's structural axes."""
        names = self.structural(grid)
        cfgs: list[AbstractConfig] = [self.config]
        for name in names:
            values = dict(zip(grid.names, (a.values for a in grid.axes)))[name]
            cfgs = [c.with_field(name, v) for c in cfgs for v in values]
        return cfgs

    def sizes(self, grid: Grid) -> dict[str, int]:
        """Largest M, L, P over the grid (sizes of the padded feature, lag and bit axes)."""
        cfgs = self.configs(grid)
        return {"feature": max(c.M for c in cfgs), "lag": max(c.L for c in cfgs), "bit": max(c.P for c in cfgs)}

    def groups(
        self, grid: Grid, lo: int, hi: int
    ) -> Iterator[tuple[AbstractConfig, np.ndarray, dict[str, np.ndarray]]]:
        """(configuration, row indices within the chunk, batched point values) per structural group."""
        pts = grid.points(lo, hi)
        names = self.structural(grid)
        n = hi - lo
        keys = list(zip(*(pts[a] for a in names))) if names else [()] * n
        for key in dict.fromkeys(keys):
            rows = np.asarray([i for i, k in enumerate(keys) if k == key])
            cfg: AbstractConfig = self.config
            for name, v in zip(names, key):
                cfg = cfg.with_field(name, v)
            yield cfg, rows, {a: pts[a][rows] for a in grid.names if a not in names}

    def compute(self, grid: Grid, lo: int, hi: int, base_seed: int = 0) -> dict[str, np.ndarray]:
        schema = self.schema(grid)
        n = hi - lo
        out = {name: np.full((n,) + v.shape, v.fill, v.dtype) for name, v in schema.items()}
        for cfg, rows, pts in self.groups(grid, lo, hi):
            res = self.compute_group(model_of(cfg), pts, rows.size, lo + rows)
            for name, arr in res.items():
                arr = np.asarray(arr)
                out[name][(rows,) + tuple(slice(0, s) for s in arr.shape[1:])] = arr
        return out

    def compute_group(
        self, model: AbstractModel, pts: Mapping[str, np.ndarray], n: int, idx: np.ndarray
    ) -> dict[str, np.ndarray]:
        """Results of ``n`` points of one configuration, with global indices ``idx`` (arrays with a
        leading point axis)."""
        raise NotImplementedError  # pragma: no cover

    # -- helpers ------------------------------------------------------------------------------------
    @staticmethod
    def scalars(model: AbstractModel, pts: Mapping[str, np.ndarray], n: int):
        return model.scalars({k: v for k, v in pts.items() if k in model.batched}, n=n)

    def labels(self, pts: Mapping[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
        """The parameters that name each of the n trajectories in a non-finite report: the swept ones,
        then the configuration's values of the others of :data:`BATCHED`."""
        batched = self.config.batched_fields()
        lab = {k: np.broadcast_to(np.asarray(v), (n,)) for k, v in pts.items() if k in batched}
        return lab | {k: np.full(n, getattr(self.config, k)) for k in batched if k not in lab}

    def attrs(self) -> dict[str, Any]:
        return {
            "start": self.start.describe(),
            "mo_se_convention": self.config.mo_se_convention,
            "era": self.config.era,
        }

    def finalize(self, ds):
        """The result with its warnings and labelled coordinates (:func:`attnphys.dmft.annotate.annotate`)."""
        from attnphys.dmft.annotate import annotate

        return annotate(ds, self.config, self.start)


def feature_coords(sizes: Mapping[str, int], names=("feature", "lag", "bit")) -> dict:
    c = {d: ((d,), np.arange(sizes[d])) for d in names}
    c["family"] = (("family",), np.asarray(["o", "v", "q", "k"]))
    return c
