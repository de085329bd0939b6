"""Orbit diagrams: per point a transient, recorded orbit statistics, leading Lyapunov exponents, regime
and evidence; cold starts or continuation chains (theory: docs/theory/dmft.md §7)."""

from __future__ import annotations

import json
from typing import ClassVar, Literal

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import Field, model_validator

from attnphys.dmft._analysis_options import PhaseDiagramPoint
from attnphys.dmft._variant import AbstractConfig
from attnphys.dmft.config import check_schedule
from attnphys.dmft.observables import ObservableName
from attnphys.dmft.simulate import raise_if_nonfinite
from attnphys.dmft.starts import TokenStart, parse_start
from attnphys.dmft.tasks._base import (
    DMFTTask,
)
from attnphys.dmft.tasks._evidence import evidence, exponent_schema, orbit_spec
from attnphys.dmft.tasks._floquet import adaptive_orbits
from attnphys.dmft.tasks.lyapunov import check_token_transient
from attnphys.dynamics.classify import CLASSIFY_ATTRS, REGIMES, ClassifyOptions
from attnphys.dynamics.orbits import OrbitSpec, continuation_chains, orbit_sweep
from attnphys.errors import InputError
from attnphys.progress import report_fraction
from attnphys.sweeps.grid import Grid
from attnphys.sweeps.task import VarSpec, register_task


