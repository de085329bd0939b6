"""Two-parameter continuation of fold, flip and Neimark–Sacker curves of periodic orbits of a map, with the
codimension-two points on them and their normal-form coefficients (theory: docs/theory/dynamics.md §9).

A curve is the solution set of the minimally augmented system in u = (x, s₁, s₂) ∈ R^{D+2}:

    F^p(x; s) − x = 0,    g(x, s) = 0,

where g is the last component of the solution of the bordered system [[M, b], [cᵀ, 0]] (v, g) = (0, 1) with
M = A − I (fold), A + I (flip) or A⊙A − I (Neimark–Sacker; A⊙A the second compound matrix, whose eigenvalues
are the products μᵢμⱼ, i < j) and A = ∂F^p/∂x the monodromy matrix. g vanishes exactly where M is singular;
the borders b, c are M's left and right singular vectors of least singular value at the last accepted point.
The curve is followed by pseudo-arclength steps (Jacobians by ``jax.jacfwd``, float64).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize
import xarray as xr

from attnphys._arguments import checked
from attnphys._version import __version__
from attnphys.dynamics.checks import memory_of, state_dim
from attnphys.dynamics.maps import AbstractMap
from attnphys.dynamics.periodic import compose_steps
from attnphys.errors import InputError
from attnphys.progress import progress_bar

CURVE_KINDS: tuple[str, ...] = ("fold", "flip", "neimark_sacker")
"""The kinds of codimension-one curves that :func:`bifurcation_curve` continues."""

CODIM2_TESTS: dict[str, tuple[str, ...]] = {
    "fold": ("cusp", "resonance_1_1", "fold_flip"),
    "flip": ("generalized_flip", "resonance_1_2", "fold_flip"),
    "neimark_sacker": ("resonance_1_1", "resonance_1_2", "resonance_1_3", "resonance_1_4", "chenciner"),
}
"""The codimension-two points detected on each kind of curve, by the test function that vanishes there."""

COEFFICIENT: dict[str, str] = {"fold": "a", "flip": "c", "neimark_sacker": "d"}
"""The normal-form coefficient reported along each kind of curve (fold: a, flip: c, Neimark–Sacker: d)."""

COEFFICIENT_FLOOR = 1e-9
"""A normal-form coefficient's sign change is a codimension-two point only if it exceeds this at one end."""


def compound2(A: jax.Array) -> jax.Array:
    """The second compound matrix (n(n−1)/2, n(n−1)/2) of A (n, n): its 2×2 minors, rows and columns indexed
    by the pairs i < j; its eigenvalues are the products μᵢμⱼ, i < j, of A's (theory:
    docs/theory/dynamics.md §9.1)."""
    n = A.shape[0]
    i, j = np.triu_indices(n, 1)
    return A[i[:, None], i[None, :]] * A[j[:, None], j[None, :]] - A[i[:, None], j[None, :]] * A[j[:, None], i[None, :]]


def _critical_matrix(kind: str, A: jax.Array) -> jax.Array:
    eye = jnp.eye(A.shape[0], dtype=A.dtype)
    if kind == "fold":
        return A - eye
    if kind == "flip":
        return A + eye
    C = compound2(A)
    return C - jnp.eye(C.shape[0], dtype=A.dtype)


def _char_derivative(A: jax.Array, lam: float) -> jax.Array:
    """p'(λ) for p(λ) = det(λI − A): the sum of the principal (n−1)-minors of λI − A; with μ_k = λ a simple
    root it is Π_{j≠k}(λ − μ_j) (theory: docs/theory/dynamics.md §9.3)."""
    n = A.shape[0]
    Mm = lam * jnp.eye(n, dtype=A.dtype) - A
    if n == 1:
        return jnp.ones((), A.dtype)
    total = jnp.zeros((), A.dtype)
    for k in range(n):
        keep = np.array([i for i in range(n) if i != k])
        total = total + jnp.linalg.det(Mm[keep[:, None], keep[None, :]])
    return total


def _directional(h: Callable, v: jax.Array, y: jax.Array) -> jax.Array:
    """The derivative of h at y in the direction v."""
    return jax.jvp(h, (y,), (v,))[1]


