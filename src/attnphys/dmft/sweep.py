"""The DMFT analysis as a sweep task: orbits, Lyapunov exponents and regimes over any grid of
configuration fields (spec ``dmft.md`` §5–6), run by :mod:`attnphys.sweeps`.

Grid axes may name any configuration field (``beta_o``, ``beta_att``, ``epsilon``, ``M``, ``L``,
``n_se``, …) or ``seed`` (the correlations' seed). Points that differ only in β_o, β_att and ε share
one vectorised batch; the other fields split a chunk into groups with their own couplings. Variables
with a feature axis are padded with NaN to the largest M of the grid.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from attnphys.dmft.config import DMFTConfig
from attnphys.dmft.trajectory import SWEEPABLE
from attnphys.dynamics.classify import ClassifyOptions
from attnphys.sweeps.grid import Grid
from attnphys.sweeps.task import AbstractTask, VarSpec, register_task




def with_field(cfg: DMFTConfig, name: str, value) -> DMFTConfig:
    """``cfg`` with one field set; ``seed`` sets the correlations' seed; integer fields get ints."""
    if name == "seed":
        return cfg.replace(correlations={**cfg.correlations.model_dump(), "seed": int(value)})
    if isinstance(getattr(cfg, name), int) and not isinstance(getattr(cfg, name), bool):
        if float(value) != int(value):
            raise ValueError(f"axis {name}: integer field got {value}")
        value = int(value)
    return cfg.replace(**{name: value})


