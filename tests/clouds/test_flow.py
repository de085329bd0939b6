"""Tokens as particles: continuous-time SA/USA on the sphere and in R^d, energy, clustering, metastability."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.clouds import (
    ATTENTIONS,
    SoftmaxAttention,
    UnnormalisedAttention,
    flow_statistics,
    interaction_energy,
    longest_metastable,
    plateaus,
    solve_flow,
    uniform_sphere,
    velocity,
)

TS = np.linspace(0.0, 30.0, 101)


@pytest.mark.slow
@pytest.mark.parametrize("d", [2, 3, 8])
def test_usa_energy_is_non_decreasing_on_the_sphere(d):
    """E_β is non-decreasing at every saved time (to the integration tolerance) from random starts."""
    for seed, beta in ((d, 1.0), (d + 10, 2.5)):
        X0 = uniform_sphere(jax.random.PRNGKey(seed), 64, d)
        sol = solve_flow(UnnormalisedAttention(beta=beta), X0, TS, rtol=1e-9, atol=1e-11)
        E = np.array([float(interaction_energy(jnp.asarray(X), beta)) for X in sol.xs])
        assert E[-1] > E[0] * 1.05  # it does rise
        assert np.all(np.diff(E) >= -1e-7 * E[:-1]), np.min(np.diff(E) / E[:-1])
        # and the flow is the gradient ascent: dE/dt = n Σ_i |Π_i ∇_i E|² ≥ 0 at the start, by autodiff
        g = jax.grad(lambda X: interaction_energy(X, beta))(X0)
        v = velocity(UnnormalisedAttention(beta=beta), X0)
        np.testing.assert_allclose(v, 64 * (g - jnp.sum(g * X0, 1, keepdims=True) * X0), atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sa", "usa"])
def test_d3_beta1_ends_in_one_cluster(kind):
    X0 = uniform_sphere(jax.random.PRNGKey(7), 64, 3)
    sol = solve_flow(ATTENTIONS[kind](beta=1.0), X0, TS)
    st = flow_statistics(sol, 1.0)
    assert st["clusters"][0] >= 60 and st["clusters"][-1] == 1
    assert st["clustered_pairs"][-1] == 1.0 and st["clustered_pairs"][0] == 0.0
    assert np.max(st["sphere_drift"]) < 1e-6


@pytest.mark.slow
def test_large_beta_in_2d_has_a_long_metastable_plateau():
    """β = 9, d = 2: several clusters persist for ≥ 10 time units, then merge."""
    X0 = uniform_sphere(jax.random.PRNGKey(1), 64, 2)
    ts = np.linspace(0.0, 400.0, 801)
    sol = solve_flow(SoftmaxAttention(beta=9.0), X0, ts)
    st = flow_statistics(sol, 9.0)
    best = longest_metastable(plateaus(ts, st["clusters"]))
    assert best is not None and best.clusters > 1 and best.length >= 10 and best.closed
    assert st["clusters"][-1] < best.clusters  # merged afterwards


def test_plateaus_partition_the_time_axis():
    t = np.arange(8.0)
    pl = plateaus(t, [5, 5, 3, 3, 3, 2, 2, 2])
    assert [(p.start, p.end, p.clusters, p.closed) for p in pl] == [(0, 2, 5, True), (2, 5, 3, True), (5, 7, 2, False)]
    assert sum(p.length for p in pl) == 7
    assert longest_metastable(pl).clusters == 3


def test_the_plateau_a_run_ends_on_is_reported_censored():
    """A run ending on 3 clusters for 6 of its 7 time units: the longest plateau is that one, at least 6 long
    (not the closed 5-cluster plateau of length 1)."""
    from attnphys.clouds.observables import plateau_text

    pl = plateaus(np.arange(8.0), [5, 3, 3, 3, 3, 3, 3, 3])
    best = longest_metastable(pl)
    assert (best.clusters, best.length, best.closed) == (3, 6.0, False)
    assert plateau_text(best).startswith("3 clusters for ≥ 6") and "ends on it" in plateau_text(best)
    assert longest_metastable(pl, censored=False).clusters == 5
    assert plateau_text(longest_metastable(pl, censored=False)) == "5 clusters for 1 (t = 0 … 1)"
    assert plateau_text(None) == "none"


@pytest.mark.slow
def test_free_space_flows_have_closed_forms():
    """β = 0 SA in R^d: with the residual x_i(t) = x_i + x̄(e^t − 1); without it x_i(t) = x̄ + (x_i − x̄)e^{−t}."""
    X0 = jax.random.normal(jax.random.PRNGKey(3), (16, 4))
    xbar = X0.mean(0)
    ts = np.linspace(0, 2, 5)
    res = solve_flow(SoftmaxAttention(beta=0.0), X0, ts, sphere=False)
    np.testing.assert_allclose(res.xs, X0[None] + xbar[None, None] * (np.exp(ts) - 1)[:, None, None], rtol=1e-7, atol=1e-8)
    nores = solve_flow(SoftmaxAttention(beta=0.0), X0, ts, sphere=False, residual=False)
    np.testing.assert_allclose(nores.xs, xbar + (X0 - xbar)[None] * np.exp(-ts)[:, None, None], rtol=1e-7, atol=1e-8)


@pytest.mark.slow
def test_velocity_is_tangent_and_attention_variants():
    X = uniform_sphere(jax.random.PRNGKey(4), 12, 5)
    for kind, cls in ATTENTIONS.items():
        v = velocity(cls(beta=2.0), X)
        np.testing.assert_allclose(jnp.sum(v * X, 1), 0, atol=1e-12)
    P = ATTENTIONS["sinkhorn"](beta=2.0, iterations=200).weights(X)[0]
    np.testing.assert_allclose(P.sum(1), 1, atol=1e-12)
    np.testing.assert_allclose(P.sum(0), 1, atol=1e-8)
    Pc = SoftmaxAttention(beta=2.0, causal=True).weights(X)[0]
    np.testing.assert_allclose(Pc, np.tril(Pc), atol=0)
    np.testing.assert_allclose(Pc.sum(1), 1, atol=1e-12)
    np.testing.assert_allclose(Pc[0, 0], 1.0)
    with pytest.raises(ValueError, match="causal"):
        ATTENTIONS["sinkhorn"](causal=True)


def test_several_heads_add_up():
    rng = np.random.default_rng(0)
    X = jnp.asarray(rng.normal(size=(10, 4)))
    Q, K, V = (jnp.asarray(rng.normal(size=(3, 2, 4))) for _ in range(3))
    O = jnp.asarray(rng.normal(size=(3, 4, 2)))
    both = SoftmaxAttention(beta=0.7, Q=Q, K=K, V=V, O=O)(X)
    parts = sum(SoftmaxAttention(beta=0.7, Q=Q[h:h + 1], K=K[h:h + 1], V=V[h:h + 1], O=O[h:h + 1])(X) for h in range(3))
    np.testing.assert_allclose(both, parts, atol=1e-12)
    h = 1
    P = jax.nn.softmax(0.7 * (X @ Q[h].T) @ (X @ K[h].T).T, axis=-1)
    np.testing.assert_allclose(SoftmaxAttention(beta=0.7, Q=Q[h:h + 1], K=K[h:h + 1], V=V[h:h + 1], O=O[h:h + 1])(X),
                               P @ X @ V[h].T @ O[h].T, atol=1e-12)