def _multilinear(f: Callable, x: jax.Array, vs: tuple) -> jax.Array:
    """The k-th derivative of f at x applied to the complex vectors vs (k = len(vs)), by nested ``jax.jvp``
    on their real and imaginary parts (multilinearity)."""

    def real_deriv(rvs):
        g = f
        for v in rvs:
            g = functools.partial(_directional, g, v)
        return g(x)

    if not any(jnp.iscomplexobj(v) for v in vs):
        return real_deriv(tuple(vs))
    parts = [(jnp.real(v), jnp.imag(v)) for v in vs]
    total = jnp.zeros(x.shape, complex)
    for mask in range(2 ** len(vs)):
        rvs, factor = [], 1.0 + 0.0j
        for k, (re, im) in enumerate(parts):
            if mask >> k & 1:
                rvs.append(im)
                factor = factor * 1j
            else:
                rvs.append(re)
        total = total + factor * real_deriv(tuple(rvs))
    return total


def _eig_pair(A: jax.Array, target: complex, left: bool):
    w, V = jnp.linalg.eig(A.T if left else A)
    k = jnp.argmin(jnp.abs(w - target))
    return w[k], V[:, k]


def normal_form_coefficient(kind: str, f: Callable, x: jax.Array, q_ref: jax.Array | None = None):
    """The normal-form coefficient of the critical fixed point x of the map f (the p-th iterate for a period-p
    orbit) (theory: docs/theory/dynamics.md §9.2), with q, p the critical right and left eigenvectors of
    A = f'(x), ⟨q, q⟩ = 1, ⟨p, q⟩ = 1, B and C the second and third derivatives of f:

    * fold: a = ½⟨p, B(q, q)⟩ (its sign follows the orientation of q: q·q_ref ≥ 0);
    * flip: c = ⅙⟨p, C(q, q, q)⟩ + ½⟨p, B(q, (I − A)⁻¹B(q, q))⟩;
    * Neimark–Sacker (μ = e^{iθ}): d = ½ Re{e^{−iθ}[⟨p, C(q, q, q̄)⟩ + 2⟨p, B(q, (I − A)⁻¹B(q, q̄))⟩
      + ⟨p, B(q̄, (e^{2iθ}I − A)⁻¹B(q, q))⟩]}.

    Returns:
        (coefficient, q): a real scalar and the (D,) critical eigenvector used.
    """
    A = jax.jacfwd(f)(x)
    n = A.shape[0]
    eye = jnp.eye(n)
    if kind in ("fold", "flip"):
        target = 1.0 if kind == "fold" else -1.0
        _, q = _eig_pair(A, target, left=False)
        _, pv = _eig_pair(A, target, left=True)
        q, pv = jnp.real(q), jnp.real(pv)
        q = q / jnp.linalg.norm(q)
        if q_ref is not None:
            q = jnp.where(q @ q_ref < 0, -q, q)
        pv = pv / (pv @ q)
        Bqq = jnp.real(_multilinear(f, x, (q, q)))
        if kind == "fold":
            return 0.5 * pv @ Bqq, q
        h2 = jnp.linalg.solve(eye - A, Bqq)
        c = pv @ jnp.real(_multilinear(f, x, (q, q, q))) / 6.0 + 0.5 * pv @ jnp.real(_multilinear(f, x, (q, h2)))
        return c, q
    w, V = jnp.linalg.eig(A)
    k = jnp.argmax(jnp.where(jnp.imag(w) > 0, -jnp.abs(jnp.abs(w) - 1.0), -jnp.inf))
    mu, q = w[k], V[:, k]
    wl, W = jnp.linalg.eig(A.T)
    pv = W[:, jnp.argmin(jnp.abs(wl - jnp.conj(mu)))]  # Aᵀ p = μ̄ p: ⟨p, A v⟩ = μ ⟨p, v⟩
    q = q / jnp.linalg.norm(q)
    pv = pv / jnp.conj(jnp.vdot(pv, q))
    qb = jnp.conj(q)
    Bqq, Bqqb = _multilinear(f, x, (q, q)), _multilinear(f, x, (q, qb))
    h11 = jnp.linalg.solve(eye - A, Bqqb)
    h20 = jnp.linalg.solve(mu**2 * eye - A, Bqq)
    a, b = jnp.real(q), jnp.imag(q)
    Cqqqb = _multilinear(f, x, (a, a, a)) + _multilinear(f, x, (a, b, b))
    Cqqqb = Cqqqb + 1j * (_multilinear(f, x, (a, a, b)) + _multilinear(f, x, (b, b, b)))
    inner = Cqqqb + 2.0 * _multilinear(f, x, (q, h11.astype(complex))) + _multilinear(f, x, (qb, h20))
    d = 0.5 * jnp.real(jnp.conj(mu) * jnp.vdot(pv, inner))
    return jnp.where(jnp.abs(jnp.imag(mu)) > 1e-12, d, jnp.nan), q


