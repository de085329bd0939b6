"""Noisy tokens on the sphere: the linear threshold K_#(β), the critical β_*(d), the Landau coefficient, the
integrator's weak order and the invariant law of two tokens; slow: the finite-n onset and hysteresis of the
coupling sweeps (docs/theory/noisy_particles.md)."""

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import iv
from scipy.stats import chi2

from attnphys.clouds import noisy as N
from attnphys.clouds.noisy_checks import (
    critical_beta_error,
    landau_branch_error,
    linear_threshold_error,
    sweep_acceptance_error,
    two_token_averages,
    two_token_exact,
    two_token_z,
)
from attnphys.errors import InputError


# -- closed forms against the quadrature route (§3–§5) -----------------------------------------------------
@pytest.mark.parametrize("dim", [2, 3, 4, 64, 128])
def test_linear_threshold_matches_the_zonal_spectrum(dim):
    b = np.array([0.5, 1.0, 2.5, 4.0])
    spec = N.zonal_spectrum(b, dim, 3)
    np.testing.assert_allclose(N.linear_threshold(b, dim), b / spec[:, 1], rtol=1e-10)
    np.testing.assert_allclose(N.linear_threshold(b, dim, "sa"), b * spec[:, 0] / spec[:, 1], rtol=1e-10)
    for k in range(3):
        np.testing.assert_allclose(N.harmonic_coefficient(b, k, dim), spec[:, k], rtol=1e-10)


def test_circle_threshold_is_beta_over_i1_and_half_the_papers_normalisation():
    b = np.array([0.3, 1.0, 3.0, 7.0])
    np.testing.assert_allclose(N.linear_threshold(b, 2), b / iv(1, b), rtol=1e-13)
    for d in (2, 3, 5):
        from scipy.special import gamma

        paper = b ** (d / 2) / (2 ** (d / 2) * gamma(d / 2) * iv(d / 2, b))
        np.testing.assert_allclose(N.linear_threshold(b, d), 2 * paper, rtol=1e-12)


@pytest.mark.parametrize("dim", [2, 3, 4, 64, 128])
def test_critical_beta_two_routes(dim):
    bs = N.critical_beta(dim)
    assert abs(bs - N.critical_beta_numeric(dim)) < 1e-10
    assert iv(dim / 2 + 1, bs) / iv(dim / 2, bs) == pytest.approx(1 / dim, rel=1e-12) or dim > 100
    a, B = N.landau_coefficients([0.9 * bs, 1.1 * bs], dim=dim)
    assert B[0] > 0 > B[1] and np.allclose(a, 0)


def test_critical_beta_published_values_and_large_d_limit():
    assert N.critical_beta(2) == pytest.approx(2.4469183112890, abs=1e-10)
    assert N.critical_beta(3) == pytest.approx(1.8161545254359, abs=1e-10)
    assert 1.0 < N.critical_beta(512) < 1.01


def test_claims_pass_and_fail_when_perturbed():
    rng = np.random.default_rng(3)
    assert linear_threshold_error(rng) < 1e-10
    assert critical_beta_error(rng) < 1e-10
    assert linear_threshold_error(rng, perturb=1e-6) > 1e-10
    assert critical_beta_error(rng, perturb=1e-6) > 1e-10


# -- §4 the free energy -------------------------------------------------------------------------------------
def test_landau_coefficient_predicts_the_mean_field_branch():
    err = landau_branch_error(np.random.default_rng(0))
    assert err < 0.01
    assert landau_branch_error(np.random.default_rng(0), perturb=0.1) > 0.03


def test_mean_field_branches_are_continuous_below_and_hysteretic_above():
    kl = float(N.linear_threshold(5.0, 2)[0])
    mf = N.mean_field_branches(5.0, kl * np.linspace(0.8, 1.1, 31), 2)
    assert 0.85 < float(mf.coupling_s) / kl < 0.95 and float(mf.coupling_s) < float(mf.coupling_c) < kl
    up, down = mf.magnetisation.sel(branch="up").values, mf.magnetisation.sel(branch="down").values
    assert np.all(up[mf.coupling.values < kl * 0.999] < 1e-6) and np.all(down[mf.coupling.values > 0.95 * kl] > 0.6)
    kl1 = float(N.linear_threshold(1.0, 2)[0])
    mf1 = N.mean_field_branches(1.0, kl1 * np.array([0.8, 0.9, 0.97, 1.03, 1.1]), 2)
    np.testing.assert_allclose(mf1.magnetisation.sel(branch="up"), mf1.magnetisation.sel(branch="down"), atol=1e-8)
    assert float(mf1.magnetisation.sel(branch="up")[3]) > 0.05


def test_phase_diagram_theory_places_the_first_order_line_below_the_threshold_above_beta_star():
    ds = N.noisy_phase_diagram([1.0, 5.0], 2)
    assert list(ds.discontinuous.values) == [False, True]
    assert float(ds.critical_beta) == pytest.approx(N.critical_beta(2))
    kl, kc, ks = ds.coupling_linear.values, ds.coupling_c.values, ds.coupling_s.values
    assert kc[0] == ks[0] == kl[0]
    assert 0.85 * kl[1] < ks[1] < kc[1] < kl[1]
    assert ds.attrs["attnphys_version"] and "simulate" in ds.attrs


