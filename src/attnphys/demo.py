"""``attnphys demo``: an end-to-end showcase of the three pillars, written into one folder."""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

from pydantic import Field, model_validator

from attnphys.jobs import AbstractJob, Report, register_job

SCALES = {
    # trajectory (steps, transient); bifurcation (values, steps, transient); claims (all, or those of the
    # exponential-family theory); token cloud (tokens, layers, saved every); probe sentences
    "quick": dict(
        trajectory=(20_000, 10_000), bifurcation=(41, 4_000, 3_000), all_claims=False, cloud=(256, 30, 5), sentences=16
    ),
    "default": dict(
        trajectory=(60_000, 40_000),
        bifurcation=(101, 6_000, 4_000),
        all_claims=False,
        cloud=(512, 50, 10),
        sentences=24,
    ),
    "full": dict(
        trajectory=(175_000, 100_000),
        bifurcation=(401, 30_000, 20_000),
        all_claims=True,
        cloud=(1024, 100, 10),
        sentences=200,
    ),
}
"""The sizes of the demo's runs: ``default`` shows every pillar in about a minute and a half on two cores
(compilation included), ``quick`` in less, ``full`` at the sizes of the README's figures (minutes)."""


@register_job
class DemoJob(AbstractJob):
    """End-to-end showcase: DMFT trajectory and bifurcation diagram, the verified claims, token clouds, a
    probe of MiniLM."""

    command: ClassVar[str] = "demo"
    outputs_spec: ClassVar[dict[str, str]] = {"out": "folder"}

    out: Path = Field(Path("demo-out"), description="Folder the demo writes into.")
    quick: bool = Field(False, description="Smaller runs (seconds).")
    full: bool = Field(False, description="The runs at the sizes of the README's figures (minutes).")

    @model_validator(mode="after")
    def _one_scale(self):
        if self.quick and self.full:
            raise ValueError("--quick and --full exclude each other: give one of them")
        return self

    @property
    def scale(self) -> str:
        return "quick" if self.quick else "full" if self.full else "default"

    def execute(self, progress: bool = True) -> Report:
        rows: dict[str, str] = {}
        self.write_folder(self.out, lambda tmp: self._fill(tmp, rows, progress))
        return Report(f"attnphys demo → {self.out} ({self.scale} sizes)", rows, [self.out])

    def _fill(self, out: Path, rows: dict, progress: bool) -> None:
        import numpy as np

        from attnphys.dmft import bifurcation, preset, trajectories
        from attnphys.io import write_dataset
        from attnphys.plots import bifurcation_figure, save_figure, sections_figure, trajectory_figures

        size = SCALES[self.scale]
        figs = out / "figures"
        cfg = preset("paper", beta_o=1.26)
        steps, transient = size["trajectory"]
        t0 = time.perf_counter()
        ds = trajectories(cfg, start="checkpoint", steps=steps, transient=transient)
        write_dataset(ds, out / "trajectory.zarr")
        for name, f in trajectory_figures(ds).items():
            save_figure(f, figs / f"trajectory_{name}.png")
        rows["1. DMFT trajectory"] = (
            f"paper preset, β_o = 1.26 from the published checkpoint, {steps} steps in "
            f"{time.perf_counter() - t0:.2f} s → trajectory.zarr, figures/"
        )
        num, steps, transient = size["bifurcation"]
        t0 = time.perf_counter()
        bif = bifurcation(
            cfg,
            {"beta_o": np.linspace(0.0, 3.0, num)},
            start="checkpoint",
            steps=steps,
            transient=transient,
            exponents=3,
            progress=progress,
        )
        write_dataset(bif, out / "bifurcation.zarr")
        save_figure(bifurcation_figure(bif), figs / "bifurcation.png")
        save_figure(sections_figure(bif), figs / "bifurcation_sections.png")
        rows["2. bifurcation diagram"] = (
            f"{num} values of β_o in [0, 3], {steps} steps each with the top 3 Lyapunov "
            f"exponents and regimes, {time.perf_counter() - t0:.2f} s → bifurcation.zarr"
        )
        from attnphys.verify import all_claims, run_claims

        t0 = time.perf_counter()
        every = all_claims()
        # the claims of the exponential-family theory (and Hopfield's); the long ones run simulations
        chosen = every if size["all_claims"] else tuple(c for c in every if not c.long)
        claims = run_claims(0, chosen)
        n_ok = sum(r["passed"] for r in claims)
        which = "claims" if size["all_claims"] else "claims of the exponential-family theory"
        rows["3. attnphys verify"] = (
            f"{n_ok}/{len(claims)} {which} hold numerically ({time.perf_counter() - t0:.1f} s; `attnphys verify` "
            f"checks all {len(every)})"
        )
        from attnphys.clouds import initial_cloud, run_cloud, standard_layer
        from attnphys.plots import clouds_figures

        t0 = time.perf_counter()
        spread = []
        tokens, layers, every_layer = size["cloud"]
        for norm in ("sphere", "layernorm"):
            X0 = initial_cloud("gaussian", tokens, 16)
            ds = run_cloud(
                X0,
                standard_layer(norm, beta=4.0 if norm == "sphere" else 1.0),
                layers,
                every_layer,
                (0, 10, layers),
                attrs=dict(title=f"gaussian cloud, norm={norm}"),
            )
            write_dataset(ds, out / f"clouds_{norm}.zarr")
            for name, f in clouds_figures(ds).items():
                save_figure(f, figs / (f"clouds_{norm}.png" if name == "statistics" else f"clouds_{norm}_{name}.png"))
            spread.append(
                f"{norm}: angular spread {float(ds.angular_spread[0]):.3f} → {float(ds.angular_spread[-1]):.3f}"
            )
        rows["4. token clouds"] = "; ".join(spread) + f" ({time.perf_counter() - t0:.1f} s)"
        from attnphys.probes import probe, write_outputs

        t0 = time.perf_counter()
        ds = probe("minilm", max_sentences=size["sentences"], log=lambda *a: None)
        write_outputs(ds, out / "probe")
        rows["5. probe of all-MiniLM-L6-v2"] = (
            f"{ds.attrs['n_sentences']} sentences → probe/report.md ({time.perf_counter() - t0:.1f} s)"
        )