@functools.lru_cache(maxsize=32)
def _kernels(m: AbstractMap, params_of: Callable, p: int, kind: str):
    """Jitted residual, Jacobian, corrector and diagnostics for curves of (m, params_of, p, kind)."""

    def Fp(x, s, aux0):
        return compose_steps(m, x, aux0, params_of(s), p)[0]

    def monodromy(x, s, aux0):
        return jax.jacfwd(Fp)(x, s, aux0)

    def H(u, border, aux0):
        D = u.shape[0] - 2
        x, s = u[:D], u[D:]
        b, c = border
        M = _critical_matrix(kind, monodromy(x, s, aux0))
        n = M.shape[0]
        Bm = jnp.block([[M, b[:, None]], [c[None, :], jnp.zeros((1, 1), M.dtype)]])
        g = jnp.linalg.solve(Bm, jnp.zeros(n + 1, M.dtype).at[-1].set(1.0))[-1]
        return jnp.concatenate([Fp(x, s, aux0) - x, g[None]])

    def HJM(u, border, aux0):
        """The residual (D+1,), its Jacobian (D+1, D+2) and the matrix M whose singularity g tests."""
        D = u.shape[0] - 2
        M = _critical_matrix(kind, monodromy(u[:D], u[D:], aux0))
        return H(u, border, aux0), jax.jacfwd(H)(u, border, aux0), M

    def diagnostics(u, q_ref, aux0):
        D = u.shape[0] - 2
        x, s = u[:D], u[D:]
        A = monodromy(x, s, aux0)
        mu = jnp.linalg.eigvals(A)
        coef, q = normal_form_coefficient(kind, lambda y: Fp(y, s, aux0), x, q_ref)
        eye = jnp.eye(D, dtype=A.dtype)
        if kind == "fold":
            tests = [coef, _char_derivative(A, 1.0), jnp.linalg.det(A + eye)]
        elif kind == "flip":
            tests = [coef, _char_derivative(A, -1.0), jnp.linalg.det(eye - A)]
        else:
            i, j = np.triu_indices(D, 1)
            k = jnp.argmin(jnp.abs(mu[i] * mu[j] - 1.0))
            kappa = jnp.real(mu[i][k] + mu[j][k]) / 2.0
            tests = [kappa - 1.0, kappa + 1.0, kappa + 0.5, kappa, coef]
        return jnp.stack(tests), mu[jnp.lexsort((-jnp.angle(mu), -jnp.abs(mu)))], coef, q

    return jax.jit(HJM), jax.jit(diagnostics)


class _Curve:
    """Newton corrections and tangents on the host around the jitted residual and Jacobian."""

    def __init__(self, HJM, aux0, tol: float, max_newton: int, n: int):
        self.HJM, self.aux0, self.tol, self.max_newton = HJM, aux0, tol, max_newton
        self.evaluations = 0
        self.border = (np.eye(n)[0], np.eye(n)[0])  # M is n × n

    def borders(self, u):
        """M's left and right singular vectors of least singular value at u (the borders of §9.1)."""
        M = np.asarray(self.HJM(jnp.asarray(u), tuple(map(jnp.asarray, self.border)), self.aux0)[2])
        U, _, Vt = np.linalg.svd(M)
        return U[:, -1], Vt[-1]

    def jacobian(self, u, border):
        r, J, _ = self.HJM(jnp.asarray(u), tuple(map(jnp.asarray, border)), self.aux0)
        self.evaluations += 1
        return np.asarray(r), np.asarray(J)

    def tangent(self, u, t_prev, border):
        _, J = self.jacobian(u, border)
        t = np.linalg.solve(np.vstack([J, t_prev[None]]), np.eye(u.size)[-1])
        return t / np.linalg.norm(t)

    def correct(self, u_pred, t, border):
        """Newton on (residual, tᵀ(u − u_pred)) from u_pred: (u, converged)."""
        u = np.array(u_pred, float)
        eps = np.finfo(float).eps
        for _ in range(self.max_newton):
            r, J = self.jacobian(u, border)
            if not (np.all(np.isfinite(r)) and np.all(np.isfinite(J))):
                return u, False
            try:
                du = np.linalg.solve(np.vstack([J, t[None]]), -np.concatenate([r, [t @ (u - u_pred)]]))
            except np.linalg.LinAlgError:
                return u, False
            u = u + du
            if np.max(np.abs(du)) <= max(self.tol, 4 * eps) * max(1.0, np.max(np.abs(u))):
                return u, bool(np.all(np.isfinite(u)))
        return u, False


