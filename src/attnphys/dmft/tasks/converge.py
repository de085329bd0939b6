"""Finite N against the mean field at every (β_o, …, N) point (theory: docs/theory/dmft.md §2.3)."""

from __future__ import annotations

from typing import ClassVar, Literal

import jax
import numpy as np
from pydantic import Field, model_validator

from attnphys.dmft._analysis_options import ConvergePoint
from attnphys.dmft.config import BATCHED, check_schedule
from attnphys.dmft.finite import check_finite_model
from attnphys.dmft.observables import ObservableName
from attnphys.dmft.simulate import Schedule
from attnphys.dmft.starts import StartSpec, TokenStart
from attnphys.dmft.tasks._base import (
    DMFTTask,
)
from attnphys.sweeps.grid import Grid
from attnphys.sweeps.task import VarSpec, register_task


@register_task
class ConvergeTask(DMFTTask):
    """Distances between finite-N paths and the mean field at every (β_o, …, N) point
    (theory: docs/theory/dmft.md §2.3): ``rms_deviation`` over the first ``horizon`` steps,
    ``stat_distance`` between long-run statistics; :meth:`finalize` fits the slopes vs N."""

    kind: Literal["dmft-converge"] = "dmft-converge"
    start: StartSpec = Field(default_factory=TokenStart, description="initial condition (token only)")
    paths: int = Field(default=ConvergePoint.default("paths"), ge=1)
    steps: int = Field(default=ConvergePoint.default("steps"), ge=2)
    horizon: int = Field(default=ConvergePoint.default("horizon"), ge=1)
    transient: int = Field(default=ConvergePoint.default("transient"), ge=0)
    observable: ObservableName = "mo_se"
    seed: int = Field(default=0, ge=0, lt=2**32)

    extra_axes: ClassVar[tuple[str, ...]] = ("n",)

    @model_validator(mode="after")
    def _schedule(self):
        check_finite_model(self.config)
        check_schedule(self.steps, self.transient)
        if self.horizon > self.steps:
            raise ValueError(f"horizon ({self.horizon}) must not exceed steps ({self.steps})")
        return self

    def check_grid(self, grid):
        super().check_grid(grid)
        if "n" not in grid.names:
            raise ValueError("a convergence grid needs an axis n (network sizes)")
        from attnphys.dmft.finite import network_size

        ns = dict(zip(grid.names, (a.values for a in grid.axes)))["n"]
        for cfg in self.configs(grid):
            for v in ns:
                network_size(check_finite_model(cfg), int(v))

    @classmethod
    def example(cls):
        from attnphys.dmft.config import preset
        from attnphys.sweeps import Axis

        return (
            cls(config=preset("paper"), paths=3, steps=60, horizon=20, transient=30),
            Grid(axes=(Axis(name="beta_o", values=(0.5, 1.0)), Axis(name="n", values=(99.0, 990.0))), chunk=2),
        )

    def schema(self, grid):
        return {
            "rms_deviation": VarSpec(
                (),
                (),
                np.float64,
                np.nan,
                f"RMS of {self.observable}(finite) - {self.observable}(MF) over paths, first "
                f"{self.horizon} steps, features",
            ),
            "stat_distance": VarSpec(
                (),
                (),
                np.float64,
                np.nan,
                f"max |time mean, time std of {self.observable} (steps >= {self.transient}): finite - MF|",
            ),
            "rms_noise": VarSpec((), (), np.float64, np.nan, "standard error of rms_deviation over the paths"),
            "stat_noise": VarSpec((), (), np.float64, np.nan, "sampling noise of stat_distance (spread of the paths)"),
            "elsewhere_fraction": VarSpec(
                (),
                (),
                np.float64,
                np.nan,
                "fraction of the paths that left the mean field's attractor within the horizon (left out of the "
                "slopes when above 0)",
            ),
        }

    def compute_group(self, model, pts, n, idx):
        from attnphys.dmft._convergence import path_noise, paths_elsewhere
        from attnphys.dmft.finite import sample_points

        ns = np.asarray(pts["n"]).astype(int)
        mf_pts = {k: v for k, v in pts.items() if k in BATCHED}
        sc = self.scalars(model, mf_pts, n)
        _, recs, _ = model.run_batch(
            sc,
            model.initial_states(self.start, sc),
            Schedule(steps=self.steps, record=(self.observable,)),
            labels=self.labels(pts, n),
        )
        mf = np.asarray(recs[self.observable])  # (n, T, M)
        rms = np.empty(n)
        stat = np.empty(n)
        noise = np.empty((n, 2))
        away = np.empty(n)
        for i in range(n):
            sc_i = jax.tree_util.tree_map(lambda a, i=i: a[i : i + 1], sc)
            fin = sample_points(
                model,
                sc_i,
                int(ns[i]),
                paths=self.paths,
                steps=self.steps,
                transient=0,
                seed=self.seed,
                record=(self.observable,),
            )[self.observable][0]  # (paths, T, M)
            rms[i] = np.sqrt(np.mean((fin[:, : self.horizon] - mf[i][None, : self.horizon]) ** 2))
            mf_stats = np.stack([mf[i, self.transient :].mean(0), mf[i, self.transient :].std(0)])
            fs = np.stack([fin[:, self.transient :].mean(1).mean(0), fin[:, self.transient :].std(1).mean(0)])
            stat[i] = np.max(np.abs(fs - mf_stats))
            noise[i] = path_noise(fin, mf[i], self.horizon, self.transient)
            away[i] = paths_elsewhere(fin, mf[i], self.horizon)
        return {
            "rms_deviation": rms,
            "stat_distance": stat,
            "rms_noise": noise[:, 0],
            "stat_noise": noise[:, 1],
            "elsewhere_fraction": away,
        }

    def finalize(self, ds):
        from attnphys.dmft._convergence import fit_slopes

        return super().finalize(fit_slopes(ds))
