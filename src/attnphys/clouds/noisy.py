"""Noisy self-attention on the sphere: n tokens under the attention drift and Brownian noise, their
McKean–Vlasov limit, its free energy and the phase transition of the uniform cloud (theory:
docs/theory/noisy_particles.md).

The particle system is the Itô SDE on S^{d−1}

    dx_i = K Π_i(A(X)_i) dt + √2 Π_i dW_i − (d − 1) x_i dt,

the last term the Itô correction that keeps ‖x_i‖ = 1 (its generator is K v·∇ + Δ_S), with the USA drift
A(X)_i = (1/n) Σ_j e^{β⟨x_i,x_j⟩} x_j or the SA drift (the softmax average). For USA its mean-field limit is
the Wasserstein gradient flow of

    F[ρ] = ∫ ρ log ρ dσ − (K / 2β) ∫∫ e^{β⟨x,y⟩} ρ(x) ρ(y) dσ(x) dσ(y),

σ the uniform probability. The uniform density loses linear stability at K_#(β) = d / ₀F₁(; d/2 + 1; β²/4)
(= β^{d/2} / (2^{d/2−1} Γ(d/2) I_{d/2}(β))), and the transition is continuous for β ≤ β_*(d), discontinuous
above, where I_{d/2+1}(β_*)/I_{d/2}(β_*) = 1/d.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Literal, cast

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr
from scipy.special import hyp0f1, roots_jacobi

from attnphys._arguments import checked
from attnphys._arguments import number as number_rule
from attnphys.clouds._inputs import choice, count, fits, flag, number, numbers
from attnphys.clouds._inputs import seed as check_seed
from attnphys.errors import InputError

Dynamics = Literal["usa", "sa"]

CHI_MAX = 5.0
"""Largest susceptibility n⟨|m|²⟩ of the points the finite-n onset fit uses: below it the cloud is
disordered and 1/χ is linear in K to O(1/n) (theory: docs/theory/noisy_particles.md §6)."""


# -- §3 closed forms --------------------------------------------------------------------------------------
def _betas(beta) -> np.ndarray:
    return numbers(beta, "beta", low=0.0, low_open=True)


def _dim(dim) -> int:
    return count(dim, "dim", 2)


@checked(k=None)
def harmonic_coefficient(beta, k: int, dim: int = 2) -> np.ndarray:
    """The Funk–Hecke coefficient c_k(β) of the kernel e^{β⟨x,y⟩} on S^{d−1} against the uniform probability
    σ, for k = 0, 1, 2, as confluent limit functions (no under- or overflow at large d):
    c_0 = ₀F₁(; d/2; β²/4), c_1 = (β/d) ₀F₁(; d/2 + 1; β²/4), c_2 = β²/(d(d + 2)) ₀F₁(; d/2 + 2; β²/4),
    i.e. c_k = Γ(d/2) (2/β)^{d/2−1} I_{k+d/2−1}(β) (theory: docs/theory/noisy_particles.md §3).

    Args:
        beta: (B,) values > 0. k: 0, 1 or 2. dim: d ≥ 2.

    Returns:
        (B,) coefficients.

    Raises:
        InputError: a β ≤ 0, k not 0, 1, 2 or dim < 2, naming the argument.
    """
    b, dim = _betas(beta), _dim(dim)
    if isinstance(k, bool) or k not in (0, 1, 2):
        raise InputError(f"must be 0, 1 or 2, got {k!r:.40}", "k")
    pre = np.ones_like(b)
    for j in range(k):
        pre = pre * b / (dim + 2 * j)
    return pre * hyp0f1(dim / 2 + k, b * b / 4)


@checked
def linear_threshold(beta, dim: int = 2, dynamics: Dynamics = "usa") -> np.ndarray:
    """The coupling K_#(β) at which the uniform density on S^{d−1} loses linear stability under the noisy
    mean-field flow with generator K v·∇ + Δ_S (theory: docs/theory/noisy_particles.md §3):

        K_#^USA(β) = β / c_1(β) = d / ₀F₁(; d/2 + 1; β²/4) = β^{d/2} / (2^{d/2−1} Γ(d/2) I_{d/2}(β)),
        K_#^SA(β)  = β c_0(β) / c_1(β) = β I_{d/2−1}(β) / I_{d/2}(β);

    the first spherical harmonic destabilises first (c_k decreases with k). On the circle K_#^USA = β/I_1(β).

    Args:
        beta: (B,) inverse temperatures > 0. dim: d ≥ 2. dynamics: ``usa`` or ``sa``.

    Returns:
        (B,) thresholds.

    Raises:
        InputError: a β ≤ 0, dim < 2 or an unknown dynamics, naming it.
    """
    b, dim = _betas(beta), _dim(dim)
    choice(dynamics, ("usa", "sa"), "dynamics")
    k = dim / hyp0f1(dim / 2 + 1, b * b / 4)
    if dynamics == "sa":
        k = k * hyp0f1(dim / 2, b * b / 4)
    return k


def _ratio_gap(b: float, dim: int) -> float:
    """c_2/c_1 − 1/d = I_{d/2+1}(β)/I_{d/2}(β) − 1/d."""
    return b / (dim + 2) * hyp0f1(dim / 2 + 2, b * b / 4) / hyp0f1(dim / 2 + 1, b * b / 4) - 1 / dim


@checked
def critical_beta(dim: int = 2) -> float:
    """β_*(d), the unique root of I_{d/2+1}(β)/I_{d/2}(β) = 1/d (the ratio c_2/c_1 of the kernel's harmonic
    coefficients): the Landau quartic coefficient of the free energy at K_# is positive for β < β_*
    (continuous transition) and negative above (discontinuous) (theory: docs/theory/noisy_particles.md §4).
    β_*(2) = 2.4469…, β_*(3) = 1.8162…, β_*(d) → 1 as d → ∞.

    Raises:
        InputError: dim not an integer ≥ 2.
    """
    from scipy.optimize import brentq

    dim = _dim(dim)
    root: Any = brentq(_ratio_gap, 0.5, 2.0 * dim + 12.0, args=(dim,), xtol=1e-15, rtol=4 * np.finfo(float).eps)
    return float(root)


@checked
def landau_coefficients(beta, coupling=None, dim: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """The free energy of the USA mean-field flow near the uniform density, reduced to the first-moment order
    parameter m = |∫ x ρ dσ| (the degree-2 harmonic slaved to it) (theory: docs/theory/noisy_particles.md §4):

        F(m) − F(σ) = a m² + b m⁴ + O(m⁶),  a = (d/2)(1 − K/K_#),
        b = d³/(4(d + 2)) · [1 − (d − 1)/(d (1 − r))],  r = c_2/c_1 = I_{d/2+1}(β)/I_{d/2}(β),

    b evaluated at K = K_#; b > 0 exactly for β < β_*(d).

    Args:
        beta: (B,) inverse temperatures > 0. coupling: (B,) or a scalar K (default: K_#, a = 0). dim: d ≥ 2.

    Returns:
        (a, b), each (B,).

    Raises:
        InputError: a β ≤ 0, a non-finite coupling or dim < 2, naming it.
    """
    b, dim = _betas(beta), _dim(dim)
    ks = linear_threshold(b, dim)
    K = ks if coupling is None else np.broadcast_to(numbers(coupling, "coupling"), b.shape)
    r = b / (dim + 2) * hyp0f1(dim / 2 + 2, b * b / 4) / hyp0f1(dim / 2 + 1, b * b / 4)
    quad = dim / 2 * (1 - K / ks)
    quart = dim**3 / (4 * (dim + 2)) * (1 - (dim - 1) / (dim * (1 - r)))
    return quad, quart


# -- §5 the independent numerical route: quadrature of the zonal kernel ----------------------------------
def _zonal_nodes(dim: int, nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Jacobi nodes and probability weights of the law of s = ⟨x, e⟩ under σ on S^{d−1}:
    density ∝ (1 − s²)^{(d−3)/2}."""
    a = (dim - 3) / 2
    s, w = roots_jacobi(nodes, a, a)
    return s, w / w.sum()


def _zonal_kernel(beta: float, dim: int, nodes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(s, w, k): nodes, weights and the zonal kernel k(s, s') = E[e^{β⟨x,y⟩} | ⟨x,e⟩ = s, ⟨y,e⟩ = s'],
    ⟨x,y⟩ = ss' + √(1−s²)√(1−s'²) u with u the first coordinate of a uniform point of S^{d−2}, averaged by
    quadrature of the plain exponential (no Bessel function)."""
    s, w = _zonal_nodes(dim, nodes)
    root = np.sqrt(np.clip(1 - s * s, 0.0, None))
    z = beta * np.outer(root, root)
    if dim == 2:
        inner = np.cosh(z)  # S^0 = {−1, 1}
    else:
        u, v = _zonal_nodes(dim - 1, nodes)
        inner = np.einsum("l,ijl->ij", v, np.exp(z[..., None] * u))
    return s, w, np.exp(beta * np.outer(s, s)) * inner


@checked
def zonal_spectrum(beta, dim: int = 2, modes: int = 3, nodes: int = 64) -> np.ndarray:
    """The largest ``modes`` eigenvalues of the kernel operator f ↦ ∫ e^{β⟨x,y⟩} f(y) dσ(y) restricted to
    zonal functions, by a Nyström discretisation of the zonal kernel on ``nodes`` Gauss–Jacobi nodes (theory:
    docs/theory/noisy_particles.md §5). They are c_0 > c_1 > c_2 > …: an evaluation independent of the Bessel
    closed forms, and (with the Laplacian, which commutes with it) the numerical linearisation of the
    McKean–Vlasov operator −Δ_S(f − (K/β) 𝒦 f) about σ.

    Args:
        beta: (B,) values > 0. dim: d ≥ 2. modes: eigenvalues kept (≤ nodes). nodes: quadrature nodes.

    Returns:
        (B, modes) eigenvalues, largest first.

    Raises:
        InputError: a β ≤ 0, dim < 2, modes > nodes, naming it.
    """
    b, dim = _betas(beta), _dim(dim)
    if modes > nodes:
        raise InputError(f"must be at most nodes = {nodes}, got {modes}", "modes")
    out = np.empty((b.size, modes))
    for i, bi in enumerate(b):
        _, w, k = _zonal_kernel(float(bi), dim, nodes)
        sw = np.sqrt(w)
        ev = np.linalg.eigvalsh(sw[:, None] * k * sw[None, :])
        out[i] = ev[::-1][:modes]
    return out


@checked
def critical_beta_numeric(dim: int = 2, nodes: int = 64) -> float:
    """β_*(d) from the quadrature route: the root of c_2/c_1 = 1/d with c_1, c_2 the second and third
    eigenvalues of :func:`zonal_spectrum` (theory: docs/theory/noisy_particles.md §5)."""
    from scipy.optimize import brentq

    dim = _dim(dim)

    def gap(b):
        c = zonal_spectrum(b, dim, 3, nodes)[0]
        return c[2] / c[1] - 1 / dim

    root: Any = brentq(gap, 0.5, 2.0 * dim + 12.0, xtol=1e-14, rtol=4 * np.finfo(float).eps)
    return float(root)


# -- §4 the mean-field branches ---------------------------------------------------------------------------
def _stationary(K: float, beta: float, s, w, kern, rho0, iters: int, damping: float):
    """A stationary density ρ = T(ρ) = e^{KΦ_ρ}/Z on the zonal grid: damped fixed-point iterations, then
    Newton steps once the iterate settles (steps < 10⁻⁶) away from the uniform density (|m| > 10⁻³), or the
    iterations are spent."""
    A = K / beta * kern * w[None, :]

    def T(r):
        phi = A @ r
        e = np.exp(phi - phi.max())
        return e / np.sum(w * e)

    rho = rho0
    for it in range(iters):
        new = T(rho)
        step = float(np.max(np.abs(new - rho)))
        if step < 1e-13:
            return new
        rho = damping * rho + (1 - damping) * new
        if it >= 200 and step < 1e-6 and abs(float(np.sum(w * s * rho))) > 1e-3:
            break
    eye = np.eye(rho.size)
    for _ in range(50):
        t = T(rho)
        r = rho - t
        if np.max(np.abs(r)) < 1e-14:
            break
        J = eye - (np.diag(t) - np.outer(t, w * t)) @ A
        rho = rho - np.linalg.solve(J, r)
    return rho


@checked
def mean_field_branches(
    beta: float, couplings, dim: int = 2, nodes: int = 96, iters: int = 20000, damping: float = 0.5
) -> xr.Dataset:
    """Stationary axially symmetric densities ρ ∝ exp(K Φ_ρ), Φ_ρ(x) = β⁻¹ ∫ e^{β⟨x,y⟩} ρ dσ, of the USA
    mean-field flow, followed up the couplings from the uniform density and down from a concentrated one,
    with their order parameters and free energies F[ρ] − F[σ] (theory: docs/theory/noisy_particles.md §4).
    The coupling K_c where the ordered branch's free energy crosses zero, and the spinodal K_s where it
    ceases to exist, are in ``coupling_c`` and ``coupling_s`` (NaN where not inside the couplings).

    Args:
        beta: inverse temperature > 0. couplings: (C,) increasing couplings K ≥ 0. dim: d ≥ 2. nodes: zonal
            quadrature nodes. iters, damping: the damped fixed-point iteration (Newton steps finish it).

    Returns:
        Dataset over ``coupling`` and ``branch`` (``up``, ``down``): ``magnetisation``, ``second_harmonic``,
        ``free_energy``.

    Raises:
        InputError: a bad argument, naming it.
    """
    from attnphys.metadata import base_attrs

    beta = number(beta, "beta", low=0.0, low_open=True)
    K = numbers(couplings, "couplings", low=0.0)
    if K.size > 1 and np.any(np.diff(K) <= 0):
        raise InputError("must be strictly increasing", "couplings")
    dim = _dim(dim)
    damping = number(damping, "damping", low=0.0, high=1.0, high_open=True)
    s, w, kern = _zonal_kernel(beta, dim, nodes)
    c0 = float(zonal_spectrum(beta, dim, 1, nodes)[0, 0])

    def stats(rho, k):
        m = float(np.sum(w * s * rho))
        q = dim / (dim - 1) * abs(float(np.sum(w * s * s * rho)) - 1 / dim)
        ent = float(np.sum(w * rho * np.log(np.maximum(rho, 1e-300))))
        f = ent - k / (2 * beta) * float((w * rho) @ kern @ (w * rho)) + k * c0 / (2 * beta)
        return m, q, f

    out = np.zeros((3, 2, K.size))
    rho = 1 + 1e-3 * s
    for i, k in enumerate(K):
        rho = _stationary(float(k), beta, s, w, kern, np.maximum(rho + 1e-6 * s, 1e-12), iters, damping)
        out[:, 0, i] = stats(rho, k)
    rho = np.exp(np.minimum(30.0 * (s - 1) * dim, 0)) + 1e-12
    rho /= np.sum(w * rho)
    for i in range(K.size - 1, -1, -1):
        rho = _stationary(float(K[i]), beta, s, w, kern, rho, iters, damping)
        out[:, 1, i] = stats(rho, K[i])
    m_down, f_down = out[0, 1], out[2, 1]
    ordered = m_down > 1e-4
    ks = float(K[np.argmax(ordered)]) if ordered.any() and not ordered[0] else np.nan
    kc = np.nan
    neg = ordered & (f_down < 0)
    if neg.any() and ordered.any():
        j = int(np.argmax(neg))
        if j > 0 and ordered[j - 1] and f_down[j - 1] >= 0:
            kc = float(np.interp(0.0, [f_down[j], f_down[j - 1]], [K[j], K[j - 1]]))
        else:
            kc = float(K[j])
    ds = xr.Dataset(
        {
            "magnetisation": (("branch", "coupling"), out[0]),
            "second_harmonic": (("branch", "coupling"), out[1]),
            "free_energy": (("branch", "coupling"), out[2]),
        },
        coords={"coupling": K, "branch": ["up", "down"]},
    )
    ds["coupling_c"] = kc
    ds["coupling_s"] = ks
    ds["coupling_linear"] = float(linear_threshold(beta, dim)[0])
    for k, text in (
        ("coupling", "coupling K"),
        ("branch", "continuation from the uniform density (up) or from a concentrated one (down)"),
        ("magnetisation", "first moment m = |int x rho dsigma| of the stationary density"),
        ("second_harmonic", "second-harmonic order parameter q = d/(d-1) |<s^2> - 1/d|"),
        ("free_energy", "free energy F[rho] - F[uniform]"),
        ("coupling_c", "coupling where the ordered branch's free energy crosses that of the uniform density"),
        ("coupling_s", "smallest coupling of the grid with an ordered stationary density (spinodal)"),
        ("coupling_linear", "linear-stability threshold K_#(beta)"),
    ):
        ds[k].attrs["long_name"] = text
    ds.attrs.update(base_attrs(None, beta=beta, dim=dim, nodes=nodes, iters=iters, damping=damping))
    return ds


# -- §2 the particle system -------------------------------------------------------------------------------
@checked
def order_parameters(X) -> tuple[jax.Array, jax.Array]:
    """The first- and second-harmonic order parameters of a cloud (theory: docs/theory/noisy_particles.md §2):
    m = |(1/n) Σ_i x_i| and q = √(d/(d−1)) ‖(1/n) Σ_i x_i x_iᵀ − I/d‖_F (both 1 when all tokens coincide,
    O(n^{−1/2}) for a uniform cloud; on the circle q = |(1/n) Σ e^{2iθ_i}|).

    Args:
        X: (..., n, d) tokens on the unit sphere, d ≥ 2.

    Returns:
        (m, q), each of shape (...).
    """
    X = jnp.asarray(X)
    if X.ndim < 2 or X.shape[-1] < 2:
        raise InputError(f"must be a (..., n, d) cloud with d >= 2, got shape {X.shape}", "X")
    return _order(X)


def _drift(X, beta, coupling, dynamics: str):
    S = beta * (X @ jnp.swapaxes(X, -1, -2))
    if dynamics == "usa":
        A = jnp.exp(S) @ X / X.shape[-2]
    else:
        A = jax.nn.softmax(S, axis=-1) @ X
    A = coupling * A
    return A - jnp.sum(A * X, -1, keepdims=True) * X


@checked
def noisy_drift(X, beta: float, coupling: float, dynamics: Dynamics = "usa") -> jax.Array:
    """The drift K Π_i(A(X)_i) of the noisy particle system (theory: docs/theory/noisy_particles.md §2), USA
    A(X)_i = (1/n) Σ_j e^{β⟨x_i,x_j⟩} x_j or SA (the softmax average), Π_i the tangent projection at x_i.

    Args:
        X: (n, d) tokens on the unit sphere. beta: β. coupling: K. dynamics: ``usa`` or ``sa``.

    Returns:
        (n, d) drifts.
    """
    X = jnp.asarray(X)
    if X.ndim != 2:
        raise InputError(f"must be an (n, d) cloud, got shape {X.shape}", "X")
    return _drift(X, beta, coupling, dynamics)


class SphereEulerMaruyama(diffrax.AbstractItoSolver):
    """Projected Euler–Maruyama on the unit sphere (theory: docs/theory/noisy_particles.md §2.2): an
    Euler–Maruyama step of the tangent drift and tangent noise, y + f(y) h + g(y) ΔW, then the retraction
    y ↦ y/‖y‖ of every row. The retraction supplies the Itô correction −(d − 1) y h in expectation, so the
    scheme converges to Brownian motion on the sphere with the drift; weak order 1, strong order 1/2. Fixed
    steps only."""

    term_structure: ClassVar = diffrax.AbstractTerm
    interpolation_cls: ClassVar[Callable[..., diffrax.LocalLinearInterpolation]] = diffrax.LocalLinearInterpolation

    def order(self, terms):
        return 1

    def strong_order(self, terms):
        return 0.5

    def init(self, terms, t0, t1, y0, args):
        return None

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        del solver_state, made_jump
        y1 = y0 + terms.vf_prod(t0, y0, args, terms.contr(t0, t1))
        y1 = y1 / jnp.linalg.norm(y1, axis=-1, keepdims=True)
        return y1, None, dict(y0=y0, y1=y1), None, diffrax.RESULTS.successful

    def func(self, terms, t0, y0, args):
        return terms.vf(t0, y0, args)


def _terms(shape, key, dynamics: str):
    import lineax as lx

    struct = jax.ShapeDtypeStruct(shape, jnp.result_type(float))

    def noise(t, X, args):
        def mv(w):
            return jnp.sqrt(2.0) * (w - jnp.sum(w * X, -1, keepdims=True) * X)

        return lx.FunctionLinearOperator(mv, struct)

    drift = diffrax.ODETerm(lambda t, X, args: _drift(X, args[0], args[1], dynamics))
    path = diffrax.UnsafeBrownianPath(shape=shape, key=key)
    return diffrax.MultiTerm(drift, diffrax.ControlTerm(noise, path))


def _solve_one(X0, key, beta, coupling, t_end, dt, save_ts, dynamics: str, fn, max_steps: int):
    terms = _terms(X0.shape, key, dynamics)
    sol = diffrax.diffeqsolve(
        terms,
        SphereEulerMaruyama(),
        0.0,
        t_end,
        dt,
        X0,
        args=(beta, coupling),
        saveat=diffrax.SaveAt(ts=save_ts, fn=fn),
        stepsize_controller=diffrax.ConstantStepSize(),
        max_steps=max_steps,
        throw=False,
        adjoint=diffrax.ForwardMode(),
    )
    return sol.ys


def _states(t, y, args):
    return y


def _order(X):
    d = X.shape[-1]
    m = jnp.linalg.norm(jnp.mean(X, -2), axis=-1)
    M = jnp.einsum("...ni,...nj->...ij", X, X) / X.shape[-2] - jnp.eye(d, dtype=X.dtype) / d
    return m, jnp.sqrt(d / (d - 1)) * jnp.sqrt(jnp.sum(M * M, (-2, -1)))


def _observables(t, y, args):
    return jnp.stack(_order(y))


def _finite(values: np.ndarray, params: dict) -> None:
    """NonFiniteError when the simulation produced NaN or ±inf (a step too large for the drift)."""
    from attnphys.errors import NonFiniteError

    if not np.all(np.isfinite(values)):
        raise NonFiniteError(0, params, what="noisy token cloud (lower dt)")


def _check_cloud(X0) -> np.ndarray:
    from attnphys._checks import check_array

    a = np.asarray(X0, dtype=float) if not isinstance(X0, (str, bytes)) else X0
    if isinstance(a, (str, bytes)) or np.ndim(a) not in (2, 3):
        raise InputError("must be an (n, d) cloud or (R, n, d) replicas of one", "X0")
    check_array(a.reshape(-1, a.shape[-1]), "X0", ndim=2, what="tokens × dimensions (n, d)", finite=True)
    if a.shape[-1] < 2:
        raise InputError(f"needs d >= 2 dimensions, got {a.shape[-1]}", "X0")
    nrm = np.linalg.norm(a, axis=-1, keepdims=True)
    if np.any(nrm == 0):
        raise InputError("a token is zero: it has no direction on the sphere", "X0")
    return a / nrm


@checked(dt=number_rule(0.0))
def solve_noisy(
    X0,
    ts,
    *,
    beta: float,
    coupling: float,
    dt: float = 0.01,
    dynamics: Dynamics = "usa",
    seed: int = 0,
    keep_cloud: bool = False,
) -> xr.Dataset:
    """Integrate the noisy particle system dx_i = K Π_i(A(X)_i) dt + √2 Π_i ∘ dW_i on S^{d−1} with
    :class:`SphereEulerMaruyama` in diffrax, fixed step ``dt``, from X0 (n, d) or (R, n, d) independent
    replicas, saved at the times ``ts`` (theory: docs/theory/noisy_particles.md §2).

    Args:
        X0: (n, d) or (R, n, d) tokens (normalised here). ts: (T,) increasing save times ≥ 0.
        beta, coupling: β and K. dt: step > 0. dynamics: ``usa`` or ``sa``. seed: of the noise.
        keep_cloud: also return the tokens at the saved times.

    Returns:
        Dataset over ``time`` and ``replica``: ``magnetisation`` m, ``second_harmonic`` q (and ``x``).

    Raises:
        InputError: a bad argument, naming it. ResourceError: the saved clouds do not fit, naming ``ts``.
        NonFiniteError: the cloud became NaN or infinite (``dt`` too large for the drift).
    """
    from attnphys.clouds._inputs import precision_noted
    from attnphys.metadata import base_attrs

    X = _check_cloud(X0)
    Xr = X[None] if X.ndim == 2 else X
    R, n, d = Xr.shape
    times = numbers(ts, "ts", low=0.0)
    if np.any(np.diff(times) <= 0):
        raise InputError("must be strictly increasing", "ts")
    dt = number(dt, "dt", low=0.0, low_open=True)
    choice(dynamics, ("usa", "sa"), "dynamics")
    seed, keep_cloud = check_seed(seed), flag(keep_cloud, "keep_cloud")
    fits({"ts": (f"{times.size} saved times of {R} × {n} × {d} tokens", 8.0 * times.size * R * n * d * 2)})
    fn = _states if keep_cloud else _observables
    t_end = float(max(times[-1], dt))
    with precision_noted("solve_noisy (Euler–Maruyama on the sphere)"):
        steps = max(1024, 1 << int(np.ceil(t_end / dt) + 2).bit_length())  # one compilation for many runs
        key = jax.random.PRNGKey(seed)
        ys = _batched(
            jnp.asarray(Xr),
            key,
            float(beta),
            float(coupling),
            t_end,
            float(dt),
            jnp.asarray(times),
            dynamics,
            fn,
            steps,
        )
        ys = np.asarray(ys)
    _finite(ys, dict(beta=float(beta), coupling=float(coupling), dt=dt))
    if keep_cloud:  # ys (T, R, n, d)
        m, q = (np.asarray(v) for v in _order(jnp.asarray(ys)))
    else:  # ys (T, 2, R)
        m, q = ys[:, 0], ys[:, 1]
    ds = xr.Dataset(
        {"magnetisation": (("time", "replica"), m), "second_harmonic": (("time", "replica"), q)},
        coords={"time": times, "replica": np.arange(R)},
    )
    if keep_cloud:
        ds["x"] = (("time", "replica", "token", "dim"), ys)
        ds["x"].attrs["long_name"] = "token positions"
    ds["time"].attrs.update(long_name="time of the noisy dynamics", units="1")
    ds["magnetisation"].attrs["long_name"] = "first-harmonic order parameter m = |mean of x_i|"
    ds["second_harmonic"].attrs["long_name"] = "second-harmonic order parameter q"
    ds.attrs.update(
        base_attrs(None, beta=float(beta), coupling=float(coupling), dt=dt, dynamics=dynamics, seed=seed,
                   tokens=n, dim=d, replicas=R, scheme="projected Euler-Maruyama (weak order 1)")
    )  # fmt: skip
    return ds


@jax.jit(static_argnames=("dynamics", "fn", "max_steps"))
def _batched(X, key, beta, coupling, t_end, dt, ts, dynamics, fn, max_steps):
    """The replicas (R, n, d) as one state of one solve (one Brownian path of shape (R, n, d))."""
    return _solve_one(X, key, beta, coupling, t_end, dt, ts, dynamics, fn, max_steps)


# -- §6 sweeps in the coupling ----------------------------------------------------------------------------
@jax.jit(static_argnames=("t_relax", "t_average", "dt", "dynamics", "saves"))
def _sweep(X0, key, beta, couplings, t_relax, t_average, dt, dynamics, saves):
    ts = t_relax + t_average * (jnp.arange(saves) + 1) / saves

    def stage(carry, inp):
        (X,) = carry
        K, k = inp
        keys = jax.random.split(k, X.shape[0])
        t_end = t_relax + t_average

        def one(x, kk):
            terms = _terms(x.shape, kk, dynamics)
            sol = diffrax.diffeqsolve(
                terms, SphereEulerMaruyama(), 0.0, t_end, dt, x, args=(beta, K),
                saveat=diffrax.SaveAt(ts=ts, fn=_states),
                stepsize_controller=diffrax.ConstantStepSize(), max_steps=int(np.ceil(t_end / dt)) + 2, throw=False,
                adjoint=diffrax.ForwardMode(),
            )  # fmt: skip
            return cast(jax.Array, sol.ys)

        ys = jax.vmap(one)(X, keys)  # (R, saves, n, d)
        m, q = _order(ys)  # (R, saves) each
        out = jnp.stack([m.mean(-1), q.mean(-1), (m * m).mean(-1)], 0)
        return (ys[:, -1],), out

    stage_keys = jax.random.split(key, couplings.shape[0])
    (Xend,), obs = jax.lax.scan(stage, (X0,), (couplings, stage_keys))
    return Xend, obs  # obs (C, 3, R)


def _stiff_dt(beta: float, kmax: float, dynamics: str, dt: float | None) -> float:
    lip = kmax * max(beta, 1.0) * (np.exp(beta) if dynamics == "usa" else 1.0)
    auto = min(0.01, 1.0 / max(lip, 1e-12))
    return auto if dt is None else dt


@checked(dt=number_rule(0.0, optional=True))
def coupling_sweep(
    beta: float,
    couplings,
    *,
    dim: int = 2,
    tokens: int = 128,
    replicas: int = 6,
    t_relax: float = 10.0,
    t_average: float = 20.0,
    saves: int = 40,
    dt: float | None = None,
    dynamics: Dynamics = "usa",
    seed: int = 0,
    theory: bool = True,
) -> xr.Dataset:
    """Sweep the coupling K up the grid from a uniform start and back down from the last state, at fixed β
    (theory: docs/theory/noisy_particles.md §6). At every K each replica relaxes for ``t_relax`` and its order
    parameters are averaged over the next ``t_average`` (``saves`` samples). From the up sweep the
    susceptibility χ(K) = n⟨m²⟩, mean field 1/(1 − K/K_#) (and exactly 1 at K = 0), gives the finite-n onset
    of order: K_c of the least-squares fit 1/χ = 1 − K/K_c over the points with χ ≤ :data:`CHI_MAX`, with a
    95 % bootstrap interval over the replicas. The hysteresis area ∫(m_down − m_up) dK is given per replica with its mean and 95 %
    t interval.

    Args:
        beta: β > 0. couplings: (C,) increasing K ≥ 0, C ≥ 3. dim: d ≥ 2. tokens: n ≥ 2. replicas: R ≥ 2.
        t_relax, t_average: times per coupling. saves: samples per average. dt: the step (default
            min(0.01, 1/(K_max β e^β)) for USA). dynamics: ``usa`` or ``sa``. seed: of the starts and
            noise. theory: add the mean-field branches (USA).

    Returns:
        Dataset over ``direction`` (``up``, ``down``), ``coupling`` and ``replica``: ``magnetisation``,
        ``second_harmonic``, ``susceptibility``; scalars ``onset`` (with ``onset_low``, ``onset_high``),
        ``loop_area`` (with ``loop_area_low``, ``loop_area_high``), ``coupling_linear`` (K_#) and, with
        ``theory``, ``theory_magnetisation`` (direction, coupling).

    Raises:
        InputError: a bad argument, naming it. NonFiniteError: the cloud became NaN or infinite.
    """
    from scipy import stats as st

    from attnphys.clouds._inputs import precision_noted
    from attnphys.clouds.flow import uniform_sphere
    from attnphys.metadata import base_attrs

    beta = number(beta, "beta", low=0.0, low_open=True)
    K = numbers(couplings, "couplings", low=0.0)
    if K.size < 3 or np.any(np.diff(K) <= 0):
        raise InputError("must be at least 3 strictly increasing couplings", "couplings")
    dim, tokens, replicas, saves = (
        _dim(dim),
        count(tokens, "tokens", 2),
        count(replicas, "replicas", 2),
        count(saves, "saves"),
    )
    t_relax = number(t_relax, "t_relax", low=0.0)
    t_average = number(t_average, "t_average", low=0.0, low_open=True)
    choice(dynamics, ("usa", "sa"), "dynamics")
    seed, theory = check_seed(seed), flag(theory, "theory")
    dt = _stiff_dt(beta, float(K[-1]), dynamics, None if dt is None else number(dt, "dt", low=0.0, low_open=True))
    fits(
        {
            "tokens": (
                f"{replicas} replicas × {saves} saves of {tokens} tokens",
                8.0 * replicas * saves * tokens * dim * 4,
            )
        }
    )
    k0, k1, k2 = jax.random.split(jax.random.PRNGKey(seed), 3)
    X0 = uniform_sphere(k0, replicas * tokens, dim).reshape(replicas, tokens, dim)
    with precision_noted("coupling_sweep (Euler–Maruyama on the sphere)"):
        Kj = jnp.asarray(K)
        X1, up = _sweep(X0, k1, beta, Kj, t_relax, t_average, dt, dynamics, saves)
        _, down = _sweep(X1, k2, beta, Kj[::-1], t_relax, t_average, dt, dynamics, saves)
        up, down = np.asarray(up), np.asarray(down)[::-1]
    _finite(np.stack([up, down]), dict(beta=beta, dt=dt))
    obs = np.stack([up, down])  # (2, C, 3, R)
    m, q, chi = obs[:, :, 0], obs[:, :, 1], tokens * obs[:, :, 2]
    area = np.trapezoid(m[1] - m[0], K, axis=0)  # (R,)
    mean, sem = float(area.mean()), float(area.std(ddof=1) / np.sqrt(replicas))
    tq = float(st.t.ppf(0.975, replicas - 1))
    onset, lo, hi = _onset(K, chi[0], seed)
    ds = xr.Dataset(
        {
            "magnetisation": (("direction", "coupling", "replica"), m),
            "second_harmonic": (("direction", "coupling", "replica"), q),
            "susceptibility": (("direction", "coupling", "replica"), chi),
            "loop_area_replica": (("replica",), area),
        },
        coords={"direction": ["up", "down"], "coupling": K, "replica": np.arange(replicas)},
    )
    ds["loop_area"], ds["loop_area_low"], ds["loop_area_high"] = mean, mean - tq * sem, mean + tq * sem
    ds["onset"], ds["onset_low"], ds["onset_high"] = onset, lo, hi
    kl = float(linear_threshold(beta, dim, dynamics)[0])
    ds["coupling_linear"] = kl
    if theory and dynamics == "usa":
        mf = mean_field_branches(beta, K, dim)
        ds["theory_magnetisation"] = (("direction", "coupling"), mf.magnetisation.values)
        ds["theory_magnetisation"].attrs["long_name"] = "mean-field magnetisation of the stable branch (n -> inf)"
        ds["coupling_c"], ds["coupling_s"] = float(mf.coupling_c), float(mf.coupling_s)
        ds["coupling_c"].attrs["long_name"] = "mean-field first-order coupling K_c (NaN: continuous or off-grid)"
        ds["coupling_s"].attrs["long_name"] = "mean-field spinodal of the ordered branch"
    for k, text in (
        ("direction", "sweep direction of the coupling"),
        ("coupling", "coupling K"),
        ("replica", "independent replica (start and noise)"),
        ("magnetisation", "time-averaged m = |mean of x_i|"),
        ("second_harmonic", "time-averaged second-harmonic order parameter q"),
        ("susceptibility", "n <m^2> (mean field 1/(1 - K/K_#) in the disordered phase)"),
        ("loop_area_replica", "hysteresis area int (m_down - m_up) dK of each replica"),
        ("loop_area", "mean hysteresis area over the replicas"),
        ("loop_area_low", "lower end of the 95% t interval of the hysteresis area"),
        ("loop_area_high", "upper end of the 95% t interval of the hysteresis area"),
        ("onset", "finite-n onset of order: K_c of the fit 1/susceptibility = 1 - K/K_c (up sweep)"),
        ("onset_low", "lower end of the 95% bootstrap interval of the onset"),
        ("onset_high", "upper end of the 95% bootstrap interval of the onset"),
        ("coupling_linear", "linear-stability threshold K_#(beta) of the uniform density"),
    ):
        ds[k].attrs["long_name"] = text
    ds.attrs.update(
        base_attrs(None, beta=beta, dim=dim, tokens=tokens, replicas=replicas, t_relax=t_relax,
                   t_average=t_average, saves=saves, dt=dt, dynamics=dynamics, seed=seed, chi_max=CHI_MAX)
    )  # fmt: skip
    return ds


def _fit_zero(K: np.ndarray, chi: np.ndarray) -> float:
    """K_c of the one-parameter least-squares fit 1/χ = 1 − K/K_c over the points with χ ≤ CHI_MAX (χ = 1
    exactly at K = 0: independent uniform tokens)."""
    ok = (chi <= CHI_MAX) & np.isfinite(chi) & (chi > 0)
    if ok.sum() < 2:
        return float("nan")
    x, y = K[ok], 1 - 1 / chi[ok]
    slope = float(np.sum(x * y) / np.sum(x * x))
    return 1 / slope if slope > 0 else float("nan")


def _onset(K: np.ndarray, chi_up: np.ndarray, seed: int, boot: int = 400) -> tuple[float, float, float]:
    """The onset estimate and its 95 % bootstrap interval over replicas (chi_up: (C, R))."""
    est = _fit_zero(K, chi_up.mean(1))
    rng = np.random.default_rng(seed)
    R = chi_up.shape[1]
    draws = np.array([_fit_zero(K, chi_up[:, rng.integers(0, R, R)].mean(1)) for _ in range(boot)])
    draws = draws[np.isfinite(draws)]
    if not np.isfinite(est) or draws.size < boot // 2:
        return est, float("nan"), float("nan")
    return est, float(np.quantile(draws, 0.025)), float(np.quantile(draws, 0.975))


@checked
def noisy_phase_diagram(
    betas,
    dim: int = 2,
    *,
    couplings: Sequence[float] | np.ndarray | None = None,
    span: tuple[float, float] = (0.6, 1.2),
    points: int = 13,
    simulate: bool = False,
    tokens: int = 128,
    replicas: int = 6,
    t_relax: float = 10.0,
    t_average: float = 20.0,
    seed: int = 0,
) -> xr.Dataset:
    """The (β, K) phase diagram of the noisy USA flow (theory: docs/theory/noisy_particles.md §7): per β the
    theory's K_#(β), the mean-field first-order coupling K_c and spinodal K_s (to 0.01 K_#, searched in
    [0.6, 1.02] K_#: NaN below), the kind of transition
    (continuous for β ≤ β_*(d)), and with ``simulate`` the finite-n onset and hysteresis area of a
    :func:`coupling_sweep` over K ∈ K_#(β)·[span] (``points`` values, or ``couplings`` relative to K_#).

    Returns:
        Dataset over ``beta``: ``coupling_linear``, ``coupling_c``, ``coupling_s``, ``discontinuous``
        (theory), and with ``simulate`` ``onset`` (with interval), ``loop_area`` (with interval) and
        ``simulated_discontinuous`` (the area's interval excludes zero).

    Raises:
        InputError: a bad argument, naming it.
    """
    from attnphys.metadata import base_attrs

    b = _betas(betas)
    dim, points = _dim(dim), count(points, "points", 3)
    lo, hi = (number(v, "span", low=0.0, low_open=True) for v in span)
    rel = np.linspace(lo, hi, points) if couplings is None else numbers(couplings, "couplings", low=0.0)
    simulate = flag(simulate, "simulate")
    bstar = critical_beta(dim)
    kl = linear_threshold(b, dim)
    rows: dict[str, list[float]] = {k: [] for k in ("coupling_c", "coupling_s")}
    sims: dict[str, list[float]] = {
        k: [] for k in ("onset", "onset_low", "onset_high", "loop_area", "loop_area_low", "loop_area_high")
    }
    for i, bi in enumerate(b):
        grid = kl[i] * np.linspace(0.6, 1.02, 43)  # K_s and K_c lie in [0.6, 1] K_# for the β of the figures
        mf = mean_field_branches(float(bi), grid, dim)
        cont = bi <= bstar
        rows["coupling_c"].append(kl[i] if cont else float(mf.coupling_c))
        rows["coupling_s"].append(kl[i] if cont else float(mf.coupling_s))
        if simulate:
            sw = coupling_sweep(float(bi), kl[i] * rel, dim=dim, tokens=tokens, replicas=replicas,
                                t_relax=t_relax, t_average=t_average, seed=seed + i, theory=False)  # fmt: skip
            for k in sims:
                sims[k].append(float(sw[k]))
    ds = xr.Dataset(
        {
            "coupling_linear": (("beta",), kl),
            "coupling_c": (("beta",), np.array(rows["coupling_c"])),
            "coupling_s": (("beta",), np.array(rows["coupling_s"])),
            "discontinuous": (("beta",), b > bstar),
        },
        coords={"beta": b},
    )
    ds["critical_beta"] = bstar
    if simulate:
        for k, v in sims.items():
            ds[k] = (("beta",), np.array(v))
        ds["simulated_discontinuous"] = (("beta",), np.array(sims["loop_area_low"]) > 0)
        ds["simulated_discontinuous"].attrs["long_name"] = "the hysteresis area's 95% interval excludes zero"
        for k in sims:
            ds[k].attrs["long_name"] = f"{k.replace('_', ' ')} of the coupling sweep"
    for k, text in (
        ("beta", "inverse temperature beta"),
        ("coupling_linear", "linear-stability threshold K_#(beta)"),
        ("coupling_c", "mean-field transition coupling K_c (= K_# where continuous)"),
        ("coupling_s", "mean-field spinodal of the ordered branch (= K_# where continuous)"),
        ("discontinuous", "beta > beta_*(d): the transition is discontinuous (theory)"),
        ("critical_beta", "beta_*(d), the root of I_{d/2+1}/I_{d/2} = 1/d"),
    ):
        ds[k].attrs["long_name"] = text
    ds.attrs.update(
        base_attrs(None, dim=dim, span=list(span), points=points, simulate=int(simulate), tokens=tokens,
                   replicas=replicas, t_relax=t_relax, t_average=t_average, seed=seed)
    )  # fmt: skip
    return ds


__all__ = [
    "CHI_MAX",
    "SphereEulerMaruyama",
    "coupling_sweep",
    "critical_beta",
    "critical_beta_numeric",
    "harmonic_coefficient",
    "landau_coefficients",
    "linear_threshold",
    "mean_field_branches",
    "noisy_drift",
    "noisy_phase_diagram",
    "order_parameters",
    "solve_noisy",
    "zonal_spectrum",
]
