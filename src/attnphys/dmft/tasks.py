"""Everything the DMFT commands compute, as sweep tasks (theory: docs/theory/dmft.md §3.6, §6, §7;
docs/theory/sweeps.md §1).

A task's points are a grid (:class:`attnphys.sweeps.Grid`) over configuration fields: β_o, β_att and ε
vary inside one vectorised batch; any other field (``M``, ``L``, ``n_se``, …, ``seed``) changes the
couplings, so a chunk is split into groups, one :class:`~attnphys.dmft.model.DMFTModel` each. Every
swept value is validated by the configuration's own rules before anything runs. Variables with a
feature, lag or bit axis are padded with NaN to the largest M, L, P of the grid.

Tasks: :class:`TrajectoryTask` (records), :class:`LyapunovTask` (spectra), :class:`OrbitTask` (orbit
diagrams, exponents, regimes; cold starts or continuation chains along a ``direction`` axis),
:class:`FiniteTask` (finite-N sample paths), :class:`ConvergeTask` (finite N vs mean field).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from functools import partial
from typing import Annotated, Any, ClassVar, Literal

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import AfterValidator, Field, model_validator

from attnphys.dmft.config import BATCHED, DMFTConfig
from attnphys.dmft.initial import CheckpointStart, StartSpec, TokenStart, parse_start
from attnphys.dmft.meanfield import OBSERVABLE_TABLE, OBSERVABLES
from attnphys.dmft.model import DMFTModel
from attnphys.dmft.simulate import Schedule, raise_if_nonfinite, run_batch, run_segments
from attnphys.dynamics.classify import CLASSIFY_ATTRS, REGIMES, ClassifyOptions, classify, detect_period
from attnphys.dynamics.lyapunov import lyapunov
from attnphys.dynamics.orbits import OrbitSpec, continuation, orbit_sweep
from attnphys.errors import InputError, NonFiniteError
from attnphys.progress import report_fraction
from attnphys.runtime import shard_batch, take_rows
from attnphys.sweeps.grid import Grid
from attnphys.sweeps.task import AbstractTask, VarSpec, register_task


def check_observable(name: str) -> str:
    """An observable name of :data:`~attnphys.dmft.meanfield.OBSERVABLE_TABLE` (the one list)."""
    if name not in OBSERVABLES:
        raise ValueError(f"unknown observable {name!r}; choose from {', '.join(OBSERVABLES)}")
    return name


Observable = Annotated[str, AfterValidator(check_observable)]

PAPER_SECTION_PAIRS: tuple[tuple[int, int], ...] = ((0, 1), (0, 2), (1, 0), (2, 0))
"""(plotted component, filtering component) pairs of the paper's zero-plane sections
(theory: docs/theory/dmft.md §7.1)."""


def check_schedule(steps: int, transient: int) -> None:
    """The one rule relating steps and transient: at least one recorded step (transient < steps)."""
    if not 0 <= transient < steps:
        raise ValueError(
            f"--transient ({transient}) must be smaller than --steps ({steps}): at least one step is recorded"
        )


class DMFTTask(AbstractTask):
    """Base of the DMFT tasks: grouping of points by configuration, validation, NaN padding.

    Subclasses implement :meth:`compute_group` (one model, a batch of points) and :meth:`schema`.
    """

    config: DMFTConfig
    start: StartSpec = Field(default_factory=CheckpointStart, description="initial condition")
    point_starts: tuple[StartSpec, ...] = Field(
        default=(), description="one initial condition per grid point (in point order), instead of ``start``"
    )

    extra_axes: ClassVar[tuple[str, ...]] = ()
    """Grid axes the task interprets itself (not configuration fields)."""

    # -- grid ---------------------------------------------------------------------------------------
    def check_grid(self, grid: Grid) -> None:
        for ax in grid.axes:
            if ax.name not in self.extra_axes:
                self.config.check_axis(ax.name, ax.values)
        if self.point_starts and len(self.point_starts) != grid.size:
            raise ValueError(f"point_starts has {len(self.point_starts)} starts for {grid.size} grid points")
        for cfg in self.configs(grid):
            self.check_config(cfg, grid)
            for start in self.point_starts or (self.start,):
                try:
                    DMFTModel.of(cfg).check_start(start)
                except ValueError as e:
                    raise ValueError(f"start {start.describe()}: {e}") from None

    def starts_for(self, idx: np.ndarray):
        """The start of the points with global indices ``idx``: one start, or one per point."""
        if not self.point_starts:
            return self.start
        return [self.point_starts[int(i)] for i in idx]

    def check_config(self, cfg: DMFTConfig, grid: Grid) -> None:
        """Task-specific checks of one structural configuration of the grid (override)."""

    def structural(self, grid: Grid) -> list[str]:
        return [a for a in grid.names if a not in BATCHED and a not in self.extra_axes]

    def configs(self, grid: Grid) -> list[DMFTConfig]:
        """The distinct configurations of the grid's structural axes."""
        names = self.structural(grid)
        cfgs = [self.config]
        for name in names:
            values = dict(zip(grid.names, (a.values for a in grid.axes)))[name]
            cfgs = [c.with_field(name, v) for c in cfgs for v in values]
        return cfgs

    def sizes(self, grid: Grid) -> dict[str, int]:
        """Largest M, L, P over the grid (sizes of the padded feature, lag and bit axes)."""
        cfgs = self.configs(grid)
        return {"feature": max(c.M for c in cfgs), "lag": max(c.L for c in cfgs), "bit": max(c.P for c in cfgs)}

    def groups(self, grid: Grid, lo: int, hi: int) -> Iterator[tuple[DMFTConfig, np.ndarray, dict[str, np.ndarray]]]:
        """(configuration, row indices within the chunk, batched point values) per structural group."""
        pts = grid.points(lo, hi)
        names = self.structural(grid)
        n = hi - lo
        keys = list(zip(*(pts[a] for a in names))) if names else [()] * n
        for key in dict.fromkeys(keys):
            rows = np.asarray([i for i, k in enumerate(keys) if k == key])
            cfg = self.config
            for name, v in zip(names, key):
                cfg = cfg.with_field(name, v)
            yield cfg, rows, {a: pts[a][rows] for a in grid.names if a not in names}

    def compute(self, grid: Grid, lo: int, hi: int, base_seed: int = 0) -> dict[str, np.ndarray]:
        schema = self.schema(grid)
        n = hi - lo
        out = {name: np.full((n,) + v.shape, v.fill, v.dtype) for name, v in schema.items()}
        for cfg, rows, pts in self.groups(grid, lo, hi):
            res = self.compute_group(DMFTModel.of(cfg), pts, rows.size, lo + rows)
            for name, arr in res.items():
                arr = np.asarray(arr)
                out[name][(rows,) + tuple(slice(0, s) for s in arr.shape[1:])] = arr
        return out

    def compute_group(
        self, model: DMFTModel, pts: Mapping[str, np.ndarray], n: int, idx: np.ndarray
    ) -> dict[str, np.ndarray]:
        """Results of ``n`` points of one configuration, with global indices ``idx`` (arrays with a
        leading point axis)."""
        raise NotImplementedError  # pragma: no cover

    # -- helpers ------------------------------------------------------------------------------------
    @staticmethod
    def scalars(model: DMFTModel, pts: Mapping[str, np.ndarray], n: int):
        return model.scalars({k: v for k, v in pts.items() if k in BATCHED}, n=n)

    def labels(self, pts: Mapping[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
        """The parameters that name each of the n trajectories in a non-finite report: the swept ones,
        then the configuration's values of the others of :data:`BATCHED`."""
        lab = {k: np.broadcast_to(np.asarray(v), (n,)) for k, v in pts.items() if k in BATCHED}
        return lab | {k: np.full(n, getattr(self.config, k)) for k in BATCHED if k not in lab}

    def attrs(self) -> dict[str, Any]:
        return {
            "start": self.start.describe(),
            "mo_se_convention": self.config.mo_se_convention,
            "era": self.config.era,
        }

    def finalize(self, ds):
        from attnphys.dmft.annotate import annotate

        return annotate(ds, self.config, self.start)


def _feature_coords(sizes: Mapping[str, int], names=("feature", "lag", "bit")) -> dict:
    c = {d: ((d,), np.arange(sizes[d])) for d in names}
    c["family"] = (("family",), np.asarray(["o", "v", "q", "k"]))
    return c


# ==== trajectories ====================================================================================


@register_task
class TrajectoryTask(DMFTTask):
    """Records of the mean-field map at every point (theory: docs/theory/dmft.md §3.6). With ``mo_se``
    recorded, also the memory beyond the context window: its autocorrelation time and the fraction of its
    power below frequency 1/L, per feature (:mod:`attnphys.dmft.memory`; theory: docs/theory/dmft.md §8)."""

    kind: Literal["dmft-trajectory"] = "dmft-trajectory"
    start: StartSpec = Field(default_factory=TokenStart, description="initial condition")
    starts: tuple[StartSpec, ...] = Field(default=(), description="several initial conditions, indexed by an 'ic' axis")
    steps: int = Field(ge=1, description="loop steps T")
    transient: int = Field(default=0, ge=0, description="steps not recorded")
    record_every: int = Field(default=1, ge=1, description="keep every k-th step after the transient")
    record: tuple[Observable, ...] = Field(default=OBSERVABLES, description="observables to record")

    extra_axes: ClassVar[tuple[str, ...]] = ("ic",)

    @model_validator(mode="after")
    def _schedule(self):
        check_schedule(self.steps, self.transient)
        return self

    @property
    def schedule(self) -> Schedule:
        return Schedule(steps=self.steps, transient=self.transient, record_every=self.record_every, record=self.record)

    def check_grid(self, grid: Grid) -> None:
        super().check_grid(grid)
        for cfg in self.configs(grid):
            for s in self.starts:
                DMFTModel.of(cfg).check_start(s)
        if "ic" in grid.names:
            ics = dict(zip(grid.names, (a.values for a in grid.axes)))["ic"]
            if not self.starts or any(isinstance(i, str) or int(i) != i or not 0 <= i < len(self.starts) for i in ics):
                raise ValueError(f"axis ic must index the {len(self.starts)} starts")

    def schema(self, grid: Grid) -> dict[str, VarSpec]:
        s = self.sizes(grid)
        n_rec = self.schedule.n_records
        sch = {
            name: VarSpec(
                ("step", "feature"), (n_rec, s["feature"]), np.float64, np.nan, OBSERVABLE_TABLE[name].long_name
            )
            for name in self.record
        }
        sch["final_A"] = VarSpec(
            ("lag", "feature"),
            (s["lag"], s["feature"]),
            np.float64,
            np.nan,
            "final context window: attention outputs, newest first",
        )
        sch["final_pe"] = VarSpec(
            ("lag", "bit"), (s["lag"], s["bit"]), np.float64, np.nan, "final context window: positional codes"
        )
        sch["final_n"] = VarSpec((), (), np.int64, 0, "filled rows of the final window")
        for name, dims, what in (
            ("mv", ("lag", "feature"), "value overlaps of the window's tokens"),
            ("mk", ("lag", "feature"), "key overlaps of the window's tokens"),
            ("m0", ("family", "feature"), "overlaps (o, v, q, k) of the newest token"),
            ("se0", ("family", "feature"), "semantic overlaps (o, v, q, k) of the newest token"),
        ):
            shape = tuple(4 if d == "family" else s[d] for d in dims)
            sch[f"final_{name}"] = VarSpec(dims, shape, np.float64, np.nan, f"final state: {what} (cached)")
        if "mo_se" in self.record:
            from attnphys.dmft.memory import MEMORY_ATTRS

            for key, attrs in MEMORY_ATTRS.items():
                sch[f"mo_se_{key}"] = VarSpec(("feature",), (s["feature"],), np.float64, np.nan, **attrs)
        return sch

    def coords(self, grid: Grid) -> dict:
        return {"step": (("step",), self.schedule.record_steps), **_feature_coords(self.sizes(grid))}

    def attrs(self) -> dict[str, Any]:
        return {
            **super().attrs(),
            "schedule": json.dumps(dict(steps=self.steps, transient=self.transient, record_every=self.record_every)),
        }

    @classmethod
    def example(cls):
        from attnphys.dmft.config import preset
        from attnphys.sweeps import Axis

        return (
            cls(config=preset("paper"), steps=60, transient=20, record_every=3),
            Grid(axes=(Axis(name="beta_o", values=(0.8, 1.26, 2.0)), Axis(name="M", values=(2.0, 3.0))), chunk=4),
        )

    def compute_group(self, model, pts, n, idx):
        sc = self.scalars(model, pts, n)
        if "ic" in pts:
            ic = np.asarray(pts["ic"]).astype(int)
            per = [model.initial_states(self.starts[i], sc) for i in range(len(self.starts))]
            st = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs)[ic, jnp.arange(n)], *per)
        else:
            st = model.initial_states(self.starts_for(idx), sc)
        final, recs, _ = run_batch(model.couplings, sc, st, self.schedule, model.convention, labels=self.labels(pts, n))
        out = {name: recs[name] for name in self.record}
        out.update(
            final_A=final.A,
            final_pe=final.pe,
            final_n=final.n,
            final_mv=final.mv,
            final_mk=final.mk,
            final_m0=final.m0,
            final_se0=final.se0,
        )
        if "mo_se" in self.record:
            from attnphys.dmft.memory import memory_summary

            mem = memory_summary(np.swapaxes(np.asarray(recs["mo_se"]), -1, -2), model.config.L, dt=self.record_every)
            out.update({f"mo_se_{key}": value for key, value in mem.items()})
        return out


