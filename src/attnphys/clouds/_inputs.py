"""Checks of the arguments of the particle-flow analyses (theory: docs/theory/particles.md §6): numbers,
counts, flags, seeds and solver tolerances are refused by name, with the bad value, before anything is
compiled or allocated, and the arrays an analysis would build are bounded by the memory rule
(:func:`attnphys.errors.check_fits`), naming the argument whose size is to blame and how large it may be.

The precision rule lives here too: the flows and ODE solvers of :mod:`attnphys.clouds` state their tolerances
in float64, and :func:`warn_if_single_precision` says so when they run in float32.
"""

from __future__ import annotations

import contextlib
import contextvars
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from attnphys._checks import DTYPE_WORDS
from attnphys.clouds._sizes import fits_blaming
from attnphys.errors import InputError, PrecisionWarning, check_fits, short_repr

_KINDS = {**DTYPE_WORDS, "M": "dates"}


def _words(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    if low is not None and high is not None:
        return f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if low is not None:
        return f"{'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f"{'<' if high_open else '<='} {high:g}"
    return ""


def _inside(v: np.ndarray, low, high, low_open, high_open) -> np.ndarray:
    ok = np.isfinite(v)
    if low is not None:
        ok &= (v > low) if low_open else (v >= low)
    if high is not None:
        ok &= (v < high) if high_open else (v <= high)
    return ok


def number(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """``value`` as a finite real number within the bounds (``low_open``: strictly above ``low``), refusing
    text, booleans, arrays of more than one value, NaN and ±inf.

    Raises:
        InputError: naming ``name`` and the value.
    """
    words = " ".join(w for w in ("a finite number", _words(low, high, low_open, high_open)) if w)
    if isinstance(value, (bool, np.bool_, str, bytes)) or value is None:
        raise InputError(f"must be {words}, got {short_repr(value)}", name)
    try:
        a = np.asarray(value)
    except Exception:  # noqa: BLE001 - objects that are not arrays
        raise InputError(f"must be {words}, got {short_repr(value)}", name) from None
    if a.dtype.kind not in "iuf" or a.ndim != 0:
        got = f"{_KINDS[a.dtype.kind]}" if a.dtype.kind in _KINDS else f"shape {a.shape}"
        raise InputError(f"must be {words}, got {got} ({short_repr(value)})", name)
    v = float(a)
    if not bool(_inside(np.asarray(v), low, high, low_open, high_open)):
        raise InputError(f"must be {words}, got {v!r}", name)
    return v


def reals(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> np.ndarray:
    """``value`` (a number or an array of them, any shape) as a float64 array, every entry finite and within
    the bounds, refusing text, booleans, complex numbers and ragged lists.

    Raises:
        InputError: naming ``name`` and the first bad value.
    """
    words = " ".join(w for w in ("finite numbers", _words(low, high, low_open, high_open)) if w)
    if isinstance(value, (str, bytes)) or value is None:
        raise InputError(f"must be {words}, got {short_repr(value)}", name)
    try:
        a = np.asarray(value)
    except Exception:  # noqa: BLE001 - ragged lists and other objects
        raise InputError(f"must be {words}, got {short_repr(value)}", name) from None
    if a.dtype.kind not in "iuf":
        raise InputError(f"must be {words}, got {_KINDS.get(a.dtype.kind, str(a.dtype))} ({short_repr(value)})", name)
    a = a.astype(float)
    ok = _inside(a, low, high, low_open, high_open)
    if not ok.all():
        raise InputError(f"must be {words}, got {float(a[~ok].flat[0])!r}", name)
    return a


def numbers(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> np.ndarray:
    """``value`` (a number or a list of them) as a (K,) float64 array, K ≥ 1, every entry finite and within
    the bounds (:func:`reals`), refusing nested and empty lists too.

    Raises:
        InputError: naming ``name`` and the first bad value.
    """
    a = reals(value, name, low=low, high=high, low_open=low_open, high_open=high_open)
    words = " ".join(w for w in ("finite numbers", _words(low, high, low_open, high_open)) if w)
    if a.ndim > 1:
        raise InputError(f"must be a number or a (K,) list of {words}, got shape {a.shape}", name)
    if a.size == 0:
        raise InputError(f"must hold at least one value ({words}), got an empty list", name)
    return np.atleast_1d(a)


def count(value: Any, name: str, least: int = 1) -> int:
    """An integer ≥ ``least`` (not a bool, not a float, not text).

    Raises:
        InputError: naming ``name`` and the value.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise InputError(f"must be an integer >= {least}, got {short_repr(value)}", name)
    if value < least:
        raise InputError(f"must be an integer >= {least}, got {value}", name)
    return int(value)


def flag(value: Any, name: str) -> bool:
    """True or False (not text, not a number).

    Raises:
        InputError: naming ``name`` and the value.
    """
    if not isinstance(value, (bool, np.bool_)):
        raise InputError(f"must be True or False, got {short_repr(value)}", name)
    return bool(value)


def seed(value: Any, name: str = "seed") -> int:
    """A seed: an integer in [0, 2^32).

    Raises:
        InputError: naming ``name`` and the value.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not 0 <= value < 2**32:
        raise InputError(f"must be an integer in [0, 2^32), got {short_repr(value)}", name)
    return int(value)


def choice(value: Any, allowed: tuple[str, ...], name: str) -> str:
    """One of ``allowed``.

    Raises:
        InputError: naming ``name``, the value and the choices.
    """
    if not isinstance(value, str) or value not in allowed:
        raise InputError(f"must be one of {', '.join(allowed)}, got {short_repr(value)}", name)
    return value


def check_key(key: Any, name: str = "key") -> None:
    """A JAX random key (``jax.random.PRNGKey(seed)`` or ``jax.random.key(seed)``).

    Raises:
        InputError: naming ``name``.
    """
    import jax
    import jax.numpy as jnp

    dtype, shape = getattr(key, "dtype", None), tuple(getattr(key, "shape", None) or ())
    typed = dtype is not None and jnp.issubdtype(dtype, jax.dtypes.prng_key)
    raw = dtype is not None and not typed and np.dtype(dtype) == np.uint32 and shape == (2,)
    if not ((typed and shape == ()) or raw):
        raise InputError(f"must be a JAX random key such as jax.random.PRNGKey(0), got {short_repr(key)}", name)


def tolerances(rtol: Any, atol: Any) -> tuple[float, float]:
    """The adaptive controller's tolerances: 0 < rtol < 1 and atol > 0, as the commands require (a zero or
    NaN tolerance makes the controller shrink its steps without end).

    Raises:
        InputError: naming ``rtol`` or ``atol``.
    """
    return (
        number(rtol, "rtol", low=0.0, high=1.0, low_open=True, high_open=True),
        number(atol, "atol", low=0.0, low_open=True),
    )


def fits(terms: Mapping[str, tuple[str, float]], hint: str | None = None) -> None:
    """Refuse, before anything is built, arrays that cannot fit (:func:`attnphys.errors.check_fits`): ``terms``
    maps each argument to (what it sets, bytes); the largest is named.

    Raises:
        ResourceError: naming the argument of the largest term.
    """
    name, (what, _) = max(terms.items(), key=lambda kv: kv[1][1])
    total = float(sum(b for _, b in terms.values()))
    check_fits(total, f"{what}, with the other arrays,", hint or f"lower `{name}`", name)


# -- precision ---------------------------------------------------------------------------------------

_NOTED: contextvars.ContextVar[bool] = contextvars.ContextVar("attnphys_clouds_precision_noted", default=False)


def single_precision() -> bool:
    """Whether JAX computes in float32 (``attnphys.configure()`` was not called)."""
    import jax

    return not bool(jax.config.jax_enable_x64)  # pyright: ignore[reportAttributeAccessIssue]


def warn_if_single_precision(what: str, stacklevel: int = 3) -> None:
    """Warn (:class:`attnphys.errors.PrecisionWarning`) when ``what`` (a flow or an ODE solve) runs in float32:
    the tolerances the clouds' docstrings and docs/theory/particles.md state (a pairwise cosine within 10⁻⁹
    of the ODE, rates to 10⁻⁸ …) hold in float64 only; in float32 the round-off of the state, ~10⁻⁷ per step,
    accumulates to ~10⁻⁵. Said once per analysis (:func:`precision_noted`)."""
    if _NOTED.get() or not single_precision():
        return
    warnings.warn(
        f"{what} runs in float32 because float64 is off: its stated tolerances hold in float64 only (float32 "
        "round-off reaches ~1e-5); call attnphys.configure() first (the command line does)",
        PrecisionWarning,
        stacklevel=stacklevel,
    )


@contextlib.contextmanager
def precision_noted(what: str) -> Iterator[None]:
    """Warn once for ``what`` (:func:`warn_if_single_precision`) and not again for the solves inside it."""
    warn_if_single_precision(what, stacklevel=5)  # the caller of the analysis that opened this context
    token = _NOTED.set(True)
    try:
        yield
    finally:
        _NOTED.reset(token)


__all__ = [
    "check_key",
    "choice",
    "count",
    "fits",
    "fits_blaming",
    "flag",
    "number",
    "numbers",
    "reals",
    "precision_noted",
    "seed",
    "tolerances",
    "warn_if_single_precision",
]
