"""Exact periodic orbits and Floquet multipliers (theory: docs/theory/dynamics.md §5)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.dynamics._lyapunov import advance, lyapunov, sorted_exponents
from attnphys.dynamics.maps import EXAMPLES, LINEAR, LOGISTIC, FunctionMap
from attnphys.dynamics.periodic import (
    STORED_LENGTH,
    floquet,
    floquet_batch,
    floquet_direct,
    monodromy,
    refine,
    refine_batch,
)

NAMES = sorted(EXAMPLES)


@functools.cache
def _reference_orbit(name):
    """The reference periodic orbit of a map, refined (computed once per test process)."""
    m = EXAMPLES[name]
    rp = m.reference_points()["periodic"]
    x, aux = jax.jit(lambda x, a: advance(m, rp.params, rp.transient, 1, x, a)[:2])(jnp.asarray(rp.x, float), rp.aux)
    return m, rp, refine(m, x, aux, rp.params, rp.period)


# linear and rotation (fixed points of linear maps) are also covered by the specific tests below
_EVERY = [pytest.param(n, marks=[pytest.mark.slow, pytest.mark.long]) if n in ("linear", "rotation") else n for n in NAMES]


@pytest.mark.slow
@pytest.mark.parametrize("name", _EVERY)
def test_reference_orbit_of_every_map(name):
    """On every example map's reference periodic orbit Newton closes F^p(x) = x to machine precision, and
    the periodic-QR multipliers equal the eigenvalues of the explicit monodromy product ∂F^p/∂x."""
    m, rp, o = _reference_orbit(name)
    assert bool(o.converged) and bool(o.aux_closed)
    assert float(o.residual) <= 4 * np.finfo(float).eps
    x = o.x
    for _ in range(rp.period):
        x, _ = m.step(x, None, rp.params)
    np.testing.assert_allclose(x, o.x, atol=4e-16 * max(1.0, float(jnp.max(jnp.abs(o.x)))))
    f = floquet(m, o, params=rp.params)
    assert bool(f.converged)
    ev = np.linalg.eigvals(np.asarray(monodromy(m, o.x, None, rp.params, rp.period)))
    np.testing.assert_allclose(np.sort_complex(np.asarray(f.multipliers)), np.sort_complex(ev), atol=1e-12)
    np.testing.assert_allclose(np.asarray(f.exponents), np.asarray(f.log_abs) / rp.period)
    assert np.all(np.diff(np.asarray(f.log_abs)) <= 0)


# the long Benettin runs are slow for the maps whose orbit has D ≥ 3 or complex multipliers
_BENETTIN = [n if n in ("logistic", "henon", "bistable") else pytest.param(n, marks=[pytest.mark.slow, pytest.mark.long]) for n in NAMES]


@pytest.mark.slow
@pytest.mark.parametrize("name", _BENETTIN)
def test_floquet_exponents_equal_benettin_on_the_same_orbit(name):
    """λ_i = log|μ_i|/p exactly; a long Benettin run (10⁵ periods) on the same orbit agrees to 1e-6."""
    m, rp, o = _reference_orbit(name)
    f = floquet(m, o, params=rp.params)
    r = lyapunov(m, o.x, None, rp.params, steps=100_000 * rp.period, align=200 * rp.period)
    np.testing.assert_allclose(sorted_exponents(r.exponents), np.asarray(f.exponents), atol=1e-6)


@pytest.mark.parametrize("r", [3.1, 3.2, 3.3, 3.4, 3.44])
def test_logistic_period2_multiplier_closed_form(r):
    """μ = f'(x₁) f'(x₂) = −r² + 2r + 4 on the period-2 orbit x₁,₂ = (r + 1 ± √((r − 3)(r + 1)))/(2r)."""
    o = refine(LOGISTIC, jnp.array([0.5]), None, r, 2)
    x12 = (r + 1 + np.array([1, -1]) * np.sqrt((r - 3) * (r + 1))) / (2 * r)
    assert float(o.x[0]) == pytest.approx(x12[np.argmin(np.abs(x12 - float(o.x[0])))], abs=1e-15)
    mu = complex(floquet(LOGISTIC, o, params=r).multipliers[0])
    assert mu.imag == 0.0 and mu.real == pytest.approx(-r * r + 2 * r + 4, abs=1e-13)


@pytest.mark.slow
def test_long_strongly_contracting_orbit_does_not_underflow():
    """A fixed point seen as a period-300 orbit: the monodromy entries (1e-3)^300 = 1e-900 underflow, the
    periodic QR keeps log|μ| = 300 log|a_ii| exactly."""
    A = jnp.array([[1e-3, 0.7, 0.0], [0.0, 0.5, 0.0], [0.2, 0.0, -0.9]])
    f = floquet_batch(LINEAR, jnp.zeros((1, 300, 3)), None, A[None], [300])
    np.testing.assert_allclose(np.asarray(f.log_abs[0]), 300 * np.log([0.9, 0.5, 1e-3]), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(f.exponents[0]), np.log([0.9, 0.5, 1e-3]), rtol=1e-13)
    assert bool(f.converged[0])
    # the direct product underflows to exactly 0 there: what the periodic QR avoids
    assert np.linalg.matrix_power(np.asarray(A), 300)[0, 0] == 0.0


@pytest.mark.slow
def test_complex_and_equal_modulus_multipliers():
    """2×2 blocks: a rotation–scaling pair and two real multipliers of equal modulus ±0.9."""
    th = 0.3
    B = jnp.array(
        [[0.9 * np.cos(th), -0.9 * np.sin(th), 0.0], [0.9 * np.sin(th), 0.9 * np.cos(th), 0.0], [0.0, 0.0, 0.2]]
    )
    f = floquet(LINEAR, jnp.zeros((1, 3)), None, B, 1)
    np.testing.assert_allclose(
        np.sort_complex(np.asarray(f.multipliers)), np.sort_complex(np.linalg.eigvals(np.asarray(B))), atol=1e-14
    )
    C = jnp.array([[0.9, 1.0, 0.0], [0.0, -0.9, 0.0], [0.0, 0.3, 0.1]])
    f = floquet(LINEAR, jnp.zeros((1, 3)), None, C, 1)
    np.testing.assert_allclose(np.sort(np.asarray(f.multipliers).real), [-0.9, 0.1, 0.9], atol=1e-14)
    assert np.all(np.asarray(f.multipliers).imag == 0)


def _similar(eigenblocks, seed):
    """A matrix Q B Qᵀ with B block diagonal (1×1 reals, 2×2 rotation–scalings) and Q a seeded rotation."""
    B = np.zeros((sum(len(b) for b in eigenblocks),) * 2)
    i = 0
    for b in eigenblocks:
        B[i : i + len(b), i : i + len(b)] = b
        i += len(b)
    Q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=B.shape))
    return jnp.asarray(Q @ B @ Q.T)


def _pair(rho, th):
    return [[rho * np.cos(th), -rho * np.sin(th)], [rho * np.sin(th), rho * np.cos(th)]]


@pytest.mark.slow
@pytest.mark.parametrize("leading", [1, 2, 3])
def test_leading_multipliers_equal_the_full_iteration(leading):
    """``leading``: the periodic QR on a subspace of leading + 2 dimensions gives the leading multipliers of
    the full iteration (and the closed form) — with a complex pair at the boundary of the ones asked for."""
    A = _similar([[[0.9]], _pair(0.6, 0.7), [[0.4]], [[-0.3]], [[0.1]]], seed=1)
    exact = np.log([0.9, 0.6, 0.6, 0.4, 0.3, 0.1])
    full = floquet_batch(LINEAR, jnp.zeros((1, 5, 6)), None, A[None], [5])
    part = floquet_batch(LINEAR, jnp.zeros((1, 5, 6)), None, A[None], [5], leading=leading)
    assert part.log_abs.shape == (1, leading + 2) and bool(part.converged[0])
    np.testing.assert_allclose(np.asarray(part.log_abs[0, :leading]), 5 * exact[:leading], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(part.log_abs[0, :leading]), np.asarray(full.log_abs[0, :leading]), rtol=1e-12)
    np.testing.assert_allclose(
        np.abs(np.asarray(part.angle[0, :leading])), np.abs(np.asarray(full.angle[0, :leading])), atol=1e-12
    )


@pytest.mark.slow
def test_leading_iteration_stops_when_the_leading_block_has_converged():
    """``leading=1`` on |μ| = 0.9, 0.3, 0.299, 0.298: the leading direction separates in about 28 cycles
    (0.3/0.9 per cycle), the cluster behind it in thousands (0.299/0.3): the iteration stops with the first,
    exactly, and never ranks an unconverged estimate above it; the full iteration reaches its cap."""
    A = _similar([[[0.9]], [[0.3]], [[0.299]], [[0.298]]], seed=4)
    f = floquet_batch(LINEAR, jnp.zeros((1, 1, 4)), None, A[None], [1], max_cycles=500, leading=1)
    assert bool(f.converged[0]) and int(f.cycles[0]) < 40
    assert float(f.log_abs[0, 0]) == pytest.approx(np.log(0.9), rel=1e-12)
    assert np.all(np.asarray(f.log_abs[0, 1:]) <= float(f.log_abs[0, 0]))
    full = floquet_batch(LINEAR, jnp.zeros((1, 1, 4)), None, A[None], [1], max_cycles=500)
    assert not bool(full.converged[0]) and int(full.cycles[0]) == 500


def _T(**entries):
    """I (4×4) with the given entries set, e.g. ``_T(e31=1e-6)`` sets T[3, 1]."""
    T = np.eye(4)
    for k, v in entries.items():
        T[int(k[1]), int(k[2])] = v
    return T


@pytest.mark.parametrize(
    "T, first, log_abs, want",
    [
        (_T(), [0, 0, 0], [0.0, -1.0, -2.0, -3.0], 3),  # every boundary invariant; the last cannot be checked
        (_T(e31=1e-6), [0, 0, 0], [0.0, -1.0, -2.0, -3.0], 1),  # column 1 leaks into 3: only m = 1
        (_T(e20=1e-6), [0, 0, 0], [0.0, -1.0, -2.0, -3.0], 0),  # column 0 leaks into 2: nothing
        (_T(e31=1e-11, e20=1e-11), [0, 0, 0], [0.0, -1.0, -2.0, -3.0], 3),  # below the tolerance
        (_T(e32=1e-6), [0, 0, 0], [0.0, -1.0, -2.0, -3.0], 2),
        (_T(), [0, 0, 0], [0.0, -2.0, -1.0, -3.0], 1),  # column 1 does not dominate column 2: stop before
        (_T(e21=0.5), [0, 1, 0], [0.0, -1.0, -1.0, -3.0], 3),  # columns 1–2 a 2×2 block, kept whole
        (_T(e21=0.5), [0, 1, 0], [0.0, -1.0, -1.0, -0.5], 1),  # ... but the pair is below column 3
        (_T() * np.nan, [0, 0, 0], [0.0, -1.0, -2.0, -3.0], 0),
    ],
)
@pytest.mark.slow
def test_resolved_counts_the_certified_leading_columns(T, first, log_abs, want):
    """Which leading multipliers the periodic QR iteration has certified, from T = Q_0ᵀ Q_p: the leading m
    columns in block triangular form (every boundary up to m invariant, no 2×2 block split) and descending."""
    from attnphys.dynamics.periodic import RESOLVED_TOL, _resolved

    got = _resolved(jnp.asarray(T), jnp.asarray(first, bool), jnp.asarray(log_abs), RESOLVED_TOL, False)
    assert int(got) == want
    # columns spanning the whole space: the last boundary holds whenever the ones before it do
    whole = _resolved(jnp.asarray(T), jnp.asarray(first, bool), jnp.asarray(log_abs), RESOLVED_TOL, True)
    assert int(whole) == (4 if want == 3 else want)


@pytest.mark.slow
def test_clustered_leading_multipliers_are_not_resolved():
    """|μ| = 0.9, 0.5, 0.4999, 0.4998, 0.1 in 60 cycles: the first separates (0.56⁶⁰ ≈ 1e-15), the cluster
    behind it does not (three moduli 2e-4 apart, too many for a 2×2 block); ``resolved`` says 1, so no
    caller reads an unconverged second modulus, and the iteration for the first alone stops early. A leading
    complex pair counts as two, resolved together."""
    A = _similar([[[0.9]], [[0.5]], [[0.4999]], [[0.4998]], [[0.1]]], seed=5)
    f = floquet_batch(LINEAR, jnp.zeros((1, 1, 5)), None, A[None], [1], max_cycles=60, leading=2)
    assert int(f.resolved[0]) == 1 and int(f.cycles[0]) == 60
    assert float(f.log_abs[0, 0]) == pytest.approx(np.log(0.9), rel=1e-12)
    g = floquet_batch(LINEAR, jnp.zeros((1, 1, 5)), None, A[None], [1], max_cycles=60, leading=1)
    assert int(g.resolved[0]) >= 1 and int(g.cycles[0]) < 60
    assert float(g.log_abs[0, 0]) == pytest.approx(np.log(0.9), rel=1e-12)
    P = _similar([_pair(0.9, 0.7), [[0.3]], [[0.2]], [[0.1]]], seed=6)
    h = floquet_batch(LINEAR, jnp.zeros((1, 1, 5)), None, P[None], [1], max_cycles=200, leading=1)
    assert int(h.resolved[0]) >= 2
    np.testing.assert_allclose(np.asarray(h.log_abs[0, :2]), np.log([0.9, 0.9]), rtol=1e-12)
    np.testing.assert_allclose(np.abs(np.asarray(h.angle[0, :2])), [0.7, 0.7], rtol=1e-12)


def test_cycle_caps_per_orbit():
    """``max_cycles`` per orbit: the same slow orbit (moduli 1 % apart) stops at its own cap, 5 cycles or
    converged within 2000; the result under the larger cap is the one of a common cap."""
    slow = _similar([[[0.9]], [[0.891]], [[0.2]]], seed=2)
    two = floquet_batch(LINEAR, jnp.zeros((2, 1, 3)), None, jnp.stack([slow, slow]), [1, 1], max_cycles=[5, 2000])
    assert np.asarray(two.converged).tolist() == [False, True] and int(two.cycles[0]) == 5
    one = floquet_batch(LINEAR, jnp.zeros((1, 1, 3)), None, slow[None], [1], max_cycles=2000)
    np.testing.assert_array_equal(np.asarray(two.log_abs[1]), np.asarray(one.log_abs[0]))
    with pytest.raises(ValueError, match="max_cycles"):
        floquet_batch(LINEAR, jnp.zeros((1, 1, 3)), None, slow[None], [1], max_cycles=0)
    with pytest.raises(ValueError, match="one per orbit"):
        floquet_batch(LINEAR, jnp.zeros((1, 1, 3)), None, slow[None], [1], max_cycles=[5, 6])


def test_newton_stops_at_round_off_when_m_minus_i_is_ill_conditioned():
    """A fixed point of x' = A x + b with a multiplier 1 − 10⁻⁷: (M − I)⁻¹ amplifies the rounding of G to
    steps of ~10⁻¹⁰, far above 4ε; Newton stops once its steps stop halving, not at ``max_iter``."""
    A = _similar([[[1 - 1e-7]], [[0.5]], [[-0.3]]], seed=0)
    b = jnp.asarray([0.3, -1.0, 2.0])
    m = FunctionMap(step=lambda x, a, p: (p @ x + b, a))
    exact = np.linalg.solve(np.eye(3) - np.asarray(A), np.asarray(b))
    o = refine_batch(m, jnp.asarray(exact + 1e-6)[None], None, A[None], [1], max_iter=30)
    assert bool(o.converged[0]) and int(o.iterations[0]) <= 5
    np.testing.assert_allclose(np.asarray(o.x[0]), exact, rtol=1e-8)


def test_slow_orbits_are_iterated_past_the_first_pass():
    """An orbit whose leading moduli differ by 1 % needs hundreds of cycles; in a batch with fast ones it is
    iterated again after the first pass (up to ``max_cycles``) and converges, the fast ones stay as they were
    (bitwise what they give alone)."""
    from attnphys.dynamics.periodic import FIRST_CYCLES

    slow = _similar([[[0.9]], [[0.891]], [[0.2]]], seed=2)
    fast = _similar([[[0.9]], [[1e-3]], [[1e-6]]], seed=3)
    both = floquet_batch(LINEAR, jnp.zeros((2, 1, 3)), None, jnp.stack([fast, slow]), [1, 1], max_cycles=2000)
    assert np.all(np.asarray(both.converged))
    assert int(both.cycles[0]) <= FIRST_CYCLES < int(both.cycles[1])
    np.testing.assert_allclose(np.asarray(both.log_abs[1]), np.log([0.9, 0.891, 0.2]), rtol=1e-12)
    alone = floquet_batch(LINEAR, jnp.zeros((1, 1, 3)), None, fast[None], [1], max_cycles=2000)
    np.testing.assert_array_equal(np.asarray(both.log_abs[0]), np.asarray(alone.log_abs[0]))


def test_refine_batch_mixes_periods():
    """Logistic r = 3.5 (period 4) and r = 3.2 (period 2) refined in one padded call."""
    x = jnp.array([[0.5], [0.5]])
    out = refine_batch(LOGISTIC, x, None, jnp.array([3.5, 3.2]), [4, 2])
    assert np.all(np.asarray(out.converged)) and out.points.shape == (2, STORED_LENGTH, 1)
    assert np.all(np.isnan(np.asarray(out.points)[1, 2:]))
    f = floquet_batch(LOGISTIC, out.points, None, jnp.array([3.5, 3.2]), [4, 2])
    assert complex(f.multipliers[1, 0]).real == pytest.approx(-(3.2**2) + 2 * 3.2 + 4, abs=1e-13)


def test_one_compiled_program_for_all_stored_periods():
    """Periods 2, 4 and 8 (three groups of chunks) go through one compiled Newton and one Floquet program:
    the stored length is the same for every period up to STORED_LENGTH; the multipliers are the logistic
    map's closed forms (period 2: 4 + 2r − r²)."""
    import attnphys.dynamics.periodic as periodic

    r = jnp.array([3.2, 3.5, 3.55])
    x = jnp.full((3, 1), 0.5)
    before = periodic._refine_many._cache_size(), periodic._floquet_many._cache_size()
    out = refine_batch(LOGISTIC, x, None, r, [2, 4, 8])
    f = floquet_batch(LOGISTIC, out.points, None, r, np.asarray(out.period))
    after = periodic._refine_many._cache_size(), periodic._floquet_many._cache_size()
    assert np.asarray(out.period).tolist() == [2, 4, 8] and np.all(np.asarray(out.converged))
    assert after[0] - before[0] <= 1 and after[1] - before[1] <= 1
    assert complex(f.multipliers[0, 0]).real == pytest.approx(4 + 2 * 3.2 - 3.2**2, abs=1e-13)
    for i in range(3):  # the product of the derivatives r(1 − 2x) along each orbit
        pts = np.asarray(out.points)[i, : int(out.period[i]), 0]
        assert complex(f.multipliers[i, 0]).real == pytest.approx(np.prod(float(r[i]) * (1 - 2 * pts)), rel=1e-12)


