"""Attractor tracks across a parameter grid (theory: docs/theory/dynamics.md §8)."""

import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.dynamics._census import CensusOptions, census_batch
from attnphys.dynamics._tracks import match, set_distance, tracks
from attnphys.dynamics.maps import autonomous
from attnphys.dynamics.samplers import ExplicitSampler

C_FOLD = 2 / (3 * np.sqrt(3))


@pytest.fixture(scope="module")
def cusp():
    """x' = x + 0.3 (c + x − x³): the outer fixed points coexist for |c| < 2/(3√3) (folds at ±2/(3√3))."""
    m = autonomous(lambda x, c: x + 0.3 * (c + x - x**3))
    cs = np.linspace(-0.6, 0.6, 25)
    starts = ExplicitSampler(x=np.linspace(-2.0, 2.0, 32)[:, None])
    ds = census_batch(
        m,
        jnp.asarray(cs),
        starts,
        ics=32,
        param_values=cs,
        param_name="c",
        options=CensusOptions(budget=4096, block=128, max_period=16, lyap_steps=2000, n_classify=500),
    )
    return cs, tracks(ds)


@pytest.mark.slow
def test_two_tracks_with_births_and_deaths_at_the_folds(cusp):
    cs, ds = cusp
    h = cs[1] - cs[0]
    assert ds.sizes["track_id"] == 2
    order = np.argsort(ds["track_birth"].values)
    low, high = order  # the lower branch exists from the left end, the upper one is born inside
    assert not ds["track_born_inside"].values[low] and ds["track_dies_inside"].values[low]
    assert ds["track_born_inside"].values[high] and not ds["track_dies_inside"].values[high]
    assert C_FOLD - h < ds["track_death"].values[low] <= C_FOLD
    assert -C_FOLD <= ds["track_birth"].values[high] < -C_FOLD + h
    inside = np.abs(cs) < C_FOLD
    assert np.all(ds["n_coexisting"].values == np.where(inside, 2, 1))
    # basin fractions of the two tracks add up to one wherever both exist
    both = ds["track_basin_fraction"].values[inside]
    np.testing.assert_allclose(both.sum(axis=1), 1.0)


def test_hysteresis_window_between_the_folds(cusp):
    cs, ds = cusp
    h = cs[1] - cs[0]
    assert ds.sizes["window"] == 1
    assert -C_FOLD <= float(ds["window_low"][0]) < -C_FOLD + h
    assert C_FOLD - h < float(ds["window_high"][0]) <= C_FOLD
    up, down = int(ds["window_track_up"][0]), int(ds["window_track_down"][0])
    assert ds["track_birth"].values[up] < ds["track_birth"].values[down]


def test_set_distance_is_phase_and_size_independent():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert set_distance(X, X[::-1]) == 0.0
    assert set_distance(X, np.concatenate([X, X])) == 0.0
    assert set_distance(X, X + [0.1, 0.0]) == pytest.approx(0.1)
    assert set_distance(X, np.full((2, 2), np.nan)) == np.inf


def test_match_is_an_optimal_assignment_within_tolerance():
    a = np.array([[[0.0]], [[1.0]]])
    b = np.array([[[1.05]], [[0.02]], [[5.0]]])
    pairs = match(a, np.array([1, 1]), b, np.array([1, 1, 1]), tol=0.1)
    assert sorted((i, j) for i, j, _ in pairs) == [(0, 1), (1, 0)]
    assert match(a, np.array([1, 0]), b[:2], np.array([1, 1]), tol=10.0) == [(0, 1, pytest.approx(0.02))]