# ==== Lyapunov spectra ================================================================================


@partial(jax.jit, static_argnames=("m", "steps", "k", "align", "reortho_every", "history_every", "init"))
def _spectra(m, cp, x0, aux0, sc, *, steps, k, align, reortho_every, history_every, init):
    def one(x, aux, p):
        return lyapunov(
            m,
            x,
            aux,
            (cp, p),
            steps=steps,
            k=k,
            reortho_every=reortho_every,
            align=align,
            history_every=history_every,
            init=init,
        )

    return jax.vmap(one)(x0, aux0, sc)


@register_task
class LyapunovTask(DMFTTask):
    """Lyapunov spectra of the map (theory: docs/theory/dmft.md §6, docs/theory/dynamics.md §2): the
    transient runs on the cached engine, its last ``align`` steps also rotate the tangent vectors; the
    exponents average the remaining steps − transient steps."""

    kind: Literal["dmft-lyapunov"] = "dmft-lyapunov"
    start: StartSpec = Field(default_factory=TokenStart, description="initial condition")
    steps: int = Field(ge=1, description="loop steps T")
    transient: int = Field(ge=0, description="steps discarded first")
    k: int | None = Field(default=None, ge=1, description="leading exponents (default: all of the state)")
    full_state: bool = Field(
        default=False, description="the reference's L(M+P) state instead of the L·M attention state"
    )
    align: int = Field(default=0, ge=0, description="last transient steps that align the tangent vectors")
    reortho_every: int = Field(default=1, ge=1, description="steps between re-orthonormalisations")
    history_every: int = Field(default=0, ge=0, description="running estimates every this many steps (0: none)")
    init: Literal["identity", "random"] = Field(
        default="identity", description="initial tangent vectors (identity: as the reference)"
    )

    @model_validator(mode="after")
    def _schedule(self):
        check_schedule(self.steps, self.transient)
        if self.align > self.transient:
            raise InputError(f"must not exceed --transient ({self.transient}), got {self.align}", "--align")
        if self.history_every > self.steps - self.transient:
            raise InputError(
                f"must be in [0, --steps − --transient = {self.steps - self.transient}], got {self.history_every}",
                "--history-every",
            )
        return self

    def n_exponents(self, cfg: DMFTConfig) -> int:
        D = cfg.L * (cfg.M + (cfg.P if self.full_state else 0))
        return D if self.k is None else self.k

    def check_config(self, cfg, grid):
        D = cfg.L * (cfg.M + (cfg.P if self.full_state else 0))
        if self.k is not None and self.k > D:
            raise InputError(f"must be in [1, {D}] (L·M{' + L·P' if self.full_state else ''}), got {self.k}", "--k")
        _check_token_transient(self.start, cfg, self.transient)

    def schema(self, grid):
        k = max(self.n_exponents(c) for c in self.configs(grid))
        sch = exponent_schema(k)
        if self.history_every:
            n_hist = (self.steps - self.transient) // self.history_every
            sch["history"] = VarSpec(
                ("checkpoint", "qr_column"),
                (n_hist, k),
                np.float64,
                np.nan,
                "running exponent estimates (QR order)",
                "1/step",
            )
        return sch

    def coords(self, grid):
        k = max(self.n_exponents(c) for c in self.configs(grid))
        c = {"exponent": (("exponent",), np.arange(k))}
        if self.history_every:
            n_hist = (self.steps - self.transient) // self.history_every
            c["checkpoint"] = (("checkpoint",), self.transient + self.history_every * np.arange(1, n_hist + 1))
        return c

    @classmethod
    def example(cls):
        from attnphys.dmft.config import preset
        from attnphys.sweeps import Axis

        return (
            cls(config=preset("paper"), steps=400, transient=100, k=3),
            Grid(axes=(Axis(name="beta_o", values=(1.0, 2.0)), Axis(name="epsilon", values=(0.0, 0.02))), chunk=3),
        )

    def attrs(self):
        return {
            **super().attrs(),
            "steps": self.steps,
            "transient": self.transient,
            "align": self.align,
            "reortho_every": self.reortho_every,
            "state": "full" if self.full_state else "attention",
            "positional_exponents": (
                "included (full state)"
                if self.full_state
                else "the L·P positional exponents are exactly 0 (not listed)"
            ),
        }

    def compute_group(self, model, pts, n, idx):
        sc = self.scalars(model, pts, n)
        labels = self.labels(pts, n)
        win = model.windows_after(self.starts_for(idx), sc, self.transient - self.align, labels)
        m = model.map("att", self.full_state)
        x0, aux0 = m.state(win)
        k = self.n_exponents(model.config)
        res = shard_batch(
            lambda x, a, p: _spectra(
                m,
                model.couplings,
                x,
                a,
                p,
                steps=self.steps - self.transient,
                k=k,
                align=self.align,
                reortho_every=self.reortho_every,
                history_every=self.history_every,
                init=self.init,
            ),
            (x0, aux0, sc),
            n,
        )
        ex = np.asarray(res.exponents)
        bad = np.flatnonzero(np.any(np.isnan(ex), axis=-1))
        if bad.size:
            point = {name: float(v[bad[0]]) for name, v in labels.items()}
            raise NonFiniteError(step=-1, params=point, count=bad.size, what="tangent dynamics")
        out = sorted_evidence(ex, res.roundoff, res.zero_hits, res.parallel)
        if self.history_every:
            out["history"] = np.asarray(res.history)
        return out


