"""Rare transitions of noisy maps against closed forms and exact answers (theory: docs/theory/rare_events.md):
the discrete action, least-action paths with phase selection and singular noise, the quadratic part of the
quasi-potential against the stationary covariance, the Eyring–Kramers time of maps, adaptive multilevel splitting
(resumed, beside direct simulation) and the claims ``attnphys verify`` checks, each failing when its prediction is
moved."""

import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg as sl

from attnphys.dynamics import (
    AbstractNoise,
    autonomous,
    direct_transition,
    discrete_action,
    eyring_kramers,
    first_passage_time,
    least_action_path,
    quasi_potential_hessian,
    splitting,
)
from attnphys.dynamics import rare_checks as rc
from attnphys.dynamics._action import _banded
from attnphys.dynamics.maps import FunctionMap
from attnphys.errors import InputError

A1, A2, SIG = 0.5, -0.3, 0.7
AR2 = autonomous(lambda x, p: jnp.stack([A1 * x[0] + A2 * x[1], x[0]]))  # x_t = a1 x_{t-1} + a2 x_{t-2} + σ η
AR2_NOISE = [[SIG], [0.0]]  # the noise reaches the first coordinate only


def _ar2_covariance():
    J = np.array([[A1, A2], [1.0, 0.0]])
    return sl.solve_discrete_lyapunov(J, np.array([[SIG**2, 0.0], [0.0, 0.0]]))


def test_the_banded_hessian_is_the_dense_one():
    """The gradient and the upper band of the Hessian over x_1 … x_{T−1} assembled from the per-step blocks equal
    the dense sums of the blocks."""
    rng = np.random.default_rng(0)
    T, D = 5, 2
    g = rng.normal(size=(T, 2 * D))
    h = rng.normal(size=(T, 2 * D, 2 * D))
    h = h + np.swapaxes(h, 1, 2)
    G = np.zeros((T + 1) * D)
    H = np.zeros(((T + 1) * D, (T + 1) * D))
    for t in range(T):
        sl_ = slice(t * D, (t + 2) * D)
        G[sl_] += g[t]
        H[sl_, sl_] += h[t]
    G, H = G[D:-D], H[D:-D, D:-D]
    grad, ab = _banded(g, h, T, D)
    n, u = (T - 1) * D, 2 * D - 1
    dense = np.zeros((n, n))
    for i in range(n):
        for j in range(i, min(n, i + u + 1)):
            dense[i, j] = dense[j, i] = ab[u + i - j, j]
    np.testing.assert_allclose(grad, G)
    np.testing.assert_allclose(dense, H)


def test_the_discrete_action_of_linear_maps_is_the_closed_form():
    """AR(1): S = Σ (x_{t+1} − a x_t)²/(2σ²). AR(2) in delay coordinates (noise on one of two coordinates): the
    controls are the innovations, and a path whose second coordinate does not copy the first is outside the range."""
    rng = np.random.default_rng(1)
    a, s = 0.6, 0.4
    x = rng.normal(size=(8, 1))
    ds = discrete_action(autonomous(lambda y, p: p * y), [[s]], x, a)
    want = np.sum((x[1:, 0] - a * x[:-1, 0]) ** 2) / (2 * s * s)
    assert abs(float(ds["action"]) - want) < 1e-12 and ds.attrs["mode"] == "full"
    eta = rng.normal(size=6)
    X = [np.zeros(2)]
    for e in eta:
        X.append(np.array([A1 * X[-1][0] + A2 * X[-1][1] + SIG * e, X[-1][0]]))
    ds = discrete_action(AR2, AR2_NOISE, np.array(X), None)
    np.testing.assert_allclose(ds["controls"].values[:, 0], eta, atol=1e-12)
    assert ds.attrs["mode"] == "singular" and ds.attrs["admissible"] == 1
    X[3] = X[3] + np.array([0.0, 0.1])
    bad = discrete_action(AR2, AR2_NOISE, np.array(X), None)
    assert bad.attrs["admissible"] == 0 and abs(float(bad["out_of_range"][2]) - 0.1) < 1e-12


def test_bad_inputs_are_refused_by_name():
    lin = autonomous(lambda y, p: 0.5 * y)
    with pytest.raises(InputError, match="noise"):
        discrete_action(lin, [[1.0, 0.0], [2.0, 0.0]], np.zeros((3, 2)), None)  # rank 1 of 2
    with pytest.raises(InputError, match="noise"):
        discrete_action(lin, np.ones(3), np.zeros((3, 2)), None)
    with pytest.raises(InputError, match="path"):
        discrete_action(lin, [[1.0]], np.zeros(3), None)
    with pytest.raises(InputError, match="^b:"):
        least_action_path(lin, [[1.0]], [0.0], [1.0, 2.0], None)
    with pytest.raises(InputError, match="max_steps"):
        least_action_path(lin, [[1.0]], [0.0], [1.0], None, steps=50, max_steps=10)
    with pytest.raises(InputError, match="epsilon"):
        splitting(lin, [[1.0]], [0.0], [1.0], None, epsilon=-1.0)


