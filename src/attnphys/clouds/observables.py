"""Observables of a particle cloud along a flow: interaction energy, clusters, clustered pairs and
metastable plateaus (theory: docs/theory/particles.md §3, §4)."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from attnphys._arguments import checked

PAIR_TOL = 1e-3
"""Distance between token directions below which a pair counts as clustered."""


def _check(X, scalar, name: str, **bounds) -> None:
    """``X`` an (n, D) array of real numbers (shapes only: works on traced arrays) and ``scalar`` a finite number
    within ``bounds`` where it is concrete (:func:`attnphys.clouds._inputs.number`)."""
    from attnphys._checks import check_array, is_concrete
    from attnphys.clouds._inputs import number

    check_array(X, "X", ndim=2, what="tokens × dimensions (n, D)")
    if is_concrete(scalar):
        number(scalar, name, **bounds)


def interaction_energy(X: jax.Array, beta: float) -> jax.Array:
    """E_β(X) = (1/(2βn²)) Σ_ij exp(β⟨x_i, x_j⟩) of the cloud X (n, D), β > 0
    (theory: docs/theory/particles.md §3). Non-decreasing along USA on the sphere with Q = K = V = I.

    Raises:
        InputError: ``X`` not an (n, D) array, ``beta`` not a finite number > 0 (when concrete)."""
    _check(X, beta, "beta", low=0.0, low_open=True)
    n = X.shape[0]
    return jnp.sum(jnp.exp(beta * X @ X.T)) / (2 * beta * n**2)


def directions(X: jax.Array) -> jax.Array:
    """x / ‖x‖ per token (a zero token stays zero) (theory: docs/theory/particles.md §4.3)."""
    n = jnp.linalg.norm(X, axis=-1, keepdims=True)
    return X / jnp.where(n > 0, n, 1.0)


def clustered_pairs(X: jax.Array, tol: float = PAIR_TOL) -> jax.Array:
    """Fraction of the n(n−1)/2 token pairs whose directions are within ``tol`` of each other,
    ‖x̂_i − x̂_j‖ < tol (theory: docs/theory/particles.md §4.3).

    Raises:
        InputError: ``X`` not an (n, D) array, ``tol`` not a finite number > 0 (when concrete)."""
    _check(X, tol, "tol", low=0.0, low_open=True)
    U = directions(X)
    n = U.shape[0]
    d2 = jnp.maximum(2.0 - 2.0 * U @ U.T, 0.0)
    close = (d2 < tol**2) & ~jnp.eye(n, dtype=bool)
    return jnp.sum(close) / (n * (n - 1))


@dataclass(frozen=True)
class Plateau:
    """A maximal interval of saved times with a constant cluster count (theory:
    docs/theory/particles.md §4.2).

    Attributes:
        start: first saved time of the interval. end: first saved time with another count (a merge or
            a split), or the last saved time when ``closed`` is False. clusters: the count.
        closed: the interval ends with a change of count within the saved times.
    """

    start: float
    end: float
    clusters: int
    closed: bool

    @property
    def length(self) -> float:
        return self.end - self.start


def plateaus(times, counts) -> list[Plateau]:
    """The plateaus of a cluster-count time series (theory: docs/theory/particles.md §4.2).

    Args:
        times: (T,) increasing saved times. counts: (T,) cluster counts.

    Returns:
        Plateaus in time order; their lengths add up to times[-1] − times[0].

    Raises:
        InputError: ``times`` not (T,) increasing finite numbers, ``counts`` not (T,) whole numbers.
    """
    from attnphys.clouds._inputs import reals
    from attnphys.errors import InputError

    t, c = reals(times, "times"), reals(counts, "counts")
    if t.ndim != 1 or np.any(np.diff(t) <= 0):
        raise InputError(f"must be (T,) strictly increasing times, got shape {t.shape}", "times")
    if c.shape != t.shape or np.any(c != np.round(c)):
        raise InputError(f"must be {t.shape} whole numbers, one per time, got shape {c.shape}", "counts")
    c = c.astype(int)
    if t.size == 0:
        return []
    cuts = [0] + [k for k in range(1, c.size) if c[k] != c[k - 1]] + [c.size]
    out = []
    for a, b in zip(cuts[:-1], cuts[1:]):
        closed = b < c.size
        out.append(Plateau(float(t[a]), float(t[b] if closed else t[-1]), int(c[a]), closed))
    return out


@checked
def longest_metastable(pl: list[Plateau], censored: bool = True) -> Plateau | None:
    """The longest plateau with more than one cluster (theory: docs/theory/particles.md §4.2): a metastable
    state. With ``censored`` (default) the plateau the run ends on competes too: its length is a lower
    bound (it has not ended by the last saved time) and it is reported as such (:func:`plateau_text`);
    without, only closed plateaus (that end by a merge or split) count. Lengths compared are the observed
    ones: a censored plateau wins when even its lower bound is the longest."""
    cand = [p for p in pl if p.clusters > 1 and (p.closed or censored)]
    return max(cand, key=lambda p: p.length) if cand else None


def plateau_text(p: Plateau | None) -> str:
    """``3 clusters for ≥ 392 (t = 8 … 400, the run ends on it)`` for a censored plateau, ``6 clusters for 12
    (t = 3 … 15)`` for a closed one, ``none`` (theory: docs/theory/particles.md §4.2)."""
    if p is None:
        return "none"
    if p.closed:
        return f"{p.clusters} clusters for {p.length:.4g} (t = {p.start:.4g} … {p.end:.4g})"
    return f"{p.clusters} clusters for ≥ {p.length:.4g} (t = {p.start:.4g} … {p.end:.4g}, the run ends on it)"


__all__ = [
    "PAIR_TOL",
    "interaction_energy",
    "directions",
    "clustered_pairs",
    "Plateau",
    "plateaus",
    "longest_metastable",
    "plateau_text",
]
