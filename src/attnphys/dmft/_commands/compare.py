"""``attnphys dmft compare-diagrams``: what changed between two stored orbit diagrams of the same grid
(theory: docs/theory/dmft.md §7.6); ``attnphys dmft portraits``: chosen points of a stored diagram rerun for
phase portraits (§7.7)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

from pydantic import Field

from attnphys.errors import InputError
from attnphys.jobs import AbstractJob, Report, register_job


@register_job
class CompareDiagramsJob(AbstractJob):
    """Compare two stored bifurcation or phase diagrams of the same grid: the leading exponents' difference,
    regime and period changes at every point, and the configuration fields that differ."""

    command: ClassVar[str] = "dmft compare-diagrams"
    outputs_spec: ClassVar[dict[str, str]] = {"out": "result", "plot": "figure"}
    cli_arguments: ClassVar[tuple[str, ...]] = ("first", "second")

    first: Path = Field(
        description="The first diagram's store (a): a `dmft bifurcation` or `dmft phase-diagram` result."
    )
    second: Path = Field(description="The second diagram's store (b), on the same grid.")
    tol: float = Field(1e-3, ge=0, allow_inf_nan=False, description="|λ₁(b) − λ₁(a)| above which the exponent changed.")
    out: Path = Field(Path("compare.zarr"), description="Output store (.zarr or .nc).")
    plot: Path | None = Field(None, description="Figure file (PNG).")

    def inputs_check(self) -> None:
        for name in ("first", "second"):
            p = Path(getattr(self, name))
            if not p.exists():
                raise InputError(f"no diagram at {p}", name)
            _check_store(p, name)
        if Path(self.out).resolve() in (Path(self.first).resolve(), Path(self.second).resolve()):
            raise InputError("must not be one of the compared diagrams", "out")

    def execute(self, progress: bool = True) -> Report:
        from attnphys.dmft import compare_diagrams
        from attnphys.dmft._api.compare import changed_intervals

        try:
            ds = compare_diagrams(self.first, self.second, tol=self.tol)
        except InputError as e:  # name the command's arguments, not the function's
            raise InputError(e.detail, {"a": "first", "b": "second"}.get(str(e.field), e.field)) from None
        paths = [self.write_result(ds, self.out)]
        counts = json.loads(ds.attrs["changes"])
        diff = json.loads(ds.attrs["config_changes"])
        run = json.loads(ds.attrs["run_changes"])
        rows = {
            "grid": ", ".join(f"{d} ({ds.sizes[d]})" for d in ds["change"].dims),
            "configuration": "; ".join(f"{k}: {a} → {b}" for k, (a, b) in diff.items()) or "the same",
            "run options": "; ".join(f"{k}: {a} → {b}" for k, (a, b) in run.items()) or "the same",
            "changes": ", ".join(f"{k}: {v}" for k, v in counts.items()),
            "max |Δλ₁|": f"{ds.attrs['max_abs_d_lambda1']:.4g}",
        }
        if len([d for d in ds["change"].dims if d != "direction"]) == 1:
            runs = changed_intervals(ds, "period")
            rows["regime or period changed"] = "; ".join(runs) if runs else "nowhere"
        if self.plot is not None:
            from attnphys.plots import compare_diagrams_figure, save_figure

            paths.append(save_figure(compare_diagrams_figure(ds), self.plot))
        return Report(f"diagram comparison → {self.out}", rows, paths, ds)


def _check_store(p: Path, name: str) -> None:
    """A folder or file at ``p`` that is no result store is refused naming the argument, before any work."""
    if p.is_dir() and not any((p / m).exists() for m in ("zarr.json", ".zgroup", ".zattrs")):
        raise InputError(f"{p} is a folder that is not a result store", name)
    if not p.is_dir() and p.suffix != ".nc":
        raise InputError(f"{p} is a file, not a result store (a .zarr folder or a .nc file)", name)


def _points(text: str) -> list[tuple[float, ...]]:
    """``1.2,1.4`` (one value per point) or ``1.2/0.02,1.4/0.03`` (a value per axis, separated by /)."""
    try:
        return [tuple(float(v) for v in item.split("/")) for item in text.split(",") if item.strip()]
    except ValueError:
        raise InputError(
            f"must be values separated by commas (a value per axis separated by /), not {text!r}", "at"
        ) from None


@register_job
class PortraitsJob(AbstractJob):
    """Rerun chosen points of a stored bifurcation or phase diagram from its own record (configuration,
    start, schedule, seeds), check that the exponents and the orbit equal the stored ones, and keep the
    trajectories for phase portraits."""

    command: ClassVar[str] = "dmft portraits"
    outputs_spec: ClassVar[dict[str, str]] = {"out": "result", "plot": "figure"}
    cli_arguments: ClassVar[tuple[str, ...]] = ("diagram",)

    diagram: Path = Field(description="The diagram's store: a `dmft bifurcation` or `dmft phase-diagram` result.")
    at: str = Field(
        description="The points: values of the diagram's grid separated by commas (1.2,1.4); for a phase "
        "diagram a value per axis separated by / (1.2/0.02)."
    )
    keep: int | None = Field(None, ge=1, description="Last steps kept per point (default: every recorded step).")
    out: Path = Field(Path("portraits.zarr"), description="Output store (.zarr or .nc).")
    plot: Path | None = Field(None, description="Figure file (PNG).")

    def inputs_check(self) -> None:
        if not Path(self.diagram).exists():
            raise InputError(f"no diagram at {self.diagram}", "diagram")
        _check_store(Path(self.diagram), "diagram")
        if Path(self.out).resolve() == Path(self.diagram).resolve():
            raise InputError("must not be the diagram", "out")
        if not _points(self.at):
            raise InputError("give at least one point", "at")

    def execute(self, progress: bool = True) -> Report:
        from attnphys.dmft import diagram_portraits

        try:
            ds = diagram_portraits(self.diagram, _points(self.at), keep=self.keep, progress=progress)
        except InputError as e:
            raise InputError(e.detail, {"values": "at"}.get(str(e.field), e.field)) from None
        paths = [self.write_result(ds, self.out)]
        rows = {
            "points": str(ds.sizes["point"]),
            "steps kept": f"{ds.sizes['step']} (steps {int(ds.step[0])}–{int(ds.step[-1])})",
            "max |rerun − stored| exponents": f"{ds.attrs['max_exponent_difference']:.3g}",
            "max |trajectory − stored orbit|": f"{ds.attrs['max_orbit_difference']:.3g}",
        }
        if self.plot is not None:
            from attnphys.plots import portraits_figure, save_figure

            paths.append(save_figure(portraits_figure(ds), self.plot))
        return Report(f"phase portraits → {self.out}", rows, paths, ds)


__all__ = ["CompareDiagramsJob", "PortraitsJob"]
