"""One object per configuration: everything derived from a :class:`DMFTConfig` (theory:
docs/theory/dmft.md §3).

:class:`DMFTModel` owns the correlations and couplings, the record convention, the per-point scalars of
a sweep, the initial states of a start (in either era), and the maps of the dynamics toolkit. Every
runner (trajectories, Lyapunov spectra, orbit diagrams, sweeps, the finite network) obtains them here,
so there is one place where a configuration's meaning is decided.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from attnphys.dmft._abstract_model import AbstractModel
from attnphys.dmft._variant import AbstractConfig
from attnphys.dmft.config import BATCHED, DMFTConfig, MoSeConvention
from attnphys.dmft.correlations import Correlations
from attnphys.dmft.initial import check_window, start_window, token_overlap, token_positions, token_semantic
from attnphys.dmft.maps import AttentionMap, FullStateMap
from attnphys.dmft.meanfield import Couplings, Scalars, State, Window, couplings, fill, scalars, token_state
from attnphys.dmft.simulate import Schedule, run_batch, stack_windows
from attnphys.dmft.starts import PrerunStart, TokenStart, as_start, keep_start_cache


@jax.jit
def _fill_batch(cp: Couplings, sc: Scalars, win: Window) -> State:
    """:func:`~attnphys.dmft.meanfield.fill` over a batch, as one program (op by op, each operation of a
    start would be a program of its own to look up)."""
    return jax.vmap(lambda s, w: fill(cp, s, w))(sc, win)


@dataclass(frozen=True, eq=False)
class DMFTModel(AbstractModel):
    """A configuration's derived state (build with :meth:`of`; cached per configuration).

    Attributes:
        config: the validated configuration.
        correlations: its correlation tensors.
        couplings: the arrays of the map (float64 when enabled).
    """

    config: DMFTConfig
    correlations: Correlations
    couplings: Couplings

    @classmethod
    def build(cls, cfg: DMFTConfig) -> DMFTModel:
        """The model of ``cfg``: its correlations and the couplings of the map (:meth:`of` caches it). A
        variant of the paper's network that changes the couplings overrides this."""
        corr = cfg.build_correlations()
        return cls(cfg, corr, couplings(corr))

    # -- per point ---------------------------------------------------------------------------------
    @property
    def convention(self) -> MoSeConvention:
        """The ``mo_se`` record convention (theory: docs/theory/dmft.md §5.1)."""
        return self.config.mo_se_convention

    def scalars(self, points: Mapping[str, Any] | None = None, n: int | None = None) -> Scalars:
        """Batched :class:`Scalars` of points given as name → (B,) values of :data:`BATCHED` fields
        (others come from the configuration); with ``points`` empty, ``n`` copies of the configuration's."""
        points = dict(points or {})
        bad = set(points) - set(BATCHED)
        if bad:
            raise ValueError(f"only {BATCHED} vary inside a batch; got {sorted(bad)}")
        sizes = {np.size(v) for v in points.values()} | ({n} if n is not None else set())
        B = max(sizes) if sizes else 1
        sc = scalars(self.config, **{k: np.asarray(v, np.float64) for k, v in points.items()})
        return Scalars(*(jnp.asarray(np.broadcast_to(np.asarray(x), (B,))) for x in sc))

    # -- starts ------------------------------------------------------------------------------------
    def check_start(self, start) -> None:
        """Refuse a start this configuration cannot use (shapes, the paper checkpoint's sizes, …)."""
        start = as_start(start)
        if isinstance(start, PrerunStart):
            self.config.with_field("beta_o", start.beta_o)
            self.check_start(start.start)
        elif isinstance(start, TokenStart):
            if start.row >= self.config.M:
                raise ValueError(f"token row must be in [0, {self.config.M - 1}], got {start.row}")
        else:
            start_window(self.config, start, self.correlations)

    def initial_states(self, start, sc: Scalars) -> State:
        """Batched initial :class:`State` of a start for the points of ``sc`` (theory: docs/theory/dmft.md
        §3.5, §5.2). A token start depends on each point's ε; in the 2024 era the first token x₀ itself is
        the newest row of the window (its overlaps exact), in the head era only its trace A₀ = m^v(x₀) is."""
        if isinstance(start, (list, tuple)) and not isinstance(start, (Window, State)):
            return per_point(lambda s, p: self.initial_states(s, p), start, sc)
        start = as_start(start)
        cfg, corr = self.config, self.correlations
        eps = np.asarray(sc.eps)
        if isinstance(start, PrerunStart):
            win = self.prerun_window(start)
            wins = Window(*(jnp.broadcast_to(x, (eps.size,) + x.shape) for x in win))
            return jax.vmap(lambda s, w: fill(self.couplings, s, w))(sc, wins)
        if isinstance(start, TokenStart) and cfg.era == "2024":
            m = np.stack([token_overlap(corr, float(e), start.row) for e in eps])
            se = np.stack([token_semantic(corr, float(e), start.row) for e in eps])
            A = np.zeros((eps.size, cfg.L, cfg.M))
            A[:, 0] = m[:, 1]
            pe = np.broadcast_to(token_positions(cfg.L, cfg.P), (eps.size, cfg.L, cfg.P))
            win = Window(jnp.asarray(A), jnp.asarray(pe), jnp.ones(eps.size, jnp.int32))
            return jax.vmap(token_state)(win, jnp.asarray(m), jnp.asarray(se))
        return keep_start_cache(_fill_batch(self.couplings, sc, self.initial_windows(start, sc)), start)

    def prerun_window(self, start: PrerunStart) -> Window:
        """The final window of a pre-run (cached per configuration and pre-run)."""
        return _prerun(self.config, start, str(jnp.result_type(float)))  # pyright: ignore[reportArgumentType]  (frozen pydantic models are hashable)

    def initial_windows(self, start, sc: Scalars) -> Window:
        """Batched initial windows of a start (head-era semantics: a token start gives A₀ = m^v(x₀))."""
        if isinstance(start, (list, tuple)) and not isinstance(start, (Window, State)):
            return per_point(lambda s, p: self.initial_windows(s, p), start, sc)
        start = as_start(start)
        eps = np.asarray(sc.eps)
        if isinstance(start, PrerunStart):
            win = self.prerun_window(start)
            return Window(*(jnp.broadcast_to(x, (eps.size,) + x.shape) for x in win))
        if isinstance(start, TokenStart):
            per = {float(e): start_window(self.config, start, self.correlations, float(e)) for e in np.unique(eps)}
            wins = [per[float(e)] for e in eps]
        else:
            wins = [start_window(self.config, start, self.correlations)] * eps.size
        return stack_windows(wins)

    def windows_after(self, start, sc: Scalars, steps: int, labels: dict[str, np.ndarray] | None = None) -> Window:
        """Batched windows after ``steps`` steps of the map from a start (the transient, on the cached
        engine); ``start`` may be one start or one per point. Raises NonFiniteError naming the step and
        the point."""
        st = self.initial_states(start, sc)
        token = any(
            isinstance(as_start(s), TokenStart)
            for s in (start if isinstance(start, (list, tuple)) and not isinstance(start, (Window, State)) else [start])
        )
        if steps == 0:
            if self.config.era == "2024" and token:
                raise ValueError(
                    f"in the 2024 era the first token stays in the window for L = {self.config.L} "
                    "steps; a map analysis from a token start needs transient >= L"
                )
            return st.window
        if self.config.era == "2024" and token and steps < self.config.L:
            raise ValueError(
                f"in the 2024 era the first token stays in the window for L = {self.config.L} steps; "
                f"a map analysis from a token start needs transient >= L (got {steps})"
            )
        final, _, _ = run_batch(
            self.couplings, sc, st, Schedule(steps=steps, transient=steps, record=()), self.convention, labels=labels
        )
        return final.window

    # -- runners ---------------------------------------------------------------------------------------

    def run_batch(self, sc: Scalars, states: State, schedule: Schedule, labels: dict[str, np.ndarray] | None = None):
        """Run a batch of states under ``schedule`` on the cached engine (:func:`attnphys.dmft.simulate.run_batch`;
        theory: docs/theory/dmft.md §3.6, §3.7).

        Returns:
            (final states (B, …), records name → (B, n_records, M), first non-finite step (B,)).
        """
        return run_batch(self.couplings, sc, states, schedule, self.convention, labels=labels)

    def run_segments(self, sc: Scalars, states: State, steps: int, *, segment: int, window: int, stop, labels=None):
        """Run ``steps`` unrecorded steps in segments, asking ``stop`` after each which lanes may stop
        (:func:`attnphys.dmft.simulate.run_segments`; theory: docs/theory/dmft.md §7.1)."""
        from attnphys.dmft.simulate import run_segments

        return run_segments(
            self.couplings,
            sc,
            states,
            steps,
            segment=segment,
            window=window,
            stop=stop,
            convention=self.convention,
            labels=labels,
        )

    # -- maps ----------------------------------------------------------------------------------------
    def map(self, observable: str = "mo_se", full_state: bool = False):
        """The map of the dynamics toolkit (attention state, or the reference's full state)
        (theory: docs/theory/dmft.md §6.1)."""
        cfg = self.config
        if full_state:
            return FullStateMap(cfg.L, cfg.M, cfg.P, observable, self.convention)
        return AttentionMap(cfg.L, cfg.M, observable, self.convention)

    def params_of(self, param: str):
        """s ↦ the map's parameters (couplings, scalars) with the batched field ``param`` set to s, traceable,
        for continuation in s (theory: docs/theory/dmft.md §5.4).

        The fields are the configuration class's own :meth:`~attnphys.dmft.DMFTConfig.batched_fields` (β_o,
        β_att, ε, and a variant's own), and the scalars are this model's :meth:`scalars`: a field a variant
        adds flows through. The scalars are linear in each field, so with the others held,
        sc(s) = sc(0) + s·(sc(1) − sc(0)): for the paper's fields the gain s·s_o and ε = s bit for bit, and
        γ(s) = s·(s_att/√M) to rounding. A variant whose scalars are not linear in its own field overrides
        this.

        Raises:
            ValueError: ``param`` is not a batched field of the configuration.
        """
        fields = type(self.config).batched_fields()
        if param not in fields:
            raise ValueError(
                f"no continuation along {param!r}: the map is continued along {', '.join(fields)} (the fields "
                "that vary inside a batch)"
            )
        cp = self.couplings
        at0, at1 = (jax.tree_util.tree_map(lambda a: a[0], self.scalars({param: [v]})) for v in (0.0, 1.0))
        slope = jax.tree_util.tree_map(lambda a, b: b - a, at0, at1)
        return lambda s: (cp, jax.tree_util.tree_map(lambda a, d: a + s * d, at0, slope))

    def state_dim(self, full_state: bool = False) -> int:
        """Dimension of the map's state: L·M, or L(M+P) for the full state."""
        return self.config.L * (self.config.M + (self.config.P if full_state else 0))

    def window_of(self, A, pe, n=None) -> Window:
        """A validated window of this configuration."""
        A, pe, n = check_window(self.config, A, pe, n)
        return Window(jnp.asarray(A), jnp.asarray(pe), jnp.asarray(n, jnp.int32))


