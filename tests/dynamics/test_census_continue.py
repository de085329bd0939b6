"""Global continuation of attractors across a parameter against closed forms (theory: docs/theory/dynamics.md §8.1)."""

import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.dynamics import CensusOptions, census_batch, global_continuation
from attnphys.dynamics._census_continue import continued_ids
from attnphys.dynamics.maps import BISTABLE, LOGISTIC, FunctionMap
from attnphys.dynamics.samplers import GridSampler
from attnphys.errors import InputError

OPTS = CensusOptions(budget=4096, block=128, max_period=64, lyap_steps=20_000)
GRID = GridSampler(lo=[-0.95], hi=[0.95], shape=(40,))  # inside (−1, 1): x·(a − x²) keeps the sign of x


@pytest.mark.slow
def test_attractors_that_jump_keep_their_ids_by_basin_overlap_not_by_distance():
    """Bistable map x ↦ a x − x³ at a = 1.2 then 1.9: the attractors ±√(a − 1) jump from ±0.447 to ±0.949
    (farther than the tolerance), their basins (the sign of x) stay: overlap keeps two ids, the quantity
    (the mean of the points) follows each; distance alone gives four."""
    a = np.array([1.2, 1.9])
    ds = global_continuation(BISTABLE, a, GRID, ics=40, options=OPTS, param_values=a, quantity=lambda p: p[:, 0].mean())
    assert ds.sizes["attractor"] == 2 and ds["present"].values.all()
    q = ds["quantity"].values[..., 0]
    sign = np.sign(q[0])
    np.testing.assert_allclose(q, sign[None, :] * np.sqrt(a - 1)[:, None], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(ds["matched_by"].values[1], [1, 1])  # by overlap
    np.testing.assert_array_equal(ds["match_distance"].values[1], [0.0, 0.0])  # the same basins
    np.testing.assert_array_equal(ds["basin_fraction"].values, 0.5)
    # the starts' labels follow the ids: x > 0 on the positive attractor at both values
    plus = int(np.argmax(q[0]))
    x = GRID.states()[:, 0]
    assert (ds["label"].values[:, x > 0] == plus).all() and (ds["label"].values[:, x < 0] == 1 - plus).all()
    far = global_continuation(BISTABLE, a, GRID, ics=40, options=OPTS, param_values=a, match_by="distance")
    assert far.sizes["attractor"] == 4 and far["first"].values.tolist() == [0, 0, 1, 1]


def _swap_step(x, aux, c):
    """x' = 0.1 tanh(20 x): attractors x ≈ ±0.1, basins the sign of x; y' = 10 c x': the attractor of x > 0
    sits at y = 10 c x* ≈ 0.96 c, that of x < 0 at −10 c x*."""
    u = 0.1 * jnp.tanh(20.0 * x[0])
    return jnp.stack([u, 10.0 * c * u]), aux


@pytest.mark.slow
def test_two_attractors_that_exchange_places_are_told_apart_by_their_basins():
    """From c = 1 to c = −1 the two attractors (x*, 10x*) and (−x*, −10x*) exchange their places: each now
    sits 2x* from where the other was. Basin overlap follows the basins (x > 0 keeps its id); distance alone follows
    the places and exchanges the ids."""
    m = FunctionMap(step=_swap_step)
    c = np.array([1.0, -1.0])
    g = GridSampler(lo=[-0.5, -1.0], hi=[0.5, 1.0], shape=(10, 3))
    x = g.states()[:, 0]
    ds = global_continuation(m, c, g, ics=g.size, options=OPTS, param_values=c)
    lab = ds["label"].values
    assert ds.sizes["attractor"] == 2 and len(set(lab[:, x > 0].ravel())) == 1 and len(set(lab[:, x < 0].ravel())) == 1
    plus = lab[0, x > 0][0]
    xs = 0.1
    for _ in range(200):  # the fixed point x* = 0.1 tanh(20 x*) (a contraction there)
        xs = 0.1 * np.tanh(20.0 * xs)
    np.testing.assert_allclose(ds["points"].values[:, plus, 0], [[xs, 10 * xs], [xs, -10 * xs]], rtol=0, atol=1e-12)
    far = global_continuation(m, c, g, ics=g.size, options=OPTS, param_values=c, match_by="distance", tol=0.5)
    lab = far["label"].values
    assert far.sizes["attractor"] == 2 and lab[0, x > 0][0] == lab[1, x < 0][0] != lab[1, x > 0][0]
    np.testing.assert_allclose(far["match_distance"].values[1], 2 * xs, rtol=0, atol=1e-12)


def test_a_stored_census_gets_the_same_continued_ids_as_global_continuation():
    """continued_ids on a census_batch result (the stored form of a sweep, padded attractor slots): on the
    map whose attractors exchange places, ids follow the basins (x > 0 keeps its id), as global_continuation
    gives them; by distance alone (tol 0.5 < the jump 2x*·√101) the ids exchange."""
    m = FunctionMap(step=_swap_step)
    c = np.array([1.0, -1.0, -1.0])
    g = GridSampler(lo=[-0.5, -1.0], hi=[0.5, 1.0], shape=(10, 3))
    x = g.states()[:, 0]
    ds = census_batch(m, c, g, ics=g.size, options=OPTS, param_values=c, max_attractors=4)
    out = continued_ids(ds)
    ids, lab = out["continued_id"].values, out["continued_label"].values
    assert (ids[:, 2:] == -1).all() and sorted(ids[0, :2]) == [0, 1]
    plus = lab[0, x > 0][0]
    assert (lab[:, x > 0] == plus).all() and (lab[:, x < 0] == 1 - plus).all()
    np.testing.assert_array_equal(out["matched_by"].values[1:, :2], 1)
    np.testing.assert_array_equal(out["match_distance"].values[1:, :2], 0.0)  # the same basins
    ref = global_continuation(m, c, g, ics=g.size, options=OPTS, param_values=c, seeds=0)
    np.testing.assert_array_equal(lab, ref["label"].values)
    far = continued_ids(ds, by_overlap=False, tol=0.5)
    flab = far["continued_label"].values
    assert flab[0, x > 0][0] == flab[1, x < 0][0] != flab[1, x > 0][0]
    assert far["matched_by"].values[1, :2].tolist() == [2, 2] and (far["continued_id"].values[:, :2] < 2).all()


@pytest.mark.slow
def test_one_id_through_the_period_doubling_cascade_with_its_period_and_mean():
    """Logistic map, r = 2.8 … 3.55: one attractor throughout, periods 1, 1, 2, 2, 4, 8; the mean of its
    points is 1 − 1/r on the fixed point and (r + 1)/(2r) on the 2-cycle."""
    rs = np.array([2.8, 2.9, 3.2, 3.4, 3.5, 3.55])
    ds = global_continuation(LOGISTIC, rs, ics=32, options=OPTS, param_values=rs, quantity={"mean": np.mean})
    assert ds.sizes["attractor"] == 1
    assert ds["period"].values[:, 0].tolist() == [1, 1, 2, 2, 4, 8]
    m = ds["quantity"].sel(quantity_name="mean").values[:, 0]
    np.testing.assert_allclose(m[:2], 1 - 1 / rs[:2], rtol=0, atol=1e-10)
    np.testing.assert_allclose(m[2:4], (rs[2:4] + 1) / (2 * rs[2:4]), rtol=0, atol=1e-10)
    assert (ds["exponents"].values[:, 0, 0] < 0).all()


def _half_starts(a):
    """Symmetric starts below a = 1.5, only positive ones from there on (parameter-dependent starts)."""
    return np.linspace(-0.9, 0.9, 20)[:, None] if a < 1.5 else np.linspace(0.05, 0.9, 20)[:, None]


@pytest.mark.slow
def test_an_attractor_the_starts_miss_is_followed_from_its_seeds():
    a = np.array([1.3, 1.4, 1.6, 1.7])
    ds = global_continuation(BISTABLE, a, _half_starts, ics=20, options=OPTS, param_values=a)
    assert ds.sizes["attractor"] == 2 and ds["present"].values.all()
    neg = int(np.argmin(ds["points"].values[0, :, 0, 0]))
    assert ds["seeded"].values[:, neg].tolist() == [False, False, True, True]
    assert ds["basin_fraction"].values[:, neg].tolist() == [0.5, 0.5, 0.0, 0.0]
    np.testing.assert_allclose(ds["points"].values[:, neg, 0, 0], -np.sqrt(a - 1), rtol=0, atol=1e-12)
    without = global_continuation(BISTABLE, a, _half_starts, ics=20, options=OPTS, param_values=a, seeds=0)
    assert without["present"].values[:, neg].tolist() == [True, True, False, False]


def test_bad_arguments_are_named():
    a = np.array([1.3, 1.4])
    for kw, field in (
        (dict(match_by="nearest"), "match_by"),
        (dict(tol=-1.0), "tol"),
        (dict(quantile=2.0), "quantile"),
        (dict(seeds=-1), "seeds"),
        (dict(quantity="mean"), "quantity"),
        (dict(starts=lambda p: np.zeros((3, 1))), "starts"),
    ):
        kw = {"starts": GRID, **kw}
        with pytest.raises(InputError) as e:
            global_continuation(BISTABLE, a, ics=40, options=OPTS, **kw)
        assert e.value.field == field
