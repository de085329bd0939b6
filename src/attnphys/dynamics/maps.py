"""Discrete-time maps: the interface the dynamics toolkit works with, and maps with known dynamics.

A map is a pure JAX function ``step(x, aux, params) -> (x', aux')``: ``x`` is the (D,) state whose
tangent dynamics is studied; ``aux`` is any pytree carried along but not differentiated (a driving
cycle such as the DMFT positional window, or ``None``); ``params`` is any pytree of parameters (one
batch axis of it is swept with ``vmap``).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax.numpy as jnp

StepFn = Callable[[Any, Any, Any], tuple[Any, Any]]


class Map(NamedTuple):
    """A discrete-time map and how to look at it.

    step: ``(x, aux, params) -> (x', aux')``.
    observe: ``(x, aux, params) -> (F,)`` observable recorded in orbit diagrams (default: x).
    jacobian: optional analytic ``(x, aux, params) -> (D, D)``; otherwise ``jax.jvp`` is used.
    """

    step: StepFn
    observe: Callable[[Any, Any, Any], Any] | None = None
    jacobian: Callable[[Any, Any, Any], Any] | None = None

    def obs(self, x, aux, params):
        return x if self.observe is None else self.observe(x, aux, params)


def autonomous(f: Callable[[Any, Any], Any], **kw) -> Map:
    """Wrap ``f(x, params) -> x'`` (no auxiliary state) as a :class:`Map`."""
    return Map(step=lambda x, aux, p: (f(x, p), aux), **kw)


# -- maps with known dynamics, used by the tests and as examples ------------------------------------

def henon(x, p):
    """Hénon map (x, y) ↦ (1 − a x² + y, b x); p = (a, b). At a = 1.4, b = 0.3: λ ≈ 0.419, −1.623."""
    a, b = p[0], p[1]
    return jnp.stack([1.0 - a * x[0] ** 2 + x[1], b * x[0]])


def logistic(x, r):
    """Logistic map x ↦ r x (1 − x) on a (1,) state. r = 4: λ = ln 2; r = 3.2: period 2; r = 3.5: period 4."""
    return r * x * (1.0 - x)


def linear(x, A):
    """Linear map x ↦ A x; for diagonal A the exponents are log|A_ii| exactly."""
    return A @ x


def circle_rotation(x, omega):
    """Rotation of the plane by angle 2πω: quasi-periodic for irrational ω, exponents (0, 0)."""
    c, s = jnp.cos(2 * jnp.pi * omega), jnp.sin(2 * jnp.pi * omega)
    return jnp.stack([c * x[0] - s * x[1], s * x[0] + c * x[1]])


HENON = autonomous(henon)
LOGISTIC = autonomous(logistic)
LINEAR = autonomous(linear)
ROTATION = autonomous(circle_rotation)