def _identity(s):
    return s


def _check(kind, x0, s0, period, ds, ds_max, max_points, bounds, direction=1.0):
    if direction not in (1, -1):
        raise InputError(f"must be +1 or -1 (got {direction!r})", "direction")
    if kind not in CURVE_KINDS:
        raise InputError(f"must be one of {', '.join(CURVE_KINDS)} (got {kind!r})", "kind")
    if not isinstance(period, int | np.integer) or period < 1:
        raise InputError(f"must be an integer >= 1 (got {period!r})", "period")
    x0 = np.asarray(x0, float)
    if x0.ndim != 1 or x0.size < 1 or not np.all(np.isfinite(x0)):
        raise InputError(f"must be a finite (D,) state (got shape {x0.shape})", "x0")
    if kind == "neimark_sacker" and x0.size < 2:
        raise InputError("a Neimark–Sacker curve needs a state of dimension >= 2", "x0")
    s0 = np.asarray(s0, float)
    if s0.shape != (2,) or not np.all(np.isfinite(s0)):
        raise InputError(f"must be the two finite free parameter values (got {s0.tolist()!r})", "s0")
    if not (0 < ds <= ds_max):
        raise InputError(f"must satisfy 0 < ds <= ds_max (got ds={ds}, ds_max={ds_max})", "ds")
    if max_points < 2:
        raise InputError(f"must be >= 2 (got {max_points})", "max_points")
    if bounds is not None:
        bounds = np.asarray(bounds, float)
        if bounds.shape != (2, 2) or np.any(bounds[:, 0] >= bounds[:, 1]):
            raise InputError("must be ((lo₁, hi₁), (lo₂, hi₂)) with lo < hi", "bounds")
        if np.any(s0 < bounds[:, 0]) or np.any(s0 > bounds[:, 1]):
            raise InputError(f"the start s0={s0.tolist()} lies outside the bounds", "bounds")
    return x0, s0, bounds


