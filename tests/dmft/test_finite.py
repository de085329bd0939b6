"""The finite-N network (spec dmft.md §2) and its convergence to the mean field."""

import numpy as np
import pytest

from attnphys.dmft import converge, finite_trajectories, preset, trajectories
from attnphys.dmft._convergence import fitted_slope
from attnphys.dmft.correlations import Correlations
from attnphys.dmft.finite import (
    expand,
    network_correlations,
    random_network,
    repeated_network,
    token_overlaps,
)
from attnphys.dmft.initial import from_token


@pytest.fixture(scope="module")
def cfg():
    return preset("paper", beta_o=1.0)


def test_repeated_network_has_the_mean_field_correlations(cfg):
    net = repeated_network(cfg, 99 * 1000)
    assert net.n_se == 99_000 and net.W.shape[2] <= 99
    ref = cfg.build_correlations()
    np.testing.assert_allclose(network_correlations(net).C, ref.C, atol=1e-15)
    np.testing.assert_allclose(token_overlaps(net, cfg.epsilon)[1], from_token(cfg).A[0], atol=1e-15)


def test_random_network_class_counts_match_explicit_weights():
    net = random_network(M=2, P=2, n=5000, seed=3, chunk=777)
    assert net.n_se == 5000
    W = np.concatenate([np.asarray(expand(net).W), np.asarray(net.W_pe)], axis=2)
    np.testing.assert_allclose(network_correlations(net).C, Correlations.from_weights(W, 5000).C, atol=1e-15)


@pytest.mark.slow
def test_class_sampler_and_per_bit_sampler_agree_in_distribution(cfg):
    a = finite_trajectories(cfg, 990, paths=4000, steps=2, seed=1).mo_se.values[:, -1]
    b = finite_trajectories(cfg, 990, paths=4000, steps=2, seed=2, per_bit=True).mo_se.values[:, -1]
    se = np.sqrt(a.var(0) / 4000 + b.var(0) / 4000)
    assert np.all(np.abs(a.mean(0) - b.mean(0)) < 5 * se)
    np.testing.assert_allclose(a.std(0), b.std(0), rtol=0.1)


@pytest.mark.slow
def test_first_step_expectation_is_the_mean_field(cfg):
    """Given A_0 the mean-field overlaps are the exact conditional expectations of the finite ones."""
    fin = finite_trajectories(cfg, 990, paths=20_000, steps=1, seed=4)
    mf = trajectories(cfg, start="token", steps=1, transient=0)
    for name in ("mo_se", "mo", "mv", "mq", "mk"):
        x = fin[name].values[:, 0]
        np.testing.assert_allclose(x.mean(0), mf[name].values[0], atol=5 * x.std(0).max() / np.sqrt(20_000) + 1e-12)


@pytest.mark.slow
def test_paths_depend_only_on_their_index(cfg):
    a = finite_trajectories(cfg, 990, paths=3, steps=20, seed=7).att.values
    b = finite_trajectories(cfg, 990, paths=6, steps=20, seed=7).att.values
    np.testing.assert_array_equal(a, b[:3])


def test_softmax_cannot_overflow():
    c = preset("paper", beta_o=1.0, beta_att=1e6)
    ds = finite_trajectories(c, 990, paths=2, steps=50)
    assert np.all(np.isfinite(ds.att.values))


def test_bad_sizes_and_weights(cfg):
    with pytest.raises(ValueError, match="multiple of n_se = 99"):
        repeated_network(cfg, 1000)
    with pytest.raises(ValueError, match="no explicit weights"):
        repeated_network(cfg.replace(correlations={"kind": "gaussian"}), 990)


@pytest.mark.slow
def test_deviation_from_mean_field_falls_like_inverse_sqrt_n():
    """Non-chaotic regime at a small attention gain (fast): slope within 0.1 of -1/2."""
    c = preset("paper", beta_o=0.8, beta_att=0.5)
    ds = converge(c, [99 * 10, 99 * 100, 99 * 1000, 99 * 10_000, 99 * 100_000], sweep={"beta_o": [0.8]}, paths=32, steps=300,
                  horizon=100, transient=100)
    assert abs(float(ds.slope[0]) + 0.5) < 0.1
    assert np.all(np.diff(ds.rms_deviation.values[0]) < 0)


def test_fitted_slope_uses_the_largest_three_decades():
    ns = np.array([1e1, 1e2, 1e3, 1e4, 1e5])
    d = ns ** -0.5
    d[0] = 5.0  # outside the largest three decades [1e2, 1e5]: ignored
    assert fitted_slope(ns, d) == pytest.approx(-0.5, abs=1e-12)
