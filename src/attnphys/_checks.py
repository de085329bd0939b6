"""Checks of arguments at the public functions of the library: a wrong shape, type or sign is refused
with a message that names the argument and what was expected, instead of an error from deep inside JAX or
numpy (or, worse, a number).

The shape checks read static shapes only, so they also work on traced arrays (inside ``jax.jit`` or
``vmap``, where they run once per compilation); checks of values (signs, finiteness, definiteness) run on
concrete arrays only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from attnphys.errors import InputError

DTYPE_WORDS = {"b": "booleans", "c": "complex numbers", "U": "text", "S": "text", "O": "objects"}
"""numpy dtype kinds that are not real numbers, in the words of a message."""


def is_concrete(x: Any) -> bool:
    """Whether ``x`` holds values now (not a tracer of ``jax.jit``/``vmap``)."""
    try:
        from jax.core import Tracer

        return not isinstance(x, Tracer)
    except ImportError:  # pragma: no cover
        return True


def shape_of(x: Any, name: str) -> tuple[int, ...]:
    """The shape of an array-like, refusing what is not one (a string, None, ragged lists).

    Raises:
        InputError: naming ``name``.
    """
    shape = getattr(x, "shape", None)
    if shape is not None:
        return tuple(int(n) for n in shape)
    if isinstance(x, (str, bytes)) or x is None:
        raise InputError(f"must be an array of numbers, got {type(x).__name__}", name)
    try:
        return np.shape(np.asarray(x, dtype=float))
    except (TypeError, ValueError):
        raise InputError("must be a rectangular array of numbers", name) from None


def real_array(value: Any, name: str) -> np.ndarray:
    """``value`` as a float64 array (any shape), refusing text, booleans, complex numbers and objects.

    Raises:
        InputError: naming ``name``.
    """
    try:
        a = np.asarray(value)
    except Exception:  # noqa: BLE001 - ragged lists and other objects
        raise InputError(f"must be an array of numbers, got {type(value).__name__}", name) from None
    if a.dtype.kind not in "iuf":
        raise InputError(f"must be real numbers, got {a.dtype} values ({value!r:.60})", name)
    return a.astype(float)


def _dtype_kind(x: Any) -> str:
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        try:
            dtype = np.asarray(x).dtype
        except Exception:  # noqa: BLE001
            return "O"
    return np.dtype(dtype).kind


def check_array(
    x: Any,
    name: str,
    shape: Sequence[int | str | None] | None = None,
    ndim: int | Sequence[int] | None = None,
    real: bool = True,
    finite: bool = False,
    what: str = "",
) -> tuple[int, ...]:
    """Refuse an argument whose shape or type is wrong; returns its shape.

    Args:
        shape: the expected shape: an int is a required size, a name (``"D"``) or None any size (for the
            message: ``(N, D)``).
        ndim: the number of axes (or the allowed numbers), when ``shape`` is not given.
        real: refuse booleans, complex numbers and text.
        finite: refuse NaN and ±inf (concrete arrays only).
        what: words after the expected shape in the message (e.g. ``"tokens × dimensions"``).

    Raises:
        InputError: naming ``name``, the expected and the given shape or type.
    """
    got = shape_of(x, name)
    if shape is not None:
        sizes = tuple(shape)
        expected = (
            "(" + ", ".join(str(s) if s is not None else "…" for s in sizes) + ("," if len(sizes) == 1 else "") + ")"
        )
        ok = len(got) == len(sizes) and all(not isinstance(s, int) or s == g for s, g in zip(sizes, got))
        if not ok:
            extra = f" ({what})" if what else ""
            raise InputError(f"must have shape {expected}{extra}, got {got}", name)
    elif ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if len(got) not in allowed:
            extra = f" ({what})" if what else ""
            axes = " or ".join(str(a) for a in allowed)
            raise InputError(f"must have {axes} ax{'is' if allowed == (1,) else 'es'}{extra}, got shape {got}", name)
    if real:
        kind = _dtype_kind(x)
        if kind not in "iuf":
            words = DTYPE_WORDS.get(kind, kind)
            raise InputError(f"must hold real numbers, not {words}", name)
    if finite and is_concrete(x) and not bool(np.all(np.isfinite(np.asarray(x, dtype=float)))):
        raise InputError("contains NaN or infinite values", name)
    return got


def check_count(n: Any, name: str, minimum: int = 1) -> int:
    """An integer count >= ``minimum`` (not a bool, not a float).

    Raises:
        InputError: naming ``name``.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise InputError(f"must be an integer >= {minimum}, got {n!r}", name)
    if n < minimum:
        raise InputError(f"must be >= {minimum}, got {n}", name)
    return int(n)


def check_positive(x: Any, name: str, strict: bool = True) -> None:
    """A real scalar > 0 (>= 0 unless ``strict``), when concrete.

    Raises:
        InputError: naming ``name``.
    """
    check_array(x, name, ndim=0)
    if not is_concrete(x):
        return
    v = float(np.asarray(x))
    if not np.isfinite(v) or (v <= 0 if strict else v < 0):
        raise InputError(f"must be a finite number {'>' if strict else '>='} 0, got {v}", name)


def check_spd(A: Any, name: str) -> None:
    """A symmetric positive-definite matrix, when concrete.

    Raises:
        InputError: naming ``name`` (not symmetric, or its smallest eigenvalue).
    """
    if not is_concrete(A):
        return
    a = np.asarray(A, dtype=float)
    if not np.allclose(a, a.T, rtol=1e-10, atol=1e-12 * max(1.0, float(np.abs(a).max(initial=0.0)))):
        raise InputError("must be symmetric", name)
    try:
        np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        low = float(np.linalg.eigvalsh(a).min())
        raise InputError(
            f"must be positive definite (a covariance), its smallest eigenvalue is {low:.3g}", name
        ) from None


__all__ = ["check_array", "check_count", "check_positive", "check_spd", "is_concrete", "shape_of"]
