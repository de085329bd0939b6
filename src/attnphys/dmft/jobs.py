"""The ``attnphys dmft …`` commands as jobs (theory: docs/theory/dmft.md; docs/theory/sweeps.md §5).

Each job is a validated model of its options; :meth:`run` turns the points into a grid and runs a sweep
task of :mod:`attnphys.dmft.tasks` — in memory for single results, into a resumable Zarr store for the
diagrams — then writes, plots and summarises. A job's model options (``--preset``, ``--M``, ``--beta-o``,
…) resolve to one :class:`~attnphys.dmft.DMFTConfig`; an option given several values
(``--beta-o 0.5,1,3`` or ``1.2:1.3:11``) becomes a swept axis where the command sweeps it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, ClassVar, Literal, Optional

import numpy as np
from pydantic import Field, ValidationError, create_model, field_validator, model_validator

from attnphys.dmft.config import BATCHED, PRESETS, DMFTConfig, preset
from attnphys.dmft.initial import StartSpec
from attnphys.dmft.meanfield import OBSERVABLES
from attnphys.dmft.tasks import check_observable, check_schedule
from attnphys.dynamics.classify import regime_counts, undetermined_values
from attnphys.errors import InputError, check_fits
from attnphys.jobs import (
    AbstractJob,
    Applies,
    IntValues,
    Report,
    Values,
    format_validation,
    only_if_given,
    option_name,
    register_job,
)


def _config_options() -> dict[str, Any]:
    """One optional job field per scalar configuration field (a new configuration field becomes a command
    option by itself); β_o, β_att and ε take one value or several."""
    fields: dict[str, Any] = {}
    for name, f in DMFTConfig.model_fields.items():
        if name == "correlations":
            continue
        ann = Values if name in BATCHED else f.annotation
        fields[name] = (
            Optional[ann],
            Field(None, description=f"{(f.description or name).rstrip('.')}; default: the preset's."),
        )
    return fields


_ConfigOptions = create_model("_ConfigOptions", __base__=AbstractJob, **_config_options())
_MODEL_FIELDS = tuple(n for n in DMFTConfig.model_fields if n != "correlations")


_CORRELATION_OPTIONS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "n_segments": (
        "n_segments",
        ("segments",),
        "applies to the segments correlation kind only (the kind here is {kind})",
    ),
    "gaussian_scale": (
        "scale",
        ("gaussian",),
        "applies to the gaussian correlation kind only (the kind here is {kind})",
    ),
    "corr_seed": (
        "seed",
        ("segments", "random", "gaussian"),
        "the {kind} correlation kind has no seed (its weights come from --weights)",
    ),
}
"""The options that set one entry of the correlations mapping: field → (its key there, the kinds that have
it, why it is refused under another kind). Under another kind the entry is dropped, so a value given is
refused."""


class ModelOptions(_ConfigOptions):  # type: ignore[misc,valid-type]
    """Options shared by the DMFT commands: a preset and overrides of any configuration field."""

    preset: str = Field("paper", description="Named configuration (see `attnphys dmft presets`).")
    correlations: Literal["segments", "random", "gaussian", "weights"] | dict | None = Field(
        None, description="Correlation kind (default: the preset's segments)."
    )
    corr_seed: int | None = Field(None, description="Seed of the weights/correlations.")
    n_segments: int | None = Field(None, description="Segments per weight row (segments kind).")
    gaussian_scale: float | None = Field(None, description="Standard deviation of the pair moments (gaussian kind).")
    weights: Path | None = Field(None, description="File of hand-set ±1 weights Wo, Wv, Wq, Wk (.npz or .json).")

    swept: ClassVar[tuple[str, ...]] = ()
    """Fields this command may sweep (several values); others must have one value."""

    @classmethod
    def takes_several(cls, name: str) -> bool:
        return name not in ("beta_o", "beta_att", "epsilon") or name in cls.swept

    @classmethod
    def translate_file_options(cls, data: dict, path: Path) -> dict:
        """The reference implementation's YAML configurations become this command's options
        (:func:`attnphys.dmft.reference.translate_config`); the library's own options files are read as
        they are."""
        from attnphys.dmft.reference import is_reference_config, translate_config

        if is_reference_config(data, set(cls.model_fields)):
            return translate_config(data, path, cls.model_fields, cls.command)
        return data

    @field_validator("preset")
    @classmethod
    def _preset(cls, v):
        if v not in PRESETS:
            raise ValueError(f"unknown preset {v!r}; choose one of {sorted(PRESETS)}")
        return v

    @model_validator(mode="after")
    def _single_values(self):
        for name in ("beta_o", "beta_att", "epsilon"):
            v = getattr(self, name)
            if v is not None and len(v) > 1 and name not in self.swept:
                raise ValueError(f"{option_name(name)} takes one value in this command, got {len(v)}")
        return self

    # -- resolution ---------------------------------------------------------------------------------
    def configuration(self) -> DMFTConfig:
        """The configuration: the preset, overridden by every option given (first value of a sweep).

        Raises:
            InputError: naming the option and the rule it breaks.
        """
        changes: dict[str, Any] = {}
        for name in _MODEL_FIELDS:
            v = getattr(self, name)
            if v is not None:
                changes[name] = v[0] if isinstance(v, tuple) else v
        corr = self._correlations()
        if corr is not None:
            changes["correlations"] = corr
        try:
            cfg = preset(self.preset, **changes)
        except ValidationError as e:
            msg = format_validation(e, type(self))
            for name, (key, _, _) in _CORRELATION_OPTIONS.items():
                if getattr(self, name) is not None:  # the value came from this option: name it
                    msg = msg.replace(f"--correlations.{key}:", f"{option_name(name)}:")
            if self.weights is not None and str(self.weights) in msg:  # a problem of the weights file
                raise InputError(msg.removeprefix("--correlations: "), "--weights") from None
            raise InputError(msg) from None
        for name in self.swept:
            v = getattr(self, name)
            if v is not None and len(v) > 1:
                cfg.check_axis(name, v)
        return cfg

    def _correlations(self) -> dict | None:
        base = dict(PRESETS[self.preset].get("correlations", {}))
        if isinstance(self.correlations, dict):  # without a kind: changes to the preset's correlations
            base = {**base, **self.correlations} if "kind" not in self.correlations else dict(self.correlations)
            if "kind" not in base:
                raise InputError(
                    "a mapping of correlations needs a kind: segments, random, gaussian or weights", "--correlations"
                )
        elif self.correlations is not None and self.correlations != base.get("kind"):
            base = {"kind": self.correlations}
        extra = {key: getattr(self, name) for name, (key, _, _) in _CORRELATION_OPTIONS.items()}
        extra["path"] = None if self.weights is None else str(self.weights)
        for key, v in extra.items():
            if v is not None:
                if key == "path" and base.get("kind") != "weights":
                    base = {"kind": "weights"}
                base[key] = v
        if base.get("kind") == "weights" and "path" not in base:
            raise InputError("the weights correlation kind needs --weights FILE", "--correlations")
        kind = base.get("kind")
        mapping = set(self.correlations) if isinstance(self.correlations, dict) else set()
        for name, (key, kinds, why) in _CORRELATION_OPTIONS.items():
            if kind not in kinds:
                if getattr(self, name) is not None:  # given, but it would be dropped
                    raise InputError(why.format(kind=kind), option_name(name))
                if key in mapping and key in base:  # given in the mapping (not replaced by --weights)
                    raise InputError(why.format(kind=kind), f"--correlations.{key}")
                base.pop(key, None)  # the preset's entry, which this kind does not have
        return base or None

    def axes(self):
        """Grid axes of the options given several values (in field order)."""
        from attnphys.sweeps import Axis

        return tuple(
            Axis(name=n, values=getattr(self, n))
            for n in self.swept
            if getattr(self, n) is not None and len(getattr(self, n)) > 1
        )

    def provenance(self) -> dict[str, Any]:
        """The job with every model option filled in from the resolved configuration, so that a rerun
        does not depend on what a preset means in another version."""
        cfg = self.configuration()
        filled = {}
        for n in _MODEL_FIELDS:
            given = getattr(self, n)
            if isinstance(given, tuple) and len(given) > 1:
                filled[n] = given  # a sweep: its values
            else:
                filled[n] = (getattr(cfg, n),) if n in ("beta_o", "beta_att", "epsilon") else getattr(cfg, n)
        job = self.model_copy(
            update={
                **filled,
                "correlations": cfg.correlations.model_dump(mode="json"),
                "corr_seed": None,
                "n_segments": None,
                "gaussian_scale": None,
                "weights": None,
            }
        )
        return {**super().provenance(), "attnphys_job": job.model_dump_json()}

    eras: ClassVar[tuple[str, ...]] = ("head", "2024")
    """The eras of the model this command implements (theory: docs/theory/dmft.md §5.2)."""

    def swept_fields(self) -> tuple[str, ...]:
        """Configuration fields whose values come from this command's grid or continuation (``seed``: the
        correlations' seed): a fixed value given for one of them is refused."""
        return ()

    def check_given(self, given: set[str]) -> None:
        """Besides :attr:`applies`: a fixed value of a swept field, ``--correlations`` next to ``--weights``
        (which sets the weights kind); and, given or not, an era this command does not implement.

        Raises:
            InputError: naming the option.
        """
        super().check_given(given)
        given = {n for n in given if getattr(self, n, None) is not None}
        for name in self.swept_fields():
            opt = "corr_seed" if name == "seed" else name
            if opt in given:
                raise InputError(
                    f"{name} is swept by this command, so a fixed value would be overridden; set its values "
                    "with the sweep's options",
                    option_name(opt),
                )
        if (
            {"weights", "correlations"} <= given
            and self.correlations != "weights"
            and not isinstance(self.correlations, dict)
        ):
            raise InputError(
                f"--weights sets the weights correlation kind; it conflicts with --correlations {self.correlations}",
                "--correlations",
            )
        era = self.configuration().era
        if era not in self.eras:
            raise InputError(
                f"this command implements the {' and '.join(self.eras)} era only (the era here is "
                f"{era}{', from --preset ' + self.preset if 'era' not in given else ''})",
                "--era" if "era" in given else "--preset",
            )

    def inputs_check(self) -> None:
        cfg = self.configuration()
        start = getattr(self, "start", None)
        if start is not None:
            from attnphys.dmft.model import DMFTModel

            try:
                DMFTModel.of(cfg).check_start(start)
            except ValueError as e:
                raise InputError(str(e), "--start") from None


