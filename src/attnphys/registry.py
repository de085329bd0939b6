"""One registry type for every concept of the library (theory: docs/theory/variants.md §5).

A :class:`Registry` holds the members of one concept by name — the maps of the dynamics toolkit, the
normalizations, attention kernels and weight ensembles of the token clouds, the samplers of starts, the
model variants, the observables, the commands, the sweep tasks, the result views, the claims of ``attnphys
verify`` and of the probes, the reproducible figures — and merges three sources in one place, in one order:

1. the library's own members, declared in code where the concept lives (an object, or a ``"module:attribute"``
   reference imported only when the member is used, so that the command line names them without loading
   the numerical libraries);
2. members registered in the running process (:meth:`Registry.register`, also a class decorator);
3. the entry points of outside packages (the registry's ``group``), found by name without importing them.

Names are unique: registering another object under a taken name raises :class:`RegistryConflictError`
(an :class:`~attnphys.errors.ExtensionError` and a ``ValueError``), and an outside entry point that gives a
taken name to another object, or fails to load, or is not a member, is warned about
(:class:`~attnphys.errors.ExtensionWarning`) and skipped, so one broken plugin never breaks an unrelated
command. Lookups take a name or the member itself (a class, for registries of classes); an unknown name is
an :class:`~attnphys.errors.InputError` naming the registry's field and listing the names. The listing of
names is cached (per ``sys.path`` and per registration; :meth:`Registry.refresh` reads the entry points again). Every list a reader sees — the commands' help, the
docstring and documentation tables — is read from a registry, never written by hand.

A light module: nothing here imports a numerical library.
"""

from __future__ import annotations

import contextlib
import difflib
import sys
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from attnphys.errors import ExtensionError, InputError

T = TypeVar("T")


class RegistryConflictError(ExtensionError, ValueError):
    """A name of a registry is given to a second object (one name, one member)."""


def _name_attr(obj: Any) -> str:
    name = getattr(obj, "name", None)
    if not isinstance(name, str) or not name:
        raise RegistryConflictError(
            f"{getattr(obj, '__qualname__', type(obj).__qualname__)} has no name (a `name` attribute); "
            "register it with an explicit name"
        )
    return name


_INDEX: dict[str, weakref.ref[Registry]] = {}


