"""The authors' newer experiments: two-sided continuation diagrams for P = 2 and for P = 5 (L = 32), seeded
from their checkpoints, with Lyapunov exponents (theory: docs/theory/dmft.md §7.2).

The reference's scheme, in two phases, and its return sweep:

1. **pre-phase, down**: the largest value starts from the authors' checkpoint; every value runs
   ``pre_steps`` steps (nothing recorded) from the final context of the value above it;
2. **pre-phase, up**: the smallest value starts from the down chain's final context there, and the chain
   climbs back, each value from the final context of the value below it;
3. **recorded phase**: every value of each direction restarts from its own pre-phase context and runs
   ``steps`` recorded steps with the leading Lyapunov exponents.

The two directions differ where attractors coexist (hysteresis). The windows that start phase 3 are
stored with the data (``start_A``, ``start_pe``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from attnphys.dmft.config import preset
from attnphys.dmft.reference import REFERENCE_CHECKPOINTS
from attnphys.reproduce._base import AbstractFigure, Work, settings_of
from attnphys.reproduce.diagram import orbit_diagram

if TYPE_CHECKING:
    from attnphys.plots import Filter


def pre_chain(cfg, start, values, direction: str, steps: int, progress: bool = True) -> xr.Dataset:
    """Final windows of a continuation chain of ``steps`` unrecorded steps per value (theory:
    docs/theory/dmft.md §7.2); ``values`` increasing, the chain runs in ``direction``.

    Returns:
        Dataset over ``beta_o`` with ``final_A``, ``final_pe``, ``final_n``.
    """
    from attnphys.dmft import bifurcation

    ds = bifurcation(
        cfg,
        {"beta_o": values},
        start=start,
        steps=steps,
        transient=0,
        exponents=0,
        n_orbit=20,
        continuation=direction,  # pyright: ignore[reportArgumentType]  (up or down)
        keep_final=True,
        progress=progress,
    )
    return ds.isel(direction=0)[["final_A", "final_pe", "final_n"]]


def window_starts(chain: xr.Dataset) -> list:
    """One explicit start per value from a chain's final windows."""
    from attnphys.dmft.starts import WindowStart

    out = []
    for i in range(chain.sizes["beta_o"]):
        n = int(chain.final_n.values[i])
        out.append(
            WindowStart(
                att_window=tuple(map(tuple, chain.final_A.values[i].tolist())),
                pe_window=tuple(map(tuple, chain.final_pe.values[i].tolist())),
                n=n,
            )
        )
    return out


