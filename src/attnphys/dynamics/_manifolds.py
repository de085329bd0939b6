"""One-dimensional stable and unstable manifolds of saddle periodic orbits by fundamental-domain iteration
(theory: docs/theory/dynamics.md §11.5).

A saddle point x* of G = F^p with a real multiplier μ of the chosen kind (|μ| > 1: unstable, |μ| < 1: stable),
the only one of that kind, has a one-dimensional manifold tangent to μ's eigenvector v. The segment
{x* ± s v : δ ≤ s ≤ δ|μ|} (a fundamental domain: G maps its start onto its end to O(δ²)) is mapped k = 1..K
times by G (unstable) or by G⁻¹ (stable, by Newton's method on G(y) = x along the segment), the images joining
end to start into the manifold's branch. A negative multiplier flips the branches: G² is used.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from attnphys._arguments import checked, count
from attnphys._checks import check_array, check_count, check_positive
from attnphys.dynamics.checks import memory_of, params_dict, state_dim, warn_if_single_precision
from attnphys.dynamics.maps import AbstractMap
from attnphys.dynamics.periodic import compose_steps, monodromy, refine
from attnphys.errors import InputError, NonFiniteError
from attnphys.metadata import base_attrs

NEWTON_STEPS = 12
"""Newton steps per preimage (after the predictor; quadratic convergence needs ~3)."""


def _forward(m: AbstractMap, aux, params, p: int) -> Callable:
    return lambda y: compose_steps(m, y, aux, params, p)[0]


@partial(jax.jit, static_argnames=("m", "p", "pieces"))
def _unstable_pieces(m: AbstractMap, seg, aux, params, p: int, pieces: int):
    """(pieces, n, D): G^k(seg) for k = 0..pieces − 1, and zero residuals (images are exact)."""
    G = jax.vmap(_forward(m, aux, params, p))

    def body(c, _):
        return G(c), c

    _, out = jax.lax.scan(body, seg, None, length=pieces)
    return out, jnp.zeros(out.shape[:2], out.dtype)


@partial(jax.jit, static_argnames=("m", "p", "pieces", "inverse"))
def _stable_pieces(m: AbstractMap, seg, aux, params, p: int, pieces: int, inverse: Callable | None):
    """(pieces, n, D): G^{−k}(seg), each piece's points solved in order along it (a predictor from the previous
    point, then Newton), and the residuals ‖G(y) − x‖_∞ (pieces, n)."""
    G = _forward(m, aux, params, p)
    J = jax.jacfwd(G)

    def preimage(guess, x):
        def newton(_, y):
            return y - jnp.linalg.solve(J(y), G(y) - x)

        return jax.lax.fori_loop(0, NEWTON_STEPS, newton, guess)

    def piece(prev, _):
        # the first point's preimage lies near the previous piece's end (the seam of the fundamental domain)
        if inverse is not None:
            ys = jax.vmap(inverse)(prev)
        else:
            y0 = preimage(prev[-1], prev[0])

            def along(c, x):
                y_prev, x_prev = c
                guess = y_prev + jnp.linalg.solve(J(y_prev), x - x_prev)
                y = preimage(guess, x)
                return (y, x), y

            _, rest = jax.lax.scan(along, (y0, prev[0]), prev[1:])
            ys = jnp.concatenate([y0[None], rest])
        res = jnp.max(jnp.abs(jax.vmap(G)(ys) - prev), axis=-1)
        return ys, (prev, res)

    _, (out, res) = jax.lax.scan(piece, seg, None, length=pieces)
    # residual of piece k is that of its preimage, piece k + 1: shift so that it labels the computed points
    res = jnp.concatenate([jnp.zeros_like(res[:1]), res[:-1]])
    return out, res


@checked(
    points=count(2),
    memory=lambda a: memory_of(
        8 * 8 * a["pieces"] * a["points"] * state_dim(a["m"], None, a["x"]),
        "the manifold's pieces",
        "use fewer pieces or points",
        a,
        "pieces",
        "points",
    ),
)
def invariant_manifold(
    m: AbstractMap,
    x,
    params,
    *,
    aux0=None,
    period: int = 1,
    kind: Literal["unstable", "stable"] = "unstable",
    pieces: int = 12,
    points: int = 200,
    delta: float = 1e-7,
    inverse: Callable | None = None,
) -> xr.Dataset:
    """The one-dimensional stable or unstable manifold of a saddle periodic point, both branches, by
    fundamental-domain iteration (theory: docs/theory/dynamics.md §11.5).

    The point is refined by Newton (:func:`refine`); with G = F^p (G² when the multiplier μ is negative) and v
    the unit eigenvector of μ, each branch σ = ±1 starts from the fundamental domain
    {x* + σ s v : s = δ|μ|^{j/n}, j = 0..n} (n = ``points`` − 1), mapped K = ``pieces`` times:

        W^u_σ = ∪_{k<K} G^k(domain_σ),     W^s_σ = ∪_{k<K} G^{−k}(domain_σ),

    the preimages G^{−1} by Newton's method on G(y) = x (or ``inverse``). Evidence: ``residual``, the largest
    ‖G(y) − x‖_∞ of the preimages (0 for the unstable manifold); ``seam``, the largest distance between the end
    of one piece and the start of the next (the O(δ²) error of the linear domain, grown along the manifold);
    ``max_gap``, the largest distance between consecutive points (the polyline's resolution).

    Args:
        m: the map; x: (D,) a guess of a point of the saddle orbit; params: its parameters; aux0: its auxiliary
            state; period: p.
        kind: "unstable" (|μ| > 1) or "stable" (|μ| < 1); the multipliers of that kind must be exactly one,
            real (a one-dimensional manifold).
        pieces: K; points: points per piece (n + 1); delta: δ, the domain's distance from x* relative to
            max(1, ‖x*‖).
        inverse: optional exact inverse of G, ``inverse(x) -> y`` (stable manifold only).

    Returns:
        Dataset with ``points`` (branch, piece, point, component), ``arclength`` (branch, piece, point) from x*,
        ``residual`` (branch, piece, point), ``fixed_point`` (component), ``eigenvector`` (component); attrs
        ``multiplier`` (of G), ``seam``, ``max_gap``, ``max_residual``, ``orbit_residual``.

    Raises:
        InputError: naming ``x``, ``period``, ``kind``, ``pieces``, ``points``, ``delta``, ``inverse``; or
            ``x`` when Newton does not converge or the point is not a saddle with one multiplier of the kind.
        NonFiniteError: a piece reached NaN/∞ (the manifold runs off to infinity: fewer ``pieces``), naming
            the first such piece as the step.
    """
    check_array(x, "x", ndim=1, what="one state (D,)")
    period = check_count(period, "period")
    pieces = check_count(pieces, "pieces")
    points = check_count(points, "points", 2)
    check_positive(delta, "delta")
    if kind not in ("unstable", "stable"):
        raise InputError(f"must be 'unstable' or 'stable', got {kind!r}", "kind")
    if inverse is not None and (kind != "stable" or not callable(inverse)):
        raise InputError("is a function y = G⁻¹(x), used for the stable manifold only", "inverse")
    x = jnp.asarray(x)
    warn_if_single_precision(x)
    orb = refine(m, x, aux0, params, period)
    if not bool(orb.converged):
        raise InputError(
            f"Newton did not converge to a period-{period} point (residual {float(orb.residual):.2e})", "x"
        )
    xs = jnp.asarray(orb.x)
    mu, V = np.linalg.eig(np.asarray(monodromy(m, xs, aux0, params, period)))
    chosen = np.abs(mu) > 1 if kind == "unstable" else np.abs(mu) < 1
    if chosen.sum() != 1 or abs(mu[chosen][0].imag) > 0 or np.any(np.isclose(np.abs(mu), 1.0, rtol=0, atol=1e-9)):
        raise InputError(
            f"the point is not a saddle with exactly one real {kind} multiplier (multipliers {np.round(mu, 6)})", "x"
        )
    i = int(np.argmax(chosen))
    mult, v = float(mu[i].real), np.real(V[:, i])
    v = v / np.linalg.norm(v)
    p = period
    if mult < 0:  # the branches swap sides at every step: use G²
        p, mult = 2 * period, mult**2
    growth = mult if kind == "unstable" else 1.0 / mult
    scale = float(delta) * max(1.0, float(jnp.max(jnp.abs(xs))))
    s = scale * growth ** (np.arange(points) / (points - 1))
    branches, residuals = [], []
    for sign in (1.0, -1.0):
        seg = xs + sign * jnp.asarray(s[:, None] * v[None, :], dtype=xs.dtype)
        if kind == "unstable":
            out, res = _unstable_pieces(m, seg, aux0, params, p, pieces)
        else:
            out, res = _stable_pieces(m, seg, aux0, params, p, pieces, inverse)
        branches.append(np.asarray(out))
        residuals.append(np.asarray(res))
    P = np.stack(branches)  # (2, K, n, D)
    bad = ~np.isfinite(P).all(axis=(0, 2, 3))
    if bad.any():
        raise NonFiniteError(
            step=int(np.argmax(bad)), params=params_dict(params), count=int(bad.sum()), what=f"{kind} manifold piece"
        )
    R = np.stack(residuals)
    seg_len = np.linalg.norm(np.diff(P, axis=2), axis=-1)  # (2, K, n − 1)
    seam = np.linalg.norm(P[:, 1:, 0] - P[:, :-1, -1], axis=-1) if pieces > 1 else np.zeros((2, 0))
    flat = P.reshape(2, pieces * points, -1)
    steps = np.linalg.norm(np.diff(flat, axis=1), axis=-1)
    arc = (s[0] + np.concatenate([np.zeros((2, 1)), np.cumsum(steps, axis=1)], axis=1)).reshape(2, pieces, points)
    return xr.Dataset(
        {
            "points": (("branch", "piece", "point", "component"), P, {"long_name": f"{kind} manifold"}),
            "arclength": (("branch", "piece", "point"), arc, {"long_name": "arclength from the periodic point"}),
            "residual": (("branch", "piece", "point"), R, {"long_name": "Newton residual of the preimage"}),
            "fixed_point": (("component",), np.asarray(xs), {"long_name": "refined periodic point"}),
            "eigenvector": (("component",), v, {"long_name": f"{kind} eigenvector of F^p"}),
        },
        coords={"branch": [1, -1], "piece": np.arange(pieces), "point": np.arange(points)},
        attrs=base_attrs(
            params=params_dict(params),
            **{
                "kind": kind,
                "period": period,
                "multiplier": mult,
                "delta": float(delta),
                "seam": float(seam.max()) if seam.size else 0.0,
                "max_gap": float(seg_len.max()),
                "max_residual": float(R.max()),
                "orbit_residual": float(orb.residual),
                "map": type(m).__name__,
                "theory": "docs/theory/dynamics.md §11.5",
            },
        ),
    )
