"""The DMFT mean-field step as a :class:`attnphys.dynamics.Map` (spec ``dmft.md`` §5).

* :func:`attention_map` — state x = vec(A) (L·M), auxiliary state (pe, n). The positional window is
  a fixed cyclic permutation that does not depend on A (∂P_{t+1}/∂A_t = 0), so the tangent dynamics
  of A alone gives the L·M attention exponents; the L·P positional exponents are exactly 0.
* :func:`full_map` — state x = (vec(A), vec(pe)) of dimension L(M+P), the reference's Jacobian;
  with identity initial vectors its last L·P exponents come out exactly 0 (a test of the structure).

Parameters are the pair ``(Couplings, Scalars)``; sweeping vmaps over the Scalars only.
"""

from __future__ import annotations

from functools import lru_cache

import jax.numpy as jnp

from attnphys.dmft.meanfield import OBSERVABLES, Window, overlaps, step
from attnphys.dynamics.maps import Map

FAMILY_INDEX = {"mo": 0, "mv": 1, "mq": 2, "mk": 3}


def _observe(name: str, paper: bool):
    if name not in OBSERVABLES:
        raise ValueError(f"unknown observable {name!r}; choose from {OBSERVABLES}")

    def observe(A, pe, params):
        cp, sc = params
        if name == "att":
            return A[0]
        if name == "mo_se":
            u = jnp.tanh(sc.beta_o * (cp.signs @ A[0]))
            se = (1.0 - sc.eps) * (u @ cp.K[0])
            return se if paper else se / (1.0 - sc.eps)
        return overlaps(cp, sc, A[0], pe[0])[FAMILY_INDEX[name]]

    return observe


@lru_cache(maxsize=None)
def attention_map(L: int, M: int, observable: str = "mo_se", paper: bool = True) -> Map:
    """Map on x = vec(A) ∈ R^{LM} driven by the positional cycle aux = (pe, n)."""
    obs = _observe(observable, paper)

    def f(x, aux, params):
        cp, sc = params
        pe, n = aux
        new, _ = step(cp, sc, Window(x.reshape(L, M), pe, n), paper)
        return new.A.reshape(-1), (new.pe, new.n)

    return Map(step=f, observe=lambda x, aux, p: obs(x.reshape(L, M), aux[0], p))


@lru_cache(maxsize=None)
def full_map(L: int, M: int, P: int, observable: str = "mo_se", paper: bool = True) -> Map:
    """Map on the flattened full state x = (vec(A), vec(pe)) ∈ R^{L(M+P)}, aux = n (spec §3.3)."""
    obs = _observe(observable, paper)

    def split(x):
        return x[: L * M].reshape(L, M), x[L * M :].reshape(L, P)

    def f(x, n, params):
        cp, sc = params
        A, pe = split(x)
        new, _ = step(cp, sc, Window(A, pe, n), paper)
        return jnp.concatenate([new.A.reshape(-1), new.pe.reshape(-1)]), new.n

    return Map(step=f, observe=lambda x, n, p: obs(*split(x), p))