def test_splitting_refuses_levels_that_do_not_hold_the_attractors():
    m, B = rc.double_well(0.05)
    with pytest.raises(InputError, match="b_level"):
        splitting(m, B, [-1.0], [1.0], 0.05, epsilon=0.1, a_level=0.5, b_level=0.4)
    with pytest.raises(InputError, match="kill"):
        splitting(m, B, [-1.0], [1.0], 0.05, epsilon=0.1, replicas=10, kill=10)


# ---------------------------------------------------------------------------------------------------------------
# least action


@pytest.mark.slow
def test_singular_noise_gives_the_inverse_covariance_of_the_delay_embedding():
    """AR(2) in delay coordinates, noise on one coordinate: the least action to b is ½ bᵀ P⁻¹ b, P the stationary
    covariance (invertible: the pair is controllable), and the Hessian from least actions is P⁻¹."""
    P = _ar2_covariance()
    b = np.array([0.3, -0.2])
    ds = least_action_path(AR2, AR2_NOISE, [0.0, 0.0], b, None, steps=10, refine_a=False)
    assert ds.attrs["mode"] == "singular" and ds.attrs["constraint_violation"] < 1e-9
    assert abs(float(ds["action"]) - 0.5 * b @ np.linalg.solve(P, b)) < 1e-9
    assert abs(float(discrete_action(AR2, AR2_NOISE, ds["path"].values, None)["action"]) - float(ds["action"])) < 1e-9
    h = quasi_potential_hessian(AR2, AR2_NOISE, [0.0, 0.0], None, steps=10)
    assert float(h["relative_difference"]) < 1e-6


@pytest.mark.slow
def test_phase_selection_on_a_period_two_attractor():
    """The logistic map at r = 3.2 with additive noise, from its attracting 2-cycle to the repelling fixed point
    1 − 1/r: at the first horizon the two start phases give different actions and the least is kept (equal to a run
    restricted to that phase); every phase's action falls with the horizon and settles (the two settle 3·10⁻⁶ apart:
    the map is not invertible, and each phase's Newton solves end in their own local minimum; the least is kept)."""
    r = 3.2
    logistic = autonomous(lambda x, p: p * x * (1 - x))
    q = np.sqrt((r + 1) * (r - 3))
    z0 = np.array([(r + 1 - q) / (2 * r)])
    target = [1 - 1 / r]
    ds = least_action_path(logistic, [[0.05]], z0, target, r, period=2, steps=6, steps_increment=6, tol=1e-12)
    S = ds["action_by_horizon"].values
    assert ds.attrs["status"] == "converged" and S.shape[1] == 2
    assert abs(S[0, 0] - S[0, 1]) > 1e-3 * S[0].min()
    assert float(ds["action"]) == pytest.approx(np.nanmin(S), rel=1e-12)
    best = int(ds["best_phase"])
    alone = least_action_path(logistic, [[0.05]], z0, target, r, period=2, steps=6, max_steps=6, phases=[best])
    assert float(alone["action_by_horizon"][0, 0]) == pytest.approx(S[0, best], rel=1e-9)
    assert np.all(np.diff(S, axis=0) <= 1e-15)
    assert np.all(np.abs(S[-1] - S[-2]) <= 1e-10 * S[-1])


@pytest.mark.slow
def test_a_driven_map_arrives_with_the_phase_of_its_drive():
    """x' = a x + c s, s' = −s (the drive s = ±1 in aux): the attractor is the 2-cycle x̄ = ∓c/(1 + a) and the
    deviation from it is an AR(1), so the least action to b arriving with the drive s is (1 − a²)(b − x̄_s)²/(2σ²)
    whatever the start phase; the quadratic part at phase 0 is (1 − a²)/σ²."""
    a, c, s = 0.5, 1.0, 0.3
    drive = FunctionMap(lambda x, aux, p: (a * x + c * aux, -aux))
    xbar0 = -c / (1 + a)  # with s = +1
    b = 0.1
    for b_aux, xbar in ((1.0, xbar0), (-1.0, -xbar0)):
        ds = least_action_path(
            drive, [[s]], [xbar0], [b], None, aux0=jnp.asarray(1.0), period=2, b_aux=jnp.asarray(b_aux), steps=10
        )
        want = (1 - a * a) * (b - xbar) ** 2 / (2 * s * s)
        assert abs(float(ds["action"]) - want) < 1e-8 * want, (b_aux, float(ds["action"]), want)
    h = quasi_potential_hessian(drive, [[s]], [xbar0], None, aux0=jnp.asarray(1.0), period=2, steps=10)
    assert float(h["hessian"][0, 0]) == pytest.approx((1 - a * a) / s**2, rel=1e-5)
    assert float(h["relative_difference"]) < 1e-5


