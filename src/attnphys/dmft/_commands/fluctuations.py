"""``attnphys dmft fluctuations``: the finite network's predicted fluctuations around the mean field, and with
``--n`` the same measured over many finite paths (theory: docs/theory/fluctuations.md)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import ClassVar

import numpy as np
from pydantic import Field, model_validator

from attnphys.dmft._analysis_options import CompareFluctuationsPoint, FluctuationsOptions, FluctuationsPoint
from attnphys.dmft._commands._options import ModelOptions, summary_dims
from attnphys.dmft.config import check_schedule
from attnphys.errors import InputError
from attnphys.jobs import Applies, IntValues, Report, only_if_given, register_job

ONLY_WITH_N = only_if_given("n", " (the finite paths beside the prediction; without --n only the prediction runs)")


@register_job
class FluctuationsJob(ModelOptions, CompareFluctuationsPoint):
    """The system-size expansion around the mean-field orbit: predicted mean, O(1/N) bias and covariance of
    every record (one prediction for every N); with ``--n``, finite paths at those sizes beside it.

    The finite network repeats each of the configuration's n_se weight columns N/n_se times, so every N must
    be a multiple of n_se. The designed-weights model has no finite network and is refused."""

    command: ClassVar[str] = "dmft fluctuations"
    outputs_spec: ClassVar[dict[str, str]] = {"out": "result", "plot": "figure"}
    swept: ClassVar[tuple[str, ...]] = ()
    eras: ClassVar[tuple[str, ...]] = ("head",)
    designs: ClassVar[bool] = False
    applies: ClassVar[dict[str, Applies]] = dict.fromkeys(("paths", "seed", "threshold"), ONLY_WITH_N)

    n: IntValues | None = Field(
        None,
        description="Network sizes N to simulate beside the prediction (multiples of n_se; none: the prediction only).",
    )
    stationary: bool = Field(
        FluctuationsOptions.default("stationary"),
        description=FluctuationsOptions.model_fields["stationary"].description,
    )
    out: Path = Field(Path("fluctuations.zarr"), description="Output store (.zarr or .nc).")
    plot: Path | None = Field(
        None, description="Figure (PNG): predicted spread, or with --n std and bias vs N and the separation steps."
    )

    @model_validator(mode="after")
    def _schedule(self):
        check_schedule(self.steps, self.transient)
        if self.start_step >= self.steps:
            raise ValueError(f"--start-step ({self.start_step}) must be less than --steps ({self.steps})")
        return self

    def sizes(self) -> list[int]:
        """The sizes of ``--n``, checked: distinct multiples of n_se."""
        from attnphys.dmft.finite import check_finite_model, network_size

        cfg = check_finite_model(self.configuration())
        sizes = [int(k) for k in self.n or ()]
        if len(set(sizes)) != len(sizes):
            raise InputError(f"sizes must be distinct, got {sizes}", "--n")
        for k in sizes:
            network_size(cfg, k)  # InputError naming --n and the nearest valid sizes
        return sorted(sizes)

    def analysis(self, **kw):
        """The analysis this command runs: :func:`attnphys.dmft.fluctuations` alone, or with ``--n``
        :func:`attnphys.dmft.compare_fluctuations`."""
        from attnphys.dmft import compare_fluctuations, fluctuations

        cfg = self.configuration()
        if self.n:
            return compare_fluctuations(cfg, self.sizes(), **self.options_of(CompareFluctuationsPoint), **kw)
        return fluctuations(cfg, **self.options_of(FluctuationsPoint), stationary=self.stationary)

    def inputs_check(self) -> None:
        from attnphys.dmft.finite import check_finite_model

        try:
            check_finite_model(self.configuration())
        except ValueError as e:
            raise InputError(str(e), "--design" if self.design is not None else "--preset") from None
        if self.stationary and self.n:
            raise InputError("the stationary prediction has no paths to compare; drop --n or --stationary", "--n")
        if self.stationary and self.start_step:
            raise InputError(
                "the stationary prediction starts on the attractor already; drop --start-step", "--start-step"
            )
        self.sizes()
        if not self.stationary:  # the path prediction keeps its moments at every step: refused before it runs
            from attnphys.dmft._api.fluctuations import check_inputs, check_moments_fit

            cfg = self.configuration()
            check_moments_fit(cfg, self.steps, check_inputs(cfg, self.steps, self.transient, None))

    def execute(self, progress: bool = True) -> Report:
        t0 = time.perf_counter()
        ds = self.analysis(progress=progress) if self.n else self.analysis()
        paths = [self.write_result(ds, self.out)]
        rows = {"dims": summary_dims(ds), "wall time": f"{time.perf_counter() - t0:.1f} s"}
        names = [k for k in ds.data_vars if f"{k}_std_ratio" in ds or f"{k}_var" in ds]
        if self.n:
            rows["period of the mean-field records"] = str(ds.attrs["period"])
            sim = json.loads(ds.attrs["simulation_seconds"])
            rows["cost"] = f"prediction {ds.attrs['prediction_seconds']:.1f} s; simulation " + ", ".join(
                f"{s:.1f} s" for s in sim
            )
            rows["paths left the attractor when"] = (
                f"beyond {ds.attrs['outlier_sigmas']:.2f} predicted std on more than half of "
                f"{ds.attrs['outlier_window']} consecutive steps (false-alarm chance <= "
                f"{ds.attrs['outlier_false_alarm']:g} per size)"
            )
            for i, k in enumerate(ds.n.values):
                d = ds.isel(n=i)
                kept = int(d.paths_compared)
                sep = d.separation.values
                n_sep = int(np.isfinite(sep).sum())
                med = float(np.median(np.where(np.isnan(sep), np.inf, sep)))
                hor = float(d.horizon)
                if kept >= 2:
                    ratios = np.concatenate([np.atleast_1d(d[f"{v}_std_ratio"].values) for v in names])
                    gain = [float(d[f"{v}_error_mean_field"]) / float(d[f"{v}_error_corrected"]) for v in names]
                    rows[f"N={k}"] = (
                        f"over {kept} of {ds.sizes['path']} paths: std measured/predicted {np.nanmin(ratios):.3f}–"
                        f"{np.nanmax(ratios):.3f}; mean-field error / corrected error {min(gain):.2f}–{max(gain):.2f}"
                    )
                else:
                    rows[f"N={k}"] = f"{kept} of {ds.sizes['path']} paths stayed on the attractor: nothing compared"
                rows[f"N={k} separation"] = (
                    f"{n_sep} of {ds.sizes['path']} paths deviate >= {ds.attrs['threshold']:g} from the mean field"
                    + (f" (median step {med:g})" if np.isfinite(med) else "")
                    + "; predicted horizon "
                    + (f"step {hor:g}" if np.isfinite(hor) else "beyond the window")
                )
                rows[f"N={k} expansion"] = str(d.validity.values)
        else:
            rows["mode"] = str(ds.attrs.get("prediction", ds.attrs.get("mode")))
            if "period" in ds.attrs:
                rows["period"] = str(ds.attrs["period"])
            if "spectral_radius" in ds.attrs:
                rows["spectral radius"] = f"{float(ds.attrs['spectral_radius']):.4g}"
            for v in names:
                rows[f"{v}: max √(N var)"] = f"{float(np.sqrt(ds[f'{v}_var'].max())):.4g}"
        if self.plot is not None:
            from attnphys.plots import fluctuations_figure, save_figure

            paths.append(save_figure(fluctuations_figure(ds), self.plot, dpi=130))
        return Report(f"finite-size fluctuations → {self.out}", rows, paths, ds)