def _check_records(job, n_records: int, per_record: int = 6, option: str = "--steps") -> None:
    """Refuse records that cannot fit in memory (points × records × observables × M doubles)."""
    points = int(np.prod([len(a.values) for a in job.axes()])) if job.axes() else 1
    check_fits(
        points * n_records * per_record * job.configuration().M * 8,
        f"{n_records} recorded steps × {points} point(s)",
        "record fewer steps (--steps, --transient, --record-every)",
        option,
    )


def _summary_dims(ds) -> str:
    return ", ".join(f"{a}={b}" for a, b in ds.sizes.items())


def _run_sweep(
    job,
    task,
    axes,
    store: Path | None,
    chunk: int,
    executor: Literal["inprocess", "processes", "dask"] = "inprocess",
    workers=None,
    scheduler=None,
    base_seed: int = 0,
    progress: bool = True,
):
    """Run ``task`` on ``axes`` (memory, or a resumable store at ``store``) with the job's provenance."""
    from attnphys.sweeps import Grid, Sweep, run_sweep

    try:
        sweep = Sweep(grid=Grid(axes=axes, chunk=chunk), task=task, base_seed=base_seed)
    except ValidationError as e:
        raise InputError(format_validation(e)) from None
    sweep.check()
    return run_sweep(
        sweep,
        store,
        executor,
        workers=workers,
        scheduler=scheduler,
        progress=progress,
        attrs=job.provenance(),
        replace=store is not None and job.overwrite,
    )


