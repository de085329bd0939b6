"""``attnphys dmft lyapunov``: Lyapunov spectra of the mean-field map (theory: docs/theory/dmft.md §6)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

import numpy as np
from pydantic import Field

from attnphys.dmft._analysis_options import LyapunovPoint
from attnphys.dmft._commands._options import BATCHED_ANY, ModelOptions, summary_dims
from attnphys.dmft.starts import StartSpec
from attnphys.jobs import Report, register_job


@register_job
class LyapunovJob(ModelOptions, LyapunovPoint):
    """Lyapunov spectrum of the mean-field map (Benettin/QR); exponents sorted descending."""

    command: ClassVar[str] = "dmft lyapunov"
    swept: ClassVar[tuple[str, ...]] = BATCHED_ANY

    start: StartSpec = Field(
        LyapunovPoint.default("start"),
        description="Initial condition: token, pattern:INDEX, checkpoint or a window FILE.",
    )  # pyright: ignore[reportAssignmentType]  (parsed: validate_default)
    out: Path = Field(Path("lyapunov.zarr"), description="Output store (.zarr or .nc).")

    def inputs_check(self) -> None:
        super().inputs_check()
        from attnphys.dmft import plan_lyapunov_spectrum

        plan_lyapunov_spectrum(self.configuration(), sweep=self.sweep(), **self.options_of(LyapunovPoint))

    def execute(self, progress: bool = True) -> Report:
        from attnphys.dmft import lyapunov_spectrum

        t0 = time.perf_counter()
        ds = lyapunov_spectrum(
            self.configuration(),
            sweep=self.sweep(),
            **self.options_of(LyapunovPoint),
            progress=progress,
        )
        paths = [self.write_result(ds, self.out)]
        first = ds.isel({d: 0 for d in ds.exponents.dims if d != "exponent"})
        rows = {
            "dims": summary_dims(ds),
            "wall time": f"{time.perf_counter() - t0:.2f} s",
            "exponents (first point)": np.array2string(first.exponents.values, precision=5),
            "below round-off": np.array2string(first.below_roundoff.values),
            "unreliable (parallel columns)": np.array2string(first.unreliable.values),
            "positional": ds.attrs["positional_exponents"],
        }
        return Report(f"Lyapunov exponents → {self.out}", rows, paths, ds)