def _check_token_transient(start, cfg: DMFTConfig, transient: int) -> None:
    """Tangent dynamics need a full window: from a token, transient >= L − 1 (head) or >= L (2024)."""
    if isinstance(parse_start(start), TokenStart):
        need = cfg.L if cfg.era == "2024" else cfg.L - 1
        if transient < need:
            raise ValueError(
                f"Lyapunov exponents from a token start need transient >= {'L' if cfg.era == '2024' else 'L - 1'}"
                f" = {need} (the window must be full)"
            )


# ==== orbit diagrams ==================================================================================


def orbit_spec(
    cfg: DMFTConfig,
    *,
    steps: int,
    transient: int,
    k: int,
    n_orbit: int = 1000,
    align: int = 0,
    reortho_every: int = 1,
    section_tol: float = 1e-3,
    max_section: int = 1000,
    full_state: bool = False,
    start_filled: bool = True,
    init: str = "random",
) -> OrbitSpec:
    """Translate a schedule (T total steps, T_tr transient) into an :class:`OrbitSpec`
    (theory: docs/theory/dmft.md §7.1)."""
    check_schedule(steps, transient)
    recorded = steps - transient
    D = cfg.L * (cfg.M + (cfg.P if full_state else 0))
    if not 0 <= k <= D:
        raise InputError(f"must be in [0, {D}] (L·M{' + L·P' if full_state else ''}), got {k}", "--lyapunov")
    if k and not start_filled and transient < cfg.L - 1:
        raise ValueError(f"Lyapunov exponents from a token start need transient >= L - 1 = {cfg.L - 1}")
    if align > transient:
        raise InputError(f"must not exceed --transient ({transient}), got {align}", "--align")
    pairs = tuple(p for p in PAPER_SECTION_PAIRS if max(p) < cfg.M)
    return OrbitSpec(
        steps=recorded,
        transient=transient,
        k=k,
        align=align,
        reortho_every=reortho_every,
        n_orbit=min(n_orbit, recorded),
        section=pairs,
        section_tol=section_tol,
        max_section=max_section,
        init=init,
    ).validate()


