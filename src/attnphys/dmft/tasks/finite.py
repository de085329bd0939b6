"""Sample paths of the finite-N network at every grid point (theory: docs/theory/dmft.md §2)."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from attnphys.dmft.config import check_schedule
from attnphys.dmft.finite import check_finite_model, check_finite_record, finite_observables
from attnphys.dmft.observables import ObservableName, observable, observable_names
from attnphys.dmft.starts import StartSpec, TokenStart
from attnphys.dmft.tasks._base import (
    DMFTTask,
)
from attnphys.sweeps.grid import Grid
from attnphys.sweeps.task import VarSpec, register_task


@register_task
class FiniteTask(DMFTTask):
    """Sample paths of the finite-N network at every point (theory: docs/theory/dmft.md §2). Path p of
    every point uses the key fold_in(PRNGKey(seed), p): common random numbers across the grid."""

    kind: Literal["dmft-finite"] = "dmft-finite"
    start: StartSpec = Field(default_factory=TokenStart, description="initial condition (token only)")
    n: int = Field(ge=1, description="semantic bits N_se of the finite network (a multiple of the config's n_se)")
    paths: int = Field(default=16, ge=1, description="independent sample paths")
    steps: int = Field(ge=1, description="loop steps")
    transient: int = Field(default=0, ge=0, description="steps not recorded")
    seed: int = Field(default=0, ge=0, lt=2**32, description="path p uses the key fold_in(PRNGKey(seed), p)")
    per_bit: bool = Field(default=False, description="sample every bit instead of one binomial per weight class")
    record: tuple[ObservableName, ...] = Field(
        default_factory=finite_observables, description="observables to record (those the finite network has)"
    )

    @model_validator(mode="after")
    def _schedule(self):
        check_finite_model(self.config)
        check_schedule(self.steps, self.transient)
        check_finite_record(self.record)
        if not isinstance(self.start, TokenStart):
            raise ValueError("the finite network starts from its first token (start: token)")
        return self

    def check_config(self, cfg, grid):
        from attnphys.dmft.finite import network_size

        network_size(check_finite_model(cfg), self.n)

    def schema(self, grid):
        F = self.sizes(grid)["feature"]
        return {
            name: VarSpec(
                ("path", "step", "feature"),
                (self.paths, self.steps - self.transient, F),
                np.float64,
                np.nan,
                observable(name).long_name + " (finite N)",
            )
            for name in self.record
        }

    def coords(self, grid):
        return {
            "path": (("path",), np.arange(self.paths)),
            "step": (("step",), np.arange(self.transient, self.steps)),
            "feature": (("feature",), np.arange(self.sizes(grid)["feature"])),
        }

    @classmethod
    def example(cls):
        from attnphys.dmft.config import preset
        from attnphys.sweeps import Axis

        return (
            cls(config=preset("paper"), n=990, paths=3, steps=30, transient=5),
            Grid(axes=(Axis(name="beta_o", values=(0.5, 1.0, 3.0)),), chunk=2),
        )

    def attrs(self):
        return {
            **super().attrs(),
            "seed": self.seed,
            "engine": "per-bit" if self.per_bit else "class-binomial",
            "positions": "mean-field convention: token k at position (k-1) mod L, x0 not in the window",
            "not_recorded": ", ".join(n for n in observable_names() if n not in self.record) or "none",
        }

    def compute_group(self, model, pts, n, idx):
        from attnphys.dmft.finite import sample_points

        sc = self.scalars(model, pts, n)
        return sample_points(
            model,
            sc,
            self.n,
            paths=self.paths,
            steps=self.steps,
            transient=self.transient,
            seed=self.seed,
            per_bit=self.per_bit,
            record=self.record,
            labels=self.labels(pts, n),
        )