def test_auxiliary_state_must_close():
    """x' = −x driven by a counter a' = (a + 1) mod 4: x has period 2 but the full state (x, a) period 4."""
    m = FunctionMap(step=lambda x, a, p: (-0.5 * x + 1.0 + 0.0 * a, (a + 1) % 4))
    o = refine(m, jnp.array([0.3]), jnp.asarray(0), None, 1)
    assert int(o.period) == 4 and bool(o.aux_closed) and bool(o.converged)
    assert float(o.x[0]) == pytest.approx(2 / 3, abs=1e-15)


def test_refinement_reduces_to_the_minimal_period():
    """A period-2 orbit refined as period 4 (lag 2p, as an approach alternating in sign is first detected)
    comes back with period 2; a fixed point asked for as period 3 with period 1."""
    out = refine_batch(LOGISTIC, jnp.array([[0.5], [0.6]]), None, jnp.array([3.2, 2.8]), [4, 3])
    assert np.asarray(out.period).tolist() == [2, 1]
    assert np.all(np.isnan(np.asarray(out.points)[0, 2:])) and np.all(np.isfinite(np.asarray(out.points)[0, :2]))
    assert float(out.x[1, 0]) == pytest.approx(1 - 1 / 2.8, abs=1e-15)


@pytest.mark.slow
@pytest.mark.parametrize("period", [1, 4])
def test_direct_multipliers_where_the_iteration_runs_out_of_cycles(period):
    """Moduli 1 % apart and a complex pair of equal modulus: in 5 cycles the periodic QR iteration does not
    separate them, the eigenvalues of the monodromy (A^p) do, to round-off, and say so."""
    A = _similar([[[0.9]], [[0.891]], _pair(0.5, 0.4), [[0.2]]], seed=5)
    exact = period * np.log([0.9, 0.891, 0.5, 0.5, 0.2])
    it = floquet_batch(LINEAR, jnp.zeros((1, period, 5)), None, A[None], [period], max_cycles=5)
    assert not bool(it.converged[0])
    f = floquet_direct(LINEAR, jnp.zeros((1, period, 5)), None, A[None], [period])
    assert bool(f.converged[0]) and int(f.cycles[0]) == 0
    np.testing.assert_allclose(f.log_abs[0], exact, rtol=1e-12)
    np.testing.assert_allclose(f.exponents[0], exact / period, rtol=1e-12)
    np.testing.assert_allclose(np.abs(f.angle[0, 2:4]), period * 0.4, rtol=1e-12)
    np.testing.assert_allclose(
        np.sort_complex(f.multipliers[0]),
        np.sort_complex(np.linalg.eigvals(np.linalg.matrix_power(np.asarray(A), period))),
        atol=1e-13,
    )


