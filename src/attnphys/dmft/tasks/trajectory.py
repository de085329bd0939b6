"""Records of the mean-field map at every grid point (theory: docs/theory/dmft.md §3.6, §8)."""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import Field, model_validator

from attnphys.dmft.config import check_schedule
from attnphys.dmft.model import model_of
from attnphys.dmft.observables import ObservableName, observable, observable_names
from attnphys.dmft.simulate import Schedule
from attnphys.dmft.starts import StartSpec, TokenStart
from attnphys.dmft.tasks._base import (
    DMFTTask,
    feature_coords,
)
from attnphys.sweeps.grid import Grid
from attnphys.sweeps.task import VarSpec, register_task


@register_task
class TrajectoryTask(DMFTTask):
    """Records of the mean-field map at every point (theory: docs/theory/dmft.md §3.6). With ``mo_se``
    recorded, also the memory beyond the context window: its autocorrelation time and the fraction of its
    power below frequency 1/L, per feature (:mod:`attnphys.dmft.memory`; theory: docs/theory/dmft.md §8)."""

    kind: Literal["dmft-trajectory"] = "dmft-trajectory"
    start: StartSpec = Field(default_factory=TokenStart, description="initial condition")
    starts: tuple[StartSpec, ...] = Field(default=(), description="several initial conditions, indexed by an 'ic' axis")
    steps: int = Field(ge=1, description="loop steps T")
    transient: int = Field(default=0, ge=0, description="steps not recorded")
    record_every: int = Field(default=1, ge=1, description="keep every k-th step after the transient")
    record: tuple[ObservableName, ...] = Field(
        default_factory=observable_names, description="observables to record (default: every one)"
    )

    extra_axes: ClassVar[tuple[str, ...]] = ("ic",)

    @model_validator(mode="after")
    def _schedule(self):
        check_schedule(self.steps, self.transient)
        return self

    @property
    def schedule(self) -> Schedule:
        return Schedule(steps=self.steps, transient=self.transient, record_every=self.record_every, record=self.record)

    def check_grid(self, grid: Grid) -> None:
        super().check_grid(grid)
        for cfg in self.configs(grid):
            for s in self.starts:
                model_of(cfg).check_start(s)
        if "ic" in grid.names:
            ics = dict(zip(grid.names, (a.values for a in grid.axes)))["ic"]
            if not self.starts or any(isinstance(i, str) or int(i) != i or not 0 <= i < len(self.starts) for i in ics):
                raise ValueError(f"axis ic must index the {len(self.starts)} starts")

    def schema(self, grid: Grid) -> dict[str, VarSpec]:
        s = self.sizes(grid)
        n_rec = self.schedule.n_records
        sch = {
            name: VarSpec(("step", "feature"), (n_rec, s["feature"]), np.float64, np.nan, observable(name).long_name)
            for name in self.record
        }
        sch["final_A"] = VarSpec(
            ("lag", "feature"),
            (s["lag"], s["feature"]),
            np.float64,
            np.nan,
            "final context window: attention outputs, newest first",
        )
        sch["final_pe"] = VarSpec(
            ("lag", "bit"), (s["lag"], s["bit"]), np.float64, np.nan, "final context window: positional codes"
        )
        sch["final_n"] = VarSpec((), (), np.int64, 0, "filled rows of the final window")
        for name, dims, what in (
            ("mv", ("lag", "feature"), "value overlaps of the window's tokens"),
            ("mk", ("lag", "feature"), "key overlaps of the window's tokens"),
            ("m0", ("family", "feature"), "overlaps (o, v, q, k) of the newest token"),
            ("se0", ("family", "feature"), "semantic overlaps (o, v, q, k) of the newest token"),
        ):
            shape = tuple(4 if d == "family" else s[d] for d in dims)
            sch[f"final_{name}"] = VarSpec(dims, shape, np.float64, np.nan, f"final state: {what} (cached)")
        if "mo_se" in self.record:
            from attnphys.dmft.memory import MEMORY_ATTRS

            for key, attrs in MEMORY_ATTRS.items():
                sch[f"mo_se_{key}"] = VarSpec(("feature",), (s["feature"],), np.float64, np.nan, **attrs)
        return sch

    def coords(self, grid: Grid) -> dict:
        return {"step": (("step",), self.schedule.record_steps), **feature_coords(self.sizes(grid))}

    def attrs(self) -> dict[str, Any]:
        return {
            **super().attrs(),
            "schedule": json.dumps(dict(steps=self.steps, transient=self.transient, record_every=self.record_every)),
        }

    @classmethod
    def example(cls):
        from attnphys.dmft.config import preset
        from attnphys.sweeps import Axis

        return (
            cls(config=preset("paper"), steps=60, transient=20, record_every=3),
            Grid(axes=(Axis(name="beta_o", values=(0.8, 1.26, 2.0)), Axis(name="M", values=(2.0, 3.0))), chunk=4),
        )

    def compute_group(self, model, pts, n, idx):
        sc = self.scalars(model, pts, n)
        if "ic" in pts:
            ic = np.asarray(pts["ic"]).astype(int)
            per = [model.initial_states(self.starts[i], sc) for i in range(len(self.starts))]
            st = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs)[ic, jnp.arange(n)], *per)
        else:
            st = model.initial_states(self.starts_for(idx), sc)
        final, recs, _ = model.run_batch(sc, st, self.schedule, labels=self.labels(pts, n))
        out = {name: recs[name] for name in self.record}
        out.update(
            final_A=final.A,
            final_pe=final.pe,
            final_n=final.n,
            final_mv=final.mv,
            final_mk=final.mk,
            final_m0=final.m0,
            final_se0=final.se0,
        )
        if "mo_se" in self.record:
            from attnphys.dmft.memory import memory_summary

            mem = memory_summary(np.swapaxes(np.asarray(recs["mo_se"]), -1, -2), model.config.L, dt=self.record_every)
            out.update({f"mo_se_{key}": value for key, value in mem.items()})
        return out
