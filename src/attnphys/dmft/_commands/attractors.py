"""``attnphys dmft attractors``, ``basins``, ``stability`` and ``orbit-continuation`` (theory:
docs/theory/dmft.md §7.5; docs/theory/dynamics.md §5–§8, §10)."""

from __future__ import annotations

import abc
import time
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, ValidationError

from attnphys._messages import format_validation
from attnphys.dmft._analysis_options import BasinsPoint, CensusPoint, ContinuationPoint, ShockSearch
from attnphys.dmft._commands._options import BATCHED_ANY, FIGURE_ONLY, ModelOptions, ParameterRange, summary_dims
from attnphys.dmft.starts import StartSpec, parse_start
from attnphys.errors import InputError
from attnphys.jobs import Applies, Report, only_with, register_job

_REFERENCE_START = "\0reference start"
"""Key of a reference configuration's start between its translation and the merge with the command line."""


def _census_start() -> Any:
    """The census commands' ``--start`` (parsed; default: the analyses' own)."""
    return Field(
        default=CensusPoint.default("start"),
        description="perturb: the start perturbed (token, checkpoint or a window FILE).",
    )


class _CensusOptions(ModelOptions, CensusPoint):
    """Options of a census: starts, schedule, criteria."""

    applies: ClassVar[dict[str, Applies]] = {
        "amplitude": only_with("sampler", "random"),
        "radius": only_with("sampler", "perturb"),
        "start": only_with("sampler", "perturb"),
        "starts": only_with("sampler", "explicit"),
        **{
            name: Applies(
                lambda job: job.sampler != "explicit",
                "the explicit sampler starts from the --starts given (their number, the same at every value)",
            )
            for name in ("ics", "seed")
        },
    }

    @classmethod
    def translate_file_options(cls, data: dict, path: Path) -> dict:
        """As for the other DMFT commands; a reference configuration's start window is marked as such, and
        kept only for the perturb sampler (:meth:`merge_options`)."""
        from attnphys.dmft.reference import is_reference_config

        out = super().translate_file_options(data, path)
        if is_reference_config(data, set(cls.model_fields)) and "start" in out:
            out[_REFERENCE_START] = out.pop("start")
        return out

    @classmethod
    def merge_options(cls, from_file: dict, given: dict) -> dict:
        """The start of a reference configuration is used by the perturb sampler only: the others draw
        their own starts."""
        merged = super().merge_options(from_file, given)
        start = merged.pop(_REFERENCE_START, None)
        if start is not None and merged.get("sampler", merged.get("start_sampler", "random")) == "perturb":
            merged.setdefault("start", start)
        return merged

    start: StartSpec = _census_start()  # pyright: ignore[reportAssignmentType]  (parsed: validate_default)
    starts: str | None = Field(
        default=None, description="explicit: comma-separated starts (token, checkpoint, FILE, …)."
    )

    @abc.abstractmethod
    def analysis(self, **kw):
        """The census this command runs (:func:`attnphys.dmft.attractors` or :func:`~attnphys.dmft.basins`)
        with its options."""

    @abc.abstractmethod
    def plan(self):
        """The sweep the census would run (:func:`attnphys.dmft.plan_attractors` or
        :func:`~attnphys.dmft.plan_basins`), validated."""

    def census_options(self) -> dict:
        """The census options of the analyses (:func:`attnphys.dmft.attractors`, :func:`~attnphys.dmft.basins`)."""
        starts = ()
        if self.sampler == "explicit":
            if not self.starts:
                raise InputError("the explicit sampler needs --starts", "--starts")
            starts = tuple(parse_start(s.strip()) for s in self.starts.split(",") if s.strip())
        return dict(**self.options_of(CensusPoint), starts=starts)

    def inputs_check(self) -> None:
        super().inputs_check()
        try:
            self.plan()
        except ValidationError as e:
            raise InputError(format_validation(e, type(self))) from None


def _attractor_rows(ds) -> dict[str, str]:
    from attnphys.dynamics.classify import flag_names

    names = flag_names(ds["kind"].attrs)
    rows = {}
    for a in range(int(ds["n_attractors"].values)):
        if a >= ds.sizes["attractor"]:
            break
        kind, per = int(ds["kind"].values[a]), int(ds["period"].values[a])
        f, lo, hi = (float(ds[v].values[a]) for v in ("basin_fraction", "basin_ci_low", "basin_ci_high"))
        ex = np.array2string(ds["exponents"].values[a], precision=5)
        rows[f"attractor {a}"] = (
            f"{names[kind]}{f' period {per}' if per > 0 else ''}, basin {f:.3f} [{lo:.3f}, {hi:.3f}], exponents {ex}"
        )
    rows["unsettled"] = f"{float(ds['unsettled_fraction'].values):.3f}"
    if int(ds["n_dropped"].values):
        rows["dropped"] = f"{int(ds['n_dropped'].values)} attractors beyond --max-attractors"
    return rows


