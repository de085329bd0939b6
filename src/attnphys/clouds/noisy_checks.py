"""Numerical checks of the noisy particle system's theory, each ``rng -> error`` with a ``perturb`` argument
that moves the prediction away from the theory: ``attnphys verify`` runs them unperturbed, and the tests run
them perturbed and require them to fail (theory: docs/theory/noisy_particles.md). ``attnphys verify`` lists them
among its claims (:data:`attnphys.verify.CLAIMS`)."""

from __future__ import annotations

import numpy as np

THRESHOLD_DIMS = (2, 3, 4, 64, 128)
"""Dimensions on which the closed forms are compared with the quadrature route."""

SWEEP_SETTINGS = dict(tokens=128, replicas=6, t_relax=5.0, t_average=15.0, saves=30, seed=0)
"""The finite-n sweeps of the acceptance (docs/theory/noisy_particles.md §6, §9)."""

SWEEP_SPAN = {False: (0.3, 1.3, 17), True: (0.75, 1.1, 15)}
"""Couplings of the sweeps relative to K_#(β): (first, last, points), below (False) and above (True) β_*."""

ONSET_TOLERANCE = 0.15
"""Largest relative distance of the finite-n onset (n = 128) from K_# below β_* (docs/theory/noisy_particles.md §6)."""


def linear_threshold_error(rng: np.random.Generator, perturb: float = 0.0) -> float:
    """Largest relative distance between K_#(β) = d/₀F₁(; d/2 + 1; β²/4) (times 1 + ``perturb``) and β/c_1 with
    c_1 the second eigenvalue of the Nyström discretisation of the zonal kernel, for d ∈ {2, 3, 4, 64, 128}
    and four β drawn in [0.3, 5] (theory: docs/theory/noisy_particles.md §3, §5)."""
    from attnphys.clouds.noisy import linear_threshold, zonal_spectrum

    b = np.sort(rng.uniform(0.3, 5.0, 4))
    err = 0.0
    for d in THRESHOLD_DIMS:
        numeric = b / zonal_spectrum(b, d, 2)[:, 1]
        err = max(err, float(np.max(np.abs(linear_threshold(b, d) * (1 + perturb) / numeric - 1))))
    return err


def critical_beta_error(rng: np.random.Generator, perturb: float = 0.0) -> float:
    """Largest distance between β_*(d) from the closed-form Bessel ratio (times 1 + ``perturb``) and the root
    of c_2/c_1 = 1/d from the quadrature route, for d ∈ {2, 3, 4} and one d drawn in [64, 128] (theory:
    docs/theory/noisy_particles.md §4, §5)."""
    from attnphys.clouds.noisy import critical_beta, critical_beta_numeric

    dims = (2, 3, 4, int(rng.integers(64, 129)))
    return max(abs(critical_beta(d) * (1 + perturb) - critical_beta_numeric(d)) for d in dims)


def landau_branch_error(rng: np.random.Generator, perturb: float = 0.0) -> float:
    """Largest relative distance between the magnetisation of the mean-field stationary branch at
    K = (1 + 10⁻³) K_# and the Landau prediction √(d ε/(4B)) with B (times 1 + ``perturb``) the quartic
    coefficient, for d ∈ {2, 3} and β drawn in [0.3, 0.7] β_*(d) (theory: docs/theory/noisy_particles.md §4)."""
    from attnphys.clouds.noisy import critical_beta, landau_coefficients, linear_threshold, mean_field_branches

    eps, err = 1e-3, 0.0
    for d in (2, 3):
        b = float(rng.uniform(0.3, 0.7)) * critical_beta(d)
        kl = float(linear_threshold(b, d)[0])
        B = float(landau_coefficients(b, dim=d)[1][0]) * (1 + perturb)
        m = float(mean_field_branches(b, [kl * (1 + eps)], d).magnetisation.sel(branch="down")[0])
        pred = np.sqrt(d * eps / (4 * B))
        err = max(err, abs(m / pred - 1))
    return err


def weak_order_error(rng: np.random.Generator, perturb: float = 0.0) -> float:
    """|z| of the Monte-Carlo mean of ⟨x_0, x_t⟩ (20000 free Brownian tokens on S^{d−1}, projected
    Euler–Maruyama, h = 0.05, t = 0.5, d drawn in {2, 3, 4}) against the scheme's exact value a(h)^{t/h},
    a(h) = E(1 + 2hR)^{−1/2}, R ~ χ²_{d−1}, shifted by ``perturb`` (theory: docs/theory/noisy_particles.md §2.2)."""
    from scipy.integrate import quad
    from scipy.stats import chi2

    from attnphys.clouds.noisy import solve_noisy

    d, h, t, R = int(rng.integers(2, 5)), 0.05, 0.5, 20000
    X0 = np.zeros((R, 1, d))
    X0[..., -1] = 1.0
    ds = solve_noisy(X0, [t], beta=1.0, coupling=0.0, dt=h, seed=int(rng.integers(2**31)), keep_cloud=True)
    c = ds.x.values[0, :, 0, -1]
    a = quad(lambda r: (1 + 2 * h * r) ** -0.5 * chi2.pdf(r, d - 1), 0, np.inf)[0]
    return float(abs(c.mean() - a ** (t / h) - perturb) / (c.std() / np.sqrt(R)))


