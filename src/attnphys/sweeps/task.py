"""What a sweep computes per point: the task interface and its registry (theory: docs/theory/sweeps.md §1).

A task is a frozen pydantic model (its JSON is stored with the results, so a worker process or a later
run rebuilds it exactly). The engine knows no concrete task: tasks register themselves with
:func:`register_task`, and a process that meets an unknown ``kind`` (a fresh worker) finds it through the
``attnphys.sweep_tasks`` entry points of the installed packages (``kind = "module:Class"``).
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict

from attnphys._plugins import BUILTINS
from attnphys.registry import Registry
from attnphys.sweeps.grid import Grid

ENTRY_POINT_GROUP = "attnphys.sweep_tasks"


def _is_task(obj: object) -> object:
    return obj if isinstance(obj, type) and issubclass(obj, AbstractTask) else None


TASKS: Registry[type[AbstractTask]] = Registry(
    "task kind",
    group=ENTRY_POINT_GROUP,
    builtins=BUILTINS[ENTRY_POINT_GROUP],
    accept=_is_task,
    key=lambda cls: cls.model_fields["kind"].default,
    field="kind",
    member="a task class ([sweeps page](sweeps.md) §1), name = its `kind`",
    adding="one file, one line in `_plugins.py`",
    theory="sweeps.md §1",
)
"""The registry of task classes by ``kind`` (:class:`attnphys.registry.Registry`)."""

T = TypeVar("T", bound="type[AbstractTask]")


def register_task(cls: T) -> T:
    """Class decorator: make a task kind known to the engine (its ``kind`` field's default names it)."""
    return TASKS.register(cls)


def task_class(kind: str) -> type[AbstractTask]:
    """The class of a task kind: registered in this process, else built in or an outside entry point
    (importing its module registers it).

    Raises:
        InputError: an unknown kind (a ValueError).
        ExtensionError: an entry point that gives a task's kind to another class.
    """
    return TASKS.lookup(kind)


class VarSpec(tuple):
    """One result variable: (dims after ``point``, shape after ``point``, dtype, fill value, attrs).

    ``attrs`` carries the CF ``long_name`` and ``units`` (when the quantity has units)."""

    def __new__(
        cls,
        dims: tuple[str, ...],
        shape: tuple[int, ...],
        dtype,
        fill,
        long_name: str = "",
        units: str | None = None,
        **attrs: Any,
    ):
        a = {"long_name": long_name} if long_name else {}
        if units is not None:
            a["units"] = units
        a.update(attrs)
        return super().__new__(cls, (tuple(dims), tuple(shape), np.dtype(dtype), fill, a))

    @property
    def dims(self) -> tuple[str, ...]:
        return self[0]

    @property
    def shape(self) -> tuple[int, ...]:
        return self[1]

    @property
    def dtype(self) -> np.dtype:
        return self[2]

    @property
    def fill(self):
        return self[3]

    @property
    def attrs(self) -> dict:
        return self[4]


class AbstractTask(BaseModel, abc.ABC):
    """Per-point computation of a sweep.

    Subclasses declare ``kind: Literal["..."] = "..."`` and implement the methods below. Chunks are the
    unit of work: :meth:`compute` gets a contiguous range of point indices and returns one array per
    schema variable with a leading point axis. A task whose points depend on each other (a continuation
    chain) returns its chain length from :meth:`chain_length`; chunks then hold whole chains.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str
    command: ClassVar[str | None] = None

    @abc.abstractmethod
    def check_grid(self, grid: Grid) -> None:
        """Raise ValueError (naming the axis and the rule) if some grid point is invalid. Called before
        anything is written."""

    @abc.abstractmethod
    def schema(self, grid: Grid) -> dict[str, VarSpec]:
        """The result variables (without the leading point axis)."""

    def coords(self, grid: Grid) -> dict[str, tuple[tuple[str, ...], np.ndarray]]:
        """Coordinates of the non-grid dimensions of the schema."""
        return {}

    def attrs(self) -> dict[str, Any]:
        """Dataset attributes describing the results (codes, conventions)."""
        return {}

    def chain_length(self, grid: Grid) -> int:
        """Points that must run in sequence within one chunk (1: all points independent)."""
        return 1

    working_option: ClassVar[str | None] = None
    """The option that sets :meth:`working_bytes` (named when a chunk would not fit)."""

    def working_bytes(self, grid: Grid) -> int:
        """Memory one point needs while it is computed, beyond its results, in bytes (default 0); the
        engine refuses a sweep whose chunk would not fit before anything is written."""
        return 0

    @abc.abstractmethod
    def compute(self, grid: Grid, lo: int, hi: int, base_seed: int = 0) -> dict[str, np.ndarray]:
        """Results of points lo … hi−1 in point order; each array has a leading axis of hi − lo."""

    def finalize(self, ds):
        """Derived quantities of the assembled result (e.g. fits across points); default unchanged."""
        return ds

    @classmethod
    @abc.abstractmethod
    def example(cls) -> tuple[AbstractTask, Grid]:
        """A small task and grid (seconds to compute): the property tests of every task run on it."""


def options_task(options: type[BaseModel], *, exclude: tuple[str, ...] = ()) -> type[AbstractTask]:
    """The base of a task whose fields are the options of the analysis it runs: those of ``options`` (an
    options model, e.g. :class:`attnphys.clouds.ClusteringOptions`' point class), but ``exclude``, with their
    types, defaults, bounds, validators and help, declared there once (theory: docs/theory/sweeps.md §1).

    ``class MyTask(options_task(MyPoint, exclude=("seed",)))`` then declares only its ``kind`` and the
    fields the analysis does not have. A stored task keeps the field names it always had, the options' own.

    Raises:
        ValueError: an excluded name that is no field of ``options``; an options class with validators of its
            own (``field_validator``, ``model_validator``): the copied fields would not run them.
    """
    import copy

    from pydantic import create_model

    unknown = [n for n in exclude if n not in options.model_fields]
    if unknown:
        raise ValueError(f"{options.__name__} has no field {unknown[0]!r} to exclude")
    decorators = options.__pydantic_decorators__
    checks = [*decorators.field_validators, *decorators.model_validators, *decorators.validators]
    if checks:  # the fields are copied, not the class's own checks: a task would silently skip them
        raise ValueError(
            f"{options.__name__} has validators ({', '.join(checks)}) that a task built on its fields would not "
            "run: declare them as the fields' own (Annotated validators), or on the task"
        )
    fields: dict[str, Any] = {
        name: (f.annotation, copy.copy(f)) for name, f in options.model_fields.items() if name not in exclude
    }
    base = create_model(f"{options.__name__}Task", __base__=AbstractTask, **fields)
    base.__doc__ = f"A task over the options of :class:`{options.__module__}.{options.__qualname__}`."
    base.options_model = options  # type: ignore[attr-defined]
    return base