class Registry(Mapping[str, T], Generic[T]):
    """The members of one concept by name: built-ins, members registered in this process and the outside
    entry points of ``group``, merged in that order (theory: docs/theory/variants.md §5).

    Args:
        noun: what a member is, as messages say it (``"normalization"``).
        group: the entry-point group of outside packages, or None (no outside members).
        builtins: the library's own members: a mapping name → member or ``"module:attribute"`` reference, or
            an iterable of members (named by ``key``).
        accept: ``obj -> member | None``: the member an object stands for (e.g. a map built from its class),
            None where it is not one. Default: every object.
        key: the name of a member (default: its ``name`` attribute).
        field: the option or argument an unknown name is blamed on (``InputError.field``).
        member: what a member is, as the reference pages say it (``"a normalization class"``).
        adding: how the library adds one of its own (``"one file, one line in _plugins.py"``).
        theory: the theory page that describes the concept (``"clouds.md §3"``).
        sort_added: list the members added in this process and by outside packages sorted together (default);
            False keeps those of this process in the order they were registered, before the outside ones.
        listed: whether :func:`registries` lists it (a registry built for a while, e.g. a restricted copy, is not).

    A registry is a read-only mapping (``reg[name]``, ``name in reg``, ``list(reg)``, ``reg.items()``);
    ``reg[name] = obj`` registers ``obj`` under ``name``, and ``del reg[name]`` removes a member registered
    in this process.
    """

    def __init__(
        self,
        noun: str,
        *,
        group: str | None = None,
        builtins: Mapping[str, Any] | Iterable[Any] = (),
        accept: Callable[[Any], Any] | None = None,
        key: Callable[[Any], str] | None = None,
        field: str | None = None,
        member: str = "",
        adding: str = "",
        theory: str = "",
        sort_added: bool = True,
        listed: bool = True,
    ):
        self.noun, self.group, self.field = noun, group, field
        self.member, self.adding, self.theory = member, adding, theory
        self._accept = accept
        self._sort_added = sort_added
        self._key = key or _name_attr
        own = builtins if isinstance(builtins, Mapping) else {self._key(b): b for b in builtins}
        self._own: dict[str, Any] = dict(own)
        self._code: dict[str, Any] = {}
        self._origin: dict[str, str | None] = {}
        self._loaded: dict[str, Any] = {}
        self._version = 0
        self._cache: tuple[Any, tuple[str, ...], dict[str, str]] | None = None
        if listed:
            _INDEX[noun] = weakref.ref(self)

    # -- membership ----------------------------------------------------------------------------------------

    def is_member(self, obj: Any) -> bool:
        """Whether ``obj`` is a member of this concept (``accept`` takes it as it is)."""
        return self._accept is None or self._accept(obj) is obj

    def _as_member(self, obj: Any) -> Any:
        return obj if self._accept is None else self._accept(obj)

    def register(self, obj: Any = None, /, *, name: str | None = None) -> Any:
        """Add ``obj`` under ``name`` (default its ``name``); returns it, so that it is also a class decorator
        (``@reg.register`` or ``@reg.register(name="x")``).

        Raises:
            RegistryConflictError: ``obj`` is not a member, or the name is another object's.
        """
        if obj is None:
            return lambda o: self.register(o, name=name)
        name = self._key(obj) if name is None else name
        if not isinstance(name, str) or not name:
            raise RegistryConflictError(f"a {self.noun} needs a non-empty name, got {name!r}")
        if self._as_member(obj) is None:
            raise RegistryConflictError(f"{self.noun} {name!r} must be {self.member or 'a member'}, got {obj!r}")
        have = self._code.get(name, self._loaded.get(name, self._own.get(name)))
        if have is not None and not _same_object(have, obj):
            raise RegistryConflictError(
                f"{self.noun} {name!r} is already registered as {_describe(have)} (one name, one {self.noun})"
            )
        self._code[name] = obj
        self._origin[name] = _importing_module()
        self._changed()
        return obj

    def origin(self, name: str) -> str | None:
        """The module whose top-level code registered the member ``name`` in this process (the running
        script's ``__main__`` for a call outside any import; None where it was not registered in this
        process)."""
        return self._origin.get(name) if name in self._code else None

    def __setitem__(self, name: str, obj: Any) -> None:
        self.register(obj, name=name)

    def __delitem__(self, name: str) -> None:
        if name not in self._code:
            raise KeyError(f"{name!r} is not a {self.noun} registered in this process")
        del self._code[name]
        self._loaded.pop(name, None)
        self._changed()

    def pop(self, name: str, *default: Any) -> Any:
        """Forget the member registered in this process as ``name`` and return it, as ``dict.pop`` does
        (``default``, or KeyError, where no member of that name was registered in this process: a reference
        built-in or an outside member is not forgotten)."""
        if name in self._code:
            member = self._code[name]
            del self[name]
            return member
        if default:
            return default[0]
        raise KeyError(f"{name!r} is not a {self.noun} registered in this process")

    @contextlib.contextmanager
    def scoped(self, keep: Callable[[str, Any], bool] | None = None) -> Iterator[Registry[T]]:
        """A block after which the members registered inside it are forgotten (trying an extension in a
        notebook or a test without leaving it registered), except those ``keep(name, member)`` keeps."""
        code, loaded = dict(self._code), dict(self._loaded)
        try:
            yield self
        finally:
            added = {k: v for k, v in self._code.items() if k not in code and keep is not None and keep(k, v)}
            self._code, self._loaded = {**code, **added}, loaded
            self._changed()

    def refresh(self) -> None:
        """Read the outside entry points again (after installing a package into a folder already on the
        path; a change of ``sys.path`` is noticed by itself)."""
        self._changed()

    def _changed(self) -> None:
        self._version += 1
        self._cache = None

    # -- listing -------------------------------------------------------------------------------------------

    def _outside(self) -> tuple[tuple[str, ...], dict[str, str]]:
        """(every name, outside name → reference), cached per ``sys.path`` and registration."""
        import importlib.metadata

        stamp = (tuple(sys.path), self._version, importlib.metadata.entry_points)
        if self._cache is not None and self._cache[0] == stamp:
            return self._cache[1], self._cache[2]
        self._loaded = {k: v for k, v in self._loaded.items() if k in self._own}  # outside ones found again
        extra: dict[str, str] = {}
        if self.group is not None:
            from attnphys._plugins import outside

            taken = {**self._own, **self._loaded, **self._code}
            extra = outside(self.group, taken, own={})
        own = list(self._own)
        if self._sort_added:
            names = tuple(own) + tuple(sorted((set(self._code) | set(extra)) - set(own)))
        else:
            code = [n for n in self._code if n not in self._own]
            names = tuple(own) + tuple(code) + tuple(sorted(set(extra) - set(own) - set(code)))
        self._cache = (stamp, names, extra)
        return names, extra

    def names(self) -> tuple[str, ...]:
        """Every member's name: the built-ins in their order, then those registered in this process and the
        outside entry points, sorted (nothing is imported)."""
        return self._outside()[0]

    def builtin_names(self) -> tuple[str, ...]:
        """The library's own members' names, in their order."""
        return tuple(self._own)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        return name in self._code or name in self._own or name in self.names()

    # -- lookup --------------------------------------------------------------------------------------------

    def __getitem__(self, name: str) -> T:
        if name in self._code:
            return self._code[name]
        if name in self._loaded:
            return self._loaded[name]
        if name in self._own:
            obj = self._own[name]
            if isinstance(obj, str):
                from attnphys._plugins import load

                obj = load(obj)
            self._loaded[name] = obj
            return obj
        ref = self._outside()[1].get(name)
        if ref is None:
            raise KeyError(name)
        from attnphys._plugins import load_outside

        member = self._as_member(load_outside(self.group or "", name, ref))
        if member is None:
            raise ExtensionError(
                f"the entry point {name!r} of the group {self.group} names {ref}, which is not "
                f"{self.member or 'a ' + self.noun}"
            )
        self._loaded[name] = member
        return member

    def lookup(self, key: Any) -> T:
        """The member ``key`` names, or ``key`` itself where it is a member (a class of a registry of classes,
        an object of a registry of objects).

        Raises:
            InputError: an unknown name (naming :attr:`field`), listing the known ones, with the nearest.
            ExtensionError: the outside entry point of that name fails to load or is not a member.
        """
        if not isinstance(key, str):
            if key is not None and self._accept is not None and self._accept(key) is not None:
                return self._accept(key)
            raise InputError(f"a {self.noun} is a name ({self.choices()}), got {key!r}", self.field)
        if key not in self:
            raise InputError(self._unknown(key), self.field)
        return self[key]

    def _unknown(self, key: str) -> str:
        """The message refusing the unknown name ``key``: the nearest name, and all of them."""
        near = difflib.get_close_matches(key, list(self.names()), n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        return f"unknown {self.noun} {key!r}{hint}; choose from {self.choices()}"

    def choices(self) -> str:
        """The names, comma-separated (as messages and help texts list them)."""
        return ", ".join(self.names())

    def loaded(self) -> dict[str, T]:
        """Every member by name (:meth:`names` order), the outside ones loaded now; one that fails to load or
        is not a member is skipped with an :class:`~attnphys.errors.ExtensionWarning` naming it and why."""
        from attnphys._plugins import skipped

        out: dict[str, T] = {}
        for name in self.names():
            try:
                out[name] = self[name]
            except ExtensionError as e:
                skipped(f"the entry point {name!r} of the group {self.group}", str(e))
        return out

    def name_of(self, member: Any) -> str | None:
        """The name a member is registered under (by identity), or None."""
        for name in self.names():
            if name in self._code or name in self._loaded or name in self._own:
                if self[name] is member:
                    return name
        return None

    def __repr__(self) -> str:
        group = f", group={self.group!r}" if self.group else ""
        return f"Registry({self.noun!r}{group}: {', '.join(self.names())})"

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)


