"""Configuration and model object of the designed mean-field model (theory: docs/theory/designed.md §3).

:class:`DesignedConfig` holds the design and the parameters β_o, γ, ε and the context length L;
:class:`DesignedModel` is everything derived from it, with the methods the runners of the paper's model
use on :class:`~attnphys.dmft.model.DMFTModel` (scalars of a batch of points, starts, the trajectory
runner, windows after a transient, the map of the dynamics toolkit and parameter paths for continuation),
so that trajectories, Lyapunov spectra, censuses and continuation run on it unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal, cast

import jax
import jax.numpy as jnp
import numpy as np

from attnphys.dmft._abstract_model import AbstractModel
from attnphys.dmft.designed._config import BATCHED, DesignedConfig
from attnphys.dmft.designed._design import DesignSpec
from attnphys.dmft.designed._map import DesignArrays, DesignedMap, design_arrays, fill, run_batch
from attnphys.dmft.initial import check_window, from_file, from_window, token_positions
from attnphys.dmft.meanfield import Scalars, State, Window
from attnphys.dmft.model import model_of, per_point, run_prerun
from attnphys.dmft.simulate import Schedule, stack_windows
from attnphys.dmft.starts import (
    CheckpointStart,
    FileStart,
    PatternStart,
    PrerunStart,
    TokenStart,
    as_start,
    keep_start_cache,
)
from attnphys.errors import InputError

# ==== the model ============================================================================================


def model_bytes(design: DesignSpec) -> float:
    """Bytes a designed model's arrays take (theory: docs/theory/designed.md §1.2): the field and readout
    (4, 2^m_se, M) each, built once in float64 on the host and again on the device, the sign vectors
    (2^m_se, m_se) and the position codes (4, M, P)."""
    S, M = 2.0**design.m_se, float(design.M)
    return 8.0 * 2 * (2 * 4 * S * M + S * design.m_se + 4 * M * design.P)


@dataclass(frozen=True, eq=False)
class DesignedModel(AbstractModel):
    """A designed configuration's derived state (build with :meth:`of`; cached per configuration)
    (theory: docs/theory/designed.md §3).

    Attributes:
        config: the validated configuration.
        couplings: the :class:`~attnphys.dmft.designed.DesignArrays` of the map; the map's parameters are
            ``(couplings, scalars)``, as for the paper's model.
    """

    config: DesignedConfig
    couplings: DesignArrays
    _paths: dict = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, cfg: DesignedConfig) -> DesignedModel:
        """The model of ``cfg``: the design's arrays (:meth:`of` caches it)."""
        return cls(cfg, design_arrays(cfg.design, jnp.result_type(float)))

    @classmethod
    def of(cls, cfg: DesignedConfig) -> DesignedModel:
        """The model of ``cfg`` (built once per configuration and dtype), after checking that its arrays fit
        (:func:`model_bytes`).

        Raises:
            ResourceError: naming ``design`` when they would not fit in the memory available.
        """
        from attnphys.errors import check_fits

        d = cfg.design
        check_fits(
            model_bytes(d),
            f"the arrays of a designed model with M = {d.M} mean-field patterns, 2^{d.m_se} sign vectors and "
            f"P = {d.P} positional bits",
            "use a design with fewer mean-field patterns (M) or base patterns (m_se)",
            "design",
        )
        return super().of(cfg)

    @property
    def design(self) -> DesignSpec:
        """The configuration's design (theory: docs/theory/designed.md §2)."""
        return self.config.design

    # -- per point ---------------------------------------------------------------------------------
    def scalars(self, points: Mapping[str, Any] | None = None, n: int | None = None) -> Scalars:
        """Batched :class:`~attnphys.dmft.meanfield.Scalars` (β_o, γ, ε) of points given as name → (B,)
        values of :data:`BATCHED` fields (others come from the configuration); with ``points`` empty,
        ``n`` copies of the configuration's. Every value is validated by the configuration's rules."""
        points = dict(points or {})
        bad = set(points) - set(BATCHED)
        if bad:
            raise ValueError(f"only {BATCHED} vary inside a batch; got {sorted(bad)}")
        for name, v in points.items():
            self.config.check_axis(name, np.unique(np.asarray(v, np.float64)))
        sizes = {np.size(v) for v in points.values()} | ({n} if n is not None else set())
        B = max(sizes) if sizes else 1
        dtype = jnp.result_type(float)
        vals = [np.asarray(points.get(k, getattr(self.config, k)), np.float64) for k in BATCHED]
        return Scalars(*(jnp.broadcast_to(jnp.asarray(v, dtype), (B,)) for v in vals))

    # -- starts ------------------------------------------------------------------------------------
    def check_start(self, start) -> None:
        """Refuse a start this configuration cannot use (theory: docs/theory/designed.md §3.1).

        Raises:
            ValueError: naming the rule (the pattern index of a token start, window shapes, the paper's
                checkpoint, which belongs to the paper's model).
        """
        start = as_start(start)
        if isinstance(start, PrerunStart):
            self.config.with_field("beta_o", start.beta_o)
            self.check_start(start.start)
        else:
            self._window(start)

    def _window(self, start) -> Window:
        cfg = self.config
        if isinstance(start, TokenStart):
            if not 0 <= start.row < cfg.M:
                raise ValueError(f"the token start's pattern index must be in [0, {cfg.M - 1}], got {start.row}")
            return token_window(self.design, cfg.L, start.row)
        if isinstance(start, PatternStart):
            raise ValueError(
                "the pattern start belongs to the paper model's hand-set correlations; a designed model's token "
                "start is already its pattern index: give token(row=INDEX)"
            )
        if isinstance(start, CheckpointStart):
            raise ValueError(
                "the checkpoint start is the paper model's β_o = 3 window; start a designed model from a token "
                "(its pattern index), a window file or an explicit window"
            )
        c = cast(Any, cfg)  # the window checks read L, M and P only
        if isinstance(start, FileStart):
            FileStart(path=start.path, sha256=start.sha256)  # the file must still be the recorded one
            return from_file(c, start.path)
        return from_window(c, start.att_window, start.pe_window, start.n)

    def initial_windows(self, start, sc: Scalars) -> Window:
        """Batched initial windows of a start, one per point of ``sc`` (or one start per point)."""
        if _several(start):
            return per_point(self.initial_windows, start, sc)
        start = as_start(start)
        B = int(np.shape(sc.gain_o)[0])
        win = self.prerun_window(start) if isinstance(start, PrerunStart) else self._window(start)
        return stack_windows([win] * B)

    def initial_states(self, start, sc: Scalars) -> State:
        """Batched initial engine :class:`~attnphys.dmft.meanfield.State` of a start for the points of ``sc``
        (theory: docs/theory/designed.md §3.1). A start saved from an engine state keeps its cached overlaps
        where they are this point's (same β_o, ε), so that a continuation is bitwise the uninterrupted run."""
        if _several(start):
            return per_point(self.initial_states, start, sc)
        st = jax.vmap(lambda s, w: fill(self.couplings, s, w))(sc, self.initial_windows(start, sc))
        return keep_start_cache(st, as_start(start))

    def prerun_window(self, start: PrerunStart) -> Window:
        """The final window of a pre-run (cached per configuration and pre-run)."""
        return _prerun(self.config, start, str(jnp.result_type(float)))  # pyright: ignore[reportArgumentType]  (frozen pydantic models are hashable)

    # -- running -------------------------------------------------------------------------------------
    def run_batch(
        self,
        sc: Scalars,
        start,
        schedule: Schedule,
        *,
        check: bool = True,
        labels: dict[str, np.ndarray] | None = None,
    ):
        """Run a batch of B trajectories (theory: docs/theory/designed.md §1.5): the counterpart of
        :func:`attnphys.dmft.simulate.run_batch` with this model's couplings.

        Args:
            sc: (B,) scalars. start: a batched engine :class:`State`, a batched :class:`Window`, or a start
                (one, or one per point). schedule: steps, transient, record_every and the records.
            check: raise :class:`~attnphys.errors.NonFiniteError` naming the first non-finite step and the
                point's ``labels`` (name → (B,) values; default the index).

        Returns:
            (final states (B, …), records name → (B, n_records, M), first non-finite step (B,), −1: none).
        """
        return run_batch(self.couplings, sc, self._states(sc, start), schedule, check=check, labels=labels)

    def run_segments(
        self,
        sc: Scalars,
        start,
        steps: int,
        *,
        segment: int,
        window: int,
        stop,
        labels: dict[str, np.ndarray] | None = None,
    ):
        """A batch run in segments that retires the lanes ``stop`` accepts: the counterpart of
        :func:`attnphys.dmft.simulate.run_segments` with this model's step (theory: docs/theory/dmft.md §3.6).

        Returns:
            (states after their last step (B, …), steps run per lane (B,) int, retired (B,) bool).
        """
        from attnphys.dmft.simulate import run_segments

        st = self._states(sc, start)
        return run_segments(
            cast(Any, self.couplings),  # used only by the runner below
            sc,
            st,
            steps,
            segment=segment,
            window=window,
            stop=stop,
            labels=labels,
            runner=lambda s, w, sched: run_batch(self.couplings, s, w, sched, check=False),
        )

    def _states(self, sc: Scalars, start) -> State:
        if isinstance(start, State):
            return start
        if isinstance(start, Window):
            return jax.vmap(lambda s, w: fill(self.couplings, s, w))(sc, start)
        return self.initial_states(start, sc)

    def windows_after(self, start, sc: Scalars, steps: int, labels: dict[str, np.ndarray] | None = None) -> Window:
        """Batched windows after ``steps`` steps of the map from a start (one, or one per point). Raises
        NonFiniteError naming the step and the point."""
        st = self.initial_states(start, sc)
        if steps == 0:
            return st.window
        final, _, _ = self.run_batch(sc, st, Schedule(steps=steps, transient=steps, record=()), labels=labels)
        return final.window

    # -- maps ----------------------------------------------------------------------------------------
    def map(self, observable: str = "mo_se", full_state: bool = False, amplitude: float = 1.0) -> DesignedMap:
        """The map of the dynamics toolkit (theory: docs/theory/designed.md §3.2): state vec(A), auxiliary
        state (pe, n), parameters ``(self.couplings, scalars)``; ``amplitude``: its random starts draw A
        uniform in [−a, a].

        Raises:
            InputError: ``full_state`` — the positional codes enter through a ReLU and are not a
                differentiable coordinate; their exponents are exactly 0 and the attention state carries
                every other one.
        """
        if full_state:
            raise InputError(
                "the designed map has no full-state form: its position codes enter through a ReLU; their "
                "exponents are exactly 0 and the attention state carries all others",
                "full-state",
            )
        cfg = self.config
        return DesignedMap(cfg.L, cfg.M, cfg.P, observable, amplitude)

    def state_dim(self, full_state: bool = False) -> int:
        """Dimension L·M of the map's state."""
        return self.config.state_dim

    def params_of(self, param: str, scale: Literal["linear", "log"] = "linear"):
        """s ↦ the map's parameters (couplings, scalars) with β_o, γ or ε set to s (``scale="log"``: to
        e^s), the others the configuration's; traceable, and one function object per (model, parameter,
        scale), so that compiled continuation kernels are reused (theory: docs/theory/designed.md §3.3)."""
        if param not in BATCHED:
            raise ValueError(f"unknown parameter {param!r}; choose from {BATCHED}")
        if scale not in ("linear", "log"):
            raise ValueError(f"scale must be 'linear' or 'log', got {scale!r}")
        key = (param, scale)
        if key not in self._paths:
            cp = self.couplings
            bo, ga, ep = (x[0] for x in self.scalars(n=1))
            set_ = {
                "beta_o": lambda v: (cp, Scalars(v, ga, ep)),
                "gamma": lambda v: (cp, Scalars(bo, v, ep)),
                "epsilon": lambda v: (cp, Scalars(bo, ga, v)),
            }[param]
            self._paths[key] = set_ if scale == "linear" else (lambda s: set_(jnp.exp(s)))
        return self._paths[key]

    def window_of(self, A, pe, n=None) -> Window:
        """A validated window of this configuration."""
        A, pe, n = check_window(cast(Any, self.config), A, pe, n)
        return Window(jnp.asarray(A), jnp.asarray(pe), jnp.asarray(n, jnp.int32))


def token_window(design: DesignSpec, L: int, row: int = 0) -> Window:
    """The window after a token start (theory: docs/theory/designed.md §3.1): the first token is pattern
    ``row``, so every feature's mean fields are one where its order equals ``row``; A₀ is the value's,
    n₀ = 1, and the positional window is that of the paper's token start (row d at position −d mod L)."""
    A = np.zeros((L, design.M))
    A[0] = np.asarray(design.orders.v) == row
    return Window(jnp.asarray(A), jnp.asarray(token_positions(L, design.P)), jnp.asarray(1, jnp.int32))


def _several(start) -> bool:
    return isinstance(start, (list, tuple)) and not isinstance(start, (Window, State))


@lru_cache(maxsize=32)
def _prerun(cfg: DesignedConfig, start: PrerunStart, dtype: str) -> Window:
    return run_prerun(model_of(cfg.replace(beta_o=start.beta_o)), start)
