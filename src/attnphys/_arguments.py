"""The entry check of the library's public functions: one rule per kind of argument, read from the
function's signature, applied before anything is traced or allocated (theory: docs/theory/dynamics.md §2.5).

:func:`checked` wraps a function so that each argument is checked by the rule its name and annotation give:

* a **count** (an ``int`` argument: steps, sizes, seeds) is an integer, never a boolean, a float or text, at
  least its minimum and at most :data:`~attnphys._messages.MAX_LOOP` (the device counts steps and indexes
  arrays in 32-bit integers); a **seed** in [0, 2³² − 1];
* a **number** (a ``float`` argument) is a finite real number, positive where the name says a tolerance, a
  step size or a radius (:data:`POSITIVE`), in (0, 1) for a quantile;
* a **flag** (``bool``) is ``True`` or ``False``; a **choice** (``Literal[...]``) one of its values, with the
  nearest one suggested;
* a **state** (``x0``, ``a``, ``b``, ``x``) is a non-empty array of finite real numbers, returned in the
  floating type of the run (a list or an integer array is converted, so ``[0, 0]`` works);
* the function's own ``memory`` rule (bytes from the checked arguments) is held against
  :func:`attnphys.errors.memory_budget` before the body runs: an array that cannot fit is refused with
  :class:`~attnphys.errors.ResourceError` naming the argument, instead of an abort of the process by XLA.

Every refusal is an :class:`~attnphys.errors.InputError` naming the argument and the value. A rule given to
:func:`checked` by keyword replaces the one the name gives (``bisections=count(1, 64, why=...)``). The rules
live here, once, for the toolkit, the particle theory and the mean-field analyses; the checked arguments'
rules stay readable on the function (``fn.__attnphys_rules__``), which the bad-input tests read to generate
their cases; ``fn.check(*args, **kwargs)`` runs the check alone (a caller that does other work first, such as
a census before the shocks, refuses a size before that work).
"""

from __future__ import annotations

import difflib
import functools
import inspect
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, overload

import numpy as np

from attnphys._checks import DTYPE_WORDS, is_concrete
from attnphys._messages import MAX_LOOP
from attnphys.errors import InputError, check_fits, short_repr

MAX_SEED = 2**32 - 1
"""Largest seed: JAX's and numpy's generators take a 32-bit seed on every configuration."""

LOOPS = frozenset(
    {
        "steps",
        "transient",
        "align",
        "window",
        "windows",
        "land_steps",
        "lyap_steps",
        "n_orbit",
        "max_steps",
        "max_cycles",
        "every",
        "history_every",
        "reortho_every",
        "max_rounds",
        "rounds",
    }
)
"""Counts of steps, bounded by :data:`~attnphys._messages.MAX_LOOP`."""

ZERO_ALLOWED = frozenset({"transient", "align", "history_every", "n_state", "seed"})
"""Counts that may be zero (a transient, an alignment, "no history"); every other count is at least 1."""

POSITIVE = re.compile(r"(^|_)(tol|rtol|atol|delta|ds|ds_min|ds_max|radius|threshold|dt|sigma|t_max)$")
"""Numbers that must be > 0: tolerances, step sizes, radii, thresholds."""

UNIT_OPEN = frozenset({"quantile"})
"""Numbers in (0, 1)."""

STATES = frozenset({"x0", "a", "b", "x", "lo", "hi"})
"""Arguments holding one state of a map (or a batch of them)."""

TREES = frozenset({"params", "aux", "aux0", "shared"})
"""Pytrees of numbers: parameters, auxiliary states (no text, no objects)."""


def _real_array(value: Any, name: str, what: str) -> np.ndarray:
    """``value`` as a numpy array of real numbers, refusing text, None, a boolean, ragged lists and arrays of
    booleans, complex numbers, text or objects (naming ``name``; ``what`` the expected value, in words)."""
    if isinstance(value, (str, bytes, bool, np.bool_)) or value is None:
        raise InputError(f"must be {what}, got {short_repr(value)}", name)
    try:
        a = np.asarray(value)
    except Exception:  # noqa: BLE001 - ragged lists and other objects
        raise InputError(f"must be {what} (a rectangular array)", name) from None
    if a.dtype.kind not in "iuf":
        raise InputError(f"must be {what}, not {DTYPE_WORDS.get(a.dtype.kind, str(a.dtype))}", name)
    return a


