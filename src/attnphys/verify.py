"""Every claim of the exponential-family theory of attention, checked numerically on random instances
(theory: docs/theory/expfam.md §5).

:func:`run_claims` returns one row per claim (claim, paper reference, max error, tolerance, pass);
``attnphys verify`` (:class:`attnphys.expfam.jobs.VerifyJob`) prints them as a table and exits with
status 1 on any failure (:class:`ClaimsFailedError`). Deterministic (seeded); float64 is required for
the exact claims (the command line enables it; in a script call :func:`attnphys.configure` first).

The registry of claims: the library's own (:data:`CLAIMS`, in code), those registered in this process
(:func:`register_claim`), and the ``attnphys.claims`` entry points of outside packages (value =
``"module:attribute"`` naming a :class:`Claim`), so that a claim is one new file; :func:`all_claims`
lists them in the order ``attnphys verify`` checks them, :func:`select_claims` chooses some by name.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from attnphys import clouds, hopfield
from attnphys.clouds import noisy_checks, propagation_checks
from attnphys.clouds import theory_checks as particle_checks
from attnphys.dynamics import rare_checks
from attnphys.errors import AttnphysError, InputError, PrecisionWarning
from attnphys.expfam import (
    AbstractBaseMeasure,
    Discrete,
    Gaussian,
    GaussianMixtureFull,
    bregman,
    conjugate_discrete,
    conjugate_gaussian,
    conjugate_numeric,
    gaussian_natural,
    grad_log_normalizer,
    kl_discrete,
    kl_gaussian,
    kl_monte_carlo,
    log_normalizer_monte_carlo,
    measure_classes,
)
from attnphys.registry import Registry, RegistryConflictError


@dataclass(frozen=True)
class Claim:
    """One checkable statement (theory: docs/theory/expfam.md §5).

    Attributes:
        name: the statement, as printed.
        reference: where the paper states it.
        check: ``rng -> error``, the largest error found on random instances drawn from ``rng`` (a float or
            a 0-d array).
        tol: the claim holds when ``error <= tol`` (NaN fails).
        long: its check runs simulations of seconds to minutes (the demo's quick run leaves it out).
    """

    name: str
    reference: str
    check: Callable[[np.random.Generator], float | jax.Array]
    tol: float
    long: bool = False


def _long(*claims: Claim) -> tuple[Claim, ...]:
    """The claims, marked :attr:`Claim.long`."""
    return tuple(dataclasses.replace(c, long=True) for c in claims)


class ClaimsFailedError(AttnphysError):
    """Some claims do not hold: exit status 1 on the command line (theory: docs/theory/expfam.md §5).

    Attributes:
        rows: every row of :func:`run_claims`.
        failed: the rows that did not pass.
    """

    exit_code = 1

    def __init__(self, rows: list[dict]):
        self.rows = rows
        self.failed = [r for r in rows if not r["passed"]]
        detail = "; ".join(
            f"{r['claim']} (max error {r['max_error']:.2e}, tolerance {r['tolerance']:.0e})" for r in self.failed
        )
        super().__init__(f"{len(self.failed)} of {len(rows)} claim(s) failed: {detail}")


def _key(rng: np.random.Generator) -> jax.Array:
    return jax.random.PRNGKey(int(rng.integers(2**31)))


def _spd(rng, D, scale=0.5):
    A = rng.normal(size=(D, D))
    return scale * (A @ A.T / D + 0.5 * np.eye(D))


def random_measures(rng: np.random.Generator, D: int = 3) -> dict[str, AbstractBaseMeasure]:
    """One random instance (``cls.example``) of every base measure, by class name
    (theory: docs/theory/expfam.md §5).

    Args:
        rng: numpy generator the instances' keys are drawn from. D: dimension.

    Returns:
        ``{class name: instance}`` over :func:`attnphys.expfam.measure_classes`.
    """
    return {cls.__name__: cls.example(_key(rng), D) for cls in measure_classes()}


def _eta(rng, D=3, scale=0.5):
    return jnp.asarray(scale * rng.normal(size=D))


def _over_measures(fn) -> Callable[[np.random.Generator], float]:
    def check(rng):
        return max(float(fn(m, rng)) for m in random_measures(rng).values())

    return check


@eqx.filter_jit
def _grad_error(m, eta, beta):
    return jnp.max(jnp.abs(jax.grad(m.log_normalizer)(eta, beta) / beta - m.mean(eta, beta)))


@eqx.filter_jit
def _hessian_error(m, eta, beta):
    return jnp.max(jnp.abs(jax.hessian(m.log_normalizer)(eta, beta) / beta**2 - m.fisher(eta, beta)))


def _grad_is_mean(m, rng):
    return _grad_error(m, _eta(rng), 1.7)


def _hessian_is_fisher(m, rng):
    return _hessian_error(m, _eta(rng), 0.8)


def _fisher_is_sampled_covariance(m, rng):
    eta = _eta(rng)
    x = m.sample(_key(rng), eta, 400_000)
    return jnp.max(jnp.abs(jnp.cov(x, rowvar=False) - m.fisher(eta))) / jnp.max(jnp.abs(m.fisher(eta)))


def _mc_log_normalizer(m, rng):
    eta = _eta(rng, scale=0.3)
    mc = log_normalizer_monte_carlo(m, eta, _key(rng), n=400_000)
    return jnp.abs(mc - m.log_normalizer(eta))


def _bregman_is_kl(m, rng):
    e1, e2 = _eta(rng), _eta(rng)
    b = bregman(m, e1, e2)
    if isinstance(m, Discrete):
        return jnp.abs(b - kl_discrete(m, e2, e1))
    if isinstance(m, Gaussian):
        return jnp.abs(b - kl_gaussian(m, e2, e1))
    return jnp.abs(b - kl_monte_carlo(m, e2, e1, _key(rng), n=400_000))


def _attention_is_gradient(rng):
    """softmax(β K q)ᵀ V = E_p[v]; with V = K it is ∇_q log Σ e^{β qᵀk_j} / β."""
    K, V, q, beta = rng.normal(size=(9, 4)), rng.normal(size=(9, 5)), rng.normal(size=4), 1.0 / np.sqrt(4)
    K, V, q = map(jnp.asarray, (K, V, q))
    att = jax.nn.softmax(beta * K @ q) @ K
    grad = jax.grad(lambda e: jax.nn.logsumexp(beta * K @ e))(q) / beta
    att_v = jax.nn.softmax(beta * K @ q) @ V
    return max(float(jnp.max(jnp.abs(att - grad))), float(jnp.max(jnp.abs(att_v - Discrete(K).probs(q, beta) @ V))))


def _lower_bound(rng):
    m = GaussianMixtureFull.example(_key(rng), 3)
    etas = jnp.asarray(rng.normal(size=(20, 3)))
    gap = jax.vmap(lambda e: m.lower_bound(e) - m.log_normalizer(e))(etas)
    return max(float(jnp.max(gap)), 0.0)


def _lower_bound_grad(rng):
    m = GaussianMixtureFull.example(_key(rng), 3)
    eta = _eta(rng)
    return jnp.max(jnp.abs(jax.grad(m.lower_bound)(eta) - m.lower_bound_grad(eta)))


def _prop1b(rng):
    mu, S = rng.normal(size=3), _spd(rng, 3)
    a, b = gaussian_natural(jnp.asarray(mu), jnp.asarray(S)), Gaussian(jnp.asarray(mu), jnp.asarray(S))
    eta = _eta(rng)
    return max(
        float(jnp.abs(a.log_normalizer(eta) - b.log_normalizer(eta))),
        float(jnp.max(jnp.abs(a.mean(eta) - b.mean(eta)))),
    )


def _conjugate(rng):
    errs = []
    m = Discrete.example(_key(rng), 3)
    eta = _eta(rng)
    val, _ = conjugate_numeric(m, grad_log_normalizer(m, eta))
    errs.append(abs(val - float(conjugate_discrete(m, eta))))
    g = Gaussian.example(_key(rng), 3)
    mu = jnp.asarray(rng.normal(size=3))
    val, _ = conjugate_numeric(g, mu)
    errs.append(abs(val - float(conjugate_gaussian(g, mu))))
    return max(errs)


def _theorem1_exact(rng):
    D = 4
    mu, S = jnp.asarray(rng.normal(size=D)), jnp.asarray(_spd(rng, D))
    Sinv = jnp.linalg.inv(S)
    mean, cov = Sinv @ mu, Sinv  # p_eq = N(Σ⁻¹μ, Σ⁻¹)
    A, b = clouds.theorem1_affine(mu, S)
    # the affine map is the Gaussian base measure's attention + residual: η + ∇ log Z(η)
    eta = jnp.asarray(rng.normal(size=D))
    e_aff = float(jnp.max(jnp.abs(A @ eta + b - (eta + Gaussian(mu, S).mean(eta)))))
    m1, c1 = clouds.push_gaussian(mean, cov, A, b)
    T, c = clouds.renormalize_population(m1, c1, mean, cov)
    m2, c2 = clouds.push_gaussian(m1, c1, T, c)
    return max(e_aff, float(jnp.max(jnp.abs(m2 - mean))), float(jnp.max(jnp.abs(c2 - cov))))


def _theorem1_sampled(rng):
    D, N = 3, 200_000
    mu, S = jnp.asarray(rng.normal(size=D)), jnp.asarray(_spd(rng, D))
    Sinv = jnp.linalg.inv(S)
    eta = jax.random.multivariate_normal(_key(rng), Sinv @ mu, Sinv, (N,))
    A, b = clouds.theorem1_affine(mu, S)
    out = clouds.renormalize(eta @ A.T + b, Sinv @ mu, Sinv)
    ref = jax.random.multivariate_normal(_key(rng), Sinv @ mu, Sinv, (N,))
    # the cloud's own statistics are restored exactly; the shape is Gaussian: compare moments with a fresh
    # sample, and Mardia's skewness and kurtosis (on 5000 tokens: the statistic is O(n²))
    skew, kurt = clouds.mardia(out[:5_000])
    return max(
        float(jnp.max(jnp.abs(out.mean(0) - Sinv @ mu))),
        float(jnp.max(jnp.abs(jnp.cov(out, rowvar=False) - Sinv))),
        float(jnp.max(jnp.abs(jnp.cov(out, rowvar=False) - jnp.cov(ref, rowvar=False)))) / float(jnp.max(Sinv)),
        float(abs(kurt - 1.0)),
        float(skew),
    )


def _hopfield_is_grad(rng):
    Y, xi, beta = jnp.asarray(rng.normal(size=(6, 5))), jnp.asarray(rng.normal(size=5)), 2.0
    return jnp.max(jnp.abs(hopfield.update(xi, Y, beta) - grad_log_normalizer(Discrete(Y), xi, beta) / beta))


def _hopfield_monotone(rng):
    Y, beta = jnp.asarray(rng.normal(size=(10, 8))), 1.5

    def rise(xi):  # largest energy increase along 10 updates from xi
        def step(x, _):
            new = hopfield.update(x, Y, beta)
            return new, hopfield.energy(new, Y, beta) - hopfield.energy(x, Y, beta)

        return jnp.max(jax.lax.scan(step, xi, None, length=10)[1])

    return max(float(jnp.max(jax.jit(jax.vmap(rise))(jnp.asarray(rng.normal(size=(20, 8)))))), 0.0)


def _hopfield_retrieval(rng):
    D = 64
    Y = jnp.asarray(np.sign(rng.normal(size=(8, D))))  # well separated ±1 patterns
    errs = []
    for j in range(8):
        noisy = Y[j] * jnp.asarray(np.where(rng.random(D) < 0.1, -1.0, 1.0))
        r = hopfield.retrieve(noisy, Y, beta=1.0)
        errs.append(float(jnp.max(jnp.abs(r.state - Y[j]))))
    return max(errs)


def _attention_step_is_ascent(rng):
    X, beta, alpha = jnp.asarray(rng.normal(size=(12, 4))), 0.7, 0.3
    step = clouds.attention_step(X, beta=beta, alpha=alpha) - X
    grads = jax.vmap(lambda q: jax.grad(lambda e: jax.nn.logsumexp(beta * X @ e))(q))(X)
    return jnp.max(jnp.abs(step - alpha * grads / beta))


CLAIMS: tuple[Claim, ...] = (
    Claim("attention output = ∇_q log Z (values: E_p[v])", "Prop. 1(a)", _attention_is_gradient, 1e-12),
    Claim("∇ log Z = mean, every base measure (autodiff)", "§1 mean map", _over_measures(_grad_is_mean), 1e-10),
    Claim("∇² log Z = Fisher = covariance (autodiff)", "§1 Fisher", _over_measures(_hessian_is_fisher), 1e-10),
    Claim(
        "Fisher = sampled covariance (4e5 samples, relative)",
        "§1 Fisher",
        _over_measures(_fisher_is_sampled_covariance),
        0.03,
    ),
    Claim(
        "Monte-Carlo log Z = closed form (4e5 base samples)",
        "Cor. 1, Props. 2–3",
        _over_measures(_mc_log_normalizer),
        0.02,
    ),
    Claim("exp.-family base measure: Gaussian via Prop. 1(b) = Cor. 1", "Prop. 1(b)", _prop1b, 1e-10),
    Claim("Jensen lower bound G_LB ≤ log Z (max of G_LB − G)", "Prop. 3", _lower_bound, 1e-12),
    Claim("∇G_LB closed form = autodiff", "Prop. 3", _lower_bound_grad, 1e-10),
    Claim("Bregman B_G(η₁,η₂) = KL(p_η₂ ‖ p_η₁)", "§2 duality", _over_measures(_bregman_is_kl), 0.02),
    Claim("conjugate G*(∇G) numeric sup = closed form", "§2 duality", _conjugate, 1e-7),
    Claim("attention + residual = gradient-ascent step on log Z", "§3", _attention_step_is_ascent, 1e-12),
    Claim("RN ∘ A maps p_eq to itself (exact affine algebra)", "Theorem 1", _theorem1_exact, 1e-10),
    Claim("RN ∘ A maps p_eq to itself (sampled, 2e5 tokens)", "Theorem 1", _theorem1_sampled, 0.05),
    Claim("Hopfield update = ∇ log Z / β of the stored patterns", "§4", _hopfield_is_grad, 1e-12),
    Claim("Hopfield update never increases the energy", "§4", _hopfield_monotone, 1e-12),
    Claim("Hopfield retrieves well-separated patterns (10% flipped)", "§4", _hopfield_retrieval, 1e-6),
    # the particle flow's quantitative theory (docs/theory/particles.md §7–9)
    *_long(
        Claim(
            "uniform cloud on the circle: mode k grows at k² I_k(β)/(β I_0(β)) (relative)",
            "particles §7.1; arXiv 2410.23228",
            particle_checks.lattice_rates_error,
            1e-8,
        ),
        Claim(
            "β = 5 on the circle: first plateau of 3 clusters (1 − agreeing fraction, 8 starts; the count law k*(β) "
            "is checked for β ≤ 9 only)",
            "particles §7.2; arXiv 2410.23228 Fig. 4",
            particle_checks.first_count_error,
            0.25,
        ),
        Claim(
            "equiangular n-token flow follows the scalar cosine ODE (SA and USA)",
            "particles §8.1; arXiv 2512.01868",
            particle_checks.equiangular_error,
            1e-7,
        ),
        Claim(
            "one SA layer, β = γ log n, on a simplex: output cosine = closed form",
            "particles §9.1; arXiv 2510.05554",
            particle_checks.critical_scaling_error,
            1e-10,
        ),
        Claim(
            "plateau energies of a clustering flow = cluster formula (relative)",
            "particles §10.1; arXiv 2410.06833",
            particle_checks.staircase_energy_error,
            1e-5,
        ),
        Claim(
            "causal flow with ALiBi slope: influence on the last token = kinetic Green's function (relative)",
            "particles §12.3; arXiv 2605.09213",
            particle_checks.causal_influence_error,
            0.04,
        ),
        Claim(
            "causal SA at beta = 64: first plateau has as many clusters as the start's Renyi centers (relative)",
            "particles §13.2; arXiv 2411.04990",
            particle_checks.causal_renyi_error,
            0.15,
        ),
        Claim(
            "causal SA with any key-query matrix and V = I ends in one cluster (1 - min cosine)",
            "particles §13.3; arXiv 2411.04990 Thm 4.1",
            particle_checks.causal_collapse_error,
            1e-3,
        ),
        Claim(
            "normalization placements: fitted decay law of 1 − ρ = predicted rate or exponent (relative)",
            "particles §11.2; arXiv 2510.22026",
            particle_checks.placement_decay_error,
            0.06,
        ),
        # rare transitions of noisy maps (docs/theory/rare_events.md §8)
        Claim(
            "AR(1) map: least action = (1 − a²) b²/(2σ²) and the least-action path is exact",
            "rare events §8, §3",
            rare_checks.ar1_quasi_potential_error,
            1e-8,
        ),
        Claim(
            "double-well Euler–Maruyama map (dt = 0.01): barrier ΔS = 2ΔV = 1/2 (units of 1/ε)",
            "rare events §8, §1.2",
            rare_checks.double_well_barrier_error,
            1e-5,
        ),
        Claim(
            "Maier–Stein map (dt = 0.01, β = 1, gradient): least action = 1/2 (β = 10: 0.3394, no published value confirmed)",
            "rare events §8; Maier & Stein 1993",
            rare_checks.maier_stein_barrier_error,
            1e-5,
        ),
        Claim(
            "2-D map with state-dependent noise: Hessian of the quasi-potential = inverse stationary covariance (relative)",
            "rare events §8, §3",
            rare_checks.hessian_covariance_error,
            0.05,
        ),
        Claim(
            "double-well map (ε = 0.1): splitting and direct simulation agree (difference / combined standard error)",
            "rare events §8, §5–7",
            rare_checks.splitting_direct_agreement_error,
            3.0,
        ),
        Claim(
            "double-well map (ε = 0.025): splitting estimates p = 2.6e-9 to 30 % (relative error)",
            "rare events §8, §5",
            rare_checks.splitting_small_probability_error,
            0.3,
        ),
        Claim(
            "double-well map (ε = 0.04): splitting's mean escape time = Eyring–Kramers to 10 % (relative)",
            "rare events §8, §4, §6",
            rare_checks.double_well_escape_time_error,
            0.10,
        ),
    ),
    # the noisy particle system's transition (docs/theory/noisy_particles.md)
    *_long(
        Claim(
            "noisy USA: K_#(β) = d/0F1(;d/2+1;β²/4) = β/c_1, zonal quadrature, d = 2, 3, 4, 64, 128 (relative)",
            "noisy_particles §3, §5; arXiv 2606.05140",
            noisy_checks.linear_threshold_error,
            1e-10,
        ),
        Claim(
            "noisy USA: β_*(d) root of I_(d/2+1)(β)/I_(d/2)(β) = 1/d, two routes, d = 2, 3, 4, ≥ 64",
            "noisy_particles §4, §5; arXiv 2606.05140",
            noisy_checks.critical_beta_error,
            1e-10,
        ),
        Claim(
            "noisy USA: Landau quartic coefficient predicts the mean-field branch at 1.001 K_# (relative)",
            "noisy_particles §4",
            noisy_checks.landau_branch_error,
            0.01,
        ),
        Claim(
            "projected Euler–Maruyama on the sphere: E⟨x0, xt⟩ = a(h)^(t/h) (|z|, 2e4 tokens)",
            "noisy_particles §2.2",
            noisy_checks.weak_order_error,
            4.0,
        ),
        Claim(
            "two noisy USA tokens reach their Gibbs law: E m² (|z|, 64 replicas)",
            "noisy_particles §2.3",
            noisy_checks.two_token_error,
            4.0,
        ),
        Claim(
            "finite-n onset at K_# below β_*, hysteresis only above (d = 2: β = 1, 6; d = 3: β = 0.7, 4; failures)",
            "noisy_particles §6; arXiv 2606.05140, 2604.16288",
            noisy_checks.sweeps_check(((2, 1.0), (2, 6.0), (3, 0.7), (3, 4.0))),
            0.5,
        ),
    ),
    # signal propagation at initialisation (docs/theory/signal_propagation.md §3, §7)
    *_long(
        Claim(
            "paper's encoder (d = 720, T = 512, 50 Post-LN blocks), β = 0.5: max |theory − simulation| mean cosine "
            "over the layers (20 networks)",
            "signal propagation §7; arXiv 2505.24333 Fig. 1",
            propagation_checks.encoder_low_beta_error,
            0.02,
        ),
        Claim(
            "paper's encoder, β = 3: max |theory − simulation| mean cosine over the layers (20 networks)",
            "signal propagation §7; arXiv 2505.24333 Fig. 1",
            propagation_checks.encoder_high_beta_error,
            0.02,
        ),
        Claim(
            "negative control: the theory without the MLP kernel misses the encoder by > 0.02 at β = 0.5 and 3 "
            "(0.02 / its smaller max |Δ|)",
            "signal propagation §7",
            propagation_checks.mlp_control_ratio,
            1.0,
        ),
        Claim(
            "β_c = √(2/(1 − ρ)) from the stability of the REM layer map's orthogonal fixed point",
            "signal propagation §3.2; arXiv 2505.24333",
            propagation_checks.critical_beta_error,
            1e-10,
        ),
    ),
)
"""The library's own claims, in the order ``attnphys verify`` prints them (:func:`all_claims` adds the
registered and outside ones after them)."""

ENTRY_POINT_GROUP = "attnphys.claims"
"""Entry-point group of the claims of outside packages."""


def _is_claim(obj: object) -> Claim | None:
    return obj if isinstance(obj, Claim) else None


REGISTRY: Registry[Claim] = Registry(
    "claim",
    group=ENTRY_POINT_GROUP,
    builtins=CLAIMS,
    accept=_is_claim,
    field="claims",
    member="an `attnphys.verify.Claim` ([exponential-family page](expfam.md) §5)",
    adding="one entry of `CLAIMS`",
    theory="expfam.md §5",
    sort_added=False,
)
"""The registry of the claims ``attnphys verify`` checks (:class:`attnphys.registry.Registry`), by the
claim's name: the library's own (:data:`CLAIMS`), those of :func:`register_claim` in their order, then the
outside entry points (by entry-point name)."""


def register_claim(claim: Claim) -> Claim:
    """Add ``claim`` to the claims that ``attnphys verify`` and :func:`run_claims` check; returns it
    (theory: docs/theory/expfam.md §5).

    Raises:
        RegistryConflictError: ``claim`` is not a :class:`Claim`, or its name is already another claim's (a
            ValueError).
    """
    if not isinstance(claim, Claim):
        raise RegistryConflictError(f"a claim must be a Claim(name, reference, check, tol), got {claim!r}")
    if any(c is claim for c in CLAIMS):
        return claim
    return REGISTRY.register(claim)


def all_claims() -> tuple[Claim, ...]:
    """Every claim in the order they are checked: the library's own (:data:`CLAIMS`), then the registered
    ones in their order, then those of outside packages' entry points (by entry-point name); an entry
    point that fails to load or is not a claim is skipped with a warning (theory: docs/theory/expfam.md §5).

    Raises:
        ExtensionError: an outside claim whose name is already another claim's.
    """
    from attnphys.errors import ExtensionError

    out: list[Claim] = []
    names: set[str] = set()
    for ep_name, obj in REGISTRY.loaded().items():
        if any(c is obj for c in out):
            continue
        if obj.name in names:
            raise ExtensionError(
                f"the entry point {ep_name!r} of the group {ENTRY_POINT_GROUP} names a claim called "
                f"{obj.name!r}, which is already another claim: rename it (one name, one claim)"
            )
        out.append(obj)
        names.add(obj.name)
    return tuple(out)


def select_claims(text: str) -> tuple[Claim, ...]:
    """The claims whose name or paper reference contains ``text`` (case-insensitive), in checking order
    (theory: docs/theory/expfam.md §5).

    Raises:
        InputError: no claim matches (naming ``--claim`` and listing the claims).
    """
    return _matching(all_claims(), text)


def _matching(every: tuple[Claim, ...], text: str) -> tuple[Claim, ...]:
    needle = text.casefold()
    chosen = tuple(c for c in every if needle in c.name.casefold() or needle in c.reference.casefold())
    if not chosen:
        listed = "; ".join(c.name for c in every)
        raise InputError(f"no claim's name or reference contains {text!r}; the claims: {listed}", "--claim")
    return chosen


def run_claims(
    seed: int = 0, claims: tuple[Claim, ...] | None = None, progress: bool = False, *, chosen: str | None = None
) -> list[dict]:
    """Evaluate every claim (theory: docs/theory/expfam.md §5); claim i draws its instances from
    ``numpy.random.default_rng([seed, i])``.

    Args:
        seed: integer ≥ 0.
        claims: the claims to check (default: every one, :func:`all_claims`).
        progress: show a bar that advances with every claim checked.
        chosen: check only the claims among ``claims`` whose name or reference contains this text (as
            :func:`select_claims`), each with the instances it draws in a run of all of them (its index i
            among ``claims``).

    Returns:
        One dict per claim: ``claim``, ``reference``, ``max_error``, ``tolerance``, ``passed``
        (``max_error`` finite and ≤ ``tolerance``).

    Raises:
        InputError: ``seed`` is negative or not an integer.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"must be an integer >= 0 (got {seed!r})", "seed")
    if not jax.config.jax_enable_x64:  # pyright: ignore[reportAttributeAccessIssue]
        warnings.warn("the exact claims need float64: call attnphys.configure() first", PrecisionWarning, stacklevel=2)
    from attnphys.progress import progress_bar

    rows = []
    every = all_claims() if claims is None else claims
    picked = None if chosen is None else _matching(tuple(every), chosen)
    todo = [(i, c) for i, c in enumerate(every) if picked is None or any(c is p for p in picked)]
    with progress_bar(len(todo), "claims", enabled=progress) as advance:
        for i, c in todo:
            rows.append(_check(c, np.random.default_rng([seed, i])))
            advance(1)
    return rows


def _check(c: Claim, rng: np.random.Generator) -> dict:
    """One row of :func:`run_claims`."""
    err = float(c.check(rng))
    return dict(
        claim=c.name,
        reference=c.reference,
        max_error=err,
        tolerance=c.tol,
        passed=bool(np.isfinite(err) and err <= c.tol),
    )


__all__ = [
    "Claim",
    "CLAIMS",
    "ClaimsFailedError",
    "all_claims",
    "random_measures",
    "register_claim",
    "run_claims",
    "select_claims",
]