# ==== trajectory ======================================================================================


@register_job
class TrajectoryJob(ModelOptions):
    """Run the mean-field map and record att, mo, mo_se, mv, mq, mk per step.

    Several values of --beta-o, --beta-att or --epsilon (0.5,1,3 or START:STOP:NUM) run as one
    vectorised batch over their grid."""

    command: ClassVar[str] = "dmft trajectory"
    outputs_spec: ClassVar[dict[str, str]] = {"out": "result", "plot": "figures", "save_final": "file"}
    swept: ClassVar[tuple[str, ...]] = BATCHED

    steps: int = Field(2000, ge=1, description="Loop steps T.")
    transient: int = Field(0, ge=0, description="Steps discarded before recording (fewer than --steps).")
    record_every: int = Field(1, ge=1, description="Record every K-th step after the transient.")
    start: StartSpec = Field(  # pyright: ignore[reportAssignmentType]  (parsed: validate_default)
        "token",
        description="Initial condition: token, checkpoint (the published β_o = 3 "
        "window) or a window FILE (.json or the reference's .npz).",
    )
    out: Path = Field(Path("trajectory.zarr"), description="Output store (.zarr, or .nc for NetCDF).")
    plot: Path | None = Field(None, description="Folder for the trajectory figures.")
    save_final: Path | None = Field(
        None, description="Save the final context window here (.npz or .json), readable by --start."
    )

    @model_validator(mode="after")
    def _schedule(self):
        check_schedule(self.steps, self.transient)
        return self

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
        _check_records(self, -(-(self.steps - self.transient) // self.record_every))

    def task(self):
        from attnphys.dmft.tasks import TrajectoryTask

        return TrajectoryTask(
            config=self.configuration(),
            start=self.start,
            steps=self.steps,
            transient=self.transient,
            record_every=self.record_every,
        )

    def execute(self, progress: bool = True) -> Report:
        from attnphys.dmft.trajectory import final_windows

        t0 = time.perf_counter()
        axes = self.axes()
        size = int(np.prod([len(a.values) for a in axes])) if axes else 1
        ds = _run_sweep(self, self.task(), axes, None, max(size, 1), progress=progress).drop_vars("point_seed")
        elapsed = time.perf_counter() - t0
        paths = [self.write_result(ds, self.out)]
        first = ds.mo_se.isel({d: 0 for d in ds.mo_se.dims if d not in ("step", "feature")})
        rows = {
            "dims": _summary_dims(ds),
            "wall time": f"{elapsed:.2f} s",
            "mo_se at last record": np.array2string(first.values[-1], precision=6),
        }
        if self.save_final is not None:
            from attnphys.dmft.initial import save_window

            [state] = final_windows(ds)
            paths.append(save_window(state, self.save_final, beta_o=float(self.configuration().beta_o)))
        if self.plot is not None:
            from attnphys.plots import save_figure, trajectory_figures

            for name, f in trajectory_figures(ds).items():
                paths.append(save_figure(f, Path(self.plot) / f"trajectory_{name}.png"))
        return Report(f"trajectory → {self.out}", rows, paths, ds)


# ==== Lyapunov ========================================================================================


@register_job
class LyapunovJob(ModelOptions):
    """Lyapunov spectrum of the mean-field map (Benettin/QR); exponents sorted descending."""

    command: ClassVar[str] = "dmft lyapunov"
    swept: ClassVar[tuple[str, ...]] = BATCHED

    steps: int = Field(20_000, ge=1, description="Loop steps T; exponents average the last T − transient.")
    transient: int = Field(10_000, ge=0, description="Steps discarded first (≥ L − 1 from a token).")
    k: int | None = Field(None, ge=1, description="Leading exponents to compute (default: all L·M).")
    full_state: bool = Field(False, description="Use the full L(M+P) state (positional exponents come out 0).")
    align: int = Field(0, ge=0, description="Last transient steps that also align the tangent vectors.")
    reortho_every: int = Field(1, ge=1, description="Steps between QR re-orthonormalisations.")
    history_every: int = Field(0, ge=0, description="Keep running estimates every this many steps (0: none).")
    start: StartSpec = Field("token", description="Initial condition: token, checkpoint or a window FILE.")  # pyright: ignore[reportAssignmentType]  (parsed: validate_default)
    out: Path = Field(Path("lyapunov.zarr"), description="Output store (.zarr or .nc).")

    def task(self):
        from attnphys.dmft.tasks import LyapunovTask

        try:
            return LyapunovTask(
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

    def inputs_check(self) -> None:
        super().inputs_check()
        self.task()

    def execute(self, progress: bool = True) -> Report:
        t0 = time.perf_counter()
        axes = self.axes()
        size = int(np.prod([len(a.values) for a in axes])) if axes else 1
        ds = _run_sweep(self, self.task(), axes, None, max(size, 1), progress=progress).drop_vars("point_seed")
        paths = [self.write_result(ds, self.out)]
        first = ds.isel({d: 0 for d in ds.exponents.dims if d != "exponent"})
        rows = {
            "dims": _summary_dims(ds),
            "wall time": f"{time.perf_counter() - t0:.2f} s",
            "exponents (first point)": np.array2string(first.exponents.values, precision=5),
            "below round-off": np.array2string(first.below_roundoff.values),
            "unreliable (parallel columns)": np.array2string(first.unreliable.values),
            "positional": ds.attrs["positional_exponents"],
        }
        return Report(f"Lyapunov exponents → {self.out}", rows, paths, ds)


# ==== orbit diagrams ==================================================================================


class SweepOptions(ModelOptions):
    """Options of the commands that run on a resumable sweep store."""

    chunk: int = Field(1024, ge=1, description="Points per vectorised batch (one task).")
    executor: Literal["inprocess", "processes", "dask"] = Field("inprocess", description="Where chunks run.")
    workers: int | None = Field(None, ge=1, description="Processes / Dask workers (default: CPU count).")
    scheduler: str | None = Field(None, description="Dask scheduler address, e.g. tcp://host:8786.")

    @model_validator(mode="after")
    def _executor(self):
        if self.scheduler is not None and self.executor != "dask":
            raise ValueError("--scheduler needs --executor dask")
        if self.workers is not None and self.executor == "inprocess":
            raise ValueError("--workers needs --executor processes or dask")
        return self


_PRERUN_HELP = (
    " prerun: the 2024 recipe, a token run of --steps steps at the largest β_o whose final window starts "
    "every value (prerun:BETA:STEPS to choose)."
)


def _prerun(v: Any, beta_max: float | None, steps: int | None) -> Any:
    """``prerun`` or ``prerun:BETA:STEPS`` → a pre-run start from the token (the 2024 recipe;
    theory: docs/theory/dmft.md §5.2); any other value unchanged."""
    if not (isinstance(v, str) and v.strip().split(":")[0] == "prerun"):
        return v
    parts = v.strip().split(":")
    if len(parts) == 3:
        try:
            beta_max, steps = float(parts[1]), int(parts[2])
        except ValueError:
            raise ValueError(f"a pre-run start is prerun or prerun:BETA:STEPS, got {v!r}") from None
    elif len(parts) != 1:
        raise ValueError(f"a pre-run start is prerun or prerun:BETA:STEPS, got {v!r}")
    if beta_max is None or steps is None:
        raise ValueError("prerun needs the largest β_o of the grid: sweep beta_o, or give prerun:BETA:STEPS")
    return {"kind": "prerun", "start": {"kind": "token"}, "beta_o": beta_max, "steps": steps}


_REORTHO_HELP = (
    "Steps between QR re-orthonormalisations of the tangent vectors (more: faster; an exponent whose "
    "direction became numerically parallel to the leading ones is flagged in `unreliable`)."
)

_ADAPTIVE_HELP = (
    "Stop a value early once its orbit is confirmed periodic (exponents from its Floquet multipliers); "
    "cold starts only."
)


class ParameterRange(SweepOptions):
    """Options of the commands that sweep one parameter over evenly spaced values."""

    param: Literal["beta_o", "beta_att", "epsilon"] = Field("beta_o", description="Swept parameter.")
    start_value: float = Field(0.0, allow_inf_nan=False, description="First parameter value.")
    stop_value: float = Field(3.0, allow_inf_nan=False, description="Last parameter value.")
    num: int = Field(401, ge=1, description="Number of parameter values (evenly spaced, both ends included).")

    @model_validator(mode="after")
    def _range(self):
        if self.stop_value < self.start_value:
            raise ValueError(f"--stop-value ({self.stop_value}) must be >= --start-value ({self.start_value})")
        if self.num > 1 and self.stop_value == self.start_value:
            raise ValueError(f"--start-value = --stop-value = {self.start_value} with --num {self.num}: empty range")
        return self

    def swept_fields(self) -> tuple[str, ...]:
        return (self.param,)

    def parameter_axis(self):
        """The swept parameter's grid axis."""
        from attnphys.sweeps import Axis

        return Axis.linspace(self.param, self.start_value, self.stop_value, self.num)


_PLOT_OPTIONS = ("plot_component", "plot_pair", "plot_max_points", "plot_filter")
"""The bifurcation diagram's figure options."""

_FIGURE_ONLY = only_if_given("plot", " (it only changes the figure)")
"""A figure option of a command whose figure is drawn with ``--plot`` only."""

_REORTHO_APPLIES = Applies(lambda job: job.lyapunov > 0, "no exponents are computed (--lyapunov 0)")
"""``--reortho-every`` of the orbit diagrams: it paces the exponents' QRs."""


@register_job
class BifurcationJob(ParameterRange):
    """Orbit/bifurcation diagram with Lyapunov exponents and regimes.

    Cold starts (every value from --start) or continuation chains (--continuation up|down|both: every
    value from the previous value's final state) write the same variables; continuation adds a
    `direction` dimension. Both run on a resumable store: re-running the same command resumes."""

    command: ClassVar[str] = "dmft bifurcation"
    outputs_spec: ClassVar[dict[str, str]] = {"out": "sweep", "plot": "figure"}
    applies: ClassVar[dict[str, Applies]] = {
        **dict.fromkeys(_PLOT_OPTIONS, _FIGURE_ONLY),
        "chunk": Applies(
            lambda job: job.continuation is None,
            "a continuation runs each chain as one batch (here --continuation {continuation})",
        ),
        "reortho_every": _REORTHO_APPLIES,
    }

    steps: int = Field(175_000, ge=1, description="Loop steps per value.")
    transient: int = Field(100_000, ge=0, description="Steps discarded before recording (fewer than --steps).")
    lyapunov: int = Field(3, ge=0, description="Leading Lyapunov exponents over the recorded steps (0: none).")
    reortho_every: int = Field(1, ge=1, description=_REORTHO_HELP)
    n_orbit: int = Field(1000, ge=20, description="Last recorded observations kept per value.")
    adaptive: bool = Field(False, description=_ADAPTIVE_HELP)
    observable: str = Field("mo_se", description=f"Observable of the diagram: one of {', '.join(OBSERVABLES)}.")
    section_tol: float = Field(1e-3, ge=0, allow_inf_nan=False, description="Zero-plane section tolerance |y_g| ≤ tol.")
    continuation: Literal["up", "down", "both"] | None = Field(None, description="Continuation instead of cold starts.")
    start: StartSpec = Field(  # pyright: ignore[reportAssignmentType]  (parsed: validate_default)
        "checkpoint",
        description="Initial condition: checkpoint, token or a window FILE;" + _PRERUN_HELP,
    )
    out: Path = Field(Path("bifurcation.zarr"), description="Output Zarr store; re-running resumes.")
    plot: Path | None = Field(None, description="Figure file (PNG); zero-plane points go to <stem>_sections.png.")
    plot_component: int | None = Field(
        None, ge=0, description="Plotted component (default: 0, or that of --plot-pair)."
    )
    plot_pair: str | None = Field(
        None, description="Zero-plane section pair f|g drawn for non-periodic values (one of 0|1, 0|2, 1|0, 2|0)."
    )
    plot_max_points: int | None = Field(None, ge=1, description="Most points drawn per value (default: all stored).")
    plot_filter: Literal["library", "reference"] = Field(
        "library",
        description="What decides how a value is drawn: the library's regime labels, or the published "
        "figures' count filter.",
    )
    save_final: Path | None = Field(
        None,
        description="With --continuation: save the final context window of each "
        "chain (.npz or .json; with both directions FILE-up and "
        "FILE-down), readable by --start.",
    )

    @field_validator("start", mode="before")
    @classmethod
    def _prerun_start(cls, v, info):
        beta = info.data.get("stop_value") if info.data.get("param", "beta_o") == "beta_o" else None
        return _prerun(v, beta, info.data.get("steps"))

    @field_validator("observable")
    @classmethod
    def _observable(cls, v):
        return check_observable(v)

    @model_validator(mode="after")
    def _schedule(self):
        check_schedule(self.steps, self.transient)
        if self.continuation is not None and self.executor != "inprocess" and self.continuation != "both":
            raise ValueError("a single continuation chain runs in one process: use --executor inprocess")
        return self

    def grid_axes(self):
        from attnphys.sweeps import Axis

        ax = self.parameter_axis()
        if self.continuation is None:
            return (ax,)
        dirs = ("up", "down") if self.continuation == "both" else (self.continuation,)
        return (Axis(name="direction", values=dirs), ax)

    def task(self):
        from attnphys.dmft.tasks import OrbitTask

        return OrbitTask(
            config=self.configuration(),
            steps=self.steps,
            transient=self.transient,
            lyapunov=self.lyapunov,
            reortho_every=self.reortho_every,
            n_orbit=self.n_orbit,
            keep_orbit=True,
            observable=self.observable,
            section_tol=self.section_tol,
            start=self.start,
            keep_final=self.save_final is not None,
            adaptive=self.adaptive,
        )

    def final_paths(self) -> dict[str, Path]:
        """Where --save-final writes the final window of each chain: FILE, or FILE-up/FILE-down."""
        if self.save_final is None or self.continuation is None:
            return {}
        if self.continuation != "both":
            return {self.continuation: self.save_final}
        f = self.save_final
        return {d: f.with_name(f"{f.stem}-{d}{f.suffix}") for d in ("up", "down")}

    def inputs_check(self) -> None:
        super().inputs_check()
        if self.save_final is not None:
            if self.continuation is None:
                raise InputError(
                    "a cold-start diagram has one final window per value; save one with --continuation "
                    "or `attnphys dmft trajectory --save-final`",
                    "--save-final",
                )
            if self.save_final.suffix not in (".npz", ".json"):
                raise InputError(f"{self.save_final}: the final window is saved as .npz or .json", "--save-final")
            for p in self.final_paths().values():
                if p.exists():
                    raise InputError(f"{p} exists; choose another file", "--save-final")
        if self.plot is not None:
            from attnphys.dmft.tasks import PAPER_SECTION_PAIRS
            from attnphys.plots import choose_pair

            F = self.configuration().M
            try:
                choose_pair(
                    [f"{a}|{b}" for a, b in PAPER_SECTION_PAIRS if max(a, b) < F],
                    F,
                    self.plot_component,
                    self.plot_pair,
                )
            except ValueError as e:
                raise InputError(str(e), "--plot-pair" if self.plot_pair else "--plot-component") from None
        from attnphys.sweeps import Grid, Sweep

        axes = self.grid_axes()
        chunk = self._chunk(axes)
        try:
            Sweep(grid=Grid(axes=axes, chunk=chunk), task=self.task()).check()
        except ValidationError as e:
            raise InputError(format_validation(e, type(self))) from None
        except InputError as e:
            if e.field == self.param:
                raise InputError(e.detail, "--start-value/--stop-value") from None
            raise

    def _chunk(self, axes) -> int:
        if self.continuation is None:
            return self.chunk
        return len(axes[-1].values) * len(axes[0].values)

    def execute(self, progress: bool = True) -> Report:
        t0 = time.perf_counter()
        axes = self.grid_axes()
        ds = _run_sweep(
            self,
            self.task(),
            axes,
            self.out,
            self._chunk(axes),
            self.executor,
            self.workers,
            self.scheduler,
            progress=progress,
        )
        rows = {
            "dims": _summary_dims(ds),
            "wall time": f"{time.perf_counter() - t0:.2f} s",
            "regimes": regime_counts(ds.regime.values, ds.regime_reason.values),
            "undetermined": "; ".join(undetermined_values(ds)) or "none",
        }
        paths = [self.out]
        for direction, path in self.final_paths().items():
            paths.append(self._save_chain_end(ds, direction, path))
            rows[f"final window ({direction})"] = f"{path} (filled rows: {self._chain_end(ds, direction)[1]})"
        if self.plot is not None:
            from attnphys.plots import bifurcation_figure, save_figure, sections_figure

            fig = bifurcation_figure(
                ds,
                component=self.plot_component,
                pair=self.plot_pair,
                max_points=self.plot_max_points,
                filter=self.plot_filter,
            )
            paths.append(save_figure(fig, self.plot))
            if "section" in ds and ds.sizes.get("pair", 0):
                paths.append(save_figure(sections_figure(ds), self.plot.with_name(self.plot.stem + "_sections.png")))
        return Report(f"bifurcation diagram → {self.out}", rows, paths, ds)

    def _chain_end(self, ds, direction: str):
        """(point, filled rows) of the last value of a chain: the largest value going up, the smallest down."""
        d = ds.sel(direction=direction)
        point = d.isel({self.param: -1 if direction == "up" else 0})
        return point, int(point.final_n.values)

    def _save_chain_end(self, ds, direction: str, path: Path) -> Path:
        """Save a chain's final window (a window not yet full keeps its fill count n)."""
        import jax.numpy as jnp

        from attnphys.dmft.initial import save_window
        from attnphys.dmft.meanfield import Window

        point, n = self._chain_end(ds, direction)
        cfg = self.configuration()
        A = point.final_A.values[: cfg.L, : cfg.M]
        pe = point.final_pe.values[: cfg.L, : cfg.P]
        value = float(point[self.param].values)
        beta = value if self.param == "beta_o" else cfg.beta_o
        extra = {"beta_o": beta} if path.suffix == ".npz" else {"beta_o": beta, self.param: value}
        return save_window(Window(jnp.asarray(A), jnp.asarray(pe), jnp.asarray(n, jnp.int32)), path, **extra)


AxisSpec = tuple[str, float, float, int]


@register_job
class PhaseDiagramJob(SweepOptions):
    """Phase diagram over two configuration fields: regime and Lyapunov exponents per point.

    Runs on a resumable store: re-running the same command resumes; a different one is refused."""

    command: ClassVar[str] = "dmft phase-diagram"
    outputs_spec: ClassVar[dict[str, str]] = {"out": "sweep", "plot": "figure"}
    applies: ClassVar[dict[str, Applies]] = {
        "reortho_every": _REORTHO_APPLIES,
        "seed": Applies(
            lambda job: False,
            "no start of this command is random, so the per-point seeds it sets are not used (the "
            "correlations' seed is --corr-seed)",
        ),
    }

    x: AxisSpec = Field(("beta_o", 0.0, 3.0, 201), description="FIELD START STOP NUM of the x axis.")
    y: AxisSpec = Field(("beta_att", 0.0, 3.0, 201), description="FIELD START STOP NUM of the y axis.")
    steps: int = Field(120_000, ge=1, description="Loop steps per point.")
    transient: int = Field(100_000, ge=0, description="Steps discarded before recording (fewer than --steps).")
    lyapunov: int = Field(2, ge=0, description="Leading Lyapunov exponents per point.")
    reortho_every: int = Field(1, ge=1, description=_REORTHO_HELP)
    n_orbit: int = Field(1000, ge=20, description="Last recorded observations used for the classification.")
    adaptive: bool = Field(False, description=_ADAPTIVE_HELP)
    start: StartSpec = Field(  # pyright: ignore[reportAssignmentType]  (parsed: validate_default)
        "checkpoint",
        description="Initial condition: checkpoint, token or a window FILE;" + _PRERUN_HELP,
    )
    seed: int = Field(0, ge=0, description="Base seed of the per-point seeds.")
    out: Path = Field(Path("phase.zarr"), description="Zarr store; re-running the same command resumes.")
    plot: Path | None = Field(None, description="Figure (PNG): regime map and λ1 heat map.")

    @field_validator("start", mode="before")
    @classmethod
    def _prerun_start(cls, v, info):
        betas = [
            max(a[1], a[2]) for a in (info.data.get("x"), info.data.get("y")) if a is not None and a[0] == "beta_o"
        ]
        return _prerun(v, max(betas) if betas else None, info.data.get("steps"))

    def swept_fields(self) -> tuple[str, ...]:
        return (self.x[0], self.y[0])

    @model_validator(mode="after")
    def _schedule(self):
        check_schedule(self.steps, self.transient)
        if self.x[0] == self.y[0]:
            raise ValueError(f"--x and --y name the same field {self.x[0]!r}")
        return self

    def grid_axes(self):
        from attnphys.sweeps import Axis

        axes = []
        for opt, spec in (("--x", self.x), ("--y", self.y)):
            try:
                axes.append(Axis.linspace(*spec))
            except ValidationError as e:
                raise InputError(format_validation(e), opt) from None
            except ValueError as e:
                raise InputError(str(e), opt) from None
        return tuple(axes)

    def task(self):
        from attnphys.dmft.tasks import OrbitTask

        return OrbitTask(
            config=self.configuration(),
            steps=self.steps,
            transient=self.transient,
            lyapunov=self.lyapunov,
            reortho_every=self.reortho_every,
            n_orbit=self.n_orbit,
            start=self.start,
            adaptive=self.adaptive,
        )

    def inputs_check(self) -> None:
        super().inputs_check()
        from attnphys.sweeps import Grid, Sweep

        try:
            Sweep(grid=Grid(axes=self.grid_axes(), chunk=self.chunk), task=self.task()).check()
        except InputError as e:
            opt = {self.x[0]: "--x", self.y[0]: "--y"}.get(e.field or "")
            if opt is None:
                raise
            raise InputError(e.detail, opt) from None
        except ValueError as e:  # a point of the grid that the task refuses (e.g. the start at another M)
            raise InputError(str(e), "--x/--y") from None

    def execute(self, progress: bool = True) -> Report:
        t0 = time.perf_counter()
        ds = _run_sweep(
            self,
            self.task(),
            self.grid_axes(),
            self.out,
            self.chunk,
            self.executor,
            self.workers,
            self.scheduler,
            base_seed=self.seed,
            progress=progress,
        )
        elapsed = time.perf_counter() - t0
        n = int(np.prod([ds.sizes[a] for a in (self.x[0], self.y[0])]))
        rows = {
            "grid": " × ".join(f"{a}={ds.sizes[a]}" for a in (self.x[0], self.y[0])),
            "wall time": f"{elapsed:.1f} s ({n / max(elapsed, 1e-9):.1f} points/s)",
            "regimes": regime_counts(ds.regime.values, ds.regime_reason.values),
            "undetermined": "; ".join(undetermined_values(ds)) or "none",
        }
        paths = [self.out]
        if self.plot is not None:
            from attnphys.plots import phase_diagram_figure, save_figure

            paths.append(save_figure(phase_diagram_figure(ds, self.x[0], self.y[0]), self.plot, dpi=130))
        return Report(f"phase diagram → {self.out}", rows, paths, ds)


# ==== finite N ========================================================================================


@register_job
class FiniteJob(ModelOptions):
    """Sample paths of the finite-N stochastic network with the mean field's conventions.

    The network repeats each of the configuration's n_se weight columns N/n_se times, so N must be a
    multiple of n_se (the mean field and the finite network then share every correlation tensor)."""

    command: ClassVar[str] = "dmft finite"
    swept: ClassVar[tuple[str, ...]] = ("beta_o",)
    eras: ClassVar[tuple[str, ...]] = ("head",)

    n: int = Field(99_000, ge=1, description="Semantic bits N of the finite network (a multiple of n_se).")
    paths: int = Field(16, ge=1, description="Independent sample paths.")
    steps: int = Field(5000, ge=1, description="Loop steps.")
    transient: int = Field(0, ge=0, description="Steps not recorded (fewer than --steps).")
    seed: int = Field(0, ge=0, lt=2**32, description="Path p uses the key fold_in(PRNGKey(seed), p).")
    per_bit: bool = Field(False, description="Sample every bit (memory O(N)) instead of one binomial per weight class.")
    out: Path = Field(Path("finite.zarr"), description="Output store (.zarr or .nc).")

    @model_validator(mode="after")
    def _schedule(self):
        check_schedule(self.steps, self.transient)
        return self

    def inputs_check(self) -> None:
        from attnphys.dmft.finite import network_size

        network_size(self.configuration(), self.n)
        if self.per_bit and self.n * self.paths > 50_000_000:
            raise InputError(
                f"sampling every bit keeps N × paths = {self.n * self.paths} bits in memory; use fewer or drop "
                "--per-bit",
                "--per-bit",
            )

    def execute(self, progress: bool = True) -> Report:
        from attnphys.dmft.tasks import FiniteTask

        t0 = time.perf_counter()
        task = FiniteTask(
            config=self.configuration(),
            n=self.n,
            paths=self.paths,
            steps=self.steps,
            transient=self.transient,
            seed=self.seed,
            per_bit=self.per_bit,
        )
        axes = self.axes()
        ds = _run_sweep(
            self, task, axes, None, max(1, len(axes[0].values)) if axes else 1, progress=progress
        ).drop_vars("point_seed")
        ds.attrs.update(n_se_finite=self.n)
        paths = [self.write_result(ds, self.out)]
        rows = {
            "dims": _summary_dims(ds),
            "engine": ds.attrs["engine"],
            "wall time": f"{time.perf_counter() - t0:.2f} s",
        }
        return Report(f"finite network → {self.out}", rows, paths, ds)


@register_job
class ConvergeJob(ModelOptions):
    """How finite-N paths approach the mean field as N grows; fitted slopes over the largest three decades.

    Each N is rounded to the nearest multiple of n_se (the network repeats the configuration's columns)."""

    command: ClassVar[str] = "dmft converge"
    outputs_spec: ClassVar[dict[str, str]] = {"out": "result", "plot": "figure"}
    swept: ClassVar[tuple[str, ...]] = ("beta_o",)
    eras: ClassVar[tuple[str, ...]] = ("head",)

    beta_o: Values | None = Field((0.5, 1.0, 3.0), description="β_o values.")
    n: IntValues = Field(
        (100, 1000, 10_000, 100_000, 1_000_000),
        description="Network sizes N (each rounded to the nearest multiple of n_se; at least two).",
    )
    paths: int = Field(16, ge=1, description="Sample paths per (β_o, N).")
    steps: int = Field(2000, ge=2, description="Loop steps per path.")
    horizon: int = Field(200, ge=1, description="Steps over which path deviations are measured.")
    transient: int = Field(1000, ge=0, description="Steps before the long-run statistics (fewer than --steps).")
    seed: int = Field(0, ge=0, lt=2**32, description="Path p uses the key fold_in(PRNGKey(seed), p).")
    out: Path = Field(Path("converge.zarr"), description="Output store (.zarr or .nc).")
    plot: Path | None = Field(None, description="Figure (PNG): distances vs N, log–log, with fitted slopes.")

    @model_validator(mode="after")
    def _schedule(self):
        check_schedule(self.steps, self.transient)
        if self.horizon > self.steps:
            raise ValueError(f"--horizon ({self.horizon}) must not exceed --steps ({self.steps})")
        bad = [v for v in self.n if v < 1]
        if bad:
            raise ValueError(f"--n: network sizes must be positive, got {bad}")
        return self

    def sizes(self) -> list[int]:
        """The sizes: each N rounded to the nearest multiple of n_se; at least two distinct ones."""
        n_se = self.configuration().n_se
        sizes = [max(1, round(int(k) / n_se)) * n_se for k in self.n]
        if len(set(sizes)) != len(sizes):
            raise InputError(f"sizes {list(self.n)} round to repeated multiples of n_se = {n_se}: {sizes}", "--n")
        if len(sizes) < 2:
            raise InputError("give at least two network sizes (a slope needs two points)", "--n")
        return sorted(sizes)

    def inputs_check(self) -> None:
        super().inputs_check()
        self.sizes()

    def execute(self, progress: bool = True) -> Report:
        from attnphys.dmft.converge import converge, slope_text

        t0 = time.perf_counter()
        cfg = self.configuration()
        ds = converge(
            cfg,
            self.beta_o or (cfg.beta_o,),
            self.sizes(),
            paths=self.paths,
            steps=self.steps,
            horizon=self.horizon,
            transient=self.transient,
            seed=self.seed,
            progress=progress,
        )
        paths = [self.write_result(ds, self.out)]
        rows = {"N": ", ".join(str(k) for k in ds.n.values), "wall time": f"{time.perf_counter() - t0:.1f} s"}
        for b in ds.beta_o.values:
            d = ds.sel(beta_o=b)
            rows[f"β_o={b:g}"] = (
                f"RMS slope {slope_text(d, 'slope')}, long-run statistics slope {slope_text(d, 'stat_slope')} "
                f"(95% intervals); RMS at largest N {float(d.rms_deviation[-1]):.2e}, long-run distance "
                f"{float(d.stat_distance[-1]):.2e} ± {float(d.stat_noise[-1]):.1e} (sampling noise)"
            )
        if self.plot is not None:
            from attnphys.plots import converge_figure, save_figure

            paths.append(save_figure(converge_figure(ds), self.plot, dpi=130))
        return Report(f"finite-N convergence → {self.out}", rows, paths, ds)


@register_job
class PresetsJob(AbstractJob):
    """List the named configurations."""

    command: ClassVar[str] = "dmft presets"
    outputs_spec: ClassVar[dict[str, str]] = {}

    def execute(self, progress: bool = True) -> Report:
        return Report("DMFT presets", {name: json.dumps(fields) for name, fields in PRESETS.items()})


__all__ = [
    "ModelOptions",
    "TrajectoryJob",
    "LyapunovJob",
    "BifurcationJob",
    "PhaseDiagramJob",
    "FiniteJob",
    "ConvergeJob",
    "PresetsJob",
    "OBSERVABLES",
]