def _importing_module() -> str | None:
    """The module whose top-level code is running the registration (the innermost one), or None."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "<module>":
            return frame.f_globals.get("__name__")
        frame = frame.f_back
    return None


def _same_object(have: Any, obj: Any) -> bool:
    if have is obj:
        return True
    if isinstance(have, str):
        from attnphys._plugins import load

        if "".join(have.split()) == f"{getattr(obj, '__module__', '')}:{getattr(obj, '__qualname__', '')}":
            return True  # a built-in's class registering itself as its module is imported

        try:
            return load(have) is obj
        except Exception:  # a reference that does not load names nothing
            return False
    ref = getattr(have, "__module__", None), getattr(have, "__qualname__", None)
    return ref[1] is not None and ref == (getattr(obj, "__module__", None), getattr(obj, "__qualname__", None))


def _describe(obj: Any) -> str:
    if isinstance(obj, str):
        return obj
    mod, qual = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    return f"{mod}:{qual}" if qual else repr(obj)


class MemberOf:
    """A field validator: the value is a name of the registry, refused otherwise with the names it could be
    (theory: docs/theory/variants.md §5); ``Annotated[str, AfterValidator(MemberOf(reg))]`` is
    :func:`member_name`'s type."""

    def __init__(self, registry: Registry):
        self.registry = registry

    def __call__(self, value: str) -> str:
        if value not in self.registry:  # pydantic names the field the message is about
            raise ValueError(self.registry._unknown(value))
        return value

    def __repr__(self) -> str:
        return f"member of {self.registry.noun}s"


