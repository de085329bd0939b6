"""``attnphys dmft trajectory``: records of the mean-field map (theory: docs/theory/dmft.md §3.6)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

import numpy as np
from pydantic import Field

from attnphys.dmft._analysis_options import TrajectoryPoint
from attnphys.dmft._commands._options import BATCHED_ANY, ModelOptions, check_records, summary_dims
from attnphys.dmft.observables import with_observables
from attnphys.dmft.starts import StartSpec
from attnphys.errors import InputError
from attnphys.jobs import Report, register_job

RANGE_KEYS: tuple[str, ...] = ("min_bifurcation_value", "max_bifurcation_value")
"""The keys of a reference configuration that give a one-parameter diagram's range, which a trajectory
ignores (theory: docs/theory/dmft.md §8)."""


@register_job
@with_observables
class TrajectoryJob(ModelOptions, TrajectoryPoint):
    """Run the mean-field map and record {observables} per step.

    Several values of --beta-o, --beta-att or --epsilon (0.5,1,3 or START:STOP:NUM) run as one
    vectorised batch over their grid."""

    command: ClassVar[str] = "dmft trajectory"
    outputs_spec: ClassVar[dict[str, str]] = {"out": "result", "plot": "figures", "save_final": "file"}
    swept: ClassVar[tuple[str, ...]] = BATCHED_ANY

    start: StartSpec = Field(  # pyright: ignore[reportAssignmentType]  (parsed: validate_default)
        TrajectoryPoint.default("start"),
        description="Initial condition: token, pattern:INDEX (the pattern itself, as the reference starts its "
        "hand-set correlations), checkpoint (the published β_o = 3 window) or a window FILE (.json or the "
        "reference's .npz).",
    )
    out: Path = Field(Path("trajectory.zarr"), description="Output store (.zarr, or .nc for NetCDF).")
    plot: Path | None = Field(None, description="Folder for the trajectory figures.")
    save_final: Path | None = Field(
        None, description="Save the final context window here (.npz or .json), readable by --start."
    )

    @classmethod
    def translate_file_options(cls, data: dict, path: Path) -> dict:
        """A reference configuration of a bifurcation diagram runs as a trajectory with the diagram's range
        ignored, said in one line naming the keys (theory: docs/theory/dmft.md §8): a trajectory runs at its
        --beta-o (the reference's trajectory scripts read such a file the same way); the other keys are
        read as by every DMFT command."""
        from attnphys.dmft.reference import is_context_trajectory, is_reference_config

        ignored = [k for k in RANGE_KEYS if k in data]
        if ignored and is_reference_config(data, set(cls.model_fields)):
            import warnings

            warnings.warn(
                f"--config {path}: {' and '.join(ignored)} ignored (the range of a bifurcation diagram; a "
                "trajectory runs at its --beta-o)",
                UserWarning,
                stacklevel=2,
            )
            if not is_context_trajectory(data, cls.model_fields):  # a context's reading ignores them itself
                data = {k: v for k, v in data.items() if k not in ignored}
        return super().translate_file_options(data, path)

    def inputs_check(self) -> None:
        super().inputs_check()
        if self.save_final is not None:
            if self.save_final.suffix not in (".npz", ".json"):
                raise InputError(f"{self.save_final}: the final window is saved as .npz or .json", "--save-final")
            if self.axes():
                raise InputError(
                    "the final window is saved for a single run; give one value per parameter", "--save-final"
                )
            if self.save_final.exists():  # replaced only with --overwrite (checked before), and only a window file
                from attnphys.dmft.initial import read_window_file

                try:
                    read_window_file(self.save_final)
                except ValueError:
                    raise InputError(
                        f"{self.save_final} exists and is not a window file; refusing to replace it", "--save-final"
                    ) from None
        check_records(self, -(-(self.steps - self.transient) // self.record_every))

    def execute(self, progress: bool = True) -> Report:
        from attnphys.dmft import final_windows, trajectories

        t0 = time.perf_counter()
        cfg = self.configuration()
        ds = trajectories(
            cfg,
            sweep=self.sweep(),
            **self.options_of(TrajectoryPoint),
            progress=progress,
        )
        elapsed = time.perf_counter() - t0
        paths = [self.write_result(ds, self.out)]
        first = ds.mo_se.isel({d: 0 for d in ds.mo_se.dims if d not in ("step", "feature")})
        rows = {
            "dims": summary_dims(ds),
            "wall time": f"{elapsed:.2f} s",
            "mo_se at last record": np.array2string(first.values[-1], precision=6),
        }
        if self.save_final is not None:
            from attnphys.dmft.initial import save_window

            [state] = final_windows(ds)
            paths.append(save_window(state, self.save_final, overwrite=True, beta_o=float(cfg.beta_o)))
        if self.plot is not None:
            from attnphys.plots import save_figure, trajectory_figures

            for name, f in trajectory_figures(ds).items():
                paths.append(save_figure(f, Path(self.plot) / f"trajectory_{name}.png"))
        return Report(f"trajectory → {self.out}", rows, paths, ds)