@checked(
    memory=lambda a: memory_of(
        8 * 4 * a["max_points"] * (state_dim(a["m"], None, a["x0"]) + 4),
        "the curve's points",
        "use fewer max_points",
        a,
        "max_points",
    )
)
def bifurcation_curve(
    m: AbstractMap,
    kind: str,
    x0,
    s0,
    params_of: Callable[[jax.Array], Any] | None = None,
    *,
    aux0: Any = None,
    period: int = 1,
    direction: float = 1.0,
    ds: float = 1e-2,
    ds_max: float = 5e-2,
    ds_min: float = 1e-9,
    max_points: int = 500,
    bounds=None,
    tol: float = 1e-13,
    max_newton: int = 15,
    locate: bool = True,
    param_names: tuple[str, str] = ("s1", "s2"),
    progress: bool = False,
) -> xr.Dataset:
    """Continue a fold, flip or Neimark–Sacker curve of a period-p orbit in two parameters, with its
    codimension-two points (theory: docs/theory/dynamics.md §9).

    The curve solves F^p(x; s) − x = 0, g(x, s) = 0 in u = (x, s₁, s₂) (g: the minimally augmented test
    function of §9.1), followed by pseudo-arclength steps. Along it the test functions of §9.3 are recorded
    and each sign change between two points is located by Brent's method in the arclength (to the corrector
    tolerance): cusp, 1:1, fold–flip (fold curve); generalized flip, 1:2, fold–flip (flip curve); 1:1, 1:2,
    1:3, 1:4 and Chenciner (Neimark–Sacker curve), with the normal-form coefficient (§9.2) at every point.

    Args:
        m: the map. kind: ``fold``, ``flip`` or ``neimark_sacker``.
        x0: (D,) a point of the orbit at (or near: refined with s0[1] held) the bifurcation.
        s0: (2,) the free parameters at the start, near the curve.
        params_of: (2,) free parameters ↦ the map's params (traceable); default: the params are the (2,)
            vector itself. Reuse one function object: compiled kernels are cached per function.
        aux0: the orbit's aux state (returns to itself after ``period`` steps). period: p ≥ 1.
        direction: +1 or −1, the orientation of the first step along the curve.
        ds, ds_max, ds_min: initial, largest and smallest arclength steps (in (x, s₁, s₂)).
        max_points: most points on the curve. bounds: ((lo₁, hi₁), (lo₂, hi₂)): stop when a parameter
            leaves the box (the last point is the first one outside).
        tol: Newton step tolerance. locate: locate the codimension-two points.
        param_names: names of the two parameters in the dataset. progress: show a progress bar.

    Returns:
        Dataset with dims ``point`` (the curve), ``dim`` (D), ``multiplier`` (D), ``test`` and ``special``:
        ``s1``/``s2`` (named by ``param_names``), ``x``, ``multiplier_real``/``_imag``, ``test_function``
        (point, test), ``coefficient`` (the normal-form coefficient a, c or d), and the located
        codimension-two points ``special_kind``, ``special_<name>``, ``special_x``, ``special_coefficient``,
        ``special_multiplier_real``/``_imag``; attrs: kind, period, status, evaluations (Newton iterations),
        package version.

    Raises:
        InputError: a bad argument (named), or no curve point could be found near (x0, s0).
    """
    x0, s0, bounds = _check(kind, x0, s0, period, ds, ds_max, max_points, bounds, direction)
    params_of = params_of or _identity
    HJM, diagnostics = _kernels(m, params_of, int(period), kind)
    D = x0.size
    n = D * (D - 1) // 2 if kind == "neimark_sacker" else D
    cv = _Curve(HJM, aux0, tol, max_newton, n)
    u = np.concatenate([x0, s0])
    border = cv.borders(u)
    for fixed in (1, 0):  # hold s2, else s1: a square Newton system in (x, the other parameter)
        u1, ok = cv.correct(u, np.eye(D + 2)[D + fixed], border)
        if ok:
            break
    else:
        raise InputError(f"no {kind} point of period {period} found near x0={x0.tolist()}, s0={s0.tolist()}", "x0")
    u = u1
    border = cv.borders(u)
    t = np.linalg.svd(cv.jacobian(u, border)[1])[2][-1]  # the null vector of the (D+1, D+2) Jacobian
    t = t * np.sign(direction) * (1.0 if t[D] >= 0 else -1.0)

    def record(u, q_ref):
        test, mu, coef, q = diagnostics(jnp.asarray(u), q_ref, aux0)
        return np.asarray(test), np.asarray(mu), float(coef), q

    test, mu, coef, q_ref = record(u, jnp.zeros(D).at[0].set(1.0))
    us, tests, mus, coefs = [u], [test], [mu], [coef]
    specials: list[dict] = []
    h, status = ds, "max_points"
    names = CODIM2_TESTS[kind]
    with progress_bar(max_points - 1, "points", enabled=progress) as advance:
        while len(us) < max_points:
            t = cv.tangent(u, t, border)
            before = cv.evaluations
            u_new, ok = cv.correct(u + h * t, t, border)
            if not ok:
                h *= 0.5
                if h < ds_min:
                    status = "step_too_small"
                    break
                continue
            quick = cv.evaluations - before <= 4
            test_new, mu_new, coef_new, q_new = record(u_new, q_ref)
            if locate:
                for k in _crossings(kind, test, test_new):
                    sp = _locate(cv, diagnostics, u, t, h, border, int(k), q_ref)
                    if sp is not None:
                        specials.append({"kind": names[k], **sp})
            u, test, q_ref = u_new, test_new, q_new
            us.append(u)
            tests.append(test)
            mus.append(mu_new)
            coefs.append(coef_new)
            border = cv.borders(u)
            advance(1)
            if quick:
                h = min(h * 1.5, ds_max)
            if bounds is not None and (np.any(u[D:] < bounds[:, 0]) or np.any(u[D:] > bounds[:, 1])):
                status = "bounds"
                break
    return _dataset(
        kind,
        period,
        status,
        cv.evaluations,
        np.array(us),
        np.array(tests),
        np.array(mus),
        np.array(coefs),
        specials,
        D,
        param_names,
    )


