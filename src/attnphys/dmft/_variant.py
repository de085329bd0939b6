"""A mean-field model variant's configuration, and the registry of the variants (theory:
docs/theory/dmft.md §3, docs/theory/designed.md §3, docs/theory/variants.md).

A variant is a configuration class (:class:`AbstractConfig`, a frozen pydantic model with a ``variant``
tag) and the model object derived from it (:class:`~attnphys.dmft.AbstractModel`, which its class names
in :attr:`AbstractConfig.model`). Every runner of the library — trajectories, Lyapunov spectra, orbit
diagrams, censuses, continuation, sweeps — is written against these two interfaces and resolves a stored
configuration through the registry (:func:`as_config`), so a new variant runs through all of them. The
paper's model (``paper``: :class:`~attnphys.dmft.DMFTConfig`) and the designed-weights model
(``designed``: :class:`~attnphys.dmft.designed.DesignedConfig`) are the library's own.

A light module: nothing here imports the numerical engine.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, TypeVar

import numpy as np
from pydantic import BaseModel, PlainSerializer, PlainValidator, ValidationError, WithJsonSchema, model_validator

from attnphys._plugins import BUILTINS
from attnphys.registry import Registry

LARGE_AXIS = 10_000
"""Sweep axes longer than this, over a real-valued field, are checked at their extremes (see
:meth:`AbstractConfig.check_axis`)."""


class AbstractConfig(BaseModel, ABC):
    """A model variant's configuration: frozen, validated, JSON-serialisable (stored in full with every
    result, so that the result re-runs).

    Every concrete configuration declares its tag, ``variant: Literal["name"] = "name"``, the name it is
    registered under (:func:`register_variant`): a stored configuration is read back as the class its tag
    names (:func:`as_config`), never as whichever class happens to accept its fields.
    """

    variant_tag: ClassVar[str | None] = None
    """The class's tag (the default of its ``variant`` field), None for an abstract configuration."""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        field = cls.model_fields.get("variant")
        tag = field.default if field is not None and isinstance(field.default, str) else None
        own = "variant" in cls.__dict__.get("__annotations__", {})
        if tag is not None and not own:
            from attnphys.errors import ExtensionError

            raise ExtensionError(
                f"{cls.__qualname__} inherits the variant tag {tag!r} of another configuration: declare its "
                f'own, `variant: Literal["name"] = "name"` (one tag, one class; else its results would be read '
                f"back as {tag!r})"
            )
        cls.variant_tag = tag

    def replace(self, **changes: Any) -> AbstractConfig:
        """A validated copy with some fields changed (of this configuration's own class)."""
        return type(self).model_validate({**self.model_dump(), **changes})

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

        @property
        def variant(self) -> str:
            """The variant's tag (a ``Literal`` field of each concrete configuration)."""
            ...

        @property
        def beta_o(self) -> float:
            """Output gain β_o (every variant has one: a pre-run start sets it)."""
            ...

        @property
        def mo_se_convention(self) -> str:
            """How ``mo_se`` is recorded (docs/theory/dmft.md §5.1)."""
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

    model: ClassVar[Any] = None
    """The model object's class (an :class:`~attnphys.dmft.AbstractModel`), or a ``"module:Class"``
    reference to it, imported when a model is first built (so that a configuration stays light)."""

    @classmethod
    def model_class(cls) -> Any:
        """The model object's class of this configuration (:attr:`model`; built with ``model_class().of(cfg)``)."""
        if isinstance(cls.model, str):
            from attnphys._plugins import load

            cls.model = load(cls.model)
        if cls.model is None:
            from attnphys.errors import ExtensionError

            raise ExtensionError(f"{cls.__qualname__} names no model class (set `model`)")
        return cls.model

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


# -- the registry of variants ------------------------------------------------------------------------------

ENTRY_POINT_GROUP = "attnphys.model_variants"
"""Entry-point group of the model variants of outside packages: name = the variant's tag, value = its
configuration class (``"module:Class"``). The library's own (``paper``, ``designed``) are listed in
:data:`attnphys._plugins.BUILTINS`; a variant defined in a module that is imported registers itself with
:func:`register_variant`."""


def _is_config(obj: object) -> object:
    return obj if isinstance(obj, type) and issubclass(obj, AbstractConfig) else None


def _tag(cls) -> str:
    from attnphys.errors import ExtensionError

    tag = cls.variant_tag
    if tag is None:
        raise ExtensionError(f'{cls.__qualname__} has no variant tag: declare `variant: Literal["name"] = "name"`')
    return tag


