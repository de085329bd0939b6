"""The quantitative theory of the particle flow (docs/theory/particles.md §7–9): growth rates of the modes of
the uniform cloud, the first cluster count, equiangular collapse and critical attention scaling."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import eval_gegenbauer, iv

from attnphys.clouds import (
    SoftmaxAttention,
    UnnormalisedAttention,
    chunked_attention_mean_cosine,
    collapse_time,
    critical_scaling,
    equiangular_collapse,
    equiangular_start,
    first_cluster_count,
    limit_cosine,
    mode_growth_rates,
    output_cosine,
    velocity,
)
from attnphys.clouds._instability import first_plateau, funk_hecke
from attnphys.errors import InputError


# -- §7 instability of the uniform cloud --------------------------------------------------------------
@pytest.mark.parametrize("dim", [3, 4, 5])
def test_funk_hecke_eigenvalue_is_the_gegenbauer_quadrature(dim):
    lam = (dim - 2) / 2
    w = lambda t: (1 - t * t) ** ((dim - 3) / 2)  # noqa: E731
    norm = quad(w, -1, 1)[0]
    for beta in (0.7, 4.0):
        for k in range(5):
            c1 = eval_gegenbauer(k, lam, 1.0)
            ref = quad(lambda t, k=k, b=beta, c=c1: np.exp(b * t) * eval_gegenbauer(k, lam, t) / c * w(t), -1, 1)[0]
            ref /= norm
            assert funk_hecke(np.array([beta]), np.array([k]), dim)[0, 0] == pytest.approx(ref, rel=1e-9)


def test_circle_rates_are_k2_bessel():
    ds = mode_growth_rates([0.5, 5.0], dim=2, modes=8)
    k = np.arange(1, 9)
    for b in (0.5, 5.0):
        np.testing.assert_allclose(ds.rate.sel(beta=b), k**2 * iv(k, b) / (b * iv(0, b)), rtol=1e-12)
    usa = mode_growth_rates(5.0, dim=2, dynamics="usa", modes=8)
    np.testing.assert_allclose(usa.rate.values[0], k**2 * iv(k, 5.0) / 5.0, rtol=1e-12)
    assert int(ds.fastest_mode.sel(beta=5.0)) == 3  # the published three clusters at beta = 5


@pytest.mark.parametrize("dynamics", ["sa", "usa"])
def test_lattice_linearisation_of_the_flow_gives_the_rates(dynamics):
    """The library's velocity, linearised by automatic differentiation at n equally spaced tokens on the
    circle: mode k of the angle perturbation grows at λ_k (a Riemann sum of the mean-field integral)."""
    n, beta = 32, 3.0
    attn = (SoftmaxAttention if dynamics == "sa" else UnnormalisedAttention)(beta=beta)

    def angular_velocity(th):
        X = jnp.stack([jnp.cos(th), jnp.sin(th)], -1)
        V = velocity(attn, X)
        return -V[:, 0] * jnp.sin(th) + V[:, 1] * jnp.cos(th)

    th0 = 2 * jnp.pi * jnp.arange(n) / n
    J = np.asarray(jax.jit(jax.jacfwd(angular_velocity))(th0))
    rates = mode_growth_rates(beta, dim=2, dynamics=dynamics, modes=6).rate.values[0]
    for k in range(1, 7):
        mode = np.cos(k * np.asarray(th0))
        np.testing.assert_allclose(J @ mode, rates[k - 1] * mode, atol=1e-10)


@pytest.mark.parametrize("dim", [2, 3, 6])
def test_small_beta_limit_is_one_cluster(dim):
    ds = mode_growth_rates(1e-6, dim=dim, modes=4)
    assert float(ds.rate[0, 0]) == pytest.approx((dim - 1) / dim, rel=1e-5)
    assert int(ds.fastest_mode[0]) == 1 and float(ds.rate[0, 1]) < 1e-5


def test_fastest_mode_grows_with_beta():
    k = mode_growth_rates(np.linspace(0.5, 40, 80), dim=2).fastest_mode.values
    assert np.all(np.diff(k) >= 0) and k[0] == 1 and k[-1] > 5


def test_first_plateau_reads_the_first_held_count():
    counts = np.array([[50, 50, 7, 3, 3, 3, 2, 2], [50, 4, 4, 4, 1, 1, 1, 1], [50, 9, 8, 7, 6, 5, 4, 3]])
    np.testing.assert_array_equal(first_plateau(counts, 50, 3), [3, 4, -1])


@pytest.mark.slow
@pytest.mark.long
def test_first_cluster_count_on_the_circle_at_beta_5():
    ds = first_cluster_count(5.0, samples=4)
    assert int(ds.predicted[0]) == 3 and float(ds.agree[0]) == 1.0
    assert 0 < float(ds.agree_low[0]) < 1.0 == float(ds.agree_high[0])


def test_instability_refuses_bad_arguments():
    with pytest.raises(InputError, match="beta"):
        mode_growth_rates(0.0)
    with pytest.raises(InputError, match="dynamics"):
        mode_growth_rates(1.0, dynamics="sinkhorn")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="tokens"):
        first_cluster_count(1.0, tokens=2)


# -- §8 equiangular collapse --------------------------------------------------------------------------
@pytest.mark.slow
def test_equiangular_ode_closed_form_at_beta_0():
    n, r0 = 8, 0.1
    ds = equiangular_collapse(0.0, tokens=n, rho0=r0, t_max=6.0, saves=31, simulate=False)
    u = (1 + (n - 1) * r0) / (1 - r0) * np.exp(2 * ds.time.values)
    np.testing.assert_allclose(ds.cosine.values, (u - 1) / (u + n - 1), atol=1e-9)
    usa = equiangular_collapse(0.0, tokens=n, rho0=r0, t_max=6.0, saves=31, simulate=False, dynamics="usa")
    np.testing.assert_allclose(usa.cosine.values, ds.cosine.values, atol=1e-9)  # p = 1/n for both


@pytest.mark.slow
@pytest.mark.parametrize("dynamics", ["sa", "usa"])
def test_the_n_token_flow_follows_the_ode(dynamics):
    ds = equiangular_collapse(2.0, tokens=6, rho0=-0.1, t_max=4.0, saves=21, dynamics=dynamics)
    assert float(ds.deviation) < 1e-8
    assert float(ds.cosine[-1]) > float(ds.cosine[0])  # the cosine only grows


def test_collapse_time_is_the_crossing_of_the_ode():
    T = float(collapse_time(3.0, tokens=10, rho0=0.2, threshold=0.99)[0])
    ds = equiangular_collapse(3.0, tokens=10, rho0=0.2, t_max=T, saves=2, simulate=False)
    assert float(ds.cosine[-1]) == pytest.approx(0.99, abs=1e-8)
    # larger beta: slower collapse under SA, faster under USA (p = e^{βρ}/n grows with β for ρ > 0)
    sa = collapse_time([1.0, 3.0, 6.0], tokens=10, rho0=0.2, threshold=0.99)
    usa = collapse_time([1.0, 3.0, 6.0], tokens=10, rho0=0.2, threshold=0.99, dynamics="usa")
    assert np.all(np.diff(sa) > 0) and np.all(np.diff(usa) < 0)


def test_equiangular_start_and_bad_rho0():
    X = equiangular_start(5, 0.3)
    G = X @ X.T
    np.testing.assert_allclose(G, 0.7 * np.eye(5) + 0.3, atol=1e-12)
    with pytest.raises(InputError, match="rho0"):
        collapse_time(1.0, tokens=5, rho0=-0.3)


# -- §9 critical attention scaling --------------------------------------------------------------------
def test_chunked_attention_on_an_exact_simplex_matches_the_closed_form():
    n, rho = 150, 0.4
    X = jnp.asarray(equiangular_start(n, rho))
    for g in (0.8, 1.0 / (1 - rho), 3.0):
        want = float(output_cosine(g, n, rho))
        assert chunked_attention_mean_cosine(X, g * np.log(n), 32) == pytest.approx(want, abs=1e-12)
        assert chunked_attention_mean_cosine(X, g * np.log(n), 1000) == pytest.approx(want, abs=1e-12)


def test_three_limits_and_the_critical_gamma():
    rho = 0.5
    gc = 1 / (1 - rho)
    n = 1e14
    assert float(output_cosine(0.7 * gc, n, rho)) == pytest.approx(1.0, abs=1e-3)
    assert float(output_cosine(1.5 * gc, n, rho)) == pytest.approx(rho, abs=1e-3)
    assert float(output_cosine(gc, n, rho)) == pytest.approx(4 * rho / (1 + 3 * rho), abs=1e-6)
    np.testing.assert_allclose(limit_cosine([1.0, gc, 3.0], rho), [1.0, 0.8, 0.5])
    # beta = 0: every output is the mean, cosine 1; n = 2 at any gamma is a valid cosine in [rho, 1]
    c = output_cosine(np.linspace(0.1, 10, 50), 2, rho)
    assert np.all((c >= rho - 1e-12) & (c <= 1 + 1e-12))


@pytest.mark.slow
def test_critical_scaling_dataset_and_measurement():
    ds = critical_scaling([1.0, 3.0], [64, 200], rho=0.5, dim=64, chunk=50)
    assert float(ds.gamma_c) == 2.0 and ds.measured.shape == (2, 2)
    np.testing.assert_allclose(ds.measured.values, ds.predicted.values, atol=0.1)
    with pytest.raises(InputError, match="rho"):
        critical_scaling(1.0, 10, rho=1.0)


# -- §10 staircase energy and merge order --------------------------------------------------------------
def test_cluster_energy_of_point_clusters_is_the_interaction_energy():
    from attnphys.clouds import cluster_energy, interaction_energy
    from attnphys.clouds._staircase import cluster_labels

    rng = np.random.default_rng(0)
    Z = rng.normal(size=(4, 3))
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    X = Z[rng.integers(0, 4, size=40)]
    lab = cluster_labels(X, 1e-6)
    E, m, _ = cluster_energy(X, lab, 2.5)
    assert E == pytest.approx(float(interaction_energy(jnp.asarray(X), 2.5)), rel=1e-12)
    assert m.sum() == pytest.approx(1.0)
    # k equal clusters equally spaced on the circle: E = Σ_j e^{β cos(2πj/k)} / (2βk)
    k, beta = 5, 3.0
    th = 2 * np.pi * np.repeat(np.arange(k), 3) / k
    X = np.stack([np.cos(th), np.sin(th)], 1)
    want = np.sum(np.exp(beta * np.cos(2 * np.pi * np.arange(k) / k))) / (2 * beta * k)
    assert cluster_energy(X, cluster_labels(X, 1e-6), beta)[0] == pytest.approx(want, rel=1e-12)


def test_staircase_energies_and_the_first_merge():
    from attnphys.clouds import staircase

    ds = staircase(6.0, tokens=32, dim=2, t_max=120.0, saves=241, seed=1)
    np.testing.assert_allclose(ds.energy, ds.energy_predicted, rtol=1e-6)
    assert np.all(np.diff(ds.energy.values) > 0)  # the energy of the staircase rises at every merge
    assert ds.clusters.values.tolist()[:2] == [3, 2] and int(ds.closest_merged[0]) == 1


# -- §11 normalization placements -----------------------------------------------------------------------
@pytest.mark.parametrize("dynamics", ["sa", "usa"])
def test_reduced_equations_are_the_placed_velocities_at_an_equiangular_cloud(dynamics):
    from attnphys.clouds import PLACEMENTS
    from attnphys.clouds._normalization import placed_velocity, reduced_field

    n, rho, beta = 5, 0.3, 1.3
    attn = (SoftmaxAttention if dynamics == "sa" else UnnormalisedAttention)(beta=beta)
    for pl, t in [(p, 0.0) for p in PLACEMENTS] + [("mix", 3.0), ("sqrt", 3.0)]:
        r = 1.0 if pl in ("post", "ngpt", "mix") and t == 0 else 1.7  # these live on the sphere
        X = jnp.asarray(r * equiangular_start(n, rho))
        V = placed_velocity(attn, X, pl, t, 0.7)
        U = X / r
        dU = (V - jnp.sum(V * U, 1, keepdims=True) * U) / r  # d/dt of the directions
        dG = dU @ U.T + U @ dU.T
        dr = jnp.sum(V * U, 1)
        g_dot, r_dot = reduced_field(jnp.asarray([1 - rho, r]), beta, n, pl, dynamics, t, 0.7)
        np.testing.assert_allclose(-dG[~np.eye(n, dtype=bool)], float(g_dot), atol=1e-12)
        np.testing.assert_allclose(dr, float(r_dot), atol=1e-12)
    # peri-LN normalises the sublayer's output: SA and USA give the same flow
    a = placed_velocity(SoftmaxAttention(beta=beta), X, "peri")
    np.testing.assert_allclose(a, placed_velocity(UnnormalisedAttention(beta=beta), X, "peri"), atol=1e-12)


@pytest.mark.slow
@pytest.mark.long
def test_decay_laws_of_the_placements():
    from attnphys.clouds import normalization_decay

    ds = normalization_decay(1.0, tokens=6, t_max=4000.0, saves=600, spacing="log", simulate=False)
    f, h = ds.fitted.values, ds.fitted_halfwidth.values
    assert list(ds.law.values) == ["exponential", "power", "power", "exponential", "power", "power"]
    assert abs(f[0] - 2.0) < 1e-3 and np.all(np.abs(f[1:3] - 2.0) < 0.03) and np.all(h[:4] < 1e-3)
    assert abs(f[3] - 2.0) < 1e-3 and abs(f[4] - 2.0) < 0.03 and abs(f[5] - 1.0) < 0.05  # ngpt, mix, sqrt
    # post-LN and nGPT keep the norm; pre-LN grows it linearly near collapse, √-scaling as 2√t
    n = ds.norm
    assert np.allclose(n.sel(placement="post"), 1.0) and np.allclose(n.sel(placement="ngpt"), 1.0)
    pre = n.sel(placement="pre").interp(time=[3000.0, 4000.0]).values
    sq = n.sel(placement="sqrt").interp(time=[1000.0, 4000.0]).values
    assert (
        0.9 < (pre[1] - pre[0]) / 1000.0 < 1.01 and 0.9 < (sq[1] - sq[0]) / (2 * (np.sqrt(4000) - np.sqrt(1000))) < 1.01
    )


@pytest.mark.slow
@pytest.mark.long
def test_the_placed_n_token_flows_follow_the_reduced_equations():
    from attnphys.clouds import normalization_decay

    # the fit window reaches 1e-1: the sqrt placement's power law stays above 1e-2 for most of t ≤ 30
    ds = normalization_decay(1.0, tokens=5, t_max=30.0, saves=121, rtol=1e-9, atol=1e-13, fit_range=(1e-8, 1e-1))
    assert np.all(ds.deviation.values < 1e-6)


# -- §7.2 the scope of the first-cluster-count law ----------------------------------------------------
@pytest.mark.slow
def test_beyond_the_checked_range_the_first_count_gives_the_spread_not_a_verdict():
    from attnphys.clouds._instability import FIRST_COUNT_CHECKED_BETA

    ds = first_cluster_count([5.0, 12.0], tokens=40, samples=3, horizon=20.0)
    assert FIRST_COUNT_CHECKED_BETA == 9.0 and ds.attrs["checked_beta_max"] == 9.0
    assert ds.checked_range.values.tolist() == [True, False]
    assert np.isfinite(ds.agree.values[0]) and np.isnan(ds.agree.values[1])
    assert np.isnan(ds.agree_low.values[1]) and np.isnan(ds.agree_high.values[1])
    for i in range(2):  # the spread of the counts, where a plateau formed
        c = ds.clusters.values[i]
        assert ds.clusters_min.values[i] == c[c >= 0].min() and ds.clusters_max.values[i] == c[c >= 0].max()
        np.testing.assert_allclose(ds.count_fraction.values[i].sum(), np.mean(c >= 1))


def _uniform_start_counts(beta: float, tokens: int, samples: int) -> tuple[int, list[int]]:
    """(k*(β), sorted first-plateau counts) of ``samples`` independent uniform starts on the circle, flowed as
    first_cluster_count flows its lattice starts (to 30/λ_max, saved every 1/λ_max, δ = 1e-4, run 5)."""
    from attnphys.clouds._instability import first_plateau, flow_cluster_counts

    rates = mode_growth_rates(beta, dim=2, modes=64)
    lam = float(rates.fastest_rate[0])
    th = 2 * jnp.pi * jax.random.uniform(jax.random.PRNGKey(0), (samples, tokens))
    X0 = jnp.stack([jnp.cos(th), jnp.sin(th)], -1)
    counts = flow_cluster_counts(
        SoftmaxAttention(beta=jnp.asarray(beta)), X0, jnp.linspace(0.0, 30.0 / lam, 31), delta=1e-4, rtol=1e-7,
        atol=1e-9, max_steps=200_000, params={"beta": beta}, what="uniform flow",
    )  # fmt: skip
    return int(rates.fastest_mode[0]), sorted(first_plateau(counts, tokens, 5).tolist())


_FLOAT32_COUNTS = """
import attnphys.clouds as c
print(" ".join(str(int(v)) for v in c.first_cluster_count(12.0, tokens=200, samples=16).clusters.values[0]))
"""


@pytest.mark.long
def test_the_first_count_law_at_beta_12_and_20():
    """The measurements that set the law's checked range (docs/theory/particles.md §7.2): 400 tokens, 16 starts.
    From independent uniform starts twelve of sixteen plateau at 4 clusters at β = 12 (predicted 5); the lattice
    starts of first_cluster_count agree in 12 of 16 at β = 12 (200 or 400 tokens) and spread over 5–7 at
    β = 20, and the 200-token figure holds in float64 only."""
    import subprocess
    import sys

    k, counts = _uniform_start_counts(12.0, 400, 16)
    assert k == 5 and counts.count(4) == 12 and counts.count(5) == 2
    ds = first_cluster_count([12.0, 20.0], tokens=400, samples=16)
    assert ds.predicted.values.tolist() == [5, 6] and not ds.checked_range.values.any()
    assert np.isnan(ds.agree.values).all()
    assert int((ds.clusters.values[0] == 5).sum()) == 12
    assert sorted(ds.clusters.values[1].tolist()) == [5, 5, 5] + [6] * 10 + [7, 7, 7]
    assert ds.clusters_min.values.tolist() == [4, 5] and ds.clusters_max.values.tolist() == [6, 7]
    f64 = first_cluster_count(12.0, tokens=200, samples=16).clusters.values[0]
    assert int((f64 == 5).sum()) == 12  # the 0.75 of the theory page
    res = subprocess.run([sys.executable, "-c", _FLOAT32_COUNTS], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    f32 = np.array([int(v) for v in res.stdout.split()])
    assert f32.shape == (16,) and int((f32 == 5).sum()) < 12  # float32 (measured: 10 of 16, 0.625)