def exponent_schema(k: int) -> dict[str, VarSpec]:
    """The variables of k Lyapunov exponents, sorted descending, with the evidence of the QR method (theory:
    docs/theory/dynamics.md §2.3): round-off, exact annihilations, and columns numerically parallel to the
    earlier ones (an exponent from such QR steps has fewer than about ten correct bits there). Exponents
    from Floquet multipliers have no QR evidence: NaN fractions, no hits, not flagged."""
    return {
        "exponents": VarSpec(
            ("exponent",), (k,), np.float64, np.nan, "Lyapunov exponents, sorted descending", "1/step"
        ),
        "roundoff_fraction": VarSpec(
            ("exponent",), (k,), np.float64, np.nan, "fraction of QR steps in which the direction was below round-off"
        ),
        "below_roundoff": VarSpec(
            ("exponent",), (k,), np.bool_, False, "direction contracted below machine precision in some QR step"
        ),
        "zero_hits": VarSpec(("exponent",), (k,), np.int64, 0, "exact annihilations of the direction"),
        "parallel_fraction": VarSpec(
            ("exponent",),
            (k,),
            np.float64,
            np.nan,
            "fraction of QR steps in which the direction was numerically parallel to the leading ones",
        ),
        "unreliable": VarSpec(
            ("exponent",),
            (k,),
            np.bool_,
            False,
            "direction numerically parallel to the leading ones in some QR step (fewer than ~10 correct bits "
            "there: a shorter reortho_every, or a direction contracted beyond resolution)",
        ),
    }