def two_token_exact(beta: float, coupling: float, dim: int) -> float:
    """E m² = E(1 + t)/2 under the invariant law of two USA tokens, t = ⟨x_1, x_2⟩ with density
    ∝ exp(K e^{βt}/(2β)) (1 − t²)^{(d−3)/2} (theory: docs/theory/noisy_particles.md §2.3)."""
    from scipy.integrate import quad

    a = (dim - 3) / 2
    top = max(coupling * np.exp(beta) / (2 * beta), 0.0)

    def w(t):
        return np.exp(coupling * np.exp(beta * t) / (2 * beta) - top) * (1 - t * t) ** a

    z = quad(w, -1, 1, limit=200)[0]
    return quad(lambda t: (1 + t) / 2 * w(t), -1, 1, limit=200)[0] / z


def two_token_averages(rng: np.random.Generator) -> np.ndarray:
    """Long-time averages of m² of 64 replicas of two USA tokens on S² (β = 1, K = 2, h = 0.005, averaged
    over t ∈ [5, 40]) (theory: docs/theory/noisy_particles.md §2.3)."""
    import jax

    from attnphys.clouds.flow import uniform_sphere
    from attnphys.clouds.noisy import solve_noisy

    R, d = 64, 3
    X0 = np.asarray(uniform_sphere(jax.random.PRNGKey(int(rng.integers(2**31))), 2 * R, d)).reshape(R, 2, d)
    ts = np.linspace(5.0, 40.0, 351)
    ds = solve_noisy(X0, ts, beta=1.0, coupling=2.0, dt=0.005, seed=int(rng.integers(2**31)))
    return (ds.magnetisation.values**2).mean(0)


def two_token_z(per: np.ndarray, perturb: float = 0.0) -> float:
    """|z| of the replica averages ``per`` of m² against the invariant law of two tokens on S² at β = 1 and
    coupling 2 (1 + ``perturb``) (theory: docs/theory/noisy_particles.md §2.3)."""
    exact = two_token_exact(1.0, 2.0 * (1 + perturb), 3)
    return float(abs(per.mean() - exact) / (per.std(ddof=1) / np.sqrt(per.size)))


def two_token_error(rng: np.random.Generator, perturb: float = 0.0) -> float:
    """|z| of the long-time average of m² of two noisy USA tokens (:func:`two_token_averages`) against their
    invariant law at coupling K (1 + ``perturb``) (theory: docs/theory/noisy_particles.md §2.3)."""
    return two_token_z(two_token_averages(rng), perturb)


def sweep_acceptance_error(dim: int, beta: float) -> float:
    """The number of failed conditions of one finite-n sweep (:data:`SWEEP_SETTINGS`; theory:
    docs/theory/noisy_particles.md §6): below β_*, (i) the onset lies within :data:`ONSET_TOLERANCE` of K_#,
    (ii) its 95 % interval reaches within that distance of K_#, (iii) the hysteresis area's 95 % interval
    contains zero; above β_*, (iv) the area's interval excludes zero (area > 0)."""
    from attnphys.clouds.noisy import coupling_sweep, critical_beta, linear_threshold

    above = beta > critical_beta(dim)
    kl = float(linear_threshold(beta, dim)[0])
    lo, hi, pts = SWEEP_SPAN[above]
    ds = coupling_sweep(beta, kl * np.linspace(lo, hi, pts), dim=dim, theory=False, **SWEEP_SETTINGS)  # type: ignore[arg-type]
    if above:
        return float(not float(ds.loop_area_low) > 0)
    tol = ONSET_TOLERANCE * kl
    fails = abs(float(ds.onset) - kl) > tol
    fails += not (float(ds.onset_low) - tol <= kl <= float(ds.onset_high) + tol)
    fails += not (float(ds.loop_area_low) <= 0 <= float(ds.loop_area_high))
    return float(fails)


def sweeps_check(cases):
    def check(rng: np.random.Generator) -> float:
        del rng
        return sum(sweep_acceptance_error(d, b) for d, b in cases)

    return check


__all__ = [
    "ONSET_TOLERANCE",
    "SWEEP_SETTINGS",
    "SWEEP_SPAN",
    "critical_beta_error",
    "landau_branch_error",
    "linear_threshold_error",
    "sweep_acceptance_error",
    "two_token_averages",
    "two_token_error",
    "two_token_exact",
    "two_token_z",
    "weak_order_error",
]