def test_direct_multipliers_refuse_what_floating_point_cannot_resolve():
    """The period-300 orbit whose smallest multiplier is 1e-900: the normalised monodromy keeps only its
    leading multipliers, so all of them are refused, the leading one alone is resolved (and exact); the
    periodic QR iteration resolves every one."""
    A = jnp.array([[1e-3, 0.7, 0.0], [0.0, 0.5, 0.0], [0.2, 0.0, -0.9]])
    f = floquet_direct(LINEAR, jnp.zeros((1, 300, 3)), None, A[None], [300])
    assert not bool(f.converged[0])
    one = floquet_direct(LINEAR, jnp.zeros((1, 300, 3)), None, A[None], [300], leading=1)
    assert bool(one.converged[0])
    assert float(one.log_abs[0, 0]) == pytest.approx(300 * np.log(0.9), rel=1e-13)
    with pytest.raises(ValueError, match="leading"):
        floquet_direct(LINEAR, jnp.zeros((1, 300, 3)), None, A[None], [300], leading=0)


@pytest.mark.slow
@pytest.mark.parametrize("D, k", [(12, 5), (12, 12), (5, 1), (4, 4)])
def test_householder_qr_is_a_qr_factorisation(D, k):
    """householder_qr gives A = QR with orthonormal Q and upper triangular R, |R_ii| as LAPACK's, also
    under vmap; a column that is zero from its diagonal on gives R_ii = 0 exactly and Q stays orthonormal."""
    from attnphys.dynamics._linalg import householder_qr

    rng = np.random.default_rng(D * 100 + k)
    A = rng.normal(size=(8, D, k)) * np.exp(rng.normal(size=(8, 1, k)) * 3)
    Q, R = jax.vmap(householder_qr)(jnp.asarray(A))
    Q, R = np.asarray(Q), np.asarray(R)
    eye = np.broadcast_to(np.eye(k), (8, k, k))
    np.testing.assert_allclose(np.swapaxes(Q, 1, 2) @ Q, eye, atol=1e-14)
    np.testing.assert_array_equal(np.tril(R, -1), 0.0)
    scale = np.linalg.norm(A, axis=(1, 2))[:, None, None]
    np.testing.assert_allclose((Q @ R) / scale, A / scale, atol=1e-15)
    r_lapack = np.abs(np.diagonal(np.linalg.qr(A)[1], axis1=1, axis2=2))
    np.testing.assert_allclose(np.abs(np.diagonal(R, axis1=1, axis2=2)), r_lapack, rtol=1e-12)

    B = A[0].copy()
    B[:, 0] = 0.0  # annihilated direction
    if k > 2:
        B[:, 2] = B[:, 1] * 3.0  # exactly dependent in exact arithmetic only
    q, r = map(np.asarray, householder_qr(jnp.asarray(B)))
    assert r[0, 0] == 0.0
    np.testing.assert_allclose(q.T @ q, np.eye(k), atol=1e-14)
    np.testing.assert_allclose(q @ r, B, atol=1e-13 * np.linalg.norm(B))


