"""``attnphys dmft bifurcation`` and ``attnphys dmft phase-diagram``: orbit diagrams with regimes and
Lyapunov exponents on resumable stores (theory: docs/theory/dmft.md §7)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, ValidationError, field_validator, model_validator

from attnphys._messages import format_validation
from attnphys.dmft._analysis_options import (
    BifurcationOptions,
    BifurcationPoint,
    PhaseDiagramOptions,
    PhaseDiagramPoint,
)
from attnphys.dmft._commands._options import (
    FIGURE_ONLY,
    PLOT_OPTIONS,
    PRERUN_HELP,
    REORTHO_APPLIES,
    ParameterRange,
    SweepOptions,
    prerun_start,
    summary_dims,
)
from attnphys.dmft.starts import StartSpec
from attnphys.errors import InputError
from attnphys.jobs import Applies, Report, register_job


@register_job
class BifurcationJob(ParameterRange, BifurcationPoint):
    """Orbit/bifurcation diagram with Lyapunov exponents and regimes.

    Cold starts (every value from --start) or continuation chains (--continuation up|down|both: every
    value from the previous value's final state) write the same variables; continuation adds a
    `direction` dimension. Both run on a resumable store: re-running the same command resumes."""

    command: ClassVar[str] = "dmft bifurcation"
    outputs_spec: ClassVar[dict[str, str]] = {"out": "sweep", "plot": "figure"}
    applies: ClassVar[dict[str, Applies]] = {
        **dict.fromkeys(PLOT_OPTIONS, FIGURE_ONLY),
        "chunk": Applies(
            lambda job: job.continuation is None,
            "a continuation runs each chain as one batch (here --continuation {continuation})",
        ),
        "reortho_every": REORTHO_APPLIES,
    }

    start: StartSpec = Field(  # pyright: ignore[reportAssignmentType]  (parsed: validate_default)
        BifurcationOptions.default("start"),
        description="Initial condition: token, checkpoint (the paper's diagrams) or a window FILE;" + PRERUN_HELP,
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
        return prerun_start(v, beta, info.data.get("steps"))

    @model_validator(mode="after")
    def _chains(self):
        if self.continuation is not None and self.executor != "inprocess" and self.continuation != "both":
            raise ValueError("a single continuation chain runs in one process: use --executor inprocess")
        return self

    def arguments(self) -> dict[str, Any]:
        """The keywords of the analysis (:func:`attnphys.dmft.bifurcation`) from this command's options."""
        return dict(
            **self.options_of(BifurcationPoint),
            start=self.start,
            keep_final=self.save_final is not None,
            **self.sweep_options(self.out),
        )

    def analysis(self, **kw):
        """The one analysis this command runs (:func:`attnphys.dmft.bifurcation`) with its options."""
        from attnphys.dmft import bifurcation

        return bifurcation(self.configuration(), self.parameter_sweep(), **self.arguments(), **kw)

    def plan(self):
        """The sweep the analysis would run (:func:`attnphys.dmft.plan_bifurcation`), validated."""
        from attnphys.dmft import plan_bifurcation

        return plan_bifurcation(self.configuration(), self.parameter_sweep(), **self.arguments())

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
        try:
            self.plan()
        except ValidationError as e:
            raise InputError(format_validation(e, type(self))) from None
        except InputError as e:
            if e.field == self.param:
                raise InputError(e.detail, "--start-value/--stop-value") from None
            raise

    def execute(self, progress: bool = True) -> Report:
        from attnphys.dynamics.classify import regime_counts, undetermined_values

        t0 = time.perf_counter()
        ds = self.analysis(store_attrs=self.store_attrs(), progress=progress)
        rows = {
            "dims": summary_dims(ds),
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
        win = Window(jnp.asarray(A), jnp.asarray(pe), jnp.asarray(n, jnp.int32))
        return save_window(win, path, overwrite=True, **extra)  # the job checked the path (--overwrite)


AxisSpec = tuple[str, float, float, int]


@register_job
class PhaseDiagramJob(SweepOptions, PhaseDiagramPoint):
    """Phase diagram over two configuration fields: regime and Lyapunov exponents per point.

    Runs on a resumable store: re-running the same command resumes; a different one is refused."""

    command: ClassVar[str] = "dmft phase-diagram"
    outputs_spec: ClassVar[dict[str, str]] = {"out": "sweep", "plot": "figure"}
    applies: ClassVar[dict[str, Applies]] = {
        "reortho_every": REORTHO_APPLIES,
        "seed": Applies(
            lambda job: False,
            "no start of this command is random, so the per-point seeds it sets are not used (the "
            "correlations' seed is --corr-seed)",
        ),
    }

    x: AxisSpec = Field(("beta_o", 0.0, 3.0, 201), description="FIELD START STOP NUM of the x axis.")
    y: AxisSpec = Field(("beta_att", 0.0, 3.0, 201), description="FIELD START STOP NUM of the y axis.")
    start: StartSpec = Field(  # pyright: ignore[reportAssignmentType]  (parsed: validate_default)
        PhaseDiagramOptions.default("start"),
        description="Initial condition: token, checkpoint (the paper's diagrams) or a window FILE;" + PRERUN_HELP,
    )
    out: Path = Field(Path("phase.zarr"), description="Zarr store; re-running the same command resumes.")
    plot: Path | None = Field(None, description="Figure (PNG): regime map and λ1 heat map.")

    @field_validator("start", mode="before")
    @classmethod
    def _prerun_start(cls, v, info):
        betas = [
            max(a[1], a[2]) for a in (info.data.get("x"), info.data.get("y")) if a is not None and a[0] == "beta_o"
        ]
        return prerun_start(v, max(betas) if betas else None, info.data.get("steps"))

    def swept_fields(self) -> tuple[str, ...]:
        return (self.x[0], self.y[0])

    @model_validator(mode="after")
    def _axes(self):
        if self.x[0] == self.y[0]:
            raise ValueError(f"--x and --y name the same field {self.x[0]!r}")
        return self

    def grid_sweep(self) -> dict[str, tuple]:
        """The two axes as the analysis takes them (``{x: values, y: values}``)."""
        from attnphys.sweeps import Axis

        out = {}
        for opt, spec in (("--x", self.x), ("--y", self.y)):
            try:
                ax = Axis.linspace(*spec)
            except ValidationError as e:
                raise InputError(format_validation(e), opt) from None
            except ValueError as e:
                raise InputError(str(e), opt) from None
            out[ax.name] = ax.values
        return out

    def analysis(self, **kw):
        """The one analysis this command runs (:func:`attnphys.dmft.phase_diagram`) with its options."""
        from attnphys.dmft import phase_diagram

        return phase_diagram(self.configuration(), self.grid_sweep(), **self.arguments(), **kw)

    def arguments(self) -> dict[str, Any]:
        """The keywords of the analysis (:func:`attnphys.dmft.phase_diagram`) from this command's options."""
        return dict(**self.options_of(PhaseDiagramPoint), start=self.start, **self.sweep_options(self.out))

    def plan(self):
        """The sweep the analysis would run (:func:`attnphys.dmft.plan_phase_diagram`), validated."""
        from attnphys.dmft import plan_phase_diagram

        return plan_phase_diagram(self.configuration(), self.grid_sweep(), **self.arguments())

    def inputs_check(self) -> None:
        super().inputs_check()
        try:
            self.plan()
        except InputError as e:
            opt = {self.x[0]: "--x", self.y[0]: "--y"}.get(e.field or "")
            if opt is None:
                raise
            raise InputError(e.detail, opt) from None
        except ValueError as e:  # a point of the grid that the task refuses (e.g. the start at another M)
            raise InputError(str(e), "--x/--y") from None

    def execute(self, progress: bool = True) -> Report:
        from attnphys.dynamics.classify import regime_counts, undetermined_values

        t0 = time.perf_counter()
        ds = self.analysis(store_attrs=self.store_attrs(), progress=progress)
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
