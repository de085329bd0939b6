"""Functions given by the user as keys of compiled programs (theory: docs/theory/dynamics.md §2.6).

A jitted core that takes a user's function (an observable, ``params_of``) as a static argument compiles
once per *key*. Keyed by the function object, a ``lambda`` written in a loop or in a re-run notebook cell is
a new key on every call and recompiles each time. :class:`SameFunction` keys a plain Python function by
what it computes with: its code, its defaults, the values it closes over and its module's globals, so the
same lambda made anew compiles nothing. As with ``jax.jit`` itself, the values a function reads from global
variables are those of its first compilation; a function closing over an unhashable value (an array) is
keyed by its identity.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def function_key(f: Callable) -> Any:
    """The key of ``f``: (code, defaults, closure values, globals) for a plain function whose closure values
    are hashable; ``f`` itself otherwise (bound methods compare by their object and function) (theory:
    docs/theory/dynamics.md §2.6)."""
    code = getattr(f, "__code__", None)
    if code is None or not hasattr(f, "__globals__"):
        return ("object", f)
    try:
        cells = tuple(c.cell_contents for c in (f.__closure__ or ()))
        key = (code, f.__defaults__, tuple(sorted((f.__kwdefaults__ or {}).items())), cells, id(f.__globals__))
        hash(key)
    except (TypeError, ValueError):  # an unhashable closure value, or an empty cell
        return ("object", f)
    return key


class SameFunction:
    """``f`` compared and hashed by :func:`function_key`: the static argument of a compiled core (theory:
    docs/theory/dynamics.md §2.6)."""

    __slots__ = ("f", "key")

    def __init__(self, f: Callable) -> None:
        self.f = f.f if isinstance(f, SameFunction) else f
        self.key = function_key(self.f)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.f(*args, **kwargs)

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SameFunction) and self.key == other.key

    def __repr__(self) -> str:
        return f"SameFunction({getattr(self.f, '__qualname__', self.f)!r})"
