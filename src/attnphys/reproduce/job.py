"""``attnphys reproduce NAME``: one command per figure (theory: docs/theory/dmft.md §8)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from attnphys.errors import InputError
from attnphys.jobs import AbstractJob, Applies, Report, register_job


def _figures() -> Mapping[str, Any]:
    from attnphys.reproduce import FIGURES

    return FIGURES


@register_job
class ReproduceJob(AbstractJob):
    """Reproduce a figure of the DMFT paper (arXiv 2406.07247) or one of the authors' newer experiments.

    NAME is one of those `attnphys reproduce list` shows, with the time the full run takes on this
    machine. A run writes a folder with the data (NAME.zarr, the full configuration in its attributes),
    the figure (NAME.png and NAME.pdf) and a caption stating the settings (NAME.txt). --quick runs a
    reduced version that takes about a minute."""

    command: ClassVar[str] = "reproduce"
    cli_arguments: ClassVar[tuple[str, ...]] = ("name",)
    outputs_spec: ClassVar[dict[str, str]] = {"out": "folder"}
    applies: ClassVar[dict[str, Applies]] = {
        **{
            name: Applies(lambda job: job.name != "list", "list runs nothing; give a figure's name")
            for name in ("quick", "overwrite")
        },
        **{
            name: Applies(
                lambda job, name=name: job.name != "list" and name in _figures()[job.name].figure_options,
                "applies to the diagrams only (fig3a, fig3b, cont-*), not to {name}",
            )
            for name in ("filter", "component", "pair", "max_points")
        },
        "calibrate": Applies(lambda job: job.name == "list", "applies to list only"),
    }

    name: str = Field(
        description="What to reproduce: list, or the name of a figure (attnphys reproduce list shows them)."
    )
    quick: bool = Field(False, description="Run the reduced version (about a minute).")
    out: Path | None = Field(None, description="Output folder (default: NAME, or NAME-quick with --quick).")
    filter: Literal["library", "reference"] = Field(
        "library",
        description="Diagrams: draw values by the library's regime labels, or by the published figures' count filter.",
    )
    component: int | None = Field(
        None, ge=0, description="Diagrams: plotted component of mo_se (default 0, or that of --pair)."
    )
    pair: str | None = Field(None, description="Diagrams: zero-plane section pair f|g (0|1, 0|2, 1|0 or 2|0).")
    max_points: int | None = Field(None, ge=1, description="Diagrams: most points drawn per value (default: all).")
    calibrate: bool = Field(True, description="list: measure this machine's speed first (a few seconds).")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        names = sorted(_figures())
        if v != "list" and v not in names:
            raise ValueError(f"unknown figure {v!r}; choose list or one of {', '.join(names)}")
        return v

    @model_validator(mode="before")
    @classmethod
    def _default_out(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("out") is None and data.get("name") not in (None, "list"):
            data = {**data, "out": Path(f"{data['name']}{'-quick' if data.get('quick') else ''}")}
        return data

    def inputs_check(self) -> None:
        if self.name == "list":
            if self.out is not None:
                raise InputError("list writes nothing; give --out with a figure's name", "--out")
            return
        if self.pair is not None or self.component is not None:
            from attnphys.plots import choose_pair

            try:
                choose_pair(["0|1", "0|2", "1|0", "2|0"], 3, self.component, self.pair)
            except ValueError as e:
                raise InputError(str(e), "--pair" if self.pair else "--component") from None

    def execute(self, progress: bool = True) -> Report:
        if self.name == "list":
            return self._list()
        assert self.out is not None  # set by _default_out for every figure
        fig = _figures()[self.name]
        settings = fig.settings(self.quick)
        t0 = time.perf_counter()
        ds = fig.compute(settings, progress=progress)
        elapsed = time.perf_counter() - t0
        ds.attrs["quick"] = int(self.quick)
        ds.attrs["wall_time_s"] = round(elapsed, 3)
        ds.attrs.update(self.provenance())
        figure = fig.figure(
            ds, component=self.component, pair=self.pair, max_points=self.max_points, filter=self.filter
        )
        caption = (
            fig.caption(ds)
            + (f"Reduced run (--quick): {json.dumps(settings)}.\n" if self.quick else "")
            + f"Computed in {elapsed:.1f} s with attnphys reproduce {self.name}{' --quick' if self.quick else ''}.\n"
        )

        def fill(tmp: Path) -> None:
            from attnphys.io import write_dataset
            from attnphys.plots import save_figure

            write_dataset(ds, tmp / f"{self.name}.zarr")
            for suffix in (".png", ".pdf"):
                save_figure(figure, tmp / f"{self.name}{suffix}", dpi=150)
            (tmp / f"{self.name}.txt").write_text(caption, encoding="utf-8")

        self.write_folder(self.out, fill)
        names = [f"{self.name}{s}" for s in (".zarr", ".png", ".pdf", ".txt")]
        rows = {
            "figure": f"{fig.source}: {fig.title}",
            "settings": json.dumps(settings),
            "wall time": f"{elapsed:.1f} s",
            "files": ", ".join(names),
        }
        return Report(f"reproduce {self.name} → {self.out}", rows, [self.out / n for n in names], ds)

    def _list(self) -> Report:
        from attnphys.reproduce._base import describe_seconds
        from attnphys.reproduce.timing import DEFAULT, calibrate

        rates = calibrate() if self.calibrate else DEFAULT
        rows = {}
        for name, fig in _figures().items():
            full, quick = fig.work(False).seconds(rates), fig.work(True).seconds(rates)
            rows[name] = (
                f"{fig.source}: {fig.title}. Full run ≈ {describe_seconds(full)} here "
                f"(--quick ≈ {describe_seconds(quick)})"
            )
        how = "measured on this machine" if self.calibrate else "of the development machine"
        rows["speed"] = f"{rates.plain:.3g} point-steps/s ({how}); estimates are ±50%"
        return Report("attnphys reproduce NAME [--quick] --out DIR", rows)