def _crossings(kind: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The test functions that change sign between two points. A normal-form coefficient (cusp,
    generalized flip, Chenciner) counts only above round-off at one end at least: on a curve where it
    vanishes identically (the Neimark–Sacker curve of an area-preserving map) its sign is noise."""
    change = np.isfinite(a) & np.isfinite(b) & (np.sign(a) * np.sign(b) < 0)
    coef = np.array([name in ("cusp", "generalized_flip", "chenciner") for name in CODIM2_TESTS[kind]])
    change &= ~coef | (np.maximum(np.abs(a), np.abs(b)) > COEFFICIENT_FLOOR)
    return np.flatnonzero(change)


def _locate(cv: _Curve, diagnostics, u, t, h, border, k, q_ref):
    """The zero of test function k between u (arclength 0) and the corrected point at h, by Brent's method
    in the arclength, correcting the point at every trial (theory: docs/theory/dynamics.md §9.3)."""

    def phi(hh):
        v, ok = cv.correct(u + hh * t, t, border)
        return float(diagnostics(jnp.asarray(v), q_ref, cv.aux0)[0][k]) if ok else np.nan

    try:
        root = scipy.optimize.brentq(phi, 0.0, h, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=200)
    except (ValueError, RuntimeError):
        return None
    v, ok = cv.correct(u + root * t, t, border)
    if not ok:
        return None
    ends = max(abs(phi(0.0)), abs(phi(h)))
    if not abs(phi(root)) <= 1e-6 * ends:  # a sign change through a pole (⟨p, q⟩ → 0 at a resonance), not a zero
        return None
    _, mu, coef, _ = diagnostics(jnp.asarray(v), q_ref, cv.aux0)
    return {"u": np.asarray(v), "mu": np.asarray(mu), "coefficient": float(coef)}


def _dataset(kind, period, status, evaluations, us, tests, mus, coefs, specials, D, param_names) -> xr.Dataset:
    n1, n2 = param_names
    coef_name = COEFFICIENT[kind]
    sp_u = np.array([sp["u"] for sp in specials]).reshape(len(specials), D + 2)
    sp_mu = np.asarray(np.array([sp["mu"] for sp in specials]).reshape(len(specials), D), complex)
    mus = np.asarray(mus, complex)
    return xr.Dataset(
        {
            n1: ("point", us[:, D], {"long_name": f"parameter {n1}"}),
            n2: ("point", us[:, D + 1], {"long_name": f"parameter {n2}"}),
            "x": (("point", "dim"), us[:, :D], {"long_name": "orbit point x_0"}),
            "multiplier_real": (("point", "multiplier"), np.real(mus), {"long_name": "real part of the multipliers"}),
            "multiplier_imag": (
                ("point", "multiplier"),
                np.imag(mus),
                {"long_name": "imaginary part of the multipliers"},
            ),
            "test_function": (("point", "test"), tests, {"long_name": "codimension-two test functions"}),
            "coefficient": ("point", coefs, {"long_name": f"normal-form coefficient {coef_name}"}),
            "special_kind": ("special", np.array([sp["kind"] for sp in specials], dtype="<U20")),
            f"special_{n1}": ("special", sp_u[:, D], {"long_name": f"parameter {n1} at the point"}),
            f"special_{n2}": ("special", sp_u[:, D + 1], {"long_name": f"parameter {n2} at the point"}),
            "special_x": (("special", "dim"), sp_u[:, :D], {"long_name": "orbit point at the point"}),
            "special_coefficient": (
                "special",
                np.array([sp["coefficient"] for sp in specials], float),
                {"long_name": f"normal-form coefficient {coef_name} at the point"},
            ),
            "special_multiplier_real": (("special", "multiplier"), np.real(sp_mu)),
            "special_multiplier_imag": (("special", "multiplier"), np.imag(sp_mu)),
        },
        coords={"test": list(CODIM2_TESTS[kind])},
        attrs={
            "kind": kind,
            "period": int(period),
            "status": status,
            "evaluations": int(evaluations),
            "coefficient": coef_name,
            "attnphys_version": __version__,
            "theory": "docs/theory/dynamics.md §9",
        },
    )
