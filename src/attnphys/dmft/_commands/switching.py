"""``attnphys dmft switching``: the finite network's rare switching between the coexisting attractors of its mean
field, least actions beside measured escape times (theory: docs/theory/switching.md §6)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

import numpy as np
from pydantic import Field

from attnphys._messages import option_name
from attnphys.dmft._analysis_options import SwitchingOptions, SwitchingPoint
from attnphys.dmft._commands._options import ModelOptions, summary_dims
from attnphys.errors import InputError
from attnphys.jobs import Applies, IntValues, Report, register_job

_CENSUS = {"steps": "census_steps", "transient": "census_transient"}
"""The census's options under their names in this command."""


def _census_words(text: str) -> str:
    """A message of the census with its options written as this command's (``--steps`` or a leading
    ``steps:`` → ``--census-steps``)."""
    import re

    def word(m: re.Match) -> str:
        return option_name(_CENSUS[m.group(1)])

    text = re.sub(r"^(steps|transient)(?=:|$)", word, text)
    return re.sub(r"(?<![\w-])--(steps|transient)\b(?!-)", word, text)


def _g(x: float) -> str:
    return f"{x:.4g}"


@register_job
class SwitchingJob(ModelOptions, SwitchingPoint):
    """Rare switching of the finite network between the attractors of its mean field: per periodic attractor
    of the census, the least action ΔS to the nearest other attractor under the Gaussian and the binomial
    rate, and the mean escape time of the finite network at each size N of ``--n`` with its 95% interval,
    with the slope of ln τ against N beside ΔS; each least-action path is stored with the orbits, the step at
    which it crosses the basin boundary and the saddle (edge state) there.

    The census must find two stable periodic attractors (at β_att = 2.2 the paper's network has a period-28
    and a period-56 one at --beta-o 1.27). The finite network repeats each of the configuration's n_se weight
    columns N/n_se times, so every N must be a multiple of n_se. The designed-weights model has no finite
    network and is refused (theory: docs/theory/switching.md §2, §3, §5, §6)."""

    command: ClassVar[str] = "dmft switching"
    outputs_spec: ClassVar[dict[str, str]] = {"out": "result", "plot": "figure", "path_plot": "figure"}
    swept: ClassVar[tuple[str, ...]] = ()
    eras: ClassVar[tuple[str, ...]] = ("head",)
    designs: ClassVar[bool] = False
    applies: ClassVar[dict[str, Applies]] = {}

    n: IntValues = Field(
        SwitchingOptions.default("sizes"), description=SwitchingOptions.model_fields["sizes"].description
    )
    out: Path = Field(Path("switching.zarr"), description="Output store (.zarr or .nc).")
    plot: Path | None = Field(
        None, description="Figure (PNG): escape times against N with the fitted slope, and ΔS beside the slope."
    )
    path_plot: Path | None = Field(
        None,
        description="Figure (PNG): each least-action path with both attractors, the boundary crossing and the "
        "saddle, in the plane of the attractors' centres and the crossing.",
    )

    def analysis(self, **kw):
        """The analysis this command runs: :func:`attnphys.dmft.switching` at the configuration's β_o."""
        from attnphys.dmft import switching

        cfg = self.configuration()
        return switching(cfg, beta_o=float(cfg.beta_o), sizes=self.n, **self.options_of(SwitchingPoint), **kw)

    def inputs_check(self) -> None:
        """The model, the sizes and the census's schedule, named as this command's options; the analysis
        checks the rest (its largest counts, the rules between its options) before it computes anything."""
        super().inputs_check()
        from attnphys.dmft.finite import check_finite_model, network_size

        try:
            cfg = check_finite_model(self.configuration())
        except ValueError as e:
            raise InputError(str(e), "--design" if self.design is not None else "--preset") from None
        for k in self.n:
            network_size(cfg, k)  # InputError naming --n and the nearest valid sizes
        from attnphys.dmft import plan_attractors

        try:  # the census's own rules (its schedule against the longest period), before anything runs
            plan_attractors(
                cfg,
                ics=self.ics,
                steps=self.census_steps,
                transient=self.census_transient,
                exponents=1,
                seed=self.seed,
            )
        except InputError as e:
            raise InputError(_census_words(e.detail), _census_words(e.field) if e.field else None) from None

    def execute(self, progress: bool = True) -> Report:
        t0 = time.perf_counter()
        try:
            ds = self.analysis()
        except InputError as e:
            if e.field != "cfg":
                raise
            raise InputError(
                f"{e.detail} (another --beta-o, or more --ics or --census-steps, may find them)", "--beta-o"
            ) from None
        paths = [self.write_result(ds, self.out)]
        rows = {"dims": summary_dims(ds), "wall time": f"{time.perf_counter() - t0:.1f} s"}
        period = ds.period.values
        for i in ds.attractor.values:
            a = ds.sel(attractor=i)
            j = int(a.target)
            rows[f"attractor {i}"] = (
                f"period {int(a.period)}, census basin fraction {float(a.basin_fraction):.3f}; nearest other: "
                f"attractor {j} (period {int(period[j])}) at distance {float(a.distance):.4g}"
            )
            rows[f"attractor {i} ΔS"] = "; ".join(
                f"{w} {_g(float(a.action.sel(law=w)))} (horizon {int(a.horizon.sel(law=w))}, phase "
                f"{int(a.phase.sel(law=w))}{'' if int(a.action_converged.sel(law=w)) else ', not converged'})"
                for w in ds.law.values
            )
            for n in ds["size"].values:
                c = a.sel(size=n)
                tau = (
                    f"τ = {_g(float(c.escape_time))} steps [{_g(float(c.escape_time_low))}, "
                    f"{_g(float(c.escape_time_high))}]"
                    if int(c.escapes)
                    else f"no run escaped: τ ≥ {_g(float(c.escape_time_low))} steps (95%)"
                )
                rows[f"attractor {i} N={int(n)}"] = f"{tau}; {int(c.escapes)} escaped, {int(c.censored)} censored"
            slope = (
                f"d ln τ/dN = {_g(float(a.slope))} [{_g(float(a.slope_low))}, {_g(float(a.slope_high))}]"
                if np.isfinite(float(a.slope))
                else "no slope (escapes at fewer than two sizes)"
            )
            rows[f"attractor {i} slope"] = f"{slope}; ΔS " + ", ".join(
                f"{_g(float(a.action.sel(law=w)))} ({w})" for w in ds.law.values
            )
        if self.plot is not None:
            from attnphys.plots import save_figure, switching_figure

            paths.append(save_figure(switching_figure(ds), self.plot, dpi=130))
        if self.path_plot is not None:
            from attnphys.plots import save_figure, switching_path_figure

            paths.append(save_figure(switching_path_figure(ds), self.path_plot, dpi=130))
        return Report(f"switching between attractors → {self.out}", rows, paths, ds)