@register_job
class AttractorsJob(_CensusOptions):
    """Attractor census at one parameter point: which attractors coexist, their basins and exponents.

    Periodic orbits are found exactly (Newton-refined, exponents from Floquet multipliers); starts that
    have not settled within --steps are reported as unsettled, never forced into a class."""

    command: ClassVar[str] = "dmft attractors"
    outputs_spec: ClassVar[dict[str, str]] = {"out": "result", "plot": "figure"}
    out: Path = Field(default=Path("attractors.zarr"), description="Output store (.zarr or .nc).")
    plot: Path | None = Field(
        default=None, description="Figure file (PNG): the attractors side by side in the observable's planes."
    )

    def analysis(self, **kw):
        """The one analysis this command runs (:func:`attnphys.dmft.attractors`) with its options."""
        from attnphys.dmft import attractors

        return attractors(self.configuration(), **self.census_options(), **kw)

    def plan(self):
        from attnphys.dmft import plan_attractors

        return plan_attractors(self.configuration(), **self.census_options())

    def execute(self, progress: bool = True) -> Report:
        t0 = time.perf_counter()
        ds = self.analysis(progress=progress)
        paths = [self.write_result(ds, self.out)]
        if self.plot is not None:
            from attnphys.plots import attractors_figure, save_figure

            paths.append(save_figure(attractors_figure(ds), self.plot))
        rows = {"dims": summary_dims(ds), "wall time": f"{time.perf_counter() - t0:.2f} s"} | _attractor_rows(ds)
        return Report(f"attractor census → {self.out}", rows, paths, ds)


@register_job
class BasinsJob(BasinsPoint, _CensusOptions, ParameterRange):
    """Attractor censuses along a parameter, matched into tracks: births, deaths, coexistence, hysteresis.

    Every value uses the same starts; runs on a resumable store (re-running the same command resumes)."""

    command: ClassVar[str] = "dmft basins"
    outputs_spec: ClassVar[dict[str, str]] = {"out": "sweep", "plot": "figure"}
    applies: ClassVar[dict[str, Applies]] = {
        **_CensusOptions.applies,
        "plot_component": FIGURE_ONLY,
    }
    start: StartSpec = _census_start()  # pyright: ignore[reportAssignmentType]  (parsed: validate_default)
    out: Path = Field(default=Path("basins.zarr"), description="Output Zarr store; re-running resumes.")
    plot: Path | None = Field(
        default=None, description="Figure file (PNG): the diagram coloured by track over the basin fractions."
    )
    plot_component: int = Field(default=0, ge=0, description="Component of the observable drawn.")

    def analysis(self, **kw):
        """The one analysis this command runs (:func:`attnphys.dmft.basins`) with its options."""
        from attnphys.dmft import basins

        return basins(self.configuration(), self.parameter_sweep(), **self.arguments(), **kw)

    def arguments(self) -> dict:
        """The keywords of the analysis (:func:`attnphys.dmft.basins`) from this command's options."""
        return dict(**self.census_options(), **self.sweep_options(self.out))

    def plan(self):
        from attnphys.dmft import plan_basins

        return plan_basins(self.configuration(), self.parameter_sweep(), **self.arguments())

    def inputs_check(self) -> None:
        super().inputs_check()
        from attnphys.plots import check_component

        try:
            check_component(self.plot_component, self.configuration().M)
        except ValueError as e:
            raise InputError(str(e), "--plot-component") from None

    def execute(self, progress: bool = True) -> Report:
        t0 = time.perf_counter()
        ds = self.analysis(store_attrs=self.store_attrs(), progress=progress)
        paths = [self.out]
        if self.plot is not None:
            from attnphys.plots import basins_figure, save_figure

            paths.append(save_figure(basins_figure(ds, self.param, self.plot_component), self.plot))
        rows = {"dims": summary_dims(ds), "wall time": f"{time.perf_counter() - t0:.2f} s"}
        if "track_id" in ds.dims:
            rows["tracks"] = str(ds.sizes["track_id"])
            rows["most coexisting"] = str(int(ds["n_coexisting"].max()))
            rows["hysteresis windows"] = (
                ", ".join(f"[{lo:.5g}, {hi:.5g}]" for lo, hi in zip(ds["window_low"].values, ds["window_high"].values))
                or "none"
            )
        return Report(f"basins along {self.param} → {self.out}", rows, paths, ds)


