"""The finite network as a noisy map of the rare-event toolkit (docs/theory/switching.md §1, §3)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.dmft import _linear_noise as ln
from attnphys.dmft import _switching_map as sm
from attnphys.dmft import preset
from attnphys.dmft.finite import finite_step, repeated_network


@pytest.fixture(scope="module")
def setup():
    cfg = preset("paper", beta_o=1.27)
    net, sc = sm.network_params(cfg)
    L, M, C = cfg.L, cfg.M, int(net.W.shape[-1])
    xs = ln.orbit(net, sc, ln.initial(net, sc, L, M), steps=200, L=L, M=M)
    return cfg, net, sc, L, M, C, xs


def _window(net, sc, xs, t, L, M):
    """The class means of the mean-field tokens of loop steps t − 1 … t − L (token k: tanh h(A_k))."""
    rows = [np.tanh(np.asarray(ln.class_fields(net, sc, xs[k - 1][:M]))) for k in range(t - 1, t - 1 - L, -1)]
    return jnp.asarray(np.stack(rows).reshape(-1))


def test_zero_noise_map_is_the_mean_field_map(setup):
    cfg, net, sc, L, M, C, xs = setup
    m = sm.NetworkMap(L, C)
    worst = 0.0
    for t in range(L + 1, 120, 7):
        x = _window(net, sc, xs, t, L, M)
        worst = max(worst, float(np.max(np.abs(np.asarray(sm.overlap_state(net, sc, x, t % L, L)) - xs[t - 1]))))
        y, aux = m.step(x, jnp.asarray(t % L, jnp.int32), (net, sc))
        after = np.asarray(sm.overlap_state(net, sc, y, aux, L))
        worst = max(worst, float(np.max(np.abs(after - xs[t]))))
    assert worst < 1e-13


def test_class_state_inverts_the_overlaps(setup):
    cfg, net, sc, L, M, C, xs = setup
    t = 50
    x = _window(net, sc, xs, t, L, M)
    _, mv, mk, _ = ln.unpack(jnp.asarray(xs[t - 1]), L, M)
    np.testing.assert_allclose(np.asarray(sm.class_state(net, sc, mv, mk, t % L, L)), np.asarray(x), atol=1e-13)


def test_gaussian_law_covariance_is_the_linear_noise_covariance(setup):
    cfg, net, sc, L, M, C, xs = setup
    t = 61
    x = _window(net, sc, xs, t, L, M)
    B = np.asarray(sm.ClassNoise(L, C).factor(x, jnp.asarray(t % L), (net, sc)))
    assert B.shape == (L * C, C) and np.all(B[C:] == 0)
    G = (1.0 - float(sc.eps)) * np.asarray(net.W).reshape(4 * M, C) * np.asarray(net.frac)
    D = np.asarray(ln.noise_covariance(net, sc, jnp.asarray(xs[t - 1][:M])))
    np.testing.assert_allclose(G @ (B[:C] @ B[:C].T) @ G.T, D, atol=1e-14)
    # negative control: another state's covariance differs
    D_other = np.asarray(ln.noise_covariance(net, sc, jnp.asarray(xs[t][:M])))
    assert np.max(np.abs(G @ (B[:C] @ B[:C].T) @ G.T - D_other)) > 1e-3


def test_binomial_rate_tends_to_the_gaussian_rate(setup):
    cfg, net, sc, L, M, C, xs = setup
    x = _window(net, sc, xs, 40, L, M)
    law = sm.BinomialNoise(L, C)
    direction = jnp.asarray([0.6, -0.3, 0.74])
    rel = []
    for r in (1e-1, 1e-2, 1e-3):
        eta = r * direction
        ell = float(law.rate(eta, x, jnp.asarray(0), (net, sc)))
        rel.append(abs(ell - 0.5 * float(eta @ eta)) / (0.5 * float(eta @ eta)))
    assert rel[2] < 1e-2 and rel[2] < rel[1] < rel[0]  # the cubic correction falls like r
    assert rel[0] > 1e-3  # negative control: at larger deviations the laws differ
    mu, s = law.scales(x, jnp.asarray(0), (net, sc))
    beyond = (1.0 - np.asarray(mu)) / np.asarray(s) * 1.01  # a class mean above 1: impossible
    assert np.isinf(float(law.rate(jnp.asarray([beyond[0], 0.0, 0.0]), x, jnp.asarray(0), (net, sc))))


def test_cramer_rate_closed_form():
    m, mu = 0.3, -0.2
    want = 0.5 * (1 + m) * np.log((1 + m) / (1 + mu)) + 0.5 * (1 - m) * np.log((1 - m) / (1 - mu))
    assert float(sm.cramer_rate(jnp.asarray(m), jnp.asarray(mu))) == pytest.approx(want, rel=1e-14)
    assert float(sm.cramer_rate(jnp.asarray(mu), jnp.asarray(mu))) == 0.0


def test_binomial_sampler_mean_and_variance(setup):
    cfg, net, sc, L, M, C, xs = setup
    x = _window(net, sc, xs, 40, L, M)
    law = sm.BinomialNoise(L, C)
    N = 990
    keys = jax.random.split(jax.random.PRNGKey(3), 20_000)
    d = np.asarray(jax.vmap(lambda k: law.sample(x, jnp.asarray(0), (net, sc), k, 1.0 / np.sqrt(N)))(keys))
    mu, _ = law.scales(x, jnp.asarray(0), (net, sc))
    var = (1.0 - np.asarray(mu) ** 2) / (np.asarray(net.frac) * N)
    assert np.all(d[:, C:] == 0)
    se = np.sqrt(var / len(keys))
    assert np.all(np.abs(d[:, :C].mean(0)) < 5 * se)
    np.testing.assert_allclose(d[:, :C].var(0), var, rtol=0.05)


def test_binomial_map_step_is_the_finite_network_step(setup):
    """With the same key the noisy map and the finite network draw the same class sums: one step agrees."""
    cfg, net, sc, L, M, C, xs = setup
    N = 3 * cfg.n_se
    fnet = repeated_network(cfg, N)
    t = 45
    x = _window(net, sc, xs, t, L, M)
    key = jax.random.PRNGKey(11)
    state = sm.finite_state(net, sc, x, t % L, L)
    new, _ = finite_step(fnet, sc, state, key, L, False, "paper", ("att",))
    m = sm.NetworkMap(L, C)
    y, aux = m.step(x, jnp.asarray(t % L, jnp.int32), (net, sc))
    y = y + sm.BinomialNoise(L, C).sample(x, jnp.asarray(t % L), (net, sc), key, 1.0 / np.sqrt(N))
    A, mv, mk, _ = ln.unpack(sm.overlap_state(net, sc, y, aux, L), L, M)
    np.testing.assert_allclose(np.asarray(mv), np.asarray(new.mv), atol=1e-12)
    np.testing.assert_allclose(np.asarray(mk), np.asarray(new.mk), atol=1e-12)
    np.testing.assert_allclose(np.asarray(A), np.asarray(new.A), atol=1e-12)


# ---------------------------------------------------------------------------------------------------------------
# attnphys.dmft.switching (docs/theory/switching.md §2, §5)

BAD = [
    ({"beta_o": -1.0}, "beta_o"),
    ({"beta_o": float("nan")}, "beta_o"),
    ({"sizes": (100,)}, "sizes"),
    ({"sizes": (99, 99)}, "sizes"),
    ({"sizes": 99}, "sizes"),
    ({"laws": ("poisson",)}, "laws"),
    ({"laws": ()}, "laws"),
    ({"walkers": 0}, "walkers"),
    ({"max_steps": 0}, "max_steps"),
    ({"b_level": 0.05}, "b_level"),
    ({"b_level": 1.5}, "b_level"),
    ({"ics": 0}, "ics"),
    ({"census_steps": 10, "census_transient": 10}, "census_transient"),
    ({"screen_steps": 0}, "screen_steps"),
    ({"screen_steps": 56, "max_horizon": 28}, "max_horizon"),
    ({"keep": 0}, "keep"),
    ({"phase_stride": 1.5}, "phase_stride"),
    ({"tol": 0.0}, "tol"),
    ({"max_iterations": True}, "max_iterations"),
    ({"seed": -1}, "seed"),
]


@pytest.mark.parametrize(("kwargs", "field"), BAD)
def test_switching_refuses_bad_inputs(kwargs, field):
    from attnphys.dmft import switching
    from attnphys.errors import InputError

    with pytest.raises(InputError) as e:
        switching(preset("paper"), **kwargs)
    assert e.value.field == field


def test_switching_refuses_another_model():
    from attnphys.dmft import switching
    from attnphys.dmft.designed import designed_config
    from attnphys.errors import InputError

    with pytest.raises(InputError) as e:
        switching(designed_config("4_duplicity_loop_4"))
    assert e.value.field == "cfg"


def test_escape_estimate_of_censored_exponential_times():
    """τ̂ = Σ t_i / k with censoring at the budget: for exponential times of mean τ the estimate is consistent
    and its chi-squared interval covers τ about 95 % of the time (docs/theory/switching.md §5)."""
    from attnphys.dmft.switching import _escape

    rng = np.random.default_rng(5)
    tau, budget, cover, est = 300.0, 400, 0, []
    for _ in range(400):
        t = rng.exponential(tau, size=40)
        t = np.where(t < budget, np.floor(t) + 0.5, np.nan)  # NaN: censored at the budget
        m, lo, hi, k, c = _escape(t, budget)
        assert k + c == 40
        est.append(m)
        cover += lo <= tau <= hi
    assert abs(np.mean(est) / tau - 1.0) < 0.03
    assert 0.92 <= cover / 400 <= 0.98
    m, lo, hi, k, c = _escape(np.full(10, np.nan), budget)  # no escape: a lower bound only
    assert np.isnan(m) and k == 0 and c == 10 and hi == np.inf and lo == pytest.approx(2 * 10 * budget / 7.3778, 1e-3)


def test_slope_of_log_escape_time():
    from attnphys.dmft.switching import _slope

    N = np.array([100.0, 200.0, 400.0])
    b, lo, hi = _slope(N, 5.0 * np.exp(0.01 * N), np.array([50, 50, 50]))
    assert b == pytest.approx(0.01, rel=1e-12) and lo < b < hi
    assert np.isnan(_slope(N, np.array([np.nan, np.nan, 3.0]), np.array([0, 0, 4]))[0])


SMALL = dict(
    sizes=(9900, 99000), walkers=8, max_steps=3000, b_level=0.8, ics=16, census_steps=30_000,
    census_transient=20_000, screen_steps=28, max_horizon=28, keep=1, phase_stride=14, laws=("gaussian",),
)  # fmt: skip


@pytest.mark.slow
def test_switching_is_deterministic_given_the_seed():
    from attnphys.dmft import switching

    a = switching(preset("paper"), beta_o=1.27, seed=3, **SMALL)
    b = switching(preset("paper"), beta_o=1.27, seed=3, **SMALL)
    assert sorted(a["period"].values.tolist()) == [28, 56]
    for v in ("action", "escape_time", "escapes", "censored"):
        np.testing.assert_array_equal(a[v].values, b[v].values)
    assert np.all(a["action"].values > 0) and np.all(a["constraint_violation"].values < 1e-10)
    assert a.attrs["attnphys_version"] and "beta_o" in a.attrs["config"]
    c = switching(preset("paper"), beta_o=1.27, seed=4, **SMALL)
    assert not np.array_equal(a["escape_time"].values, c["escape_time"].values)  # the seed matters