def sorted_evidence(exponents, roundoff, zero_hits, parallel) -> dict[str, np.ndarray]:
    """Exponents (…, k) in QR order, sorted descending along the last axis with their evidence: the
    variables of :func:`exponent_schema` (theory: docs/theory/dynamics.md §2.1, §2.3)."""
    exponents = np.asarray(exponents)
    order = np.argsort(-exponents, axis=-1)

    def take(a):
        return np.take_along_axis(np.asarray(a), order, -1)

    ro, par = take(roundoff), take(parallel)
    return {
        "exponents": take(exponents),
        "roundoff_fraction": ro,
        "below_roundoff": ro > 0,
        "zero_hits": take(zero_hits).astype(np.int64),
        "parallel_fraction": par,
        "unreliable": par > 0,
    }


def evidence(spec: OrbitSpec, res: Mapping[str, np.ndarray], options: ClassifyOptions = ClassifyOptions()) -> dict:
    """Exponents sorted descending with their round-off evidence, and the regime with its evidence
    (``regime``, ``period``, ``lambda1``, ``lambda2``, ``K``, ``agree``), per point (leading axes kept)
    (theory: docs/theory/dynamics.md §4)."""
    out = {}
    exps = None
    if spec.k:
        out = sorted_evidence(res["exponents"], res["roundoff"], res["zero_hits"], res["parallel"])
        exps = out["exponents"]
    out.update(classify(res["orbit"], exps, res["nonfinite_step"], options))
    return out


def _bucket(n: int) -> int:
    return max(1 << max(0, n - 1).bit_length(), 2 * len(jax.local_devices()))


def _padded(tree, rows: np.ndarray):
    """Rows ``rows`` of every leaf, padded with copies of the last to a power of two (few compilations)."""
    return take_rows(tree, rows, _bucket(rows.size))


def _cut(tree, n: int):
    return jax.tree_util.tree_map(lambda a: np.array(a)[:n], tree)


LANE_BLOCK = 256
"""Lanes per call when the points of a batch that did not stop early run the rest of their schedule: a
full block has one compiled shape whatever the number of lanes, and only the last block is padded (to a
power of two), so a batch carries at most a few hundred copies instead of up to as many lanes as it has
(a power-of-two padding of the whole batch). 256 lanes keep the tangent engine at its best throughput on
two cores (``benchmarks/tangents.py --batch``)."""


def _in_blocks(f, tree, rows: np.ndarray):
    """``f`` (a function of a batch pytree returning a pytree of arrays with a leading batch axis) over
    ``rows`` of ``tree`` in blocks of :data:`LANE_BLOCK` lanes (two per device where that is more), each
    padded by :func:`_padded`, the results concatenated (numpy)."""
    block = _bucket(LANE_BLOCK)  # the padded size of a full block: LANE_BLOCK, or two lanes per device if more
    parts = [_cut(f(_padded(tree, rows[i : i + block])), min(block, rows.size - i)) for i in range(0, rows.size, block)]
    return jax.tree_util.tree_map(lambda *a: np.concatenate(a), *parts)


FLOQUET_CYCLES = 100
"""Cycles of the periodic QR iteration allowed to an orbit for its leading exponents, at least; short
periods get more (:data:`FLOQUET_STEPS`)."""

FLOQUET_STEPS = 1000
"""Steps of the periodic QR iteration (cycles × period) allowed to an orbit, at least: a period-p orbit is
iterated for up to max(:data:`FLOQUET_CYCLES`, ⌈FLOQUET_STEPS / p⌉) cycles. The k-th and (k+1)-th exponents
separate by (λ_k − λ_{k+1})·p per cycle, so a short period needs more cycles for the same gap per step:
a fixed point of the paper preset seen at period L = 4 with a gap of 0.04 per step needs about 180 cycles
to resolve its leading multipliers to 1e-13: a thousand QR steps instead of the 75,000 tangent steps of
the full run it would otherwise get."""