@pytest.mark.slow
def test_the_action_of_the_least_action_path_never_increases_with_the_horizon():
    m, B = rc.double_well(0.01)
    ds = least_action_path(m, B, [-1.0], [0.0], 0.01, steps=500, tol=1e-9)
    S = ds["action_by_horizon"].values[:, 0]
    assert np.all(np.diff(S) <= 1e-15) and ds.attrs["converged"] == 1
    da = discrete_action(m, B, ds["path"].values, 0.01)
    assert abs(float(da["action"]) - float(ds["action"])) < 1e-12


@pytest.mark.slow
def test_eyring_kramers_of_the_double_well_map_is_the_continuous_law():
    """At dt = 0.01 the map's prefactor (2π/ln μ) √(|det H_b|/det H_a), times dt, is 2π/√(V″(−1)|V″(0)|) to O(dt),
    and the map is reversible: the asymmetry of J Σ vanishes."""
    dt = 0.01
    m, B = rc.double_well(dt)
    ds = eyring_kramers(m, B, [-0.9], [0.05], dt, barrier=0.5, epsilon=[0.05, 0.1])
    assert float(ds["prefactor"]) * dt == pytest.approx(2 * np.pi / np.sqrt(2.0), rel=0.02)
    assert ds.attrs["asymmetry_a"] < 1e-12 and ds.attrs["asymmetry_b"] < 1e-12
    assert float(ds["multiplier"]) == pytest.approx(1 + dt)
    with pytest.raises(InputError, match="^b:"):
        eyring_kramers(m, B, [-1.0], [1.0], dt, barrier=0.5, epsilon=0.1)  # the other minimum is no saddle


# ---------------------------------------------------------------------------------------------------------------
# splitting and direct simulation


@pytest.mark.slow
def test_a_resumed_splitting_is_the_one_computed_at_once():
    m, B = rc.double_well(0.05)
    kw = dict(epsilon=0.1, b_level=0.75, replicas=50, seed=3)
    once = splitting(m, B, [-1.0], [1.0], 0.05, runs=4, **kw)
    half = splitting(m, B, [-1.0], [1.0], 0.05, runs=2, **kw)
    resumed = splitting(m, B, [-1.0], [1.0], 0.05, runs=2, resume=half, **kw)
    np.testing.assert_array_equal(resumed["probability"].values, once["probability"].values)
    assert float(resumed["mean_first_passage"]) == float(once["mean_first_passage"])
    assert once.attrs["replay_mismatches"] == 0 and once.attrs["complete"] == 1
    with pytest.raises(InputError, match="resume"):
        splitting(m, B, [-1.0], [1.0], 0.05, runs=1, resume=half, **{**kw, "replicas": 60})


@pytest.mark.slow
def test_splitting_and_direct_simulation_find_the_maps_exact_answers():
    """Double-well map, dt = 0.05, ε = 0.1: the committor from x0 = −0.79 by splitting and by direct trials, and the
    mean first-passage time by direct walkers and by the splitting's cycle formula, each within four of its standard
    errors of the map's exact values."""
    dt, eps, x0 = 0.05, 0.1, -0.79
    m, B = rc.double_well(dt)
    exact = rc.double_well_exact(dt, eps, x0)
    s = splitting(m, B, [-1.0], [1.0], dt, epsilon=eps, b_level=0.75, replicas=100, runs=8, x0=[x0], seed=1)
    assert abs(float(s["probability_mean"]) / exact["p"] - 1) < 4 * float(s["relative_error"])
    d = direct_transition(m, B, [-1.0], [1.0], dt, epsilon=eps, b_level=0.75, trials=50_000, x0=[x0], seed=1)
    assert abs(float(d["probability"]) / exact["p"] - 1) < 4 * float(d["relative_error"])
    f = first_passage_time(m, B, [-1.0], [1.0], dt, epsilon=eps, b_level=0.75, walkers=256, seed=1)
    assert f.attrs["status"] == "complete"
    assert abs(float(f["mean_first_passage"]) / exact["tau"] - 1) < 4 * float(f["relative_error"])
    c = splitting(m, B, [-1.0], [1.0], dt, epsilon=eps, b_level=0.75, replicas=200, runs=8, seed=1)
    half = (float(c["mean_first_passage_high"]) - float(c["mean_first_passage_low"])) / 2
    assert abs(float(c["mean_first_passage"]) - exact["tau"]) < 2 * half
    assert float(c["cost_direct_same_error"]) > 0 and float(c["cost_splitting"]) > 0


# ---------------------------------------------------------------------------------------------------------------
# the claims of attnphys verify

