"""Noisy maps for the rare-event analyses: a map of the toolkit (theory: docs/theory/dynamics.md §1) with
additive Gaussian noise of a state-dependent factor (theory: docs/theory/rare_events.md §1).

A noisy map is the pair (``m``, ``noise``): x_{t+1} = F(x_t; aux_t) + √ε B(x_t, aux_t) η_t with η_t ~ N(0, I_K),
so that the one-step covariance is ε Σ(x) = ε B Bᵀ. ``noise`` is a function ``noise(x, aux, params) -> (D, K)``,
one constant array (D, K), or a law of its own (:class:`AbstractNoise`: a non-Gaussian step with the same
covariance to leading order, its own large-deviation rate and its own sampler; theory:
docs/theory/rare_events.md §1.3). Here: the laws, the noise factor as a hashable function (a static argument of
the compiled cores), the orbit of a periodic point with its auxiliary states, and the refusals at the entry.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from attnphys.dynamics.maps import AbstractMap
from attnphys.dynamics.orbits import check_map_call
from attnphys.errors import InputError


class AbstractNoise(abc.ABC):
    """The law of one step's noise of a noisy map (theory: docs/theory/rare_events.md §1.3) (theory:
    docs/theory/dynamics.md §1).

    The step is x_{t+1} = F(x_t) + d_t with an increment d_t of mean 0 and covariance ε B(x_t) B(x_t)ᵀ to leading
    order in ε. A law gives:

    * :meth:`factor` B (D, K) — the linear-noise factor (the Hessian of the quasi-potential, the Eyring–Kramers
      prefactor and the stationary covariances read only it);
    * :meth:`rate` — the large-deviation rate ℓ(η) of one step written in the standardised control η (K,), with
      d_t = B(x_t) η_t, so that a path has probability ≍ exp(−Σ_t ℓ(η_t)/ε); its quadratic part must be ½|η|²;
    * :meth:`sample` — one increment d_t drawn at noise scale √ε.

    The Gaussian law (:class:`GaussianNoise`, the default for a function or an array) has ℓ = ½|η|². A law is a
    static argument of compiled code: it must be hashable (a frozen dataclass of numbers and tuples).
    Calling a law returns its factor, so a law stands wherever a factor function does.
    """

    @abc.abstractmethod
    def factor(self, x: jax.Array, aux: Any, params: Any) -> jax.Array:
        """B (D, K) at the state (x, aux)."""

    def rate(self, eta: jax.Array, x: jax.Array, aux: Any, params: Any) -> jax.Array:
        """ℓ(η) of one step from (x, aux): ½|η|² for the Gaussian law (a scalar)."""
        return 0.5 * eta @ eta

    def sample(self, x: jax.Array, aux: Any, params: Any, key: jax.Array, scale: jax.Array) -> jax.Array:
        """One increment d (D,) at noise scale ``scale`` = √ε: √ε B η with η ~ N(0, I_K) for the Gaussian law."""
        B = self.factor(x, aux, params)
        return scale * (B @ jax.random.normal(key, (B.shape[1],), dtype=B.dtype))

    def __call__(self, x, aux, params):
        return self.factor(x, aux, params)


class GaussianNoise(AbstractNoise):
    """Gaussian noise of a factor B(x, aux, params): ℓ(η) = ½|η|² (theory: docs/theory/rare_events.md §1)
    (theory: docs/theory/dynamics.md §1). ``noise_function`` wraps a plain function or array in it."""

    def __init__(self, fn: Callable):
        self.fn = fn

    def factor(self, x, aux, params):
        return self.fn(x, aux, params)

    def __hash__(self):
        return hash((GaussianNoise, self.fn))

    def __eq__(self, other):
        return type(other) is GaussianNoise and other.fn == self.fn


@dataclass(frozen=True)
class _ConstantNoise:
    """A state-independent noise factor (hashable by value, so that compiled cores are reused)."""

    rows: tuple[tuple[float, ...], ...]

    def __call__(self, x, aux, params):
        return jnp.asarray(self.rows, dtype=jnp.result_type(x))


def noise_function(noise: Any, name: str = "noise") -> AbstractNoise:
    """The noise law: ``noise`` itself when it is an :class:`AbstractNoise`, the Gaussian law of a factor function
    ``(x, aux, params) -> B (D, K)`` or of a constant factor (a 2-D array of numbers) (theory:
    docs/theory/rare_events.md §1) (theory: docs/theory/dynamics.md §1).

    Raises:
        InputError: naming ``noise`` (neither a law, a function nor a finite (D, K) array).
    """
    if isinstance(noise, AbstractNoise):
        return noise
    if callable(noise):
        return GaussianNoise(noise)
    try:
        arr = np.asarray(noise, dtype=float)
    except (TypeError, ValueError):
        raise InputError(
            f"must be a function noise(x, aux, params) -> B (D, K) or an array (D, K), got {type(noise).__name__}",
            name,
        ) from None
    if arr.ndim != 2 or arr.size == 0 or not np.all(np.isfinite(arr)):
        raise InputError(f"must be a finite noise factor B of shape (D, K), got shape {arr.shape}", name)
    return GaussianNoise(_ConstantNoise(tuple(tuple(float(v) for v in row) for row in arr)))


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
