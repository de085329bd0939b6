"""The interface of the dynamics toolkit: a discrete-time map (theory: docs/theory/dynamics.md §1).

A map is ``step(x, aux, params) -> (x', aux')``: ``x`` is the (D,) state whose tangent dynamics is
studied; ``aux`` is any pytree carried along but not differentiated (a driving cycle such as the DMFT
positional window, or ``None``); ``params`` is any pytree of parameters (one batch axis of it is swept
with ``vmap``). Maps are frozen dataclasses, hashable, so that they are static arguments of ``jax.jit``.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import jax


class ReferencePoint(NamedTuple):
    """A parameter point of a map with known dynamics (theory: docs/theory/dynamics.md §1), used by the
    property tests that run over every map.

    params: the parameters. x: (D,) a start in the basin of the attractor (running the map from it
    converges to it). aux: its auxiliary state. period: the attractor's period (0: not periodic).
    transient: steps after which the orbit from ``x`` is on the attractor to machine precision.
    """

    params: Any
    x: Any
    aux: Any = None
    period: int = 1
    transient: int = 1000


class AbstractMap(abc.ABC):
    """A discrete-time map (theory: docs/theory/dynamics.md §1) x_{t+1} = F(x_t; aux_t, params), aux_{t+1} = G(aux_t).

    Subclasses implement :meth:`step`; they may override :meth:`observe` (what orbit diagrams record),
    :meth:`cache_aux` / :meth:`step_cached` / :meth:`uncache_aux` (a faster step for long forward runs),
    :meth:`jacobian` (set :attr:`analytic_jacobian`; otherwise tangents come from ``jax.jvp``) and
    :meth:`sample_states` (random states on the map's natural domain, for attractor censuses) and
    :meth:`reference_points`, parameter points with known dynamics (theory: docs/theory/dynamics.md §1).

    An example map also describes itself for the theory page's table of examples, generated from
    :data:`~attnphys.dynamics.maps.EXAMPLES`: ``title``, ``equation`` (LaTeX) and ``facts`` (its known
    dynamics, in LaTeX and words).
    """

    analytic_jacobian: ClassVar[bool] = False
    title: ClassVar[str] = ""
    equation: ClassVar[str] = ""
    facts: ClassVar[str] = ""

    @abc.abstractmethod
    def step(self, x: jax.Array, aux: Any, params: Any) -> tuple[jax.Array, Any]:
        """One step.

        Args:
            x: (D,) state. aux: auxiliary state (not differentiated). params: parameters.

        Returns:
            (x', aux').
        """

    # -- cached stepping: a map may carry, beside aux, quantities of x that it would otherwise recompute
    # every step (theory: docs/theory/dynamics.md §1.1). Long forward runs (settling, orbit diagrams,
    # Benettin exponents) use these; Newton and Floquet differentiate :meth:`step`.

    def cache_aux(self, x: jax.Array, aux: Any, params: Any) -> Any:
        """The cached auxiliary state of (x, aux): aux plus what :meth:`step_cached` reuses; default aux.

        Args:
            x: (D,) state. aux: its auxiliary state. params: parameters.
        """
        return aux

    def step_cached(self, x: jax.Array, caux: Any, params: Any) -> tuple[jax.Array, Any]:
        """One step on a cached auxiliary state: (x', caux') with x' equal to :meth:`step`'s to round-off
        and caux' = cache_aux(x', aux'); default :meth:`step`."""
        return self.step(x, caux, params)

    def uncache_aux(self, caux: Any) -> Any:
        """The plain auxiliary state of a cached one (of :meth:`cache_aux` or :meth:`tangent_aux`);
        default itself."""
        return caux

    def observe_cached(self, x: jax.Array, caux: Any, params: Any) -> jax.Array:
        """:meth:`observe` on a cached auxiliary state (of either form); default through :meth:`uncache_aux`."""
        return self.observe(x, self.uncache_aux(caux), params)

    def tangent(self, x: jax.Array, aux: Any, params: Any, Q: jax.Array) -> tuple[jax.Array, Any, jax.Array]:
        """One step with tangent vectors (theory: docs/theory/dynamics.md §2.1).

        Args:
            x: (D,) state. aux: auxiliary state. params: parameters. Q: (D, k) tangent vectors.

        Returns:
            (x', aux', J Q) with J = ∂x'/∂x at (x, aux): the analytic :meth:`jacobian` when
            :attr:`analytic_jacobian`, else forward-mode products (one ``jax.jvp`` per column).
        """
        if self.analytic_jacobian:
            x2, aux2 = self.step(x, aux, params)
            return x2, aux2, self.jacobian(x, aux, params) @ Q

        def push(v):
            return jax.jvp(lambda y: self.step(y, aux, params), (x,), (v,), has_aux=True)

        x2, JQ, aux2 = jax.vmap(push, in_axes=1, out_axes=(None, 1, None))(Q)
        return x2, aux2, JQ

    def tangent_aux(self, x: jax.Array, caux: Any, params: Any) -> Any:
        """The cached auxiliary state for :meth:`tangent_cached` from a :meth:`cache_aux` one (it may add
        derivatives of the cached quantities; theory: docs/theory/dynamics.md §1.1); default caux.
        A map that overrides it overrides :meth:`tangent_cached` as well."""
        return caux

    def tangent_cached(self, x: jax.Array, taux: Any, params: Any, Q: jax.Array) -> tuple[jax.Array, Any, jax.Array]:
        """:meth:`tangent` on a :meth:`tangent_aux` state: (x', taux', J Q), equal to :meth:`tangent`'s
        to round-off (theory: docs/theory/dynamics.md §1.1); default :meth:`tangent` on the plain state,
        cached again."""
        x2, aux2, JQ = self.tangent(x, self.uncache_aux(taux), params, Q)
        return x2, self.cache_aux(x2, aux2, params), JQ

    def observe(self, x: jax.Array, aux: Any, params: Any) -> jax.Array:
        """(F,) observable recorded in orbit diagrams; default the state itself."""
        return x

    def jacobian(self, x: jax.Array, aux: Any, params: Any) -> jax.Array:
        """(D, D) Jacobian ∂x'/∂x; by forward-mode autodiff unless a subclass gives it analytically."""
        return jax.jacfwd(lambda y: self.step(y, aux, params)[0])(x)

    def sample_states(self, key: jax.Array, n: int, params: Any) -> tuple[jax.Array, Any]:
        """n random states (n, D) and their auxiliary states (batched) on the map's domain.

        Raises:
            NotImplementedError: the map has no natural domain to sample; give explicit states.
        """
        raise NotImplementedError(f"{type(self).__name__} has no sampler of its domain; give explicit initial states")

    def reference_points(self) -> dict[str, ReferencePoint]:
        """Named parameter points with known dynamics (e.g. ``periodic``: a stable periodic orbit); empty
        by default. The property tests of the toolkit run on every map that lists them."""
        return {}


@dataclass(frozen=True)
class FunctionMap(AbstractMap):
    """A map built from functions (theory: docs/theory/dynamics.md §1): ``step(x, aux, params) -> (x', aux')``,
    optional ``observe`` and an
    optional analytic ``jacobian(x, aux, params) -> (D, D)``."""

    step_fn: Callable = None  # type: ignore[assignment]
    observe_fn: Callable | None = None
    jacobian_fn: Callable | None = None

    def __init__(self, step: Callable, observe: Callable | None = None, jacobian: Callable | None = None):
        object.__setattr__(self, "step_fn", step)
        object.__setattr__(self, "observe_fn", observe)
        object.__setattr__(self, "jacobian_fn", jacobian)

    @property
    def analytic_jacobian(self) -> bool:  # type: ignore[override]
        return self.jacobian_fn is not None

    def step(self, x, aux, params):
        return self.step_fn(x, aux, params)

    def observe(self, x, aux, params):
        return x if self.observe_fn is None else self.observe_fn(x, aux, params)

    def jacobian(self, x, aux, params):
        if self.jacobian_fn is not None:
            return self.jacobian_fn(x, aux, params)
        return super().jacobian(x, aux, params)


@dataclass(frozen=True)
class AutonomousMap(AbstractMap):
    """Base of maps x ↦ f(x, params) without auxiliary state: subclasses implement :meth:`f`
    (theory: docs/theory/dynamics.md §1).

    Class attributes:
        state_shape: the shape of x (None: any); param_shape: the shape of params (None: any). A state or
            parameters of another shape are refused by :meth:`check_args`, naming them (instead of JAX
            clamping an index out of range).
    """

    state_shape: ClassVar[tuple[int, ...] | None] = None
    param_shape: ClassVar[tuple[int, ...] | None] = None

    @abc.abstractmethod
    def f(self, x: jax.Array, params: Any) -> jax.Array:
        """x' = f(x; params)."""

    def check_args(self, x, params) -> None:
        """Refuse a state or parameters of the wrong shape or type (static shapes: works when traced).

        Raises:
            attnphys.errors.InputError: naming ``x`` or ``params`` with the expected shape.
        """
        from attnphys._checks import check_array

        name = type(self).__name__
        if self.state_shape is not None:
            check_array(x, "x", self.state_shape, what=f"the state of the {name} map")
        if self.param_shape is not None:
            check_array(params, "params", self.param_shape, what=f"the parameters of the {name} map")

    def step(self, x, aux, params):
        self.check_args(x, params)
        return self.f(x, params), aux


def autonomous(f: Callable[[Any, Any], Any], **kw) -> FunctionMap:
    """Wrap ``f(x, params) -> x'`` (no auxiliary state) as a :class:`FunctionMap` (theory: docs/theory/dynamics.md §1)."""
    return FunctionMap(step=lambda x, aux, p: (f(x, p), aux), **kw)
