"""The interface of a mean-field model variant: its configuration and its model object (theory:
docs/theory/dmft.md §3, docs/theory/designed.md §3).

A variant is a configuration class (:class:`AbstractConfig`, a frozen pydantic model) and the model object
derived from it (:class:`AbstractModel`). Every runner of the library — trajectories, Lyapunov spectra,
orbit diagrams, censuses, continuation, sweeps — is written against these two interfaces, so a new variant
runs through all of them (and gets the tests parametrised over the variants) by implementing the methods
below. The paper's model (:class:`~attnphys.dmft.DMFTConfig`, :class:`~attnphys.dmft.model.DMFTModel`) and
the designed-weights model (:class:`~attnphys.dmft.designed.DesignedConfig`,
:class:`~attnphys.dmft.designed.DesignedModel`) are the two variants.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, ValidationError, model_validator

if TYPE_CHECKING:
    from attnphys.dmft.maps import WindowMap
    from attnphys.dmft.meanfield import Scalars, State, Window
    from attnphys.dmft.simulate import Schedule


LARGE_AXIS = 10_000
"""Sweep axes longer than this, over a real-valued field, are checked at their extremes (see
:meth:`AbstractConfig.check_axis`)."""


class AbstractConfig(BaseModel, ABC):
    """A model variant's configuration: frozen, validated, JSON-serialisable (stored in full with every
    result, so that the result re-runs)."""

    def __init__(self, /, **data: Any) -> None:
        """Validated construction: a refused value raises :class:`~attnphys.errors.InputError` naming the
        field (never pydantic's own error; the command line reads it from the error's ``validation``)."""
        try:
            super().__init__(**data)
        except ValidationError as e:
            from attnphys._messages import config_error

            raise config_error(e, type(self)) from None

    @model_validator(mode="before")
    @classmethod
    def _no_stray_booleans(cls, data: Any) -> Any:
        """A boolean is not a number here (pydantic would read ``M=True`` as 1)."""
        from attnphys._messages import stray_booleans

        stray = stray_booleans(cls, data)
        if stray:
            raise ValueError("; ".join(stray))
        return data

    if TYPE_CHECKING:
        # The shape every variant states (a field or a property of each concrete configuration).
        @property
        def L(self) -> int:
            """Context length."""
            ...

        @property
        def M(self) -> int:
            """Number of features of the map's state."""
            ...

        @property
        def P(self) -> int:
            """Positional bits."""
            ...

        @property
        def era(self) -> str:
            """Window convention (docs/theory/dmft.md §5.2)."""
            ...

    @classmethod
    @abstractmethod
    def batched_fields(cls) -> tuple[str, ...]:
        """The fields that vary per trajectory inside one vectorised batch (the map's scalars); sweeping
        any other field builds one model per value."""

    @classmethod
    @abstractmethod
    def sweepable(cls) -> frozenset[str]:
        """The fields a sweep may vary."""

    @staticmethod
    @abstractmethod
    def model_class() -> type[AbstractModel]:
        """The model object of this configuration (built with ``model_class().of(cfg)``)."""

    @abstractmethod
    def replace(self, **changes: Any) -> AbstractConfig:
        """A validated copy with some fields changed."""

    @abstractmethod
    def with_field(self, name: str, value: Any) -> AbstractConfig:
        """A validated copy with one sweepable field set.

        Raises:
            ValueError: not a sweepable field, or a value the field's rules refuse.
        """

    def check_axis(self, name: str, values) -> None:
        """Validate every value of a sweep axis by the configuration's own rules (:meth:`with_field`).

        A numeric axis of more than :data:`LARGE_AXIS` values of a real-valued field is checked at its
        extremes and its first non-finite value only: the rules of a real field are intervals, so the
        extremes decide, and a grid of millions of values is refused (or sized) in milliseconds.

        Raises:
            InputError: naming the axis, the value and the constraint it breaks.
        """
        from attnphys.errors import InputError

        arr = np.atleast_1d(np.asarray(values))
        field = type(self).model_fields.get(name)
        if arr.size > LARGE_AXIS and arr.dtype.kind in "fiu" and field is not None and field.annotation is float:
            bad = np.flatnonzero(~np.isfinite(arr.astype(float)))
            picks = [int(bad[0])] if bad.size else []
            arr = arr[picks + [int(np.argmin(arr)), int(np.argmax(arr))]]
        for v in np.asarray(arr, dtype=object):
            try:
                self.with_field(name, v)
            except ValidationError as e:
                err = e.errors()[0]
                cause = (err.get("ctx") or {}).get("error")  # the configuration's own error (its __init__)
                msg = cause.detail if isinstance(cause, InputError) else err["msg"].removeprefix("Value error, ")
                raise InputError(f"axis {name}={v}: {msg}", name) from None
            except ValueError as e:
                raise InputError(f"axis {name}={v}: {e}", name) from None

    def to_attrs(self) -> dict:
        """Full configuration as JSON-ready metadata."""
        return self.model_dump(mode="json")