@register_task
class DMFTOrbitTask(AbstractTask):
    """Per point: transient, recorded orbit statistics, top-k Lyapunov exponents, regime and evidence."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["dmft-orbits"] = "dmft-orbits"
    config: DMFTConfig
    steps: int = Field(120_000, ge=1, description="loop steps per point")
    transient: int = Field(100_000, ge=0, description="steps discarded first")
    lyapunov: int = Field(2, ge=0, description="leading Lyapunov exponents over the recorded steps")
    n_orbit: int = Field(1000, ge=20, description="last recorded observations used for the classification")
    keep_orbit: bool = Field(False, description="store the orbit samples and zero-plane points too")
    observable: Literal["att", "mo", "mo_se", "mv", "mq", "mk"] = "mo_se"
    section_tol: float = Field(1e-3, ge=0)
    max_section: int = Field(1000, ge=1)
    start: str = Field("checkpoint", description="checkpoint, token or a window JSON file")

    @model_validator(mode="after")
    def _schedule(self):
        if self.transient >= self.steps:
            raise ValueError(f"transient ({self.transient}) must be < steps ({self.steps})")
        return self

    # -- grid checks --------------------------------------------------------------------------------
    def check_grid(self, grid: Grid) -> None:
        """Every axis names a field and every value gives a valid configuration (errors name the axis)."""
        fields = set(DMFTConfig.model_fields) | {"seed"}
        for ax in grid.axes:
            if ax.name not in fields or ax.name == "correlations":
                raise ValueError(f"unknown sweep field {ax.name!r}; choose from {sorted(fields - {'correlations'})}")
            for v in ax.values:
                try:
                    with_field(self.config, ax.name, v)
                except ValidationError as e:
                    err = e.errors()[0]
                    raise ValueError(f"axis {ax.name}={v}: {err['msg']}") from None
        sizes = self._sizes(grid)
        lm_min = min(L * M for M, L in zip(sizes["M"], sizes["L"]))
        if self.lyapunov > lm_min:
            raise ValueError(f"lyapunov ({self.lyapunov}) exceeds L·M = {lm_min} at some grid point")
        if self.start == "token" and self.lyapunov and self.transient < max(sizes["L"]) - 1:
            raise ValueError(f"a token start needs transient >= L - 1 = {max(sizes['L']) - 1} for Lyapunov exponents")

    def _sizes(self, grid: Grid) -> dict:
        c = grid.coords()
        M = np.asarray(c.get("M", [self.config.M]), int)
        L = np.asarray(c.get("L", [self.config.L]), int)
        return {"M": M if "L" not in c else np.repeat(M, len(L)), "L": L if "M" not in c else np.tile(L, len(M))}

    def attrs(self) -> dict:
        """Attributes of the result: what was recorded and how regimes are coded."""
        import json

        from attnphys.dynamics.classify import REGIMES

        return {"observable": self.observable, "start": self.start, "regimes": json.dumps(REGIMES),
                "positional_exponents": "not listed: the L·P positional exponents are exactly 0"}

    # -- schema and compute -------------------------------------------------------------------------
    def spec(self, cfg: DMFTConfig):
        from attnphys.dmft.analysis import orbit_spec

        return orbit_spec(cfg, steps=self.steps, transient=self.transient, k=self.lyapunov, n_orbit=self.n_orbit,
                          section_tol=self.section_tol, max_section=self.max_section, start_filled=self.start != "token")

    def schema(self, grid: Grid) -> dict[str, VarSpec]:
        F = int(max(self._sizes(grid)["M"]))
        k = self.lyapunov
        sch = {
            "regime": VarSpec((), (), np.int8, -1),
            "period": VarSpec((), (), np.int64, 0),
            "lambda1": VarSpec((), (), np.float64, np.nan),
            "lambda2": VarSpec((), (), np.float64, np.nan),
            "K": VarSpec((), (), np.float64, np.nan),
            "agree": VarSpec((), (), np.int8, -1),
            "nonfinite_step": VarSpec((), (), np.int64, -1),
            "obs_mean": VarSpec(("feature",), (F,), np.float64, np.nan),
            "obs_std": VarSpec(("feature",), (F,), np.float64, np.nan),
        }
        if k:
            sch.update(exponents=VarSpec(("exponent",), (k,), np.float64, np.nan),
                       roundoff_fraction=VarSpec(("exponent",), (k,), np.float64, np.nan))
        if self.keep_orbit:
            n_pairs = len(self.spec(self.config).section)
            sch.update(orbit=VarSpec(("sample", "feature"), (min(self.n_orbit, self.steps - self.transient), F),
                                     np.float64, np.nan),
                       section=VarSpec(("pair", "crossing"), (n_pairs, self.max_section), np.float64, np.nan),
                       section_count=VarSpec(("pair",), (n_pairs,), np.int64, 0))
        return sch

    def coords(self, grid: Grid) -> dict:
        F = int(max(self._sizes(grid)["M"]))
        c = {"feature": (("feature",), np.arange(F))}
        if self.lyapunov:
            c["exponent"] = (("exponent",), np.arange(self.lyapunov))
        if self.keep_orbit:
            c["pair"] = (("pair",), np.asarray([f"{f}|{g}" for f, g in self.spec(self.config).section]))
        return c

    def compute(self, grid: Grid, lo: int, hi: int, base_seed: int = 0,
                options: ClassifyOptions = ClassifyOptions()) -> dict[str, np.ndarray]:
        """Results of points lo … hi−1, in point order (arrays with a leading point axis)."""
        from attnphys.dmft.analysis import evidence, orbit_points
        from attnphys.dmft.simulate import raise_if_nonfinite

        pts = grid.points(lo, hi)
        n = hi - lo
        batched = [a for a in grid.names if a in SWEEPABLE]
        structural = [a for a in grid.names if a not in SWEEPABLE]
        schema = self.schema(grid)
        out = {name: np.full((n,) + v.shape, v.fill, v.dtype) for name, v in schema.items()}
        keys = list(zip(*(pts[a] for a in structural))) if structural else [()] * n
        for key in dict.fromkeys(keys):
            rows = np.asarray([i for i, kk in enumerate(keys) if kk == key])
            cfg = self.config
            for name, v in zip(structural, key):
                cfg = with_field(cfg, name, v)
            spec = self.spec(cfg)
            flat = {a: pts[a][rows] for a in batched}
            res = orbit_points(cfg, batched, flat, np.arange(rows.size), spec, self.start, self.observable)
            raise_if_nonfinite(np.where(res["nonfinite_step"] >= 0, res["nonfinite_step"] + self.transient, -1),
                               {a: pts[a][rows] for a in grid.names})
            ev = evidence(spec, res, options)
            F = res["orbit"].shape[-1]
            out["obs_mean"][rows, :F] = res["orbit"].mean(axis=-2)
            out["obs_std"][rows, :F] = res["orbit"].std(axis=-2)
            for name in ("regime", "period", "lambda1", "lambda2", "K", "nonfinite_step"):
                out[name][rows] = ev.get(name, res.get(name))
            out["agree"][rows] = ev["agree"]
            if self.lyapunov:
                out["exponents"][rows] = ev["exponents"]
                out["roundoff_fraction"][rows] = ev["roundoff_fraction"]
            if self.keep_orbit:
                out["orbit"][rows, :, :F] = res["orbit"]
                out["section"][rows] = res["section"]
                out["section_count"][rows] = res["section_count"]
        return out