class ContinuationFigure(AbstractFigure):
    """A two-sided continuation diagram over β_o seeded from one of the authors' checkpoints (theory:
    docs/theory/dmft.md §7.2)."""

    figure_options = ("component", "pair", "max_points", "filter")

    def __init__(
        self,
        name: str,
        title: str,
        preset_name: str,
        lo: float,
        hi: float,
        checkpoint: str,
        pre_steps: int = 100_512,
        steps: int = 150_000,
        num: int = 501,
        quick_num: int = 21,
        *,
        seed_beta: float | None = None,
        shows: str = "",
    ):
        self.name, self.title, self.preset_name = name, title, preset_name
        self.lo, self.hi, self.checkpoint = lo, hi, checkpoint
        self.pre_steps, self.steps, self.num, self.quick_num = pre_steps, steps, num, quick_num
        self.source = (
            f"authors' reference code, continuation configuration of [{lo}, {hi}] (P = "
            f"{5 if preset_name == 'paper-pe5' else 2})"
        )
        self.shows = shows
        if seed_beta is None and checkpoint in REFERENCE_CHECKPOINTS:  # the registry's value of the seed
            seed_beta = REFERENCE_CHECKPOINTS[checkpoint].beta_o
        s = self.settings()
        self.full_run = (
            f"{s['num']} values; seeded from their checkpoint"
            + ("" if seed_beta is None else f" at β_o = {seed_beta:g}")
            + "; per value a pre-phase of "
            f"{s['pre_steps']:,} steps, then {s['steps']:,} recorded steps with {s['lyapunov']} exponents"
        )

    def settings(self, quick: bool = False) -> dict[str, Any]:
        s = dict(
            preset=self.preset_name,
            lo=self.lo,
            hi=self.hi,
            num=self.num,
            checkpoint=self.checkpoint,
            pre_steps=self.pre_steps,
            steps=self.steps,
            lyapunov=3,
            n_orbit=1000,
            max_section=1000,
            section_tol=1e-3,
            chunk=512,
        )
        if quick:
            s.update(num=self.quick_num, pre_steps=2000, steps=2000, n_orbit=500, chunk=2 * self.quick_num)
        return s

    def work(self, quick: bool = False) -> Work:
        s = self.settings(quick)
        return Work(
            sequential=2 * s["num"] * s["pre_steps"],
            lyapunov=2 * s["num"] * s["steps"],
            compiles=5,
            pe5=self.preset_name == "paper-pe5",
        )

    def compute(self, settings: dict[str, Any], progress: bool = True) -> xr.Dataset:
        from attnphys.dmft.reference import reference_checkpoint

        s = settings
        cfg = preset(s["preset"])
        values = np.linspace(s["lo"], s["hi"], s["num"])
        seed = str(reference_checkpoint(s["checkpoint"]))
        down = pre_chain(cfg, seed, values, "down", s["pre_steps"], progress)
        up = pre_chain(cfg, window_starts(down)[0], values, "up", s["pre_steps"], progress)
        parts: list[xr.Dataset] = []
        for direction, chain in (("down", down), ("up", up)):
            starts = window_starts(chain)
            ds = orbit_diagram(
                cfg,
                values,
                start=starts[0],
                point_starts=starts,
                steps=s["steps"],
                transient=0,
                lyapunov=s["lyapunov"],
                n_orbit=s["n_orbit"],
                max_section=s["max_section"],
                section_tol=s["section_tol"],
                chunk=s["chunk"],
                progress=progress,
            )
            ds["start_A"] = (
                ("beta_o", "lag", "feature"),
                chain.final_A.values,
                {
                    "long_name": "context window that starts the recorded phase: attention outputs, newest "
                    "first (the pre-phase's final window)"
                },
            )
            ds["start_pe"] = (
                ("beta_o", "lag", "bit"),
                chain.final_pe.values,
                {"long_name": "context window that starts the recorded phase: positional codes"},
            )
            parts.append(ds.expand_dims(direction=[direction]))
        ds = xr.concat(parts, dim="direction", combine_attrs="override")
        ds.direction.attrs.update(long_name="direction of the continuation chain")
        ds.attrs["start"] = f"continuation from the reference checkpoint {s['checkpoint']}"
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
        cfg = preset(s["preset"])
        title = (
            f"{self.title} (L = {cfg.L}) — {s['num']} values, {s['pre_steps']:,} pre-phase + "
            f"{s['steps']:,} recorded steps per value; seeded from {s['checkpoint']}"
        )
        return bifurcation_figure(ds, component=component, pair=pair, max_points=max_points, filter=filter, title=title)

    def caption(self, ds: xr.Dataset) -> str:
        from attnphys.dynamics.classify import regime_counts

        s = settings_of(ds)
        cfg = preset(s["preset"])
        lines = [
            f"{self.source}: {self.title}.",
            (
                f"Network: preset {s['preset']} (M = 3, P = {cfg.P}, L = {cfg.L}, N_se = 99, seed 1, β_att = 2.2, "
                f"s_att = 100, ε = 0.02). β_o in [{s['lo']}, {s['hi']}], {s['num']} values. Down: the largest value "
                f"starts from the authors' checkpoint {s['checkpoint']}, every value runs a pre-phase of "
                f"{s['pre_steps']:,} steps from the final context of the value above; up: the smallest value starts "
                f"from the down chain's final context and the chain climbs back. Every value then restarts from its "
                f"own pre-phase context for {s['steps']:,} recorded steps with the three leading Lyapunov exponents. "
                f"Drawn as Fig. 3: mo_se[0], periodic values in full, the others as zero-plane sections at mo_se[1] = 0."
            ),
        ]
        for d in ds.direction.values:
            lines.append(f"  {d}: " + regime_counts(ds.regime.sel(direction=d).values))
        differ = int(np.sum(ds.regime.sel(direction="down").values != ds.regime.sel(direction="up").values))
        lines.append(f"Values whose regime differs between the two directions (coexisting attractors): {differ}.")
        return "\n".join(lines) + "\n"


CONTINUATIONS = (
    ContinuationFigure(
        "cont-pe2",
        "two-sided continuation, P = 2",
        "paper",
        1.24,
        1.28,
        "exp_pe2__general_beta_idx-214_value_1.284.npz",
        shows="the authors' two-sided continuation diagram, P = 2, β_o ∈ [1.24, 1.28]",
    ),
    ContinuationFigure(
        "cont-pe2-zoom",
        "two-sided continuation, P = 2, zoom",
        "paper",
        1.264,
        1.277,
        "exp_pe2__zoom-1_beta_idx-463_value_1.277_window_rightmost.npz",
        shows="the same over [1.264, 1.277]",
    ),
    ContinuationFigure(
        "cont-pe5",
        "two-sided continuation, P = 5",
        "paper-pe5",
        1.25,
        1.55,
        "exp_pe5__general_beta_idx-258_value_1.554_window_chpt.npz",
        shows="P = 5 positional bits, context L = 32, β_o ∈ [1.25, 1.55]",
    ),
    ContinuationFigure(
        "cont-pe5-zoom",
        "two-sided continuation, P = 5, zoom",
        "paper-pe5",
        1.364,
        1.43,
        "exp_pe5__zoom1_beta_idx-300_value_1.43_window_chpt.npz",
        shows="the same over [1.364, 1.43]",
    ),
)