class AbstractModel(ABC):
    """Everything derived from one configuration (built once per configuration with :meth:`of`).

    Shapes: B points of a batch, L the context length, M the features of the map's state.
    """

    config: Any
    """The validated configuration (an :class:`AbstractConfig`)."""
    couplings: Any
    """The arrays of the map (a pytree; the map's parameters are ``(couplings, scalars)``)."""

    @classmethod
    @abstractmethod
    def of(cls, cfg: Any) -> AbstractModel:
        """The model of ``cfg`` (cached per configuration and dtype)."""

    @abstractmethod
    def scalars(self, points: Any = None, n: int | None = None) -> Scalars:
        """Batched scalars (B,) of points given as name → values of the batched fields (others from the
        configuration); with ``points`` empty, ``n`` copies of the configuration's."""

    @abstractmethod
    def check_start(self, start) -> None:
        """Refuse a start this model cannot begin from (InputError naming ``start``)."""

    @abstractmethod
    def initial_windows(self, start, sc: Scalars) -> Window:
        """The batched initial windows (B, L, …) of ``start`` at the points ``sc``."""

    @abstractmethod
    def initial_states(self, start, sc: Scalars) -> State:
        """The batched engine states of ``start`` (windows and their cached overlaps)."""

    @abstractmethod
    def prerun_window(self, start) -> Window:
        """The window a pre-run start ends on (one trajectory at its own parameters)."""

    @abstractmethod
    def windows_after(self, start, sc: Scalars, steps: int, labels: dict[str, np.ndarray] | None = None) -> Window:
        """The windows after ``steps`` steps from ``start`` at the points ``sc``; NaN/overflow is reported
        with the step and the point's ``labels``."""

    @abstractmethod
    def run_batch(
        self, sc: Scalars, states: State, schedule: Schedule, labels: dict[str, np.ndarray] | None = None
    ) -> Any:
        """Run a batch of trajectories on ``schedule``: (records, final states)."""

    @abstractmethod
    def run_segments(
        self, sc: Scalars, states: State, steps: int, *, segment: int, window: int, stop, labels=None
    ) -> Any:
        """Run in segments, stopping the trajectories ``stop`` says are done (the early-stopping runner)."""

    @abstractmethod
    def map(self, observable: str = "mo_se", full_state: bool = False) -> WindowMap:
        """The map of the dynamics toolkit (a :class:`~attnphys.dmft.maps.WindowMap`) on this model."""

    @abstractmethod
    def params_of(self, param: str) -> Callable[[Any], Any]:
        """s ↦ the map's parameters with the batched field ``param`` set to s (for continuation).

        Raises:
            ValueError: ``param`` is not a batched field.
        """

    batched: tuple[str, ...]
    """The parameters that vary inside a batch (what :meth:`scalars` accepts)."""

    @abstractmethod
    def state_dim(self, full_state: bool = False) -> int:
        """Dimension of the map's state (the attention block, or the full state)."""

    @abstractmethod
    def window_of(self, A, pe, n=None) -> Window:
        """A validated window of this configuration."""
