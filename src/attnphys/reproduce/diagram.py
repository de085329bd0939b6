"""Fig. 3 of the paper: the bifurcation diagram over β_o and its zoom (theory: docs/theory/dmft.md §7.1, §8)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from attnphys.dmft.config import preset
from attnphys.reproduce._base import AbstractFigure, Work, settings_of

if TYPE_CHECKING:
    from attnphys.plots import Filter


def orbit_diagram(
    cfg,
    values,
    *,
    start,
    steps: int,
    transient: int,
    lyapunov: int,
    n_orbit: int,
    max_section: int,
    section_tol: float,
    chunk: int,
    progress: bool,
    point_starts=(),
) -> xr.Dataset:
    """Cold-start orbit diagram over β_o (:func:`attnphys.dmft.bifurcation` in memory)."""
    from attnphys.dmft import bifurcation

    ds = bifurcation(
        cfg,
        {"beta_o": values},
        start=list(point_starts) if point_starts else start,
        steps=steps,
        transient=transient,
        exponents=lyapunov,
        n_orbit=n_orbit,
        max_section=max_section,
        section_tol=section_tol,
        chunk=chunk,
        progress=progress,
    )
    ds.attrs.pop("run_mode", None)
    if point_starts:
        ds.attrs.pop("sweep", None)  # the definition holds every start window: they are stored as data instead
    ds.beta_o.attrs.update(long_name="output inverse temperature β_o")
    return ds


class DiagramFigure(AbstractFigure):
    """A cold-start bifurcation diagram over β_o from the published β_o = 3 checkpoint, drawn as published:
    periodic values in full, the others as zero-plane sections (theory: docs/theory/dmft.md §7.1, §8)."""

    figure_options = ("component", "pair", "max_points", "filter")

    def __init__(
        self, name: str, title: str, lo: float, hi: float, num: int = 4001, quick_num: int = 121, *, shows: str = ""
    ):
        self.name, self.title, self.lo, self.hi, self.num, self.quick_num = name, title, lo, hi, num, quick_num
        self.source = "arXiv 2406.07247, Fig. 3" + ("a" if name.endswith("a") else "b")
        self.shows = shows
        s = self.settings()
        self.full_run = (
            f"{s['num']} values, each from the published β_o = 3 checkpoint; {s['steps']:,} steps, "
            f"{s['transient']:,} discarded, {s['steps'] - s['transient']:,} recorded; {s['lyapunov']} Lyapunov exponents"
        )

    def settings(self, quick: bool = False) -> dict[str, Any]:
        full = dict(
            preset="paper",
            lo=self.lo,
            hi=self.hi,
            num=self.num,
            steps=120_000,
            transient=100_000,
            lyapunov=3,
            n_orbit=1000,
            max_section=1000,
            section_tol=1e-3,
            start="checkpoint",
            chunk=1024,
        )
        if quick:
            full.update(num=self.quick_num, steps=12_000, transient=10_000, chunk=self.quick_num)
        return full

    def work(self, quick: bool = False) -> Work:
        s = self.settings(quick)
        return Work(plain=s["num"] * s["transient"], lyapunov=s["num"] * (s["steps"] - s["transient"]), compiles=4)

    def compute(self, settings: dict[str, Any], progress: bool = True) -> xr.Dataset:
        s = settings
        cfg = preset(s["preset"])
        ds = orbit_diagram(
            cfg,
            np.linspace(s["lo"], s["hi"], s["num"]),
            start=s["start"],
            steps=s["steps"],
            transient=s["transient"],
            lyapunov=s["lyapunov"],
            n_orbit=s["n_orbit"],
            max_section=s["max_section"],
            section_tol=s["section_tol"],
            chunk=s["chunk"],
            progress=progress,
        )
        return self.stamp(ds, s, figure=self.name, source=self.source)

    def figure(
        self,
        ds: xr.Dataset,
        component: int | None = None,
        pair: str | None = None,
        max_points: int | None = None,
        filter: Filter = "library",
        **_: Any,
    ):
        from attnphys.plots import bifurcation_figure

        s = settings_of(ds)
        title = (
            f"{self.title} — {s['num']} values of β_o, {s['steps'] - s['transient']:,} recorded steps after "
            f"{s['transient']:,} from the β_o = 3 checkpoint"
        )
        return bifurcation_figure(ds, component=component, pair=pair, max_points=max_points, filter=filter, title=title)

    def caption(self, ds: xr.Dataset) -> str:
        from attnphys.dynamics.classify import regime_counts

        s = settings_of(ds)
        return (
            f"{self.source}: {self.title}.\n"
            f"Paper network (preset {s['preset']}: M = 3, L = 4, P = 2, N_se = 99, seed 1, β_att = 2.2, s_att = 100, "
            f"ε = 0.02; mo_se recorded with the factor 1 − ε). β_o in [{s['lo']}, {s['hi']}], {s['num']} values, each "
            f"from the published β_o = 3 checkpoint; {s['steps']:,} steps, the first {s['transient']:,} discarded, "
            f"{s['steps'] - s['transient']:,} recorded. Drawn: mo_se[0]; values labelled fixed point or periodic "
            f"show every distinct value of their last {s['n_orbit']} samples, the others the zero-plane section "
            f"mo_se[0] where |mo_se[1]| <= {s['section_tol']:g} over all recorded steps (at most "
            f"{s['max_section']} per value). Below: the three leading Lyapunov exponents over the recorded steps.\n"
            f"Regimes (library labels): {regime_counts(ds.regime.values, ds.regime_reason.values)}.\n"
        )


FIG3A = DiagramFigure(
    "fig3a",
    "bifurcation diagram of mo_se[0] over β_o",
    0.0,
    3.0,
    4001,
    201,
    shows="Fig. 3a: bifurcation diagram of `mo_se[0]` over β_o ∈ [0, 3]",
)
FIG3B = DiagramFigure(
    "fig3b", "zoom of the bifurcation diagram", 1.24, 1.28, 4001, 121, shows="Fig. 3b: the zoom β_o ∈ [1.24, 1.28]"
)