VARIANTS: Registry[type[AbstractConfig]] = Registry(
    "model variant",
    group=ENTRY_POINT_GROUP,
    builtins=BUILTINS[ENTRY_POINT_GROUP],
    accept=_is_config,
    key=_tag,
    field="variant",
    member="a configuration class ([variants page](variants.md) §1), name = its tag",
    adding="one file, one line in `_plugins.py`",
    theory="variants.md §2",
)
"""The registry of configuration classes by tag (:class:`attnphys.registry.Registry`)."""

LEGACY_TAGS: dict[str, str] = {"designed": "designed"}
"""Configurations stored by 0.2.0 carry no ``variant``: the designed one said ``kind: "designed"``, the
paper's said nothing (see :func:`infer_variant`)."""

C = TypeVar("C", bound="type[AbstractConfig]")


def register_variant(cls: C) -> C:
    """Class decorator (or call): make a configuration class the variant its ``variant`` tag names, so that
    every analysis, sweep task, stored result and rerun resolves the tag to it.

    Raises:
        ExtensionError: the class has no ``variant`` tag, or its tag is another class's.
    """
    return VARIANTS.register(cls)


def variant_names() -> list[str]:
    """Every variant's tag: built in, registered in this process, or an outside entry point."""
    return list(VARIANTS.names())


def variant_class(tag: str) -> type[AbstractConfig]:
    """The configuration class of a variant tag.

    Raises:
        InputError: an unknown tag (naming the known ones).
        ExtensionError: a conflicting entry point.
    """
    return VARIANTS.lookup(tag)


def infer_variant(data: dict) -> str:
    """The tag of a configuration stored without one (0.2.0): ``kind: "designed"`` or a ``design`` is the
    designed model; fields all of the paper's network are the paper's. Nothing else is guessed.

    Raises:
        InputError: naming ``variant`` when the fields fit no 0.2.0 configuration.
    """
    from attnphys.errors import InputError

    kind = data.get("kind")
    if kind in LEGACY_TAGS:
        return LEGACY_TAGS[kind]
    if kind is None and "design" in data:
        return "designed"
    paper = variant_class("paper")
    if kind is None and set(data) <= set(paper.model_fields):
        return "paper"
    raise InputError(
        f"a configuration without a variant tag, and not one of 0.2.0 (fields {sorted(data)}): give "
        f"`variant`, one of {', '.join(variant_names())}",
        "variant",
    )


def as_config(value: Any) -> AbstractConfig:
    """A configuration of the variant its ``variant`` tag names: a configuration object as it is, a mapping
    or JSON text validated by its variant's class (a 0.2.0 one without tag by :func:`infer_variant`).

    Raises:
        InputError: an unknown or missing tag, or a field the variant refuses (naming it).
    """
    import json

    from attnphys.errors import InputError

    if isinstance(value, AbstractConfig):
        registered = variant_class(value.variant)
        if type(value) is not registered:
            raise InputError(
                f"{type(value).__qualname__} is not the registered class of its variant {value.variant!r} "
                f"({registered.__qualname__}): register it (register_variant), or its results would be read "
                "back as the other class",
                "variant",
            )
        return value
    if isinstance(value, (str, bytes)):
        value = json.loads(value)
    if not isinstance(value, dict):
        raise InputError(f"a model configuration is a mapping, got {type(value).__name__}", "config")
    data = dict(value)
    tag = data.get("variant")
    if tag is None:
        tag = infer_variant(data)
        if data.get("kind") == tag:
            data.pop("kind")
        data["variant"] = tag
    cls = variant_class(str(tag))
    return cls.model_validate(data)


def make_config(tag: str, **fields: Any) -> AbstractConfig:
    """A validated configuration of the variant ``tag`` from its fields.

    Raises:
        InputError: naming the field (``design``, ``beta_o``, ``design.orders.v``, …) and the rule.
    """
    from attnphys.errors import InputError

    try:
        return variant_class(tag).model_validate({**fields, "variant": tag})
    except ValidationError as e:
        err = e.errors()[0]
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, InputError):
            raise InputError(cause.detail, cause.field) from None
        loc = ".".join(str(x) for x in err["loc"]) or None
        raise InputError(err["msg"].removeprefix("Value error, "), loc) from None


def _dump(cfg: AbstractConfig, info) -> Any:
    return cfg.model_dump(mode=info.mode)


AnyConfig = Annotated[
    AbstractConfig,
    PlainValidator(as_config),
    PlainSerializer(_dump),
    WithJsonSchema({"type": "object", "required": ["variant"], "description": "a model configuration"}),
]
"""A field type holding a configuration of any registered variant: validated as the class its ``variant``
tag names, dumped in full by that class (a subclass's fields and tag are kept on the round trip)."""