@dataclass(frozen=True)
class Rule:
    """A rule for one argument: :meth:`check` returns the value to use (converted where the rule says) or
    raises :class:`~attnphys.errors.InputError` naming the argument."""

    kind: str
    minimum: float | None = None
    maximum: float | None = None
    optional: bool = False
    choices: tuple[Any, ...] = ()
    why: str = ""

    def check(self, value: Any, name: str) -> Any:
        if value is None and self.optional:
            return None
        return getattr(self, "_" + self.kind)(value, name)

    def _count(self, value: Any, name: str) -> int:
        if not is_concrete(value):
            return value
        lo = int(self.minimum if self.minimum is not None else 0)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            kind = "text " if isinstance(value, str) else ""
            raise InputError(f"must be an integer >= {lo}, got {kind}{short_repr(value)}", name)
        v = int(value)
        if v < lo:
            raise InputError(f"must be >= {lo}, got {v}", name)
        if self.maximum is not None and v > self.maximum:
            why = f" ({self.why})" if self.why else ""
            raise InputError(f"must be at most {int(self.maximum):,}{why}, got {v:.3g}", name)
        return v

    def _bounds(self) -> str:
        if self.minimum is not None and self.maximum is not None:
            return f" in ({self.minimum:g}, {self.maximum:g})"
        if self.minimum is not None:
            return f" > {self.minimum:g}"
        return f" < {self.maximum:g}" if self.maximum is not None else ""

    def _number(self, value: Any, name: str) -> Any:
        if not is_concrete(value):
            return value
        want = f"must be a finite number{self._bounds()}"
        if isinstance(value, bool) or isinstance(value, (str, bytes)):
            kind = "text " if isinstance(value, (str, bytes)) else "the boolean "
            raise InputError(f"{want}, got {kind}{short_repr(value)}", name)
        a = np.asarray(value) if not isinstance(value, (int, float)) else None
        if a is not None and (a.ndim != 0 or a.dtype.kind not in "iuf"):
            raise InputError(f"{want} (a scalar), got {short_repr(value)}", name)
        v = float(value)
        if (
            not math.isfinite(v)
            or (self.minimum is not None and not v > self.minimum)
            or (self.maximum is not None and not v < self.maximum)
        ):
            raise InputError(f"{want}, got {v:g}", name)
        return value

    def _flag(self, value: Any, name: str) -> bool:
        if not isinstance(value, (bool, np.bool_)):
            raise InputError(f"must be True or False, got {short_repr(value)}", name)
        return bool(value)

    def _choice(self, value: Any, name: str) -> Any:
        if value in self.choices and type(value) is type(next(c for c in self.choices if c == value)):
            return value
        near = (
            difflib.get_close_matches(str(value), [str(c) for c in self.choices], n=1) if isinstance(value, str) else []
        )
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise InputError(f"must be one of {', '.join(map(repr, self.choices))}, got {short_repr(value)}{hint}", name)

    def _state(self, value: Any, name: str) -> Any:
        import jax
        import jax.numpy as jnp

        if not is_concrete(value):
            return value
        a = _real_array(value, name, "an array of numbers (a state)")
        if a.ndim == 0 or a.size == 0:
            raise InputError(f"must be a non-empty array (a state of shape (D,)), got shape {a.shape}", name)
        if not np.all(np.isfinite(a)):
            raise InputError("contains NaN or infinite values", name)
        if a.dtype.kind in "iu" or not hasattr(value, "dtype"):
            return jnp.asarray(a, dtype=jnp.result_type(float))  # the run's float type (float64 when enabled)
        return value if isinstance(value, jax.Array) else jnp.asarray(a)

    def _positives(self, value: Any, name: str) -> np.ndarray:
        a = np.atleast_1d(_real_array(value, name, "positive numbers").astype(float))
        if a.ndim != 1 or a.size < int(self.minimum or 1):
            raise InputError(
                f"must be a list of at least {int(self.minimum or 1)} positive numbers, got shape {a.shape}", name
            )
        if not np.all(np.isfinite(a)) or np.any(a <= 0):
            raise InputError(f"must be finite positive numbers, got {short_repr(value)}", name)
        return a

    def _tree(self, value: Any, name: str) -> Any:
        import jax

        for leaf in jax.tree_util.tree_leaves(value):
            if not is_concrete(leaf):
                continue
            if isinstance(leaf, (str, bytes)):
                raise InputError(f"must hold numbers (a pytree of arrays), got text {short_repr(leaf)}", name)
            kind = getattr(getattr(leaf, "dtype", None), "kind", None)
            if kind is None:
                try:
                    kind = np.asarray(leaf).dtype.kind
                except Exception:  # noqa: BLE001
                    kind = "O"
            if kind not in "iufb":
                raise InputError(f"must hold numbers (a pytree of arrays), got {short_repr(leaf)}", name)
        return value


