"""``attnphys dmft boundary``: a fold, flip or Neimark–Sacker curve of one periodic orbit continued in two
parameters, with its codimension-two points (theory: docs/theory/dmft.md §7.8; docs/theory/dynamics.md §9)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from attnphys.dmft._analysis_options import BoundaryPoint, CurveKind
from attnphys.dmft._commands._options import BATCHED_ANY, ModelOptions
from attnphys.dmft.starts import StartSpec
from attnphys.errors import InputError
from attnphys.jobs import Report, register_job


@register_job
class BoundaryJob(ModelOptions, BoundaryPoint):
    """Continue a boundary of the phase diagram in two parameters: the fold, flip or Neimark–Sacker curve of
    the periodic orbit a start settles on, with its codimension-two points and normal-form coefficients.

    The start runs --transient steps at --param = --start-value (--param2 at the configuration's value); its
    orbit is followed towards --stop-value to its first bifurcation of --kind, whose curve is then
    continued both ways in (--param, --param2) inside the box [--x-min, --x-max] × [--y-min, --y-max]."""

    command: ClassVar[str] = "dmft boundary"
    outputs_spec: ClassVar[dict[str, str]] = {"out": "result", "plot": "figure"}
    kind: CurveKind = Field(default="neimark_sacker", description="The curve: fold, flip or neimark_sacker.")
    param: Literal[BATCHED_ANY] = Field(  # pyright: ignore[reportInvalidTypeForm]  (the batched fields)
        default="beta_o", description="First parameter: the orbit is searched along it."
    )
    param2: Literal[BATCHED_ANY] = Field(  # pyright: ignore[reportInvalidTypeForm]  (the batched fields)
        default="beta_att", description="Second parameter (its start: the configuration's value)."
    )
    start_value: float = Field(default=1.24, allow_inf_nan=False, description="Where the orbit is found.")
    stop_value: float = Field(default=1.26, allow_inf_nan=False, description="Towards where its bifurcation is sought.")
    start: StartSpec = Field(  # pyright: ignore[reportAssignmentType]  (parsed: validate_default)
        default=BoundaryPoint.default("start"), description="Initial condition: token, checkpoint or a window FILE."
    )
    out: Path = Field(default=Path("boundary.zarr"), description="Output store (.zarr or .nc).")
    plot: Path | None = Field(default=None, description="Figure file (PNG): the curve and its coefficient.")

    def swept_fields(self) -> tuple[str, ...]:
        return (self.param,)

    def _args(self):
        return self.configuration(), self.kind, (self.param, self.param2), self.start_value, self.stop_value

    def analysis(self, **kw):
        """The one analysis this command runs (:func:`attnphys.dmft.boundary`) with its options."""
        from attnphys.dmft import boundary

        return boundary(*self._args(), **self.options_of(BoundaryPoint), **kw)

    def plan(self):
        """What the analysis would run (:func:`attnphys.dmft.plan_boundary`), validated."""
        from attnphys.dmft import plan_boundary

        return plan_boundary(*self._args(), **self.options_of(BoundaryPoint))

    def _option_error(self, e: InputError):
        """The analysis' error named as this command's option (its ``params`` are --param and --param2)."""
        if e.field == "params":
            return InputError(e.detail, "--param2")
        return self.option_error(e)

    def inputs_check(self) -> None:
        super().inputs_check()
        try:
            self.plan()
        except InputError as e:
            raise self._option_error(e) from None

    def execute(self, progress: bool = True) -> Report:
        t0 = time.perf_counter()
        try:
            ds = self.analysis(progress=progress)
        except InputError as e:
            raise self._option_error(e) from None
        paths = [self.write_result(ds, self.out)]
        if self.plot is not None:
            from attnphys.plots import boundary_figure, save_figure

            paths.append(save_figure(boundary_figure(ds), self.plot))
        p1, p2 = self.param, self.param2
        x, y, c = ds[p1].values, ds[p2].values, ds["coefficient"].values
        rows = {
            "period": str(ds.attrs["period"]),
            "start": f"{p1} = {ds.attrs[f'start_{p1}']:.10f}, {p2} = {ds.attrs[f'start_{p2}']:.6g}",
            "points": f"{ds.sizes['point']} in the box"
            + (f" ({ds.attrs['outside_box']} beyond it dropped)" if ds.attrs.get("outside_box") else ""),
            "status": f"{ds.attrs['status_backward']} / {ds.attrs['status_forward']}",
            "range": f"{p1} {x.min():.8g} … {x.max():.8g}, {p2} {y.min():.6g} … {y.max():.6g}",
            f"coefficient {ds.attrs['coefficient']}": f"{np.nanmin(c):.4g} … {np.nanmax(c):.4g}",
            "evaluations": f"{ds.attrs['evaluations']} Newton evaluations of F^{ds.attrs['period']}",
            "wall time": f"{time.perf_counter() - t0:.2f} s",
        }
        for i in range(ds.sizes["special"]):
            rows[f"codim-2 point {i}"] = (
                f"{ds.special_kind.values[i]} at {p1} = {float(ds[f'special_{p1}'].values[i]):.10f}, "
                f"{p2} = {float(ds[f'special_{p2}'].values[i]):.10f}, "
                f"{ds.attrs['coefficient']} = {float(ds.special_coefficient.values[i]):.6g}"
            )
        if not ds.sizes["special"]:
            rows["codim-2 points"] = "none in the box"
        kind = str(ds.attrs["kind"]).replace("_", "-")
        return Report(f"{kind} curve of a period-{ds.attrs['period']} orbit → {self.out}", rows, paths, ds)
