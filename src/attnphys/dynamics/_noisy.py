"""Noisy maps for the rare-event analyses: a map of the toolkit (theory: docs/theory/dynamics.md §1) with
additive Gaussian noise of a state-dependent factor (theory: docs/theory/rare_events.md §1).

A noisy map is the pair (``m``, ``noise``): x_{t+1} = F(x_t; aux_t) + √ε B(x_t, aux_t) η_t with η_t ~ N(0, I_K),
so that the one-step covariance is ε Σ(x) = ε B Bᵀ. ``noise`` is a function ``noise(x, aux, params) -> (D, K)``
or one constant array (D, K). Here: the noise factor as a hashable function (a static argument of the compiled
cores), the orbit of a periodic point with its auxiliary states, and the refusals at the entry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from attnphys.dynamics.maps import AbstractMap
from attnphys.dynamics.orbits import check_map_call
from attnphys.errors import InputError


@dataclass(frozen=True)
class _ConstantNoise:
    """A state-independent noise factor (hashable by value, so that compiled cores are reused)."""

    rows: tuple[tuple[float, ...], ...]

    def __call__(self, x, aux, params):
        return jnp.asarray(self.rows, dtype=jnp.result_type(x))


def noise_function(noise: Any, name: str = "noise") -> Callable:
    """The noise factor as a function ``(x, aux, params) -> B (D, K)``: ``noise`` itself when callable, a
    constant factor for a 2-D array of numbers (theory: docs/theory/rare_events.md §1)
    (theory: docs/theory/dynamics.md §1).

    Raises:
        InputError: naming ``noise`` (neither a function nor a finite (D, K) array).
    """
    if callable(noise):
        return noise
    try:
        arr = np.asarray(noise, dtype=float)
    except (TypeError, ValueError):
        raise InputError(
            f"must be a function noise(x, aux, params) -> B (D, K) or an array (D, K), got {type(noise).__name__}",
            name,
        ) from None
    if arr.ndim != 2 or arr.size == 0 or not np.all(np.isfinite(arr)):
        raise InputError(f"must be a finite noise factor B of shape (D, K), got shape {arr.shape}", name)
    return _ConstantNoise(tuple(tuple(float(v) for v in row) for row in arr))


def noise_at(noise: Callable, x, aux, params, D: int, name: str = "noise") -> np.ndarray:
    """The factor B (D, K) at one state, checked: finite, D rows, of full rank min(D, K)
    (theory: docs/theory/rare_events.md §1) (theory: docs/theory/dynamics.md §1).

    Raises:
        InputError: naming ``noise``.
    """
    try:
        B = np.asarray(noise(jnp.asarray(x), aux, params), dtype=float)
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001 - a user function that fails on a state of the map
        raise InputError(f"could not be evaluated at the state ({type(e).__name__}: {e})", name) from None
    if B.ndim != 2 or B.shape[0] != D or B.shape[1] == 0:
        raise InputError(f"must return a factor B of shape (D, K) = ({D}, K), got shape {B.shape}", name)
    if not np.all(np.isfinite(B)):
        raise InputError("returned non-finite entries", name)
    sv = np.linalg.svd(B, compute_uv=False)
    if sv[-1] <= 1e-12 * max(sv[0], 1e-300):
        raise InputError(
            f"must have full rank min(D, K) = {min(B.shape)} (singular values {np.round(sv, 12)}); "
            "drop the directions that carry no noise from its columns",
            name,
        )
    return B


def noise_mode(B: np.ndarray) -> str:
    """ "full" when Σ = B Bᵀ is invertible (K ≥ D), "singular" when the noise spans K < D directions
    (theory: docs/theory/rare_events.md §1) (theory: docs/theory/dynamics.md §1)."""
    return "full" if B.shape[1] >= B.shape[0] else "singular"


def check_start(m: AbstractMap, x, aux, params, name: str) -> np.ndarray:
    """One finite state (D,) of the map, as float64, with its auxiliary state and parameters of numbers
    (theory: docs/theory/dynamics.md §1).

    Raises:
        InputError: naming ``m``, ``name``, ``aux0`` or ``params``.
    """
    try:
        check_map_call(m, x, aux, params)
    except InputError as e:
        raise InputError(e.detail, {"x0": name}.get(e.field or "", e.field)) from None
    v = np.asarray(x, dtype=float)
    if not np.all(np.isfinite(v)):
        raise InputError("must be finite", name)
    check = getattr(m, "check_args", None)
    if check is not None:
        try:
            check(jnp.asarray(v), params)
        except InputError as e:
            raise InputError(e.detail, name if e.field == "x" else e.field) from None
    return v


def tree_close(a: Any, b: Any, tol: float = 1e-9) -> bool:
    """Whether two auxiliary states are equal leaf by leaf (to ``tol``) (theory: docs/theory/rare_events.md §2.2)
    (theory: docs/theory/dynamics.md §1)."""
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    if len(la) != len(lb):
        return False
    for u, v in zip(la, lb, strict=True):
        u, v = np.asarray(u, float), np.asarray(v, float)
        if u.shape != v.shape or not np.allclose(u, v, rtol=tol, atol=tol):
            return False
    return True


def orbit_points(m: AbstractMap, x, aux, params, period: int, name: str, closure: float = 1e-7):
    """The points x_0 … x_{p−1} (p, D) of the periodic orbit through (x, aux) and their auxiliary states
    (a list), checked to close: x_p ≈ x_0 and aux_p = aux_0 (theory: docs/theory/rare_events.md §2.2)
    (theory: docs/theory/dynamics.md §1).

    Raises:
        InputError: naming ``name`` when the orbit does not close within ``closure`` (relative).
    """
    xs, auxs = [np.asarray(x, float)], [aux]
    xc, ac = jnp.asarray(x), aux
    for _ in range(period):
        xc, ac = m.step(xc, ac, params)
        xs.append(np.asarray(xc, float))
        auxs.append(ac)
    gap = float(np.max(np.abs(xs[-1] - xs[0])))
    scale = max(1.0, float(np.max(np.abs(xs[0]))))
    if not np.isfinite(gap) or gap > closure * scale:
        raise InputError(
            f"is not a point of a period-{period} orbit: |F^{period}(x) - x| = {gap:.2e} (refine it, or give its period)",
            name,
        )
    if not tree_close(auxs[-1], auxs[0]):
        raise InputError(
            f"its auxiliary state does not return after {period} steps: give a period that is a multiple of "
            "the driving cycle's",
            name,
        )
    return np.stack(xs[:-1]), auxs[:-1]


def stack_aux(auxs: list, index: np.ndarray) -> Any:
    """The auxiliary states ``auxs[index[t]]`` stacked along a leading axis (None stays None) (theory:
    docs/theory/rare_events.md §2.2) (theory: docs/theory/dynamics.md §1)."""
    if not jax.tree_util.tree_leaves(auxs[0]):
        return None
    return jax.tree_util.tree_map(lambda *leaves: jnp.stack([leaves[i] for i in index]), *auxs)


__all__ = [
    "check_start",
    "noise_at",
    "noise_function",
    "noise_mode",
    "orbit_points",
    "stack_aux",
    "tree_close",
]