def count(
    minimum: int = 1,
    maximum: int | None = MAX_LOOP,
    *,
    why: str = "the device indexes arrays with 32-bit integers",
    optional: bool = False,
) -> Rule:
    """A count in [minimum, maximum] (an integer; never a boolean, a float or text)."""
    return Rule("count", minimum, maximum, optional, why=why)


def number(minimum: float | None = None, maximum: float | None = None, *, optional: bool = False) -> Rule:
    """A finite real number in the open interval (minimum, maximum) where given."""
    return Rule("number", minimum, maximum, optional)


def state(*, optional: bool = False) -> Rule:
    """A non-empty array of finite real numbers, returned in the run's floating type."""
    return Rule("state", optional=optional)


def choice(*choices: Any) -> Rule:
    """One of ``choices``."""
    return Rule("choice", choices=tuple(choices))


def positives(minimum: int = 1, *, optional: bool = False) -> Rule:
    """A list of at least ``minimum`` finite positive numbers, returned as a float array."""
    return Rule("positives", minimum, optional=optional)


FLAG = Rule("flag")


def _annotation(annotation: Any) -> tuple[str, bool, tuple[Any, ...]]:
    """(base type name, optional, Literal values) of a parameter's annotation (a string under postponed
    evaluation)."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", repr(annotation))
    text = text.replace("typing.", "")
    parts = [p.strip() for p in re.split(r"\|(?![^\[]*\])", text)]
    optional = "None" in parts
    parts = [p for p in parts if p != "None"]
    if len(parts) == 1 and parts[0].startswith("Literal["):
        import ast

        values = ast.literal_eval("(" + parts[0][len("Literal[") : -1] + ",)")
        return "Literal", optional, tuple(values)
    return (parts[0] if len(parts) == 1 else "|".join(parts)), optional, ()


def beyond_limits(name: str, value: Any, kinds: tuple[type, ...]) -> str | None:
    """The message for a value past the limits every number of the library shares, whatever its own bounds
    (an options model's ``ge``/``le``): an integer beyond :data:`~attnphys._messages.MAX_LOOP` (a seed
    beyond :data:`MAX_SEED`), a float NaN or ±∞ (theory: docs/theory/dynamics.md §2.5); None when within."""
    if isinstance(value, bool):
        return None
    if int in kinds and isinstance(value, (int, np.integer)):
        if name == "seed":
            top, why = MAX_SEED, "a 32-bit seed"
        elif name in LOOPS:
            top, why = MAX_LOOP, "the device counts steps in 32-bit integers"
        else:
            top, why = MAX_LOOP, "the device indexes arrays with 32-bit integers"
        if value > top:
            return f"must be at most {top:,} ({why}), got {value:.3g}"
    if float in kinds and isinstance(value, (float, np.floating)) and not math.isfinite(value):
        return f"must be a finite number, got {value}"
    return None


def rule_for(name: str, annotation: Any, default: Any = inspect.Parameter.empty) -> Rule | None:
    """The rule an argument's name and annotation give (None: unchecked here: maps, parameters, options
    models, callables, arrays other than states)."""
    base, optional, values = _annotation(annotation)
    if base in ("inspect._empty", "_empty", "") and isinstance(default, (bool, int, float)):
        base = type(default).__name__  # an unannotated argument is read by its default's type
    optional = optional or default is None
    if base == "Literal":
        return choice(*values)
    if base == "bool":
        return FLAG
    if base == "int":
        if name == "seed":
            return count(0, MAX_SEED, why="a 32-bit seed", optional=optional)
        lo = 0 if name in ZERO_ALLOWED else 1
        if name in LOOPS:
            return count(lo, MAX_LOOP, why="the device counts steps in 32-bit integers", optional=optional)
        return count(lo, MAX_LOOP, why="the device indexes arrays with 32-bit integers", optional=optional)
    if base == "float":
        if name in UNIT_OPEN:
            return number(0.0, 1.0, optional=optional)
        if POSITIVE.search(name):
            return number(0.0, optional=optional)
        return number(optional=optional)
    if name in STATES and base in ("", "Any", "inspect._empty", "_empty"):
        return state(optional=optional)
    if name in TREES and base in ("", "Any", "inspect._empty", "_empty"):
        return Rule("tree")
    return None


_F = TypeVar("_F", bound=Callable[..., Any])


@overload
def checked(fn: _F, /) -> _F: ...


@overload
def checked(
    *, memory: Callable[[dict[str, Any]], tuple[float, str, str, str] | None] | None = None, **overrides: Rule | None
) -> Callable[[_F], _F]: ...


def checked(
    fn: Callable | None = None,
    /,
    *,
    memory: Callable[[dict[str, Any]], tuple[float, str, str, str] | None] | None = None,
    **overrides: Rule | None,
) -> Any:
    """Check a public function's arguments at its entry (theory: docs/theory/dynamics.md §2.5): each
    argument by :func:`rule_for` (or the rule given here by name; ``None`` leaves it unchecked); then
    ``memory(arguments)`` — ``(bytes, what, hint, argument)`` or None — against the memory budget.

    The signature, the docstring and the name are the function's own (``functools.wraps``).
    """

    def wrap(f: Callable) -> Callable:
        sig = inspect.signature(f)
        rules: dict[str, Rule] = {}
        for p in sig.parameters.values():
            if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                continue
            r = overrides[p.name] if p.name in overrides else rule_for(p.name, p.annotation, p.default)
            if r is not None:
                rules[p.name] = r
        unknown = set(overrides) - set(sig.parameters)
        if unknown:
            raise TypeError(f"checked({f.__qualname__}): no argument {sorted(unknown)}")

        def check(*args: Any, **kwargs: Any) -> inspect.BoundArguments:
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError as e:
                raise InputError(f"{f.__name__}(): {e}") from None
            given = bound.arguments
            for name, rule in rules.items():
                if name in given:
                    given[name] = rule.check(given[name], name)
            if memory is not None:
                full = dict(given)
                for p in sig.parameters.values():
                    full.setdefault(p.name, p.default)
                need = memory(full)
                if need is not None:
                    check_fits(need[0], need[1], need[2], need[3])
            return bound

        @functools.wraps(f)
        def inner(*args: Any, **kwargs: Any) -> Any:
            bound = check(*args, **kwargs)
            return f(*bound.args, **bound.kwargs)

        wrapped: Any = inner
        wrapped.__attnphys_rules__ = rules
        wrapped.check = check
        return wrapped

    return wrap if fn is None else wrap(fn)


__all__ = [
    "FLAG",
    "MAX_SEED",
    "Rule",
    "checked",
    "choice",
    "count",
    "number",
    "positives",
    "rule_for",
    "state",
    "beyond_limits",
]