def _eig2_exact(T, P):
    """Eigenvalues of the product T P of real 2×2 matrices in 60-digit decimal arithmetic (the entries
    taken exactly, the product formed exactly)."""
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 60
        t = [[Decimal(float(v)) for v in row] for row in np.asarray(T)]
        q = [[Decimal(float(v)) for v in row] for row in np.asarray(P)]
        a, b, c, d = (sum(t[i][j] * q[j][l] for j in range(2)) for i in range(2) for l in range(2))
        tr, det = a + d, a * d - b * c
        disc = tr * tr / 4 - det
        if disc >= 0:
            s = disc.sqrt()
            return np.array([complex(tr / 2 + s), complex(tr / 2 - s)])
        s = (-disc).sqrt()
        return np.array([complex(float(tr / 2), float(s)), complex(float(tr / 2), -float(s))])


@pytest.mark.parametrize(
    "T, P, rtol",
    [
        # two real multipliers whose moduli differ by e^25: the textbook formula loses the smaller one
        ([[1.0, 3e-14], [-3e-14, 1.0]], [[1.0, 0.6], [0.0, 1.4e-11]], 1e-13),
        ([[0.8, -0.6], [0.6, 0.8]], [[-0.9, 0.2], [0.0, 2e-9]], 1e-13),
        # a complex pair (a rotation of equal moduli)
        ([[0.6, -0.8], [0.8, 0.6]], [[0.5, 0.0], [0.0, 0.5]], 1e-13),
        # a nearly defective pair: its eigenvalues move by ~√ε, its moduli (√det) do not
        ([[1.0, 1e-9], [-1e-9, 1.0]], [[0.7, 0.3], [0.0, 0.69999]], 1e-10),
        # singular: one zero multiplier, then both
        ([[1.0, 0.0], [0.0, 1.0]], [[0.3, 0.4], [0.0, 0.0]], 1e-13),
        ([[0.0, 1.0], [1.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]], 1e-13),
    ],
)
def test_block_eigenvalues_have_full_relative_accuracy(T, P, rtol):
    """The eigenvalues of a 2×2 block T_bb ∏R_bb (§5.2) against 60-digit arithmetic: moduli to 1e-13
    relative to each, values to ``rtol``, also when the two moduli differ by e^25 (the quadratic formula
    alone is off by ~1e-5 there)."""
    from attnphys.dynamics.periodic import _block_eigenvalues

    T, P = np.asarray(T, float), np.asarray(P, float)
    nu1, nu2 = (np.asarray(v)[0] for v in _block_eigenvalues(jnp.asarray(T)[None], jnp.asarray(P)[None]))
    want = sorted(_eig2_exact(T, P), key=lambda z: -abs(z))
    got = sorted([nu1, nu2], key=lambda z: -abs(z))
    assert abs(nu1) >= abs(nu2)
    for g, w in zip(got, want):
        assert abs(abs(g) - abs(w)) <= 1e-13 * abs(w), (g, w)
        assert abs(g - w) <= rtol * abs(w), (g, w)


