"""``attnphys dmft design-report``: whether a design produces its intended token cycle (theory:
docs/theory/designed.md §4)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

import numpy as np
from pydantic import Field

from attnphys.dmft._commands._options import ModelOptions
from attnphys.errors import InputError
from attnphys.jobs import IntSequence, Report, register_job


@register_job
class DesignReportJob(ModelOptions):
    """Say whether a design works: does the trajectory settle on the intended cycle of emitted patterns,
    after how many steps, for which fraction of random starts, how stably (Floquet multipliers), and over
    which range of β_o, γ and ε the cycle survives (a sweep, and continuation of the orbit)."""

    command: ClassVar[str] = "dmft design-report"
    outputs_spec: ClassVar[dict[str, str]] = {"out": "result", "plot": "figure"}

    cycle: IntSequence | None = Field(None, description="The intended cycle of base patterns (default: the design's).")
    steps: int = Field(3000, ge=1, description="Steps of the trajectory and of every sweep run.")
    ics: int = Field(64, ge=0, description="Random starts of the census (0: no census).")
    census_steps: int = Field(2000, ge=1, description="Most steps per start of the census.")
    grid: int = Field(25, ge=2, description="Values per parameter of the survival sweep.")
    continuation: bool = Field(True, description="Also follow the orbit by pseudo-arclength continuation.")
    seed: int = Field(0, ge=0, description="Seed of the census's starts.")
    out: Path = Field(Path("design-report.zarr"), description="Output store (.zarr or .nc).")
    plot: Path | None = Field(None, description="Figure (PNG): the emitted pattern sequence and the cycle.")

    def inputs_check(self) -> None:
        if self.design is None:
            raise InputError("give the design to report on: --design NAME or FILE", "--design")
        super().inputs_check()

    def analysis(self, **kw):
        """The one analysis this command runs (:func:`attnphys.dmft.designed.cycle_report`) with its options."""
        from attnphys.dmft.designed import cycle_report

        return cycle_report(
            self._designed_configuration(),  # pyright: ignore[reportArgumentType]  (the designed variant's)
            self.cycle,
            steps=self.steps,
            ics=self.ics,
            census_steps=self.census_steps,
            grid=self.grid,
            continuation=self.continuation,
            seed=self.seed,
            **kw,
        )

    def execute(self, progress: bool = True) -> Report:
        t0 = time.perf_counter()
        try:
            ds = self.analysis(progress=progress)
        except InputError as e:
            raise self.option_error(e) from None
        paths = [self.write_result(ds, self.out)]
        rows = {
            "cycle": " → ".join(ds.attrs["cycle"].strip("[]").split(", ")),
            "on the cycle": f"{bool(ds.on_cycle)} (from step {int(ds.cycle_step)}; state periodic from step "
            f"{int(ds.settle_step)}, period {int(ds.period)})",
            "stable": f"{ds.stability.values} (by {ds.stability_method.values}, spectral radius ≤ "
            f"{float(ds.radius_bound):.3g}); "
            + (
                "superstable (the monodromy is 0)"
                if float(ds.monodromy_norm) == 0
                else f"|μ| = {np.array2string(ds.floquet_abs.values, precision=4)}, monodromy norm "
                f"{float(ds.monodromy_norm):.3g}"
            ),
        }
        if "basin_fraction" in ds:
            rows["basin"] = (
                f"{float(ds.basin_fraction):.3f} [{float(ds.basin_ci_low):.3f}, {float(ds.basin_ci_high):.3f}] of "
                f"{self.ics} random starts"
            )
        if "sweep_low" in ds:
            for p in ds["param"].values:
                d = ds.sel(param=p)
                rows[f"survives in {p}"] = f"{float(d.sweep_low):.4g} … {float(d.sweep_high):.4g} (sweep)" + (
                    f"; {float(d.continuation_low):.4g} … {float(d.continuation_high):.4g} (continuation)"
                    if "continuation_low" in ds
                    else ""
                )
        rows["wall time"] = f"{time.perf_counter() - t0:.1f} s"
        if self.plot is not None:
            from attnphys.plots import cycle_figure, save_figure

            paths.append(save_figure(cycle_figure(ds), self.plot))
        return Report(f"design report → {self.out}", rows, paths, ds)