@register_job
class OrbitContinuationJob(ModelOptions, ContinuationPoint):
    """Continue the periodic orbit a start settles on, locating folds, flips and Neimark–Sacker points.

    The start runs --transient steps at --start-value; its exact period is read there, and the orbit is
    followed by pseudo-arclength continuation towards --stop-value (either side)."""

    command: ClassVar[str] = "dmft orbit-continuation"
    outputs_spec: ClassVar[dict[str, str]] = {"out": "result"}
    param: Literal[BATCHED_ANY] = Field(  # pyright: ignore[reportInvalidTypeForm]  (the batched fields)
        default="beta_o", description="Continuation parameter (gamma: a designed model's)."
    )
    start_value: float = Field(default=1.27, allow_inf_nan=False, description="Where the orbit is found.")
    stop_value: float = Field(
        default=1.24, allow_inf_nan=False, description="Towards where it is followed (either side)."
    )
    start: StartSpec = Field(  # pyright: ignore[reportAssignmentType]  (parsed: validate_default)
        default=ContinuationPoint.default("start"), description="Initial condition: token, checkpoint or a window FILE."
    )
    out: Path = Field(default=Path("orbit_continuation.zarr"), description="Output store (.zarr or .nc).")

    def swept_fields(self) -> tuple[str, ...]:
        return (self.param,)

    def analysis(self, **kw):
        """The one analysis this command runs (:func:`attnphys.dmft.orbit_continuation`) with its options."""
        from attnphys.dmft import orbit_continuation

        return orbit_continuation(*self._range(), **self.options_of(ContinuationPoint), **kw)

    def _range(self):
        return self.configuration(), self.param, self.start_value, self.stop_value

    def plan(self):
        """What the analysis would run (:func:`attnphys.dmft.plan_orbit_continuation`), validated."""
        from attnphys.dmft import plan_orbit_continuation

        return plan_orbit_continuation(*self._range(), **self.options_of(ContinuationPoint))

    def inputs_check(self) -> None:
        super().inputs_check()
        try:
            self.plan()
        except InputError as e:
            raise self.option_error(e) from None

    def execute(self, progress: bool = True) -> Report:
        t0 = time.perf_counter()
        try:
            ds = self.analysis(progress=progress)
        except InputError as e:
            raise self.option_error(e) from None
        paths = [self.write_result(ds, self.out)]
        rows = {
            "period": str(ds.attrs["period"]),
            "points": str(ds.sizes["point"]),
            "status": ds.attrs["status"],
            "range": f"{float(ds.s.min()):.6g} … {float(ds.s.max()):.6g}",
            "wall time": f"{time.perf_counter() - t0:.2f} s",
        }
        from attnphys.dynamics import event_kinds

        kinds = event_kinds(ds)
        for i in range(ds.sizes["event"]):
            mu = np.hypot(ds.event_multiplier_real.values[i], ds.event_multiplier_imag.values[i])
            rows[f"event {i}"] = (
                f"{kinds[i]} at {self.param} = {float(ds.event_s.values[i]):.10f}, "
                f"|μ| = " + np.array2string(mu[:3], precision=6)
            )
        if not ds.sizes["event"]:
            rows["events"] = "none in the range"
        return Report(f"continuation of a period-{ds.attrs['period']} orbit → {self.out}", rows, paths, ds)


@register_job
class StabilityJob(ShockSearch, _CensusOptions):
    """Global stability of the coexisting attractors at one parameter point: the census, the minimal
    critical shock of each attractor (the smallest change of the attention state that moves it into another
    basin) and the convergence times of the starts.

    The shock search is seeded and reproducible; its result is an upper bound on the true minimum."""

    command: ClassVar[str] = "dmft stability"
    outputs_spec: ClassVar[dict[str, str]] = {"out": "result"}
    ics: int = Field(default=64, ge=1, description="Starts of the census (explicit starts: their number).")
    out: Path = Field(default=Path("stability.zarr"), description="Output store (.zarr or .nc).")

    def shock_options(self) -> dict:
        """The options of the shock search and the times (:func:`attnphys.dmft.stability`)."""
        return {name: getattr(self, name) for name in ShockSearch.model_fields}

    def plan(self):
        from attnphys.dmft import plan_stability

        return plan_stability(self.configuration(), **self.census_options(), **self.shock_options())

    def analysis(self, **kw):
        """The one analysis this command runs (:func:`attnphys.dmft.stability`) with its options."""
        from attnphys.dmft import stability

        return stability(self.configuration(), **self.census_options(), **self.shock_options(), **kw)

    def execute(self, progress: bool = True) -> Report:
        t0 = time.perf_counter()
        ds = self.analysis(progress=progress)
        paths = [self.write_result(ds, self.out)]
        rows = {"dims": summary_dims(ds), "wall time": f"{time.perf_counter() - t0:.2f} s"}
        for a in range(ds.sizes["attractor"]):
            per, f = int(ds["period"].values[a]), float(ds["basin_fraction"].values[a])
            norm, to = float(ds["shock_norm"].values[a]), int(ds["lands_on"].values[a])
            shock = f"shock {norm:.4g} → attractor {to}" if np.isfinite(norm) else "no shock up to the radius leaves"
            tm = float(ds["time_mean"].values[a])
            rows[f"attractor {a}"] = f"period {per}, basin {f:.3f}, {shock}, mean convergence {tm:.1f} steps"
        return Report(f"global stability → {self.out}", rows, paths, ds)
