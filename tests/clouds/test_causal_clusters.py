"""Rényi centers and the causal flow's metastable clusters (docs/theory/particles.md §13)."""

from __future__ import annotations

import numpy as np
import pytest

from attnphys.clouds import RENYI_CONSTANT, causal_clusters, parking_mean, renyi_centers
from attnphys.errors import InputError


def _circle(theta):
    theta = np.asarray(theta, float)
    return np.stack([np.cos(theta), np.sin(theta)], 1)


def test_renyi_centers_keep_a_token_only_far_from_every_earlier_center():
    # angles 0, 0.1 (too close to 0), 1.0, 1.05 (too close to 1.0), 2.5, 0.95 (too close to 1.0)
    x = _circle([0.0, 0.1, 1.0, 1.05, 2.5, 0.95])
    assert renyi_centers(x, 0.5).tolist() == [0, 2, 4]
    # a token close to a rejected token but far from every center is kept
    x = _circle([0.0, 0.4, 0.8])
    assert renyi_centers(x, 0.5).tolist() == [0, 2]
    # every token is a center when they are farther apart than delta; only the first when delta = pi
    assert renyi_centers(_circle(np.arange(6) * np.pi / 3), 1.0).size == 6
    assert renyi_centers(np.random.default_rng(0).normal(size=(50, 3)), np.pi).tolist() in ([0], [0, 1], [0, 2])


def test_renyi_centers_are_separated_and_cover_every_token():
    x = np.random.default_rng(1).normal(size=(400, 3))
    u = x / np.linalg.norm(x, axis=1, keepdims=True)
    c = renyi_centers(x, 0.4)
    ang = np.arccos(np.clip(u[c] @ u[c].T, -1, 1)) + 10 * np.eye(c.size)
    assert ang.min() >= 0.4  # centers are pairwise at least delta apart
    to_centers = np.arccos(np.clip(u @ u[c].T, -1, 1)).min(1)
    assert to_centers.max() < 0.4  # every other token lies within delta of a center


@pytest.mark.slow
def test_jammed_count_on_the_circle_is_renyis_constant():
    """Uniform arrivals until jammed: the mean count is c_R 2π/δ (Rényi's parking law on the circle)."""
    rng = np.random.default_rng(2)
    delta = 0.05
    counts = [renyi_centers(_circle(rng.uniform(0, 2 * np.pi, 4000)), delta).size for _ in range(30)]
    se = np.std(counts, ddof=1) / np.sqrt(len(counts))
    assert abs(np.mean(counts) - parking_mean(delta)) < 4 * se + 0.5
    assert RENYI_CONSTANT == pytest.approx(0.7475979202534)


@pytest.mark.slow
def test_causal_first_plateau_matches_the_renyi_count():
    ds = causal_clusters([16.0, 64.0], samples=8, t_max=60.0, saves=61, seed=4)
    assert ds.clusters.dims == ("beta", "sample") and ds.counts.dims == ("beta", "sample", "time")
    assert np.all(ds.clusters.values > 1) and np.all(ds.counts.values[:, :, 0] > ds.counts.values[:, :, -1])
    assert np.all(np.abs(ds.relative_difference.values) < 0.2), ds.relative_difference.values
    assert np.all(ds.difference_low.values <= ds.difference_high.values)
    np.testing.assert_allclose(ds.delta.values, 4 / np.sqrt([16.0, 64.0]))
    # the first token never moves under a causal mask; a wrong δ (twice as wide) halves the predicted count
    wide = causal_clusters(64.0, samples=8, t_max=60.0, saves=61, seed=4, delta_scale=8.0)
    assert wide.renyi.mean() < 0.65 * ds.renyi.sel(beta=64.0).mean()


@pytest.mark.parametrize(
    "kw, field",
    [
        (dict(beta=0.0), "beta"),
        (dict(beta=[1.0, float("nan")]), "beta"),
        (dict(beta=1.0), "beta"),  # δ = 4 > π
        (dict(beta=[64.0, 64.0]), "beta"),
        (dict(beta=64.0, tokens=3), "tokens"),
        (dict(beta=64.0, samples=1), "samples"),
        (dict(beta=64.0, saves=5, run=5), "run"),
        (dict(beta=64.0, t_max=-1.0), "t_max"),
        (dict(beta=64.0, delta_scale=True), "delta_scale"),
        (dict(beta=64.0, cluster_delta=0.0), "cluster_delta"),
    ],
)
def test_bad_arguments_are_refused_naming_them(kw, field):
    with pytest.raises(InputError) as e:
        causal_clusters(**kw)
    assert e.value.field == field


@pytest.mark.parametrize(
    "x, delta, field",
    [
        (np.zeros((3, 2)), 0.5, "x"),
        (np.ones(3), 0.5, "x"),
        (_circle([0, 1]), 0.0, "delta"),
        (_circle([0, 1]), 4.0, "delta"),
    ],
)
def test_renyi_centers_refuse_bad_input(x, delta, field):
    with pytest.raises(InputError) as e:
        renyi_centers(x, delta)
    assert e.value.field == field