def periodic_exponents(m, couplings, x, aux, sc, periods, k: int, theta: float):
    """Exponents of periodic orbits from their Floquet multipliers, λ_i = log|μ_i| / p (theory:
    docs/theory/dynamics.md §5.1–5.3): Newton refinement of F^p(x) = x from states x (b, D) on or near the
    orbits, then the periodic QR iteration on the leading k + 2 dimensions (at most
    max(:data:`FLOQUET_CYCLES`, ⌈:data:`FLOQUET_STEPS` / p⌉) cycles, fewer once the k leading multipliers
    are resolved). An orbit is accepted when the refinement converged, the auxiliary state closed, the k
    leading exponents are resolved (``Floquet.resolved``: an invariant subspace of the iteration certifies
    them; where the iteration's cycles did not, the eigenvalues of the monodromy,
    :func:`~attnphys.dynamics.periodic.floquet_direct`, if those are resolved) and the leading exponent is
    at most ``theta`` (an attractor).

    Returns:
        (accepted (b,) bool, refined :class:`~attnphys.dynamics.periodic.PeriodicOrbit` (numpy), top-k
        exponents (b, k), descending).
    """
    from attnphys.dynamics.periodic import floquet_batch, floquet_direct, refine_batch

    b = int(np.shape(periods)[0])
    rows = np.arange(b)
    xp, auxp, scp = _padded(x, rows), _padded(aux, rows), _padded(sc, rows)
    pp = np.asarray(periods)[np.r_[rows, np.full(_bucket(b) - b, b - 1)]]
    orb = refine_batch(m, xp, auxp, scp, pp, shared=couplings)
    fq = _cut(
        floquet_batch(
            m,
            orb.points,
            orb.aux_points,
            scp,
            orb.period,
            shared=couplings,
            max_cycles=np.maximum(FLOQUET_CYCLES, -(-FLOQUET_STEPS // np.maximum(np.asarray(orb.period), 1))),
            leading=max(k, 1),
        ),
        b,
    )
    orb = _cut(orb, b)
    ex = np.array(fq.exponents[:, :k])
    lead = np.array(fq.exponents[:, 0])
    top = np.asarray(fq.resolved) >= max(k, 1)
    # multipliers too clustered for the iteration's cycles: the eigenvalues of the monodromy, where resolved
    slow = np.flatnonzero(np.asarray(orb.converged) & np.asarray(orb.aux_closed) & ~top)
    if slow.size:
        take = partial(jax.tree_util.tree_map, lambda a: np.asarray(a)[slow])
        fd = floquet_direct(
            m,
            take(orb.points),
            take(orb.aux_points),
            take(sc),
            np.asarray(orb.period)[slow],
            shared=couplings,
            leading=max(k, 1),
        )
        good = slow[fd.converged]
        ex[good] = fd.exponents[fd.converged, :k]
        top[good] = True
        lead[good] = fd.exponents[fd.converged, 0]
    ok = (
        np.asarray(orb.converged)
        & np.asarray(orb.aux_closed)
        & top
        & np.all(np.isfinite(ex), axis=-1)
        & (lead <= theta)
    )
    return ok, orb, ex


FLOQUET_EVIDENCE = {"roundoff": np.nan, "parallel": np.nan, "zero_hits": 0}
"""The QR evidence of exponents taken from Floquet multipliers: none (NaN fractions, no annihilations;
theory: docs/theory/dynamics.md §5.3), keyed as :func:`~attnphys.dynamics.orbits.orbit_sweep` returns it."""


def _adaptive_orbits(task: OrbitTask, model: DMFTModel, m, spec: OrbitSpec, sc, idx, labels) -> dict:
    """Orbits of a batch with early stopping (theory: docs/theory/dmft.md §7.1; docs/theory/dynamics.md
    §4.1, §5.3, §7.2). The unrecorded part of the schedule runs on the cached engine in segments; after
    each, a lane whose last (c + 1)·P_max values of A^new recur exactly (the classifier's rule,
    :func:`~attnphys.dynamics.classify.detect_period`) is refined to its periodic orbit; if the orbit is an
    attractor (leading Floquet exponent ≤ θ) the lane stops, its exponents are the Floquet exponents and its
    recorded window is the one the full run would record, taken on the refined orbit at the same phase. The
    other lanes run the full schedule, exactly as without ``adaptive``; those whose recorded window is then
    periodic (fingerprints of the full state) also get Floquet exponents. Returns the keys of
    :func:`~attnphys.dynamics.orbits.orbit_sweep` plus ``stopped_early``, ``stop_step``, ``floquet``."""
    o = task.options
    cp = model.couplings
    n = int(np.shape(sc.beta_o)[0])
    k = spec.k
    pre = spec.transient - spec.align
    T = spec.transient + spec.steps
    inner = spec._replace(transient=spec.align)
    window = (o.confirmations + 1) * o.max_period
    hits: dict[int, tuple] = {}
    refused = np.zeros(n, np.int64)  # period at which a lane's orbit was refused (not an attractor, unresolved)

    def stop(rows, att, states, t):
        report_fraction(t, T)
        per = detect_period(att, o.period_tol, o.max_period, o.confirmations)
        cand = np.flatnonzero((per > 0) & (per != refused[rows]))  # the same orbit is not examined twice
        ret = np.zeros(rows.size, bool)
        if cand.size == 0:
            return ret
        x, aux = m.state(jax.tree_util.tree_map(lambda a: np.asarray(a)[cand], states.window))
        # the positional codes return after L steps: the window's period is a multiple of lcm(p, L) at most
        ok, orb, ex = periodic_exponents(
            m,
            cp,
            x,
            aux,
            jax.tree_util.tree_map(lambda a: np.asarray(a)[rows[cand]], sc),
            np.lcm(per[cand], model.config.L),
            k,
            o.theta,
        )
        for j in np.flatnonzero(ok):
            hits[int(rows[cand[j]])] = (
                t,
                jax.tree_util.tree_map(lambda a, j=j: a[j], (orb.x, orb.aux)),
                int(orb.period[j]),
                ex[j],
            )
        ret[cand[ok]] = True
        refused[rows[cand[~ok]]] = per[cand[~ok]]
        return ret

    st = model.initial_states(task.starts_for(idx), sc)
    if pre > 0:
        st, done, stopped = run_segments(
            cp,
            sc,
            st,
            pre,
            segment=max(task.segment, window),
            window=window,
            stop=stop,
            convention=model.convention,
            labels=labels,
        )
    else:
        stopped = np.zeros(n, bool)
    S, C = np.flatnonzero(stopped), np.flatnonzero(~stopped)
    out: dict[str, Any] = {}

    def put(name, rows, val, fill, dtype=None):
        val = np.asarray(val)
        if name not in out:
            out[name] = np.full((n,) + val.shape[1:], fill, dtype or val.dtype)
        out[name][rows] = val

    x_all, aux_all = m.state(jax.tree_util.tree_map(np.asarray, st.window))
    x_all = np.array(x_all)
    aux_all = jax.tree_util.tree_map(np.array, aux_all)
    floq = np.zeros(n, bool)
    if C.size:
        res = _in_blocks(lambda b: orbit_sweep(m, inner, *b, shared=cp), (x_all, aux_all, sc), C)
        if k:
            # transient-aware: a lane that settled on a periodic orbit within its budget gets Floquet exponents
            per = detect_period(res["fingerprint"], o.period_tol, o.max_period, o.confirmations)
            cand = np.flatnonzero(per > 0)
            if cand.size:
                ok, _, ex = periodic_exponents(
                    m,
                    cp,
                    res["x"][cand],
                    _cut(jax.tree_util.tree_map(lambda a: a[cand], res["aux"]), cand.size),
                    jax.tree_util.tree_map(lambda a: np.asarray(a)[C[cand]], sc),
                    np.lcm(per[cand], model.config.L),
                    k,
                    o.theta,
                )
                good = cand[ok]
                res["exponents"][good] = ex[ok]
                for name, none in FLOQUET_EVIDENCE.items():
                    res[name][good] = none
                floq[C[good]] = True
        for name in ("orbit", "section", "section_count", "nonfinite_step") + (
            ("exponents", *FLOQUET_EVIDENCE) if k else ()
        ):
            put(name, C, res[name], np.nan if np.issubdtype(np.asarray(res[name]).dtype, np.floating) else 0)
        x_all[C] = res["x"]
        for a, r in zip(jax.tree_util.tree_leaves(aux_all), jax.tree_util.tree_leaves(res["aux"])):
            a[C] = r
    if S.size:
        t_s = np.asarray([hits[i][0] for i in S.tolist()])
        p_s = np.asarray([hits[i][2] for i in S.tolist()])
        xs = np.stack([np.asarray(hits[i][1][0]) for i in S.tolist()])
        auxs = jax.tree_util.tree_map(lambda *a: np.stack(a), *[hits[i][1][1] for i in S.tolist()])
        pad = int(2 ** int(np.ceil(np.log2(max(2, p_s.max())))))
        gen = spec._replace(transient=0, align=0, k=0, steps=spec.n_orbit + pad, n_orbit=spec.n_orbit + pad)
        rows = np.arange(S.size)
        res = _cut(
            orbit_sweep(
                m, gen, *_padded((xs, auxs, jax.tree_util.tree_map(lambda a: np.asarray(a)[S], sc)), rows), shared=cp
            ),
            S.size,
        )
        # the full run records the states T − n_orbit + 1 … T; observation j of this run is the state t + j + 1
        j0 = np.mod(T - spec.n_orbit - t_s, p_s)
        win = np.stack([res["orbit"][i, j0[i] : j0[i] + spec.n_orbit] for i in rows])
        put("orbit", S, win, np.nan)
        put("section", S, res["section"], np.nan)
        put("section_count", S, res["section_count"], 0)
        put("nonfinite_step", S, res["nonfinite_step"], -1)
        if k:
            put("exponents", S, np.stack([hits[i][3] for i in S.tolist()]), np.nan)
            for name, none in FLOQUET_EVIDENCE.items():
                put(name, S, np.full((S.size, k), none), none)
        x_all[S] = xs
        for a, r in zip(jax.tree_util.tree_leaves(aux_all), jax.tree_util.tree_leaves(auxs)):
            a[S] = r
        floq[S] = True
    stop_step = np.full(n, T, np.int64)
    if S.size:
        stop_step[S] = t_s
    out.update(x=x_all, aux=aux_all, stopped_early=stopped, stop_step=stop_step, floquet=floq)
    return out


@register_task
class OrbitTask(DMFTTask):
    """Per point: transient, recorded orbit statistics, top-k Lyapunov exponents, regime and evidence
    (theory: docs/theory/dmft.md §7). With a ``direction`` axis (values ``up``/``down``) before one
    swept parameter, every chain runs along that parameter, each point starting from the previous one's
    final state (continuation); the variables are the same as for cold starts."""

    kind: Literal["dmft-orbits"] = "dmft-orbits"
    steps: int = Field(default=120_000, ge=1, description="loop steps per point")
    transient: int = Field(default=100_000, ge=0, description="steps discarded first")
    lyapunov: int = Field(default=2, ge=0, description="leading Lyapunov exponents over the recorded steps")
    n_orbit: int = Field(default=1000, ge=20, description="last recorded observations used for the classification")
    keep_orbit: bool = Field(default=False, description="store the orbit samples and zero-plane points too")
    observable: Observable = "mo_se"
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

    def spec(self, cfg: DMFTConfig) -> OrbitSpec:
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
            _check_token_transient(self.start, cfg, self.transient)

    def check_grid(self, grid: Grid) -> None:
        if "direction" in grid.names:
            if grid.names[0] != "direction" or len(grid.names) != 2 or grid.names[1] not in BATCHED:
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
            res = _adaptive_orbits(self, model, m, spec, sc, idx, labels)
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
        out = continuation(m, inner, x0, aux0, path, dirs, shared=model.couplings)
        return jax.tree_util.tree_map(lambda v: jnp.reshape(v, (-1,) + jnp.shape(v)[2:]), out)


# ==== finite N ========================================================================================


@register_task
class FiniteTask(DMFTTask):
    """Sample paths of the finite-N network at every point (theory: docs/theory/dmft.md §2). Path p of
    every point uses the key fold_in(PRNGKey(seed), p): common random numbers across the grid."""

    kind: Literal["dmft-finite"] = "dmft-finite"
    start: StartSpec = Field(default_factory=TokenStart, description="initial condition (token only)")
    n: int = Field(ge=1, description="semantic bits N_se of the finite network (a multiple of the config's n_se)")
    paths: int = Field(default=16, ge=1, description="independent sample paths")
    steps: int = Field(ge=1, description="loop steps")
    transient: int = Field(default=0, ge=0, description="steps not recorded")
    seed: int = Field(default=0, ge=0, lt=2**32, description="path p uses the key fold_in(PRNGKey(seed), p)")
    per_bit: bool = Field(default=False, description="sample every bit instead of one binomial per weight class")
    record: tuple[Observable, ...] = Field(default=OBSERVABLES, description="observables to record")

    @model_validator(mode="after")
    def _schedule(self):
        check_schedule(self.steps, self.transient)
        if not isinstance(self.start, TokenStart):
            raise ValueError("the finite network starts from its first token (start: token)")
        return self

    def check_config(self, cfg, grid):
        from attnphys.dmft.finite import network_size

        network_size(cfg, self.n)

    def schema(self, grid):
        F = self.sizes(grid)["feature"]
        return {
            name: VarSpec(
                ("path", "step", "feature"),
                (self.paths, self.steps - self.transient, F),
                np.float64,
                np.nan,
                OBSERVABLE_TABLE[name].long_name + " (finite N)",
            )
            for name in self.record
        }

    def coords(self, grid):
        return {
            "path": (("path",), np.arange(self.paths)),
            "step": (("step",), np.arange(self.transient, self.steps)),
            "feature": (("feature",), np.arange(self.sizes(grid)["feature"])),
        }

    @classmethod
    def example(cls):
        from attnphys.dmft.config import preset
        from attnphys.sweeps import Axis

        return (
            cls(config=preset("paper"), n=990, paths=3, steps=30, transient=5),
            Grid(axes=(Axis(name="beta_o", values=(0.5, 1.0, 3.0)),), chunk=2),
        )

    def attrs(self):
        return {
            **super().attrs(),
            "seed": self.seed,
            "engine": "per-bit" if self.per_bit else "class-binomial",
            "positions": "mean-field convention: token k at position (k-1) mod L, x0 not in the window",
        }

    def compute_group(self, model, pts, n, idx):
        from attnphys.dmft.finite import sample_points

        sc = self.scalars(model, pts, n)
        return sample_points(
            model,
            sc,
            self.n,
            paths=self.paths,
            steps=self.steps,
            transient=self.transient,
            seed=self.seed,
            per_bit=self.per_bit,
            record=self.record,
            labels=self.labels(pts, n),
        )


@register_task
class ConvergeTask(DMFTTask):
    """Distances between finite-N paths and the mean field at every (β_o, …, N) point
    (theory: docs/theory/dmft.md §2.3): ``rms_deviation`` over the first ``horizon`` steps,
    ``stat_distance`` between long-run statistics; :meth:`finalize` fits the slopes vs N."""

    kind: Literal["dmft-converge"] = "dmft-converge"
    start: StartSpec = Field(default_factory=TokenStart, description="initial condition (token only)")
    paths: int = Field(default=16, ge=1)
    steps: int = Field(default=2000, ge=2)
    horizon: int = Field(default=200, ge=1)
    transient: int = Field(default=1000, ge=0)
    observable: Observable = "mo_se"
    seed: int = Field(default=0, ge=0, lt=2**32)

    extra_axes: ClassVar[tuple[str, ...]] = ("n",)

    @model_validator(mode="after")
    def _schedule(self):
        check_schedule(self.steps, self.transient)
        if self.horizon > self.steps:
            raise ValueError(f"horizon ({self.horizon}) must not exceed steps ({self.steps})")
        return self

    def check_grid(self, grid):
        super().check_grid(grid)
        if "n" not in grid.names:
            raise ValueError("a convergence grid needs an axis n (network sizes)")
        from attnphys.dmft.finite import network_size

        ns = dict(zip(grid.names, (a.values for a in grid.axes)))["n"]
        for cfg in self.configs(grid):
            for v in ns:
                network_size(cfg, int(v))

    @classmethod
    def example(cls):
        from attnphys.dmft.config import preset
        from attnphys.sweeps import Axis

        return (
            cls(config=preset("paper"), paths=3, steps=60, horizon=20, transient=30),
            Grid(axes=(Axis(name="beta_o", values=(0.5, 1.0)), Axis(name="n", values=(99.0, 990.0))), chunk=2),
        )

    def schema(self, grid):
        return {
            "rms_deviation": VarSpec(
                (),
                (),
                np.float64,
                np.nan,
                f"RMS of {self.observable}(finite) - {self.observable}(MF) over paths, first "
                f"{self.horizon} steps, features",
            ),
            "stat_distance": VarSpec(
                (),
                (),
                np.float64,
                np.nan,
                f"max |time mean, time std of {self.observable} (steps >= {self.transient}): finite - MF|",
            ),
            "rms_noise": VarSpec((), (), np.float64, np.nan, "standard error of rms_deviation over the paths"),
            "stat_noise": VarSpec((), (), np.float64, np.nan, "sampling noise of stat_distance (spread of the paths)"),
        }

    def compute_group(self, model, pts, n, idx):
        from attnphys.dmft.converge import path_noise
        from attnphys.dmft.finite import sample_points

        ns = np.asarray(pts["n"]).astype(int)
        mf_pts = {k: v for k, v in pts.items() if k in BATCHED}
        sc = self.scalars(model, mf_pts, n)
        _, recs, _ = run_batch(
            model.couplings,
            sc,
            model.initial_states(self.start, sc),
            Schedule(steps=self.steps, record=(self.observable,)),
            model.convention,
            labels=self.labels(pts, n),
        )
        mf = np.asarray(recs[self.observable])  # (n, T, M)
        rms = np.empty(n)
        stat = np.empty(n)
        noise = np.empty((n, 2))
        for i in range(n):
            sc_i = jax.tree_util.tree_map(lambda a, i=i: a[i : i + 1], sc)
            fin = sample_points(
                model,
                sc_i,
                int(ns[i]),
                paths=self.paths,
                steps=self.steps,
                transient=0,
                seed=self.seed,
                record=(self.observable,),
            )[self.observable][0]  # (paths, T, M)
            rms[i] = np.sqrt(np.mean((fin[:, : self.horizon] - mf[i][None, : self.horizon]) ** 2))
            mf_stats = np.stack([mf[i, self.transient :].mean(0), mf[i, self.transient :].std(0)])
            fs = np.stack([fin[:, self.transient :].mean(1).mean(0), fin[:, self.transient :].std(1).mean(0)])
            stat[i] = np.max(np.abs(fs - mf_stats))
            noise[i] = path_noise(fin, mf[i], self.horizon, self.transient)
        return {"rms_deviation": rms, "stat_distance": stat, "rms_noise": noise[:, 0], "stat_noise": noise[:, 1]}

    def finalize(self, ds):
        from attnphys.dmft.converge import fit_slopes

        return super().finalize(fit_slopes(ds))