CLAIM_PERTURBATIONS = [
    ("ar1_quasi_potential_error", 1e-6),
    ("double_well_barrier_error", 1e-4),
    ("maier_stein_barrier_error", 1e-4),
    ("hessian_covariance_error", 0.1),
    ("splitting_direct_agreement_error", 0.5),
    ("splitting_small_probability_error", 1.0),
    ("double_well_escape_time_error", 0.3),
]


@pytest.mark.slow
@pytest.mark.parametrize("check, perturb", CLAIM_PERTURBATIONS)
def test_rare_event_claims_hold_and_fail_on_a_moved_prediction(check, perturb):
    from attnphys.verify import CLAIMS

    fn = getattr(rc, check)
    claim = next(c for c in CLAIMS if c.check is fn)
    assert fn(np.random.default_rng(1)) <= claim.tol
    assert fn(np.random.default_rng(2), perturb=perturb) > claim.tol


# ------------------------------------------------------------------------------------------------------------
# noise laws other than Gaussian (docs/theory/rare_events.md §1.3)

AR1 = autonomous(lambda x, p: 0.5 * x)


class _QuarticNoise(AbstractNoise):
    """σ = 1, ℓ(η) = ½η² + c η⁴: a law with the Gaussian quadratic part and a quartic tail; samples are Gaussian."""

    def __init__(self, c: float):
        self.c = c

    def factor(self, x, aux, params):
        return jnp.ones((1, 1), x.dtype)

    def rate(self, eta, x, aux, params):
        return 0.5 * eta @ eta + self.c * jnp.sum(eta**4)

    def __hash__(self):
        return hash((_QuarticNoise, self.c))

    def __eq__(self, other):
        return type(other) is _QuarticNoise and other.c == self.c


class _RademacherNoise(AbstractNoise):
    """Increments ±√ε: the same variance as the Gaussian law of factor 1, but bounded."""

    def factor(self, x, aux, params):
        return jnp.ones((1, 1), x.dtype)

    def sample(self, x, aux, params, key, scale):
        import jax

        return scale * (2.0 * jax.random.bernoulli(key, 0.5, (1,)).astype(x.dtype) - 1.0)

    def __hash__(self):
        return hash(_RademacherNoise)

    def __eq__(self, other):
        return type(other) is _RademacherNoise


@pytest.mark.parametrize("c", [0.0, 0.3])
def test_a_law_s_rate_is_the_action_it_minimises(c):
    """x' = x/2 + d from 0 to b = 1.5 in two steps: S = min_y ℓ(y) + ℓ(b − y/2), by scipy on the closed form; the
    discrete action of the returned path is the sum of the law's rates (and ½Σ η² for c = 0, the Gaussian law)."""
    from scipy.optimize import minimize_scalar

    law = _QuarticNoise(c)
    rate = lambda e: 0.5 * e * e + c * e**4  # noqa: E731
    exact = minimize_scalar(lambda y: rate(y) + rate(1.5 - 0.5 * y), bracket=(0.0, 1.5), tol=1e-14).fun
    ds = least_action_path(AR1, law, [0.0], [1.5], None, steps=2, max_steps=2, refine_a=False)
    assert abs(float(ds.action) - exact) < 1e-9 * exact
    da = discrete_action(AR1, law, ds.path.values, None)
    assert abs(float(da.action) - exact) < 1e-9 * exact
    eta = da.controls.values[:, 0]
    np.testing.assert_allclose(da.step_action.values, 0.5 * eta**2 + c * eta**4, rtol=1e-12)
    if c:  # the quartic tail costs more than the Gaussian reading of the same covariance
        gauss = least_action_path(AR1, [[1.0]], [0.0], [1.5], None, steps=2, max_steps=2, refine_a=False)
        assert float(ds.action) > float(gauss.action) * 1.05


def test_simulations_draw_from_the_law_s_sampler():
    """The noisy step of splitting and direct simulation adds the law's own increments: ±√ε for the Rademacher
    law (never another value), Gaussian ones of the same variance for the factor 1."""
    import jax

    from attnphys.dynamics._noisy import noise_function
    from attnphys.dynamics._splitting import _noisy_step

    key = jax.random.PRNGKey(3)
    x = jnp.asarray([0.2])
    steps = lambda law: np.array(  # noqa: E731
        [float(_noisy_step(AR1, noise_function(law), x, None, None, 0.3, key, s)[0][0]) for s in range(200)]
    )
    d = steps(_RademacherNoise()) - 0.1
    np.testing.assert_allclose(np.abs(d), 0.3, rtol=1e-12)
    assert 60 < int(np.sum(d > 0)) < 140
    g = steps([[1.0]]) - 0.1
    assert np.min(np.abs(np.abs(g) - 0.3)) > 1e-6 and 0.2 < float(np.std(g)) < 0.4
