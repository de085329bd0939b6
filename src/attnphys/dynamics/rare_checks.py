"""Known answers of the rare-event analyses of noisy maps, each ``rng -> error`` with a ``perturb`` argument that
moves the prediction away from the theory: ``attnphys verify`` runs them unperturbed, the tests run them perturbed
as well and require them to fail (theory: docs/theory/rare_events.md §8) (theory: docs/theory/dynamics.md §1).

The reference of the splitting's probabilities and escape times of the one-dimensional double-well map is the
map's own exact answer: its committor and mean first-passage time solve linear equations in the Gaussian transition
kernel, here discretised on cells whose edges hold the levels of A and B (second order in the cell width, with one
Richardson step).
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

DV = 0.25
"""The barrier of V(x) = x⁴/4 − x²/2 from its minimum −1 to its maximum 0."""


def double_well(dt: float):
    """The Euler–Maruyama map x' = x − V′(x) dt of V = x⁴/4 − x²/2 with the noise factor √dt (covariance ε dt per
    step) (theory: docs/theory/rare_events.md §8) (theory: docs/theory/dynamics.md §1).

    Returns:
        (map, noise factor (1, 1)), the map's parameter being dt.
    """
    from attnphys.dynamics.maps import autonomous

    return autonomous(lambda x, p: x - (x**3 - x) * p), [[math.sqrt(dt)]]


def maier_stein(dt: float):
    """The Euler–Maruyama map of the Maier–Stein system ẋ = x − x³ − β x y², ẏ = −(1 + x²) y with isotropic noise
    (covariance ε dt I per step) (theory: docs/theory/rare_events.md §8) (theory: docs/theory/dynamics.md §1).

    Returns:
        (map, noise factor (2, 2)), the map's parameters being (dt, β).
    """
    from attnphys.dynamics.maps import autonomous

    def f(x, p):
        h, beta = p[0], p[1]
        return x + h * jnp.stack([x[0] - x[0] ** 3 - beta * x[0] * x[1] ** 2, -(1.0 + x[0] ** 2) * x[1]])

    return autonomous(f), (math.sqrt(dt) * np.eye(2)).tolist()


def eyring_kramers_time(eps: float) -> float:
    """τ = 2π/√(V″(−1)|V″(0)|) e^{2ΔV/ε} of the double well (time units) (theory: docs/theory/rare_events.md §4)
    (theory: docs/theory/dynamics.md §1)."""
    return 2.0 * math.pi / math.sqrt(2.0 * 1.0) * math.exp(2.0 * DV / eps)


def _xi(x):
    return np.abs(x + 1.0) / (np.abs(x + 1.0) + np.abs(x - 1.0))


def _kernel(h: float, dt: float, eps: float):
    """The cells (width h, edges on the grid of −2 + k h) on [−2, 2] and ``rows(x) -> sparse (len(x), cells)``: the
    probability of landing in each cell after one step from each x (the Gaussian integrated over the cell, cut at
    12 standard deviations)."""
    import scipy.sparse as sp
    from scipy.special import ndtr

    n = int(round(4.0 / h))
    edges = -2.0 + h * np.arange(n + 1)
    y = 0.5 * (edges[1:] + edges[:-1])
    sd = math.sqrt(eps * dt)
    width = int(math.ceil(24.0 * sd / h)) + 2

    def rows(x):
        x = np.asarray(x, dtype=float)
        mu = x - (x**3 - x) * dt
        first = np.clip(np.floor((mu + 2.0 - 12.0 * sd) / h).astype(int), 0, max(n - width, 0))
        cols = first[:, None] + np.arange(min(width, n))[None, :]
        vals = ndtr((edges[cols + 1] - mu[:, None]) / sd) - ndtr((edges[cols] - mu[:, None]) / sd)
        r = np.repeat(np.arange(x.size), cols.shape[1])
        return sp.csr_matrix((vals.ravel(), (r, cols.ravel())), shape=(x.size, n))

    return y, rows


def double_well_exact(
    dt: float, eps: float, x0: float, a_level: float = 0.1, b_level: float = 0.75, tau: bool = True
) -> dict:
    """The double-well map's exact committor q(x0) (the probability of B before A from x0) and mean first-passage
    time from −1 to B (steps), for the default coordinate ξ = |x + 1|/(|x + 1| + |x − 1|): the linear equations
    q = K_B 1 + K_C q and T = 1 + K_{not B} T in the map's Gaussian kernel, on cells of width h = 0.05/32 and 0.05/64
    (the levels' edges, at multiples of 0.05 in x for the default levels, are cell edges) and one Richardson step
    (theory: docs/theory/rare_events.md §8) (theory: docs/theory/dynamics.md §1).

    Returns:
        ``{"p": q(x0), "tau": T(−1)}`` (``tau`` NaN unless asked for).
    """
    import scipy.sparse as sp
    import scipy.sparse.linalg as spl

    out = []
    for h in (0.05 / 32, 0.05 / 64):
        y, rows = _kernel(h, dt, eps)
        z = _xi(y)
        in_a, in_b = z <= a_level, z >= b_level
        c = ~(in_a | in_b)
        Kc = rows(y[c])
        q = np.asarray(
            spl.spsolve(sp.eye(int(c.sum()), format="csr") - Kc[:, c], np.asarray(Kc[:, in_b].sum(axis=1)).ravel())
        )
        full = np.zeros(y.size)
        full[in_b], full[c] = 1.0, q
        p = float((rows([x0]) @ full)[0])
        if not tau:
            out.append((p, float("nan")))
            continue
        nb = ~in_b
        T = np.asarray(spl.spsolve(sp.eye(int(nb.sum()), format="csr") - rows(y[nb])[:, nb], np.ones(int(nb.sum()))))
        Tf = np.zeros(y.size)
        Tf[nb] = T
        out.append((p, 1.0 + float((rows([-1.0]) @ Tf)[0])))
    (p1, t1), (p2, t2) = out
    return {"p": p2 + (p2 - p1) / 3.0, "tau": t2 + (t2 - t1) / 3.0}


# ---------------------------------------------------------------------------------------------------------------
# the claims


def ar1_quasi_potential_error(rng: np.random.Generator, perturb: float = 0.0) -> float:
    """AR(1) x' = a x + σ η (a in [0.3, 0.8], σ in [0.3, 1.5]): the larger of |S − V|/V, V = (1 − a²) b²/(2σ²)
    (times 1 + ``perturb``), and max_t |x_t − b a^{T−t}(1 − a^{2t})/(1 − a^{2T})|/|b|, the exact least-action path of
    T steps, at the horizon where S(T) stopped decreasing (theory: docs/theory/rare_events.md §8) (theory:
    docs/theory/dynamics.md §1)."""
    from attnphys.dynamics._action import least_action_path
    from attnphys.dynamics.maps import autonomous

    a, s, b = float(rng.uniform(0.3, 0.8)), float(rng.uniform(0.3, 1.5)), float(rng.uniform(0.5, 2.0))
    ds = least_action_path(
        autonomous(lambda x, p: p * x), [[s]], [0.0], [b], a, steps=10, tol=1e-12, refine_a=False, jitter=0.0
    )
    V = (1.0 - a * a) * b * b / (2.0 * s * s) * (1.0 + perturb)
    T = int(ds["steps"])
    t = np.arange(T + 1)
    path = b * a ** (T - t) * (1.0 - a ** (2 * t)) / (1.0 - a ** (2 * T))
    return max(abs(float(ds["action"]) - V) / V, float(np.max(np.abs(ds["path"].values[:, 0] - path))) / b)


def double_well_barrier_error(rng: np.random.Generator, perturb: float = 0.0) -> float:
    """|ΔS − 2ΔV (1 + ``perturb``)| of the Euler–Maruyama map of V = x⁴/4 − x²/2 at dt = 0.01 (noise covariance
    ε dt per step, action in units of 1/ε): the least action from −1 to the saddle 0; 2ΔV = 1/2, the discrete
    correction O(dt²) (theory: docs/theory/rare_events.md §8) (theory: docs/theory/dynamics.md §1)."""
    from attnphys.dynamics._action import least_action_path

    dt = 0.01
    m, B = double_well(dt)
    ds = least_action_path(m, B, [-1.0], [0.0], dt, steps=1000, tol=1e-9)
    return abs(float(ds["action"]) - 2.0 * DV * (1.0 + perturb))


def maier_stein_barrier_error(rng: np.random.Generator, perturb: float = 0.0, beta: float = 1.0) -> float:
    """|ΔS − ½ (1 + ``perturb``)| of the Euler–Maruyama map (dt = 0.01) of the Maier–Stein system at β = 1, where it
    is the gradient system of V = x⁴/4 − x²/2 + (1 + x²) y²/2 and ΔS = 2ΔV = 1/2; the least action from (−1, 0) to
    the saddle (0, 0), the path started off the x-axis (theory: docs/theory/rare_events.md §8) (theory:
    docs/theory/dynamics.md §1)."""
    from attnphys.dynamics._action import least_action_path

    dt = 0.01
    m, B = maier_stein(dt)
    ds = least_action_path(m, B, [-1.0, 0.0], [0.0, 0.0], jnp.array([dt, beta]), steps=1000, tol=1e-9)
    return abs(float(ds["action"]) - 0.5 * (1.0 + perturb))


def maier_stein_action(beta: float, dt: float = 0.01) -> float:
    """The least action from (−1, 0) to (0, 0) of the Maier–Stein map at β and dt (theory:
    docs/theory/rare_events.md §8) (theory: docs/theory/dynamics.md §1)."""
    from attnphys.dynamics._action import least_action_path

    m, B = maier_stein(dt)
    steps = int(round(10.0 / dt))
    return float(
        least_action_path(m, B, [-1.0, 0.0], [0.0, 0.0], jnp.array([dt, beta]), steps=steps, tol=1e-9)["action"]
    )


def double_well_escape_time_error(rng: np.random.Generator, perturb: float = 0.0) -> float:
    """|τ/τ_EK − 1| of the double-well map (dt = 0.05, ε = 0.04): τ the mean first-passage time from −1 to
    x ≥ 1/2 by splitting (1000 replicas, 20 runs, the cycle formula) in time units, τ_EK = 2π/√(V″(−1)|V″(0)|) ·
    e^{2ΔV/ε} (times 1 + ``perturb``); the map's exact τ is 1.6 % above τ_EK (theory: docs/theory/rare_events.md §8)
    (theory: docs/theory/dynamics.md §1)."""
    from attnphys.dynamics._splitting import splitting

    dt, eps = 0.05, 0.04
    m, B = double_well(dt)
    ds = splitting(
        m, B, [-1.0], [1.0], dt, epsilon=eps, b_level=0.75, replicas=1000, runs=20, seed=int(rng.integers(2**31))
    )
    return abs(float(ds["mean_first_passage"]) * dt / (eyring_kramers_time(eps) * (1.0 + perturb)) - 1.0)


def splitting_direct_agreement_error(rng: np.random.Generator, perturb: float = 0.0) -> float:
    """|p_split − p_direct (1 + ``perturb``)| / √(se_split² + se_direct²) for the double-well map (dt = 0.05,
    ε = 0.1): the probability of reaching x ≥ 1/2 from an exit of A = {x ≤ −0.8} before returning, by splitting
    (200 replicas, 8 runs) and by 10⁵ directly simulated cycles, each with its own standard error (theory:
    docs/theory/rare_events.md §8) (theory: docs/theory/dynamics.md §1)."""
    from attnphys.dynamics._splitting import direct_transition, splitting

    dt, eps = 0.05, 0.1
    m, B = double_well(dt)
    seed = int(rng.integers(2**31))
    s = splitting(m, B, [-1.0], [1.0], dt, epsilon=eps, b_level=0.75, replicas=200, runs=8, seed=seed)
    d = direct_transition(m, B, [-1.0], [1.0], dt, epsilon=eps, b_level=0.75, trials=100_000, seed=seed)
    ps, pd = float(s["probability_mean"]), float(d["probability"]) * (1.0 + perturb)
    se_s = float(s["relative_error"]) * ps
    se_d = float(d["relative_error"]) * float(d["probability"])
    return abs(ps - pd) / math.hypot(se_s, se_d)


def splitting_small_probability_error(rng: np.random.Generator, perturb: float = 0.0) -> float:
    """For the double-well map (dt = 0.05, ε = 0.025) from x0 = −0.79: the larger of |p̂/p − 1| and the estimated
    relative error of p̂ (splitting, 1000 replicas, 4 runs), p = 2.6·10⁻⁹ the map's exact committor (times
    1 + ``perturb``); 1 when p > 10⁻⁸ (theory: docs/theory/rare_events.md §8) (theory: docs/theory/dynamics.md §1)."""
    from attnphys.dynamics._splitting import splitting

    dt, eps, x0 = 0.05, 0.025, -0.79
    m, B = double_well(dt)
    p = double_well_exact(dt, eps, x0, tau=False)["p"] * (1.0 + perturb)
    if p > 1e-8:
        return 1.0
    ds = splitting(
        m, B, [-1.0], [1.0], dt, epsilon=eps, b_level=0.75, replicas=1000, runs=4, x0=[x0],
        seed=int(rng.integers(2**31)),
    )  # fmt: skip
    return max(abs(float(ds["probability_mean"]) / p - 1.0), float(ds["relative_error"]))


def hessian_covariance_error(rng: np.random.Generator, perturb: float = 0.0) -> float:
    """‖H − P⁻¹(1 + ``perturb``)‖_F/‖P⁻¹‖_F for a random contracting quadratic 2-D map x' = J x + q(x) with a noise
    factor B(x) = B_0 + (x₁ C_1 + x₂ C_2): H the Hessian of the least-action quasi-potential at the fixed point 0 (from
    the actions to 0 ± r u, r = 10⁻³), P the stationary covariance of the linearised map, P = J P Jᵀ + B_0 B_0ᵀ (theory:
    docs/theory/rare_events.md §8) (theory: docs/theory/dynamics.md §1)."""
    from attnphys.dynamics._action import quasi_potential_hessian
    from attnphys.dynamics.maps import autonomous

    J = rng.normal(size=(2, 2))
    J *= float(rng.uniform(0.4, 0.8)) / max(abs(np.linalg.eigvals(J)))
    Q = rng.normal(size=(2, 2, 2)) * 0.3
    B0 = np.eye(2) * 0.5 + rng.normal(size=(2, 2)) * 0.1
    C = rng.normal(size=(2, 2, 2)) * 0.2
    Jj, Qj, B0j, Cj = (jnp.asarray(v) for v in (J, Q, B0, C))

    def f(x, p):
        return Jj @ x + jnp.einsum("ijk,j,k->i", Qj, x, x)

    def noise(x, aux, p):
        return B0j + jnp.einsum("kij,k->ij", Cj, x)

    ds = quasi_potential_hessian(autonomous(f), noise, [0.0, 0.0], None, radius=1e-3, steps=20)
    H, Pinv = ds["hessian"].values, ds["inverse_covariance"].values * (1.0 + perturb)
    return float(np.linalg.norm(H - Pinv) / np.linalg.norm(Pinv))


__all__ = [
    "DV",
    "ar1_quasi_potential_error",
    "double_well",
    "double_well_barrier_error",
    "double_well_escape_time_error",
    "double_well_exact",
    "eyring_kramers_time",
    "hessian_covariance_error",
    "maier_stein",
    "maier_stein_action",
    "maier_stein_barrier_error",
    "splitting_direct_agreement_error",
    "splitting_small_probability_error",
]