def model_of(cfg: AbstractConfig) -> AbstractModel:
    """The model object of a configuration of any variant (``cfg.model_class().of(cfg)``): a
    :class:`DMFTModel` for a :class:`~attnphys.dmft.DMFTConfig`, a
    :class:`~attnphys.dmft.designed.DesignedModel` for a designed configuration (theory: docs/theory/designed.md §3)."""
    return cfg.model_class().of(cfg)


def per_point(fn, starts, sc: Scalars):
    """``fn(start, scalars)`` for one start per point, grouped by identical starts, in point order."""
    starts = [as_start(s) for s in starts]
    B = int(np.shape(sc.gain_o)[0])
    if len(starts) != B:
        raise ValueError(f"{len(starts)} starts for {B} points")
    groups: dict = {}
    for i, s in enumerate(starts):
        groups.setdefault(s.model_dump_json(), []).append(i)
    parts, order = [], []
    for idx in groups.values():
        sub = jax.tree_util.tree_map(lambda a, idx=idx: a[np.asarray(idx)], sc)
        parts.append(fn(starts[idx[0]], sub))
        order += idx
    inv = np.argsort(np.asarray(order))
    return jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs)[inv], *parts)


def run_prerun(model, start: PrerunStart) -> Window:
    """The final window of a pre-run (theory: docs/theory/dmft.md §3.5): ``start.steps`` steps of ``model`` (one
    built at β_o = ``start.beta_o``) from ``start.start``, nothing recorded. Every model variant runs its
    pre-runs through this one function."""
    sc = model.scalars(n=1)
    final, _, _ = model.run_batch(
        sc,
        model.initial_states(start.start, sc),
        Schedule(steps=start.steps, transient=start.steps, record=()),
        labels={"beta_o": np.asarray([start.beta_o])},
    )
    return Window(*(x[0] for x in final.window))


@lru_cache(maxsize=32)
def _prerun(cfg: DMFTConfig, start: PrerunStart, dtype: str) -> Window:
    return run_prerun(model_of(cfg.replace(beta_o=start.beta_o)), start)
