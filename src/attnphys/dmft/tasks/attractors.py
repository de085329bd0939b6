"""Attractor censuses of the mean-field map with basins at every grid point, and tracks across a
parameter (theory: docs/theory/dmft.md §7.5;
docs/theory/dynamics.md §5–§8).

The map is :class:`~attnphys.dmft.maps.AttentionMap` (state vec(A) ∈ R^{LM}, auxiliary state (pe, n)).
Its starts come from one of three samplers (docs/theory/dmft.md §7.5):

* ``random`` — :class:`WindowSampler`: every entry of A uniform in [−a, a] (a = ``amplitude``; the
  attention outputs are means of ±1 values and lie in [−1, 1]), the positional window of a token start and
  a full window n = L, so that all starts share the phase of the positional codes;
* ``perturb`` — the window of the task's ``start`` (at the configuration's ε) plus a uniform perturbation
  of radius ``radius`` in the unit ball;
* ``explicit`` — the windows of the listed ``starts``.

Every grid point uses the same seed (common random numbers): neighbouring parameter values see the same
starts, which makes the tracks of :func:`attnphys.dynamics.tracks` and basin fractions vary
smoothly, and makes a point's result independent of how the sweep is chunked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import Field, model_validator

from attnphys.dmft._abstract_model import AbstractModel
from attnphys.dmft._analysis_options import CensusPoint
from attnphys.dmft.config import check_schedule
from attnphys.dmft.initial import token_positions
from attnphys.dmft.model import model_of
from attnphys.dmft.observables import ObservableName
from attnphys.dmft.starts import StartSpec
from attnphys.dmft.tasks._base import DMFTTask
from attnphys.dynamics import CensusOptions, census_batch
from attnphys.dynamics.blocks import CENSUS_ATTRS
from attnphys.dynamics.samplers import AbstractSampler, ExplicitSampler, PerturbationSampler
from attnphys.sweeps.grid import Grid
from attnphys.sweeps.task import VarSpec, register_task


@dataclass(frozen=True)
class WindowSampler(AbstractSampler):
    """Random full context windows (theory: docs/theory/dmft.md §7.5): A_{d,i} ~ U[−a, a] i.i.d., the
    positional window of a token start (:func:`~attnphys.dmft.initial.token_positions`), n = L.

    Returns from :meth:`sample`: x (n, L·M), aux = (pe (n, L, P), n (n,))."""

    L: int
    M: int
    P: int
    amplitude: float = 1.0
    name = "random"

    def sample(self, m, key, n, params):
        dtype = jnp.result_type(float)
        A = jax.random.uniform(key, (n, self.L * self.M), dtype, -self.amplitude, self.amplitude)
        pe = jnp.broadcast_to(jnp.asarray(token_positions(self.L, self.P), dtype), (n, self.L, self.P))
        return A, (pe, jnp.full((n,), self.L, jnp.int32))

    def describe(self) -> str:
        return f"random(A ~ U[-{self.amplitude}, {self.amplitude}], full window)"


def _dims(sizes: Mapping[str, int], F: int) -> dict[str, tuple[tuple[str, ...], tuple[int, ...], Any, Any]]:
    """Dims (after the grid point), shape, dtype and fill of every stored census variable."""
    A, K, k, S, D = sizes["attractor"], sizes["ic"], sizes["exponent"], sizes["sample"], sizes["dim"]
    a, ae, ic = (("attractor",), (A,)), (("attractor", "exponent"), (A, k)), (("ic",), (K,))
    return {
        "kind": (*a, np.int8, -1),
        "period": (*a, np.int64, 0),
        "n_members": (*a, np.int64, 0),
        "basin_fraction": (*a, np.float64, np.nan),
        "basin_ci_low": (*a, np.float64, np.nan),
        "basin_ci_high": (*a, np.float64, np.nan),
        "exponents": (*ae, np.float64, np.nan),
        "floquet_abs": (*ae, np.float64, np.nan),
        "floquet_angle": (*ae, np.float64, np.nan),
        "stable": (*a, np.int8, -1),
        "aux_closed": (*a, np.int8, -1),
        "representative": (*a, np.int64, -1),
        "points": (("attractor", "sample", "dim"), (A, S, D), np.float64, np.nan),
        "observed": (("attractor", "sample", "feature"), (A, S, F), np.float64, np.nan),
        "label": (*ic, np.int64, -1),
        "settle_step": (*ic, np.int64, -1),
        "ic_outcome": (*ic, np.int8, 0),
        "ic_steps": (*ic, np.int64, 0),
        "n_attractors": ((), (), np.int64, 0),
        "n_dropped": ((), (), np.int64, 0),
        "unsettled_fraction": ((), (), np.float64, np.nan),
        "unsettled_ci_low": ((), (), np.float64, np.nan),
        "unsettled_ci_high": ((), (), np.float64, np.nan),
        "unstable_fraction": ((), (), np.float64, np.nan),
    }


@register_task
class AttractorTask(DMFTTask):
    """An attractor census of the mean-field map at every grid point (theory: docs/theory/dmft.md §7.5;
    docs/theory/dynamics.md §7): ``n_ics`` starts run vectorised for at most ``steps`` steps, the first
    ``transient`` without period checks; they are grouped into attractors with kinds, periods, exponents
    (Floquet for periodic orbits, Benettin otherwise) and basin fractions with 95% Wilson intervals.

    Stored per point: the variables of :func:`attnphys.dynamics.census_batch` on dims
    ``attractor`` (``max_attractors``, padded with kind −1), ``ic``, ``exponent``, ``sample``
    (representative states), ``dim`` (L·M) and ``feature`` (M); the census's ``point`` dim is called
    ``sample`` here, the grid's points being the sweep's. A grid along one parameter gains tracks
    (:func:`attnphys.dynamics.tracks`, matched by distance) and continued ids (``continued_id``,
    matched by basin overlap over the common starts, then by distance:
    :func:`attnphys.dynamics.blocks.continued_ids`) when the result is assembled."""

    kind: Literal["dmft-attractors"] = "dmft-attractors"
    dim_options: ClassVar[dict[str, str]] = {"attractor": "max_attractors", "ic": "ics"}
    n_ics: int = Field(default=CensusPoint.default("ics"), ge=1, description="starts per grid point")
    steps: int = Field(
        default=CensusPoint.default("steps"), ge=1, description="most steps per start (the settle budget)"
    )
    transient: int = Field(
        default=CensusPoint.default("transient"), ge=0, description="steps before the first period check"
    )
    k: int = Field(default=CensusPoint.default("exponents"), ge=1, description="exponents per attractor")
    sampler: Literal["random", "perturb", "explicit"] = Field(default="random", description="start sampler")
    amplitude: float = Field(default=1.0, gt=0, allow_inf_nan=False, description="random: A uniform in [-a, a]")
    radius: float = Field(default=1e-3, ge=0, allow_inf_nan=False, description="perturb: radius of the perturbation")
    starts: tuple[StartSpec, ...] = Field(default=(), description="explicit: the starts")
    seed: int = Field(default=0, ge=0, description="seed of the sampler (the same at every grid point)")
    max_attractors: int = Field(default=8, ge=1, description="size of the attractor dim")
    max_period: int = Field(default=256, ge=1, description="longest period detected exactly")
    max_points: int = Field(default=64, ge=1, description="representative states per attractor")
    lyap_steps: int = Field(default=10_000, ge=20, description="Benettin steps of non-periodic attractors")
    observable: ObservableName = Field(default="mo_se", description="observable at the representative states")

    @model_validator(mode="after")
    def _check(self):
        check_schedule(self.steps, self.transient)
        if self.sampler == "explicit" and not self.starts:
            raise ValueError("the explicit sampler needs starts")
        if self.sampler != "explicit" and self.starts:
            raise ValueError("starts are given only with the explicit sampler")
        if self.sampler == "explicit" and len(self.starts) != self.n_ics:
            raise ValueError(f"{len(self.starts)} explicit starts but n_ics = {self.n_ics}")
        self.options()
        return self

    def options(self) -> CensusOptions:
        """The census schedule and criteria (validated; InputError naming the rule)."""
        from attnphys.errors import InputError

        try:
            return CensusOptions(
                budget=self.steps,
                transient=self.transient,
                max_period=self.max_period,
                k=self.k,
                lyap_steps=self.lyap_steps,
                n_classify=min(2_000, self.lyap_steps),
                max_points=self.max_points,
            ).validate()
        except InputError as e:
            name = {"budget": "--steps"}.get(e.field or "", e.field)
            raise ValueError(f"{name}: {e.detail}") from None

    def check_config(self, cfg, grid: Grid) -> None:
        from attnphys.errors import InputError

        if self.k > cfg.L * cfg.M:
            raise InputError(f"must not exceed the state dimension L·M = {cfg.L * cfg.M}, got {self.k}", "--exponents")
        model = model_of(cfg)
        for s in self.starts:
            model.check_start(s)

    def sizes(self, grid: Grid) -> dict[str, int]:
        s = super().sizes(grid)
        D = max(c.L * c.M for c in self.configs(grid))
        return s | {
            "attractor": self.max_attractors,
            "ic": self.n_ics,
            "exponent": self.k,
            "sample": self.max_points,
            "dim": D,
        }

    working_option: ClassVar[str | None] = "ics"

    def working_bytes(self, grid: Grid) -> int:
        """Every start of a point runs at once: its ring of W fingerprints (G values each), its state and
        tangent vectors (D·(k + 4) values), twice (a compacted copy), in float64."""
        so = self.options().settle_options()
        D = self.sizes(grid)["dim"]
        return 2 * 8 * self.n_ics * (so.window * so.n_fingerprint + D * (self.k + 4))

    def schema(self, grid: Grid) -> dict[str, VarSpec]:
        sizes = self.sizes(grid)
        return {
            name: VarSpec(dims, shape, dtype, fill, **CENSUS_ATTRS[name])
            for name, (dims, shape, dtype, fill) in _dims(sizes, sizes["feature"]).items()
        }

    def coords(self, grid: Grid) -> dict:
        s = self.sizes(grid)
        return {d: ((d,), np.arange(s[d])) for d in ("attractor", "ic", "exponent", "sample", "dim", "feature")}

    def sampler_for(self, model: AbstractModel) -> AbstractSampler:
        """The start sampler of this task for one model (theory: docs/theory/dmft.md §7.5)."""
        cfg = model.config
        if self.sampler == "random":
            return WindowSampler(cfg.L, cfg.M, cfg.P, self.amplitude)
        sc = model.scalars(n=1)
        if self.sampler == "perturb":
            w = model.initial_windows(self.start, sc)
            return PerturbationSampler(x=w.A[0].reshape(-1), aux=(w.pe[0], w.n[0]), radius=self.radius)
        ws = [model.initial_windows(s, sc) for s in self.starts]
        x = jnp.stack([w.A[0].reshape(-1) for w in ws])
        return ExplicitSampler(x=x, aux=(jnp.stack([w.pe[0] for w in ws]), jnp.stack([w.n[0] for w in ws])))

    def compute_group(self, model: AbstractModel, pts, n: int, idx: np.ndarray) -> dict[str, np.ndarray]:
        sc = self.scalars(model, pts, n)
        ds = census_batch(
            model.map(self.observable),
            sc,
            self.sampler_for(model),
            ics=self.n_ics,
            seed=self.seed,
            options=self.options(),
            shared=model.couplings,
            max_attractors=self.max_attractors,
        )
        return {name: ds[name].values for name in CENSUS_ATTRS if name != "ic_state"}

    def attrs(self) -> dict[str, Any]:
        import json

        from attnphys.dynamics.blocks import OUTCOMES
        from attnphys.dynamics.classify import REGIMES

        base = super().attrs()
        if self.sampler != "perturb":  # the task's start is not used
            base["start"] = (
                f"{self.sampler} sampler"
                if self.sampler == "explicit"
                else (f"random windows, A ~ U[-{self.amplitude:g}, {self.amplitude:g}]")
            )
        return base | {
            "regimes": json.dumps(REGIMES),
            "outcomes": json.dumps(OUTCOMES),
            "sampler": self.sampler,
            "seed": self.seed,
            "exponent_method": "periodic: log|mu_i|/p from Floquet multipliers; other: Benettin QR",
        }

    def finalize(self, ds):
        """Tracks along the one swept parameter and the attractors' continued ids (theory:
        docs/theory/dynamics.md §8, §8.1)."""
        ds = super().finalize(ds)
        axes = [d for d in ds["kind"].dims if d != "attractor"]
        if len(axes) != 1 or ds.sizes[axes[0]] < 2:
            return ds
        from attnphys.dynamics import tracks
        from attnphys.dynamics.blocks import continued_ids

        p = axes[0]
        t = tracks(ds.rename({p: "param", "sample": "point"}))
        t = continued_ids(t)
        return t.rename({"param": p, "point": "sample"})

    @classmethod
    def example(cls):
        from attnphys.dmft.config import preset
        from attnphys.sweeps import Axis

        task = cls(
            config=preset("paper"),
            n_ics=4,
            steps=1_500,
            transient=500,
            max_period=16,
            lyap_steps=100,
            max_points=8,
            max_attractors=3,
        )
        return task, Grid(axes=(Axis(name="beta_o", values=(0.8, 1.2)),), chunk=2)
