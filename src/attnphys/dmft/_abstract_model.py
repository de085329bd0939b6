"""The model object of a mean-field model variant: the small interface a new variant implements, and the
defaults it inherits (theory: docs/theory/variants.md; docs/theory/dmft.md §3, docs/theory/designed.md §3).

A model is everything derived from one configuration. A new variant defines five things — how the model is
built from its configuration (:meth:`AbstractModel.build`), the per-point scalars of a batch
(:meth:`~AbstractModel.scalars`), the initial windows of a start (:meth:`~AbstractModel.initial_windows`),
the batched runner (:meth:`~AbstractModel.run_batch`) and the map of the dynamics toolkit
(:meth:`~AbstractModel.map`) — and inherits the rest: the cache of models per configuration, the checks of
a start, pre-run starts, windows after a transient, window validation and the state's dimension; an
early-stopping runner and continuation paths are refused, naming the variant, until it defines them.
A variant of an existing model (e.g. the paper's with another positional code) subclasses that model and
overrides only what differs, usually :meth:`~AbstractModel.build`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Self

import jax
import jax.numpy as jnp
import numpy as np

from attnphys.dmft.initial import check_window
from attnphys.dmft.maps import WindowMap
from attnphys.dmft.meanfield import Scalars, State, Window
from attnphys.dmft.simulate import Schedule
from attnphys.dmft.starts import PrerunStart, as_start
from attnphys.errors import InputError


class AbstractModel(ABC):
    """Everything derived from one configuration (built once per configuration with :meth:`of`).

    Shapes: B points of a batch, L the context length, M the features of the map's state, P the
    positional bits.
    """

    config: Any
    """The validated configuration (an :class:`~attnphys.dmft.AbstractConfig`)."""
    couplings: Any
    """The arrays of the map (a pytree; the map's parameters are ``(couplings, scalars)``)."""

    # -- what a variant defines ------------------------------------------------------------------------
    @classmethod
    @abstractmethod
    def build(cls, cfg: Any) -> Self:
        """The model of ``cfg``, built now (:meth:`of` caches it per configuration and dtype)."""

    @abstractmethod
    def scalars(self, points: Any = None, n: int | None = None) -> Scalars:
        """Batched scalars (B,) of points given as name → values of the batched fields (others from the
        configuration); with ``points`` empty, ``n`` copies of the configuration's."""

    @abstractmethod
    def initial_windows(self, start, sc: Scalars) -> Window:
        """The batched initial windows (B, L, …) of ``start`` at the points ``sc`` (or one start per point).

        Raises:
            ValueError: a start this model cannot begin from, naming the rule.
        """

    @abstractmethod
    def run_batch(
        self, sc: Scalars, states: Any, schedule: Schedule, labels: dict[str, np.ndarray] | None = None
    ) -> Any:
        """Run a batch of trajectories on ``schedule``: (final states, records name → (B, n_records, M),
        first non-finite step (B,)); NaN/overflow is reported with the step and the point's ``labels``."""

    @abstractmethod
    def map(self, observable: str = "mo_se", full_state: bool = False) -> WindowMap:
        """The map of the dynamics toolkit (a :class:`~attnphys.dmft.maps.WindowMap`) on this model."""

    # -- inherited ---------------------------------------------------------------------------------------
    @classmethod
    def of(cls, cfg: Any) -> Self:
        """The model of ``cfg`` (:meth:`build`, once per configuration and dtype)."""
        warn_if_float32()
        return _model(cls, cfg, str(jnp.result_type(float)))  # pyright: ignore[reportReturnType]  (built by cls)

    @property
    def batched(self) -> tuple[str, ...]:
        """The parameters that vary inside a batch (what :meth:`scalars` accepts): the configuration's
        :meth:`~attnphys.dmft.AbstractConfig.batched_fields`."""
        return self.config.batched_fields()

    def check_start(self, start) -> None:
        """Refuse a start this model cannot begin from (ValueError naming the rule): a pre-run's β_o by the
        configuration's rules and its own start; any other start by building its window."""
        start = as_start(start)
        if isinstance(start, PrerunStart):
            self.config.with_field("beta_o", start.beta_o)
            self.check_start(start.start)
        else:
            self.initial_windows(start, self.scalars(n=1))

    def initial_states(self, start, sc: Scalars) -> Any:
        """The batched states :meth:`run_batch` starts from (default: the initial windows)."""
        return self.initial_windows(start, sc)

    def prerun_window(self, start: PrerunStart) -> Window:
        """The window a pre-run start ends on: its start run for its steps at its own β_o (theory:
        docs/theory/dmft.md §5.2)."""
        model = type(self).of(self.config.replace(beta_o=start.beta_o))
        win = model.windows_after(
            start.start, model.scalars(n=1), start.steps, labels={"beta_o": np.asarray([start.beta_o])}
        )
        return Window(*(x[0] for x in win))

    def windows_after(self, start, sc: Scalars, steps: int, labels: dict[str, np.ndarray] | None = None) -> Window:
        """The windows after ``steps`` unrecorded steps from ``start`` at the points ``sc``."""
        states = self.initial_states(start, sc)
        if steps:
            states, _, _ = self.run_batch(sc, states, Schedule(steps=steps, transient=steps, record=()), labels)
        return states.window if isinstance(states, State) else states

    def run_segments(
        self, sc: Scalars, states: Any, steps: int, *, segment: int, window: int, stop, labels=None
    ) -> Any:
        """Run in segments, stopping the trajectories ``stop`` says are done (the early-stopping runner).
        Not every variant has one: the default refuses."""
        raise InputError(f"the {self.config.variant} model has no early-stopping runner: run without it", "adaptive")

    def params_of(self, param: str) -> Callable[[Any], Any]:
        """s ↦ the map's parameters with the batched field ``param`` set to s (for continuation). The
        default refuses: a variant states how its parameters enter its map.

        Raises:
            ValueError: no continuation along ``param``.
        """
        raise ValueError(f"the {self.config.variant} model defines no continuation (along {param!r})")

    def state_dim(self, full_state: bool = False) -> int:
        """Dimension of the map's state: L·M (the attention block), or L(M + P) for the full state."""
        cfg = self.config
        return cfg.L * (cfg.M + (cfg.P if full_state else 0))

    def window_of(self, A, pe, n=None) -> Window:
        """A validated window (A (L, M), pe (L, P), n) of this configuration."""
        A, pe, n = check_window(self.config, A, pe, n)
        return Window(jnp.asarray(A), jnp.asarray(pe), jnp.asarray(n, jnp.int32))


@lru_cache(maxsize=64)
def _model(cls: type[AbstractModel], cfg: Any, dtype: str) -> AbstractModel:
    return cls.build(cfg)


def warn_if_float32() -> None:
    """Warn (:class:`~attnphys.errors.PrecisionWarning`) when the map would run in float32."""
    if not jax.config.jax_enable_x64:  # pyright: ignore[reportAttributeAccessIssue]
        import warnings

        from attnphys.errors import PrecisionWarning

        warnings.warn(
            "the DMFT map runs in float32 because float64 is off: call attnphys.configure() first (the "
            "command line does), or enable jax_enable_x64",
            PrecisionWarning,
            stacklevel=3,
        )