def member_name(registry: Registry) -> Any:
    """The type of a field that names a member of ``registry``: a string, validated against the registry
    when the model is built (an unknown name refused with the names it could be), so that no option copies
    the registry's names into a ``Literal``."""
    from typing import Annotated

    from pydantic import AfterValidator

    return Annotated[str, AfterValidator(MemberOf(registry))]


def registry_of(field: Any) -> Registry | None:
    """The registry whose member a pydantic field (its ``FieldInfo``) names (:func:`member_name`), or None."""
    for meta in getattr(field, "metadata", ()):
        check = getattr(meta, "func", None)
        if isinstance(check, MemberOf):
            return check.registry
    return None


def registries() -> dict[str, Registry]:
    """Every registry constructed in this process, by noun (the modules that declare them are imported by
    whatever uses them; :func:`all_registries` imports them all)."""
    out = {}
    for noun, ref in list(_INDEX.items()):
        reg = ref()
        if reg is not None:
            out[noun] = reg
    return out


REGISTRY_MODULES: tuple[str, ...] = (
    "attnphys.jobs",
    "attnphys.sweeps.task",
    "attnphys.io",
    "attnphys.dmft._variant",
    "attnphys.dmft.observables",
    "attnphys.dynamics.maps",
    "attnphys.dynamics.samplers",
    "attnphys.clouds.norms",
    "attnphys.clouds.attention",
    "attnphys.clouds.ensembles",
    "attnphys.verify",
    "attnphys.probes.claims",
    "attnphys.reproduce._registry",
    "attnphys.clouds.registries",
)
"""The modules that declare the library's registries (imported by :func:`all_registries`)."""


def all_registries() -> dict[str, Registry]:
    """Every registry of the library, by noun (importing the modules of :data:`REGISTRY_MODULES`)."""
    from importlib import import_module

    for mod in REGISTRY_MODULES:
        import_module(mod)
    return registries()


__all__ = [
    "Registry",
    "RegistryConflictError",
    "all_registries",
    "member_name",
    "registries",
    "registry_of",
    "REGISTRY_MODULES",
]