def test_radius_bound_of_a_nilpotent_monodromy_is_below_one():
    """ρ(M) ≤ ‖Mⁿ‖^{1/n} (Gelfand): a norm of 50 alone decides nothing; the square of a nilpotent matrix
    vanishes and the bound falls to round-off, while a matrix with ρ > 1 is never bounded below its radius."""
    from attnphys.dynamics._linalg import radius_bound

    N = np.array([[0.0, 50.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1e-30]])
    log_b, n = radius_bound(N)
    assert np.linalg.norm(N, 2) == 50.0 and np.exp(log_b) < 1e-5 and n >= 2
    rng = np.random.default_rng(0)
    for rho in (0.5, 1.2, 3.0):  # non-normal matrices of known spectral radius
        T = np.triu(rng.standard_normal((6, 6)) * 20.0, 1) + np.diag(rho * np.linspace(1.0, 0.1, 6))
        V = rng.standard_normal((6, 6))
        M = V @ T @ np.linalg.inv(V)
        log_b, _ = radius_bound(M)
        assert np.exp(log_b) >= rho * (1 - 1e-9)
        assert np.exp(log_b) <= np.linalg.norm(M, 2) * (1 + 1e-12)
    assert radius_bound(np.zeros((2, 2)))[0] == -np.inf
    assert radius_bound(np.array([[np.inf]]))[0] == np.inf