def test_coupling_sweep_dataset_is_labelled_and_seeded():
    K = [0.2, 0.4, 0.6]
    a = N.coupling_sweep(1.0, K, tokens=8, replicas=2, t_relax=0.1, t_average=0.2, saves=2, seed=3, theory=False)
    b = N.coupling_sweep(1.0, K, tokens=8, replicas=2, t_relax=0.1, t_average=0.2, saves=2, seed=3, theory=False)
    assert a.magnetisation.dims == ("direction", "coupling", "replica")
    np.testing.assert_array_equal(a.magnetisation.values, b.magnetisation.values)
    assert all("long_name" in a[v].attrs for v in a.variables)
    assert a.attrs["seed"] == 3 and a.attrs["dt"] == 0.01 and a.attrs["attnphys_version"]
    assert np.all((a.magnetisation.values >= 0) & (a.magnetisation.values <= 1))


# -- §2 the particle system ---------------------------------------------------------------------------------
def test_order_parameters_of_coincident_antipodal_and_circle_clouds():
    x = np.tile([[0.0, 0.6, 0.8]], (5, 1))
    m, q = N.order_parameters(x)
    assert float(m) == pytest.approx(1.0) and float(q) == pytest.approx(1.0)
    m, q = N.order_parameters(np.array([[1.0, 0, 0], [-1.0, 0, 0]]))
    assert float(m) == pytest.approx(0.0, abs=1e-15) and float(q) == pytest.approx(1.0)
    th = np.random.default_rng(0).uniform(0, 2 * np.pi, 50)
    m, q = N.order_parameters(np.stack([np.cos(th), np.sin(th)], -1))
    assert float(q) == pytest.approx(abs(np.mean(np.exp(2j * th))), rel=1e-12)


def test_drift_is_tangent_and_is_the_gradient_of_the_energy():
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(1)
    X = rng.normal(size=(7, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    v = np.asarray(N.noisy_drift(X, 1.3, 0.7))
    assert np.max(np.abs(np.sum(v * X, 1))) < 1e-14

    def H(Y):
        return -0.7 / (2 * 7 * 1.3) * jnp.sum(jnp.exp(1.3 * Y @ Y.T))

    g = -np.asarray(jax.grad(H)(jnp.asarray(X)))
    g -= np.sum(g * X, 1, keepdims=True) * X
    np.testing.assert_allclose(v, g, atol=1e-13)


def test_weak_order_one_against_the_discrete_heat_kernel():
    """Zero drift: E⟨x_0, x_t⟩ = a(h)^{t/h} exactly for the scheme, e^{−(d−1)t} in the limit (§2.2)."""
    d, t, R = 3, 0.5, 20000
    X0 = np.tile(np.array([[0.0, 0.0, 1.0]]), (R, 1, 1))
    bias = []
    for h in (0.05, 0.025):
        ds = N.solve_noisy(X0, [t], beta=1.0, coupling=0.0, dt=h, seed=1, keep_cloud=True)
        c = ds.x.values[0, :, 0, 2]
        a = quad(lambda r, h=h: (1 + 2 * h * r) ** -0.5 * chi2.pdf(r, d - 1), 0, np.inf)[0]
        assert abs(c.mean() - a ** (t / h)) < 4 * c.std() / np.sqrt(R)
        bias.append(a ** (t / h) - np.exp(-(d - 1) * t))
    assert 0.75 < np.log2(bias[0] / bias[1]) < 1.25  # weak order 1


def test_two_tokens_reach_their_gibbs_law():
    per = two_token_averages(np.random.default_rng(0))
    assert two_token_z(per) < 4.0
    assert two_token_z(per, perturb=0.5) > 4.0 and two_token_z(per, perturb=-0.5) > 4.0
    assert two_token_exact(1.0, 2.0, 3) > 0.5  # attraction: above the value 1/2 of independent tokens


def test_bad_inputs_name_the_argument():
    for call, name in (
        (lambda: N.linear_threshold(-1.0), "beta"),
        (lambda: N.linear_threshold(1.0, 1), "dim"),
        (lambda: N.linear_threshold(1.0, 2, "softmax"), "dynamics"),
        (lambda: N.critical_beta(1), "dim"),
        (lambda: N.harmonic_coefficient(1.0, 3), "k"),
        (lambda: N.zonal_spectrum(1.0, 2, modes=10, nodes=5), "modes"),
        (lambda: N.mean_field_branches(1.0, [2.0, 1.0]), "couplings"),
        (lambda: N.solve_noisy(np.zeros((3, 2)), [1.0], beta=1.0, coupling=1.0), "X0"),
        (lambda: N.solve_noisy(np.eye(2), [1.0, 0.5], beta=1.0, coupling=1.0), "ts"),
        (lambda: N.solve_noisy(np.eye(2), [1.0], beta=1.0, coupling=1.0, dt=0.0), "dt"),
        (lambda: N.coupling_sweep(1.0, [0.1, 0.2]), "couplings"),
        (lambda: N.coupling_sweep(1.0, [0.1, 0.2, 0.3], tokens=1), "tokens"),
        (lambda: N.order_parameters(np.ones(3)), "X"),
    ):
        with pytest.raises(InputError) as e:
            call()
        assert name in str(e.value), (name, str(e.value))


# -- §6 finite-n sweeps (slow: about 1–2 minutes each on one core) ----------------------------------------
SWEEPS = [(2, 1.0), (2, 2.0), (2, 6.0), (2, 7.0), (3, 0.7), (3, 1.3), (3, 3.0), (3, 4.0)]


@pytest.mark.long  # minutes: `make test-all`
@pytest.mark.slow
@pytest.mark.parametrize(("dim", "beta"), SWEEPS)
def test_sweep_onset_below_and_hysteresis_only_above_beta_star(dim, beta):
    assert sweep_acceptance_error(dim, beta) == 0.0