@register_task
class OrbitTask(DMFTTask):
    """Per point: transient, recorded orbit statistics, top-k Lyapunov exponents, regime and evidence
    (theory: docs/theory/dmft.md §7). With a ``direction`` axis (values ``up``/``down``) before one
    swept parameter, every chain runs along that parameter, each point starting from the previous one's
    final state (continuation); the variables are the same as for cold starts."""

    kind: Literal["dmft-orbits"] = "dmft-orbits"
    steps: int = Field(default=PhaseDiagramPoint.default("steps"), ge=1, description="loop steps per point")
    transient: int = Field(default=PhaseDiagramPoint.default("transient"), ge=0, description="steps discarded first")
    lyapunov: int = Field(
        default=PhaseDiagramPoint.default("exponents"),
        ge=0,
        description="leading Lyapunov exponents over the recorded steps",
    )
    n_orbit: int = Field(
        default=PhaseDiagramPoint.default("n_orbit"),
        ge=20,
        description="last recorded observations used for the classification",
    )
    keep_orbit: bool = Field(default=False, description="store the orbit samples and zero-plane points too")
    observable: ObservableName = "mo_se"
    section_tol: float = Field(default=1e-3, ge=0, allow_inf_nan=False)
    max_section: int = Field(default=1000, ge=1)
    align: int = Field(default=0, ge=0, description="last transient steps that align the tangent vectors")
    reortho_every: int = Field(default=1, ge=1, description="steps between re-orthonormalisations")
    init: Literal["identity", "random"] = Field(default="random", description="initial tangent vectors")
    full_state: bool = Field(default=False, description="the reference's L(M+P) state")
    keep_final: bool = Field(default=False, description="store every point's final window (final_A, final_pe, final_n)")
    adaptive: bool = Field(
        default=False,
        description="stop a point early once its orbit is confirmed periodic "
        "(exponents from Floquet multipliers; its final window is the refined orbit point at the "
        "stop step); give every point that settles on a periodic orbit within its steps Floquet "
        "exponents; cold starts only",
    )
    segment: int = Field(default=5000, ge=1, description="adaptive runs: steps between periodicity checks")
    classify_options: dict[str, int | float] = Field(default_factory=dict, description="ClassifyOptions overrides")

    extra_axes: ClassVar[tuple[str, ...]] = ("direction",)

    @model_validator(mode="after")
    def _schedule(self):
        check_schedule(self.steps, self.transient)
        if self.align > self.transient:
            raise InputError(f"must not exceed --transient ({self.transient}), got {self.align}", "--align")
        ClassifyOptions(**self.classify_options)  # pyright: ignore[reportArgumentType]  (numbers, checked by ClassifyOptions)
        return self

    @property
    def options(self) -> ClassifyOptions:
        return ClassifyOptions(**self.classify_options)  # pyright: ignore[reportArgumentType]  (numbers, checked by ClassifyOptions)

    def spec(self, cfg: AbstractConfig) -> OrbitSpec:
        return orbit_spec(
            cfg,
            steps=self.steps,
            transient=self.transient,
            k=self.lyapunov,
            n_orbit=self.n_orbit,
            align=self.align,
            reortho_every=self.reortho_every,
            section_tol=self.section_tol,
            max_section=self.max_section,
            full_state=self.full_state,
            init=self.init,
        )

    def check_config(self, cfg, grid):
        self.spec(cfg)
        if self.lyapunov:
            check_token_transient(self.start, cfg, self.transient)

    def check_grid(self, grid: Grid) -> None:
        if "direction" in grid.names:
            if (
                grid.names[0] != "direction"
                or len(grid.names) != 2
                or grid.names[1] not in self.config.batched_fields()
            ):
                raise ValueError("a continuation grid is (direction, one of beta_o, beta_att, epsilon)")
            bad = set(grid.axes[0].values) - {"up", "down"}
            if bad:
                raise ValueError(f"direction values are up and down, got {sorted(bad)}")
            if self.adaptive:
                raise ValueError(
                    "--adaptive: adaptive schedules apply to cold starts; a continuation chain runs every point in full"
                )
        super().check_grid(grid)

    def chain_length(self, grid: Grid) -> int:
        return grid.shape[-1] if "direction" in grid.names else 1

    def schema(self, grid):
        F = self.sizes(grid)["feature"]
        k = self.lyapunov
        sch = {
            "regime": VarSpec((), (), np.int8, -1, **CLASSIFY_ATTRS["regime"]),
            "regime_reason": VarSpec((), (), np.int8, -1, **CLASSIFY_ATTRS["regime_reason"]),
            "period": VarSpec((), (), np.int64, 0, **CLASSIFY_ATTRS["period"]),
            "recurrence": VarSpec((), (), np.int64, 0, **CLASSIFY_ATTRS["recurrence"]),
            "lambda1": VarSpec((), (), np.float64, np.nan, **CLASSIFY_ATTRS["lambda1"]),
            "lambda2": VarSpec((), (), np.float64, np.nan, **CLASSIFY_ATTRS["lambda2"]),
            "K": VarSpec((), (), np.float64, np.nan, **CLASSIFY_ATTRS["K"]),
            "agree": VarSpec((), (), np.int8, -1, **CLASSIFY_ATTRS["agree"]),
            "nonfinite_step": VarSpec((), (), np.int64, -1, "first non-finite recorded step (-1: none)", "step"),
            "obs_mean": VarSpec(("feature",), (F,), np.float64, np.nan, f"time mean of {self.observable}"),
            "obs_std": VarSpec(("feature",), (F,), np.float64, np.nan, f"time standard deviation of {self.observable}"),
        }
        if k:
            sch.update(exponent_schema(k))
        if self.keep_orbit:
            n_pairs = len(self.spec(self.config).section)
            sch.update(
                orbit=VarSpec(
                    ("sample", "feature"),
                    (min(self.n_orbit, self.steps - self.transient), F),
                    np.float64,
                    np.nan,
                    f"last recorded values of {self.observable}",
                ),
                section=VarSpec(
                    ("pair", "crossing"),
                    (n_pairs, self.max_section),
                    np.float64,
                    np.nan,
                    f"zero-plane section: {self.observable}[f] where |{self.observable}[g]| <= "
                    f"{self.section_tol} (pair 'f|g'), NaN-padded; see section_count",
                ),
                section_count=VarSpec(("pair",), (n_pairs,), np.int64, 0, "zero-plane crossings per pair"),
            )
        if self.keep_final:
            s = self.sizes(grid)
            sch.update(
                final_A=VarSpec(
                    ("lag", "feature"),
                    (s["lag"], F),
                    np.float64,
                    np.nan,
                    "final context window: attention outputs, newest first",
                ),
                final_pe=VarSpec(
                    ("lag", "bit"), (s["lag"], s["bit"]), np.float64, np.nan, "final context window: positional codes"
                ),
                final_n=VarSpec((), (), np.int64, 0, "filled rows of the final window"),
            )
        if self.adaptive:
            sch.update(
                stopped_early=VarSpec(
                    (),
                    (),
                    np.bool_,
                    False,
                    "run stopped before its last step: orbit confirmed periodic (exponents from Floquet multipliers)",
                ),
                stop_step=VarSpec((), (), np.int64, -1, "steps run (the full length unless stopped early)", "step"),
                floquet=VarSpec(
                    (),
                    (),
                    np.bool_,
                    False,
                    "exponents from the Floquet multipliers of the refined "
                    "periodic orbit (otherwise Benettin over the recorded steps)",
                ),
            )
        return sch

    def coords(self, grid):
        c = {"feature": (("feature",), np.arange(self.sizes(grid)["feature"]))}
        if self.keep_final:
            c.update({d: ((d,), np.arange(self.sizes(grid)[d])) for d in ("lag", "bit")})
        if self.lyapunov:
            c["exponent"] = (("exponent",), np.arange(self.lyapunov))
        if self.keep_orbit:
            c["pair"] = (("pair",), np.asarray([f"{f}|{g}" for f, g in self.spec(self.config).section]))
        return c

    @classmethod
    def example(cls):
        from attnphys.dmft.config import preset
        from attnphys.sweeps import Axis

        return (
            cls(
                config=preset("paper"),
                steps=700,
                transient=400,
                lyapunov=2,
                n_orbit=100,
                keep_orbit=True,
                keep_final=True,
            ),
            Grid(
                axes=(Axis(name="beta_o", values=(0.5, 1.27, 2.5)), Axis(name="beta_att", values=(1.5, 2.2))), chunk=4
            ),
        )

    def attrs(self):
        return {
            **super().attrs(),
            "observable": self.observable,
            "regimes": json.dumps(REGIMES),
            "classify_options": json.dumps(self.options.__dict__),
            "orbit_spec": json.dumps(self.spec(self.config)._asdict()),
            "positional_exponents": "not listed: the L·P positional exponents are exactly 0",
        }

    def compute_group(self, model, pts, n, idx):
        spec = self.spec(model.config)
        m = model.map(self.observable, self.full_state)
        sc = self.scalars(model, pts, n)
        labels = self.labels(pts, n)
        inner = spec._replace(transient=spec.align)
        if "direction" in pts:
            res = self._chains(model, m, inner, sc, np.asarray(pts["direction"]), n)
        elif self.adaptive:
            res = adaptive_orbits(self, model, m, spec, sc, idx, labels)
        else:
            win = model.windows_after(self.starts_for(idx), sc, spec.transient - spec.align, labels)
            report_fraction(spec.transient - spec.align, spec.transient + spec.steps)
            x0, aux0 = m.state(win)
            res = orbit_sweep(m, inner, x0, aux0, sc, shared=model.couplings)
        final = (
            jax.vmap(m.window)(jnp.asarray(res["x"]), jax.tree_util.tree_map(jnp.asarray, res["aux"]))
            if self.keep_final
            else None
        )
        res = {k: np.asarray(v) for k, v in res.items() if k not in ("x", "aux")}
        raise_if_nonfinite(np.where(res["nonfinite_step"] >= 0, res["nonfinite_step"] + spec.transient, -1), labels)
        ev = evidence(spec, res, self.options)
        out = {
            name: ev[name] for name in ("regime", "regime_reason", "period", "recurrence", "lambda1", "lambda2", "K")
        }
        out["agree"] = np.where(np.isnan(np.asarray(ev["K"], float)), -1, np.asarray(ev["agree"]).astype(np.int8))
        out["nonfinite_step"] = res["nonfinite_step"]
        out["obs_mean"] = res["orbit"].mean(axis=-2)
        out["obs_std"] = res["orbit"].std(axis=-2)
        if spec.k:
            out.update({k: ev[k] for k in exponent_schema(spec.k)})
        if self.keep_orbit:
            out.update(orbit=res["orbit"], section=res["section"], section_count=res["section_count"])
        if final is not None:
            out.update(final_A=final.A, final_pe=final.pe, final_n=final.n)
        if self.adaptive:
            out.update(stopped_early=res["stopped_early"], stop_step=res["stop_step"], floquet=res["floquet"])
        return out

    def _chains(self, model, m, inner, sc, directions, n):
        """Continuation chains: the rows are whole chains (direction-major, parameter increasing)."""
        firsts = sorted(np.unique(directions, return_index=True)[1])
        dirs = tuple(str(directions[i]) for i in firsts)
        chain = n // len(dirs)
        path = jax.tree_util.tree_map(lambda a: a[:chain], sc)
        first = jax.tree_util.tree_map(lambda a: a[:1], sc)
        pre = model.config.L if (model.config.era == "2024" and isinstance(parse_start(self.start), TokenStart)) else 0
        win = model.windows_after(self.start, first, pre)
        x0, aux0 = m.state(jax.tree_util.tree_map(lambda a: a[0], win))
        out = continuation_chains(m, inner, x0, aux0, path, dirs, shared=model.couplings)
        return jax.tree_util.tree_map(lambda v: jnp.reshape(v, (-1,) + jnp.shape(v)[2:]), out)
