"""``attnphys dmft finite`` and ``attnphys dmft converge``: the finite-N network and its approach to the mean
field (theory: docs/theory/dmft.md §2)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

from pydantic import Field, model_validator

from attnphys.dmft._analysis_options import ConvergePoint, FinitePoint
from attnphys.dmft._commands._options import ModelOptions, summary_dims
from attnphys.errors import InputError
from attnphys.jobs import IntValues, Report, Values, register_job


@register_job
class FiniteJob(ModelOptions, FinitePoint):
    """Sample paths of the finite-N stochastic network with the mean field's conventions.

    The network repeats each of the configuration's n_se weight columns N/n_se times, so N must be a
    multiple of n_se (the mean field and the finite network then share every correlation tensor)."""

    command: ClassVar[str] = "dmft finite"
    swept: ClassVar[tuple[str, ...]] = ("beta_o",)
    eras: ClassVar[tuple[str, ...]] = ("head",)
    designs: ClassVar[bool] = False

    n: int = Field(99_000, ge=1, description="Semantic bits N of the finite network (a multiple of n_se).")
    out: Path = Field(Path("finite.zarr"), description="Output store (.zarr or .nc).")

    def analysis(self, **kw):
        """The one analysis this command runs (:func:`attnphys.dmft.finite_trajectories`) with its options."""
        from attnphys.dmft import finite_trajectories

        return finite_trajectories(
            self.configuration(), self.n, sweep=self.sweep(), **self.options_of(FinitePoint), **kw
        )

    def plan(self):
        """The sweep the analysis would run (:func:`attnphys.dmft.plan_finite_trajectories`), validated."""
        from attnphys.dmft import plan_finite_trajectories

        return plan_finite_trajectories(
            self.configuration(), self.n, sweep=self.sweep(), **self.options_of(FinitePoint)
        )

    def inputs_check(self) -> None:
        from attnphys.dmft.finite import check_finite_model, network_size

        network_size(check_finite_model(self.configuration()), self.n)
        if self.per_bit and self.n * self.paths > 50_000_000:
            raise InputError(
                f"sampling every bit keeps N × paths = {self.n * self.paths} bits in memory; use fewer or drop "
                "--per-bit",
                "--per-bit",
            )
        self.plan()

    def execute(self, progress: bool = True) -> Report:
        t0 = time.perf_counter()
        ds = self.analysis(progress=progress)
        paths = [self.write_result(ds, self.out)]
        rows = {
            "dims": summary_dims(ds),
            "engine": ds.attrs["engine"],
            "wall time": f"{time.perf_counter() - t0:.2f} s",
        }
        return Report(f"finite network → {self.out}", rows, paths, ds)


@register_job
class ConvergeJob(ModelOptions, ConvergePoint):
    """How finite-N paths approach the mean field as N grows; fitted slopes over the largest three decades.

    Each N is rounded to the nearest multiple of n_se (the network repeats the configuration's columns)."""

    command: ClassVar[str] = "dmft converge"
    outputs_spec: ClassVar[dict[str, str]] = {"out": "result", "plot": "figure"}
    swept: ClassVar[tuple[str, ...]] = ("beta_o",)
    eras: ClassVar[tuple[str, ...]] = ("head",)
    designs: ClassVar[bool] = False

    beta_o: Values | None = Field((0.5, 1.0, 3.0), description="β_o values.")
    n: IntValues = Field(
        (100, 1000, 10_000, 100_000, 1_000_000),
        description="Network sizes N (each rounded to the nearest multiple of n_se; at least two).",
    )
    out: Path = Field(Path("converge.zarr"), description="Output store (.zarr or .nc).")
    plot: Path | None = Field(None, description="Figure (PNG): distances vs N, log–log, with fitted slopes.")

    @model_validator(mode="after")
    def _sizes(self):
        bad = [v for v in self.n if v < 1]
        if bad:
            raise ValueError(f"--n: network sizes must be positive, got {bad}")
        return self

    def sizes(self) -> list[int]:
        """The sizes: each N rounded to the nearest multiple of n_se; at least two distinct ones."""
        from attnphys.dmft.finite import check_finite_model

        n_se = check_finite_model(self.configuration()).n_se
        sizes = [max(1, round(int(k) / n_se)) * n_se for k in self.n]
        if len(set(sizes)) != len(sizes):
            raise InputError(f"sizes {list(self.n)} round to repeated multiples of n_se = {n_se}: {sizes}", "--n")
        if len(sizes) < 2:
            raise InputError("give at least two network sizes (a slope needs two points)", "--n")
        return sorted(sizes)

    def sweep(self) -> dict[str, tuple[float, ...]]:
        """Every β_o given, even one: the result always has a ``beta_o`` dim."""
        return {"beta_o": self.beta_o or (self.configuration().beta_o,)}

    def analysis(self, **kw):
        """The one analysis this command runs (:func:`attnphys.dmft.converge`) with its options."""
        from attnphys.dmft import converge

        return converge(self.configuration(), self.sizes(), sweep=self.sweep(), **self.options_of(ConvergePoint), **kw)

    def plan(self):
        """The sweep the analysis would run (:func:`attnphys.dmft.plan_converge`), validated."""
        from attnphys.dmft import plan_converge

        return plan_converge(self.configuration(), self.sizes(), sweep=self.sweep(), **self.options_of(ConvergePoint))

    def inputs_check(self) -> None:
        super().inputs_check()
        self.plan()

    def execute(self, progress: bool = True) -> Report:
        from attnphys.dmft._convergence import slope_text

        t0 = time.perf_counter()
        ds = self.analysis(progress=progress)
        paths = [self.write_result(ds, self.out)]
        rows = {"N": ", ".join(str(k) for k in ds.n.values), "wall time": f"{time.perf_counter() - t0:.1f} s"}
        for b in ds.beta_o.values:
            d = ds.sel(beta_o=b)
            rows[f"β_o={b:g}"] = (
                f"RMS slope {slope_text(d, 'slope')}, long-run statistics slope {slope_text(d, 'stat_slope')} "
                f"(95% intervals); RMS at largest N {float(d.rms_deviation[-1]):.2e} (predicted "
                f"{float(d.rms_predicted[-1]):.2e}), long-run distance "
                f"{float(d.stat_distance[-1]):.2e} ± {float(d.stat_noise[-1]):.1e} (sampling noise)"
            )
        if self.plot is not None:
            from attnphys.plots import converge_figure, save_figure

            paths.append(save_figure(converge_figure(ds), self.plot, dpi=130))
        return Report(f"finite-N convergence → {self.out}", rows, paths, ds)
