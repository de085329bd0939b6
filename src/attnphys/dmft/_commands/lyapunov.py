"""``attnphys dmft lyapunov``: Lyapunov spectra of the mean-field map (theory: docs/theory/dmft.md §6)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

import numpy as np
from pydantic import Field, ValidationError

from attnphys._messages import format_validation
from attnphys.dmft._commands._options import BATCHED_ANY, ModelOptions, summary_dims
from attnphys.dmft.starts import StartSpec
from attnphys.errors import InputError
from attnphys.jobs import Report, register_job


@register_job
class LyapunovJob(ModelOptions):
    """Lyapunov spectrum of the mean-field map (Benettin/QR); exponents sorted descending."""

    command: ClassVar[str] = "dmft lyapunov"
    swept: ClassVar[tuple[str, ...]] = BATCHED_ANY

    steps: int = Field(20_000, ge=1, description="Loop steps T; exponents average the last T − transient.")
    transient: int = Field(10_000, ge=0, description="Steps discarded first (≥ L − 1 from a token).")
    k: int | None = Field(None, ge=1, description="Leading exponents to compute (default: all L·M).")
    full_state: bool = Field(False, description="Use the full L(M+P) state (positional exponents come out 0).")
    align: int = Field(0, ge=0, description="Last transient steps that also align the tangent vectors.")
    reortho_every: int = Field(1, ge=1, description="Steps between QR re-orthonormalisations.")
    history_every: int = Field(0, ge=0, description="Keep running estimates every this many steps (0: none).")
    start: StartSpec = Field(
        "token", description="Initial condition: token, pattern:INDEX, checkpoint or a window FILE."
    )  # pyright: ignore[reportAssignmentType]  (parsed: validate_default)
    out: Path = Field(Path("lyapunov.zarr"), description="Output store (.zarr or .nc).")

    def inputs_check(self) -> None:
        super().inputs_check()
        from attnphys.dmft.tasks import LyapunovTask

        try:  # the schedule's rules, before anything runs
            LyapunovTask(
                config=self.configuration(),
                start=self.start,
                steps=self.steps,
                transient=self.transient,
                k=self.k,
                full_state=self.full_state,
                align=self.align,
                reortho_every=self.reortho_every,
                history_every=self.history_every,
            )
        except ValidationError as e:
            raise InputError(format_validation(e, type(self))) from None

    def execute(self, progress: bool = True) -> Report:
        from attnphys.dmft import lyapunov_spectrum

        t0 = time.perf_counter()
        ds = lyapunov_spectrum(
            self.configuration(),
            sweep=self.sweep(),
            start=self.start,
            steps=self.steps,
            transient=self.transient,
            exponents=self.k,
            full_state=self.full_state,
            align=self.align,
            reortho_every=self.reortho_every,
            history_every=self.history_every,
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
