"""The DMFT mean-field step as maps of the dynamics toolkit (theory: docs/theory/dmft.md §6).

* :class:`AttentionMap` — state x = vec(A) (L·M), auxiliary state (pe, n). The positional window is a
  fixed cyclic permutation that does not depend on A (∂P_{t+1}/∂A_t = 0), so the tangent dynamics of A
  alone gives the L·M attention exponents; the L·P positional exponents are exactly 0.
* :class:`FullStateMap` — state x = (vec(A), vec(pe)) of dimension L(M+P), the reference's Jacobian;
  with identity initial vectors its last L·P exponents come out exactly 0 (a test of the structure).

Parameters are the pair ``(Couplings, Scalars)``; sweeping vmaps over the Scalars only. Both maps step
with :func:`attnphys.dmft.meanfield.step` (every row's overlaps computed from A, so that jvp sees their
dependence on the state: Newton and Floquet) and observe through the observable table;
:class:`AttentionMap` also steps with cached overlaps (:func:`attnphys.dmft.meanfield.advance`) in long
forward runs, and pushes tangent vectors through the closed-form Jacobian row with cached slopes
(:func:`attnphys.dmft.meanfield.advance_tangent`) for Lyapunov exponents.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from attnphys.dmft.config import MoSeConvention
from attnphys.dmft.meanfield import Slopes, State, Window, advance, advance_tangent, fill, slopes, step
from attnphys.dmft.observables import check_observable, observe
from attnphys.dynamics.maps import AbstractMap


class WindowMap(AbstractMap):
    """A map of the dynamics toolkit whose state is a model's window: the interface of every model
    variant's map (theory: docs/theory/dynamics.md §1.1)."""

    @abstractmethod
    def state(self, win: Window) -> tuple[jax.Array, Any]:
        """(x, aux) of a window (batched windows give batched states)."""

    @abstractmethod
    def window(self, x, aux) -> Window:
        """The window of a state (x, aux)."""


class AttentionWindowMap(WindowMap):
    """A window map whose state is x = vec(A) ∈ R^{LM} and auxiliary state (pe, n), the positional window
    following A without depending on it (theory: docs/theory/dmft.md §6.1): the window ↔ state conversion
    and the observable's check every such map shares. A subclass is a frozen dataclass with the fields
    ``L``, ``M`` and ``observable``."""

    L: int
    M: int
    observable: str

    def __post_init__(self):
        check_observable(self.observable)

    def window(self, x, aux) -> Window:
        pe, n = aux
        return Window(x.reshape(self.L, self.M), pe, n)

    def state(self, win: Window) -> tuple[jax.Array, tuple]:
        """(x, aux) of a window (batched windows give batched states)."""
        return win.A.reshape(win.A.shape[:-2] + (-1,)), (win.pe, win.n)

    def uncache_aux(self, caux):
        return caux[0], caux[1]


@dataclass(frozen=True)
class AttentionMap(AttentionWindowMap):
    """x = vec(A) ∈ R^{LM}, aux = (pe, n) (theory: docs/theory/dmft.md §6.1)."""

    L: int
    M: int
    observable: str = "mo_se"
    convention: MoSeConvention = "paper"

    def step(self, x, aux, params):
        cp, sc = params
        new, _ = step(cp, sc, self.window(x, aux), self.convention)
        return new.A.reshape(-1), (new.pe, new.n)

    def cache_aux(self, x, aux, params):
        """(pe, n, mv, mk, m0, se0): the window's overlaps (a :class:`State` without A; theory:
        docs/theory/dmft.md §3.7, docs/theory/dynamics.md §1.1)."""
        cp, sc = params
        return tuple(fill(cp, sc, self.window(x, aux)))[1:]

    def step_cached(self, x, caux, params):
        """One step computing only the newest row's overlaps (:func:`attnphys.dmft.meanfield.advance`)."""
        cp, sc = params
        new, _ = advance(cp, sc, State(x.reshape(self.L, self.M), *caux), self.convention)
        return new.A.reshape(-1), tuple(new)[1:]

    def observe_cached(self, x, caux, params):
        """The observable read from the cached overlaps (no overlap is recomputed)."""
        cp, sc = params
        return observe(self.observable, State(x.reshape(self.L, self.M), *caux[:6]), sc.eps, self.convention)

    def tangent_aux(self, x, caux, params):
        """The cached auxiliary state plus the :class:`~attnphys.dmft.meanfield.Slopes` of every row
        (gv, gk, gq0; theory: docs/theory/dmft.md §6.3)."""
        cp, sc = params
        return tuple(caux[:6]) + tuple(slopes(cp, sc, x.reshape(self.L, self.M)))

    def tangent_cached(self, x, taux, params, Q):
        """One cached step with the closed-form Jacobian row (:func:`attnphys.dmft.meanfield.advance_tangent`):
        the state exactly as :meth:`step_cached` steps it, J Q to round-off of :meth:`tangent`'s."""
        cp, sc = params
        new, sl, JQ = advance_tangent(
            cp, sc, State(x.reshape(self.L, self.M), *taux[:6]), Slopes(*taux[6:]), Q, self.convention
        )
        return new.A.reshape(-1), tuple(new)[1:] + tuple(sl), JQ

    def observe(self, x, aux, params):
        cp, sc = params
        return observe(self.observable, fill(cp, sc, self.window(x, aux)), sc.eps, self.convention)


@dataclass(frozen=True)
class FullStateMap(WindowMap):
    """x = (vec(A), vec(pe)) ∈ R^{L(M+P)}, aux = n (theory: docs/theory/dmft.md §3.3, §6.1)."""

    L: int
    M: int
    P: int
    observable: str = "mo_se"
    convention: MoSeConvention = "paper"

    def __post_init__(self):
        check_observable(self.observable)

    def window(self, x, n) -> Window:
        L, M, P = self.L, self.M, self.P
        return Window(x[: L * M].reshape(L, M), x[L * M :].reshape(L, P), n)

    def state(self, win: Window) -> tuple[jax.Array, jax.Array]:
        lead = win.A.shape[:-2]
        return jnp.concatenate([win.A.reshape(lead + (-1,)), win.pe.reshape(lead + (-1,))], -1), win.n

    def step(self, x, n, params):
        cp, sc = params
        new, _ = step(cp, sc, self.window(x, n), self.convention)
        return jnp.concatenate([new.A.reshape(-1), new.pe.reshape(-1)]), new.n

    def observe(self, x, n, params):
        cp, sc = params
        return observe(self.observable, fill(cp, sc, self.window(x, n)), sc.eps, self.convention)
