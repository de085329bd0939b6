"""Edge tracking against closed forms (theory: docs/theory/dynamics.md §11.6): the repeller x = 0 between the
two attractors of the bistable map, and the saddle of a product map bent by a known change of coordinates,
whose stable manifold (the basin boundary) is a parabola."""

import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.dynamics import CensusOptions, autonomous, edge_track
from attnphys.dynamics.maps import BISTABLE
from attnphys.errors import InputError

OPTS = CensusOptions(budget=2048, block=64, max_period=16)

# (u, v) ↦ (a u − u³, λ v) seen through h(u, v) = (u + c v² + X0, v + Y0): saddle h(0, 0) = (X0, Y0), attractors
# h(±√(a − 1), 0), basin boundary h({u = 0}) = {X = X0 + c (Y − Y0)²} (for |u| < √a).
A, LAM, C, X0, Y0 = 1.8, 0.5, 0.7, 0.3, -0.2


def _h(u, v):
    return u + C * v**2 + X0, v + Y0


def _bent(x, p):
    u = x[0] - X0 - C * (x[1] - Y0) ** 2
    v = x[1] - Y0
    u2, v2 = A * u - u**3, LAM * v
    return jnp.stack(_h(u2, v2))


BENT = autonomous(_bent)


def _side(x, aux):
    """The exact basin of a state of the bent map: the sign of u (0 for u > 0, 1 for u < 0)."""
    x = np.asarray(x)
    u = x[:, 0] - X0 - C * (x[:, 1] - Y0) ** 2
    return (u < 0).astype(np.int64)


@pytest.mark.slow
@pytest.mark.parametrize("mu, a, b", [(1.8, -0.5, 0.7), (1.8, 1.1, -0.05), (1.02, -0.5, 0.7)])
def test_the_edge_of_the_bistable_map_is_its_repeller(mu, a, b):
    """x ↦ μ x − x³: the basins of ±√(μ − 1) meet at the repeller x = 0 (in the invariant interval); bisection
    brings the pair to it within tol, the tracked pair never leaves it by more than δ, and it is bisected again
    exactly when its width passes δ (at μ = 1.02 after 470–700 steps, longer than one compiled chunk)."""
    tol, delta = 1e-13, 1e-8
    ds = edge_track(BISTABLE, [a], [b], mu, steps=1500, tol=tol, delta=delta, options=OPTS)
    assert ds.attrs["status"] == "done"
    assert {int(ds.label_a), int(ds.label_b)} == {0, 1}
    edge = np.abs(ds["edge"].values[:, 0])
    at = ds["bisection_step"].values
    assert np.max(edge[at]) <= 2 * tol  # each re-bisection puts the pair on 0 again
    assert np.max(edge) <= delta  # |x_t| grows by μ a step until the pair is δ wide
    # near 0 the pair's width w grows by the multiplier μ a step: the next bisection comes at the first k
    # with w·μ^k > δ
    want = np.ceil(np.log(delta / ds["width_after"].values[:-1]) / np.log(mu))
    assert at.size >= 3 and np.all(np.abs(np.diff(at) - want) <= 1)
    assert np.all(ds["pair_distance"].values[at[1:]] > delta)
    assert ds.sizes["step"] == 1501


@pytest.mark.slow
@pytest.mark.parametrize("classify", [None, _side], ids=["census", "exact"])
def test_the_edge_of_the_bent_product_map_converges_to_its_saddle_along_the_parabola(classify):
    """The pair's a side, after each bisection, lies on the boundary X = X0 + c (Y − Y0)² within the pair's
    width, and the edge trajectory converges to the saddle (X0, Y0) as λ^t along it."""
    tol, delta = 1e-12, 1e-7
    a, b = _h(-0.5, 0.9), _h(0.7, -0.8)
    ds = edge_track(
        BENT, np.array(a), np.array(b), 0.0, classify=classify, steps=120, tol=tol, delta=delta, options=OPTS
    )
    assert ds.attrs["status"] == "done"
    at = ds["bisection_step"].values
    X, Y = ds["edge"].values[at, 0], ds["edge"].values[at, 1]
    np.testing.assert_allclose(X - X0 - C * (Y - Y0) ** 2, 0.0, atol=5 * tol)
    # along the boundary v = Y − Y0 contracts by λ each step: at the last bisection (t ≥ 60), |v| ≤ 1.3 λ^t
    t_last = int(at[-1])
    assert t_last >= 60
    dist = np.hypot(X[-1] - X0, Y[-1] - Y0)
    assert dist <= 1e-10
    # and in between the edge stays near the saddle: at most δ across it, plus the λ^t along it
    e = ds["edge"].values[60:]
    assert np.max(np.hypot(e[:, 0] - X0, e[:, 1] - Y0)) <= 2 * delta


def test_the_result_carries_its_options_and_the_two_attractors():
    ds = edge_track(BISTABLE, [-0.5], [0.7], 1.8, steps=50, tol=1e-12, delta=1e-8, options=OPTS)
    assert ds.attrs["analysis"] == "edge tracking"
    assert '"delta": 1e-08' in ds.attrs["options"] and "attnphys_version" in ds.attrs
    assert ds.attrs["n_attractors"] == 2
    assert (ds["width_after"].values <= 1e-12).all()
    assert (ds["evaluations"].values == 8 * ds["rounds"].values).all()
    assert int(ds.label_a) != int(ds.label_b)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"b": [0.9]}, "b"),  # the same basin as a = 0.7
        ({"b": [0.1, 0.2]}, "b"),
        ({"a": [np.nan]}, "a"),
        ({"delta": 1e-14}, "delta"),
        ({"tol": -1.0}, "tol"),
        ({"steps": 0}, "steps"),
        ({"points": 0}, "points"),
        ({"classify": "sign"}, "classify"),
        ({"classify": lambda x, aux: np.zeros(3, np.int64)}, "classify"),
        ({"m": "bistable"}, "m"),
        ({"a": "x"}, "a"),  # not numbers
        ({"a": [0.5, 0.1], "b": [-0.5, 0.1]}, "a"),  # not a state of this map (D = 1)
        ({"params": "abc"}, "params"),
    ],
)
def test_bad_inputs_are_named(kwargs, name):
    args = {"m": BISTABLE, "a": [0.7], "b": [-0.5], "params": 1.8}
    args.update(kwargs)
    m, a, b, params = args.pop("m"), args.pop("a"), args.pop("b"), args.pop("params")
    with pytest.raises(InputError) as e:
        edge_track(m, a, b, params, options=OPTS, **args)
    assert e.value.field == name


def _swap(x, p):
    """(u, v) ↦ (v, 1.8u − u³): its square is the bistable map in both coordinates. Attractors: the fixed
    points ±(x*, x*) and the 2-cycle (x*, −x*) ↔ (−x*, x*), x* = √0.8; the 2-cycle (0, x*) ↔ (x*, 0) is a
    saddle (multipliers 1.8 and 3 − 2·1.8 = −0.6 of the square) between the first fixed point and the
    attracting 2-cycle."""
    return jnp.stack([x[1], 1.8 * x[0] - x[0] ** 3])


@pytest.mark.slow
def test_the_edge_state_can_be_a_saddle_cycle():
    """Starts in the basins of (x*, x*) and of the attracting 2-cycle: the edge trajectory converges to the
    saddle 2-cycle {(0, x*), (x*, 0)}, at the rate 0.6 per two steps of its stable multiplier."""
    xs = np.sqrt(0.8)
    cycle = np.array([[0.0, xs], [xs, 0.0]])
    ds = edge_track(autonomous(_swap), [0.5, 0.6], [-0.5, 0.6], 0.0, steps=120, tol=1e-12, delta=1e-7, options=OPTS)
    assert ds.attrs["status"] == "done"
    e = ds["edge"].values
    d = np.min(np.linalg.norm(e[:, None] - cycle[None], axis=-1), axis=1)
    at = ds["bisection_step"].values
    assert d[at[-1]] <= 1e-9 and at[-1] >= 80  # 0.6^40 = 1.3e-9 of the initial distance ~0.6
    assert d[0] > 0.1  # the first bisected point is far from the cycle: the convergence is the tracking's
    assert np.max(d[80:]) <= 2e-7


@pytest.mark.parametrize("a, b, name", [([-0.5], [0.7], "a"), ([0.7], [-0.5], "b")])
def test_a_start_that_reaches_no_attractor_is_named(a, b, name):
    def undecided_below_zero(x, aux):
        return np.where(np.asarray(x)[:, 0] < 0, -1, 0)

    with pytest.raises(InputError) as e:
        edge_track(BISTABLE, a, b, 1.8, classify=undecided_below_zero)
    assert e.value.field == name


def test_a_pair_narrower_than_the_maps_precision_is_refused_not_followed():
    """In float32 a pair bisected to 1e-10 is one state: followed, it would be one orbit falling onto an
    attractor, reported as an edge. It is refused, naming ``tol``; at a tolerance float32 resolves it runs."""
    import jax

    with jax.enable_x64(False):
        with pytest.raises(InputError, match="one state in the map's precision") as e:
            edge_track(BENT, [X0 - 0.5, Y0 + 0.3], [X0 + 0.6, Y0 + 0.3], None, classify=_side, steps=50, tol=1e-10)
        assert e.value.field == "tol"
        ds = edge_track(BENT, [X0 - 0.5, Y0 + 0.3], [X0 + 0.6, Y0 + 0.3], None, classify=_side, steps=50, tol=1e-5,
                        delta=1e-3)
    assert ds.attrs["status"] == "done"
    assert np.min(np.linalg.norm(ds["edge"].values[-5:] - [X0, Y0], axis=1)) < 1e-3


def test_a_map_that_merges_the_pair_ends_the_run_as_collapsed():
    """A non-invertible map that sends both points of the pair to one state leaves no boundary to follow: the
    run stops there and says so."""

    def merge(x, p):  # the bistable map, but every state within 1e-3 of the repeller 0 goes to 0 itself
        return jnp.where(jnp.abs(x) < 1e-3, 0.0 * x, 1.8 * x - x**3)

    def side(x, aux):
        return (np.asarray(x)[:, 0] < 0).astype(np.int64)

    ds = edge_track(autonomous(merge), [-0.5], [0.7], 0.0, classify=side, steps=40, tol=1e-8, delta=1e-6)
    assert ds.attrs["status"] == "collapsed"
    assert ds["pair_distance"].values[-1] == 0.0 and ds.sizes["step"] < 41


def test_a_bisection_whose_inner_points_are_all_undecided_stops_as_stuck():
    """Only the two starts have a label: no bisection round can shrink the pair, and the result says so
    instead of returning a pair that does not straddle."""

    def ends_only(x, aux):
        x = np.asarray(x)[:, 0]
        return np.where(x == -0.5, 0, np.where(x == 0.7, 1, -1))

    ds = edge_track(BISTABLE, [-0.5], [0.7], 1.8, classify=ends_only, steps=10)
    assert ds.attrs["status"] == "stuck"
    assert ds.sizes["bisection"] == 1 and int(ds["undecided"][0]) == 8 and ds.sizes["step"] == 1


def _alternating(x, n, p):
    """The bistable map on even steps, the identity on odd ones; the auxiliary state n counts the steps."""
    return jnp.where(n % 2 == 0, 1.8 * x - x**3, x), n + 1


@pytest.mark.slow
@pytest.mark.parametrize("n0", [0, 1])
def test_the_auxiliary_state_travels_with_the_pair(n0):
    """A map whose step depends on its auxiliary state (a step counter): the census labels see the pair's
    current aux, and the pair, stepped with it, separates by 1.8 every other step — the bisection gaps are
    those of the bistable map doubled."""
    from attnphys.dynamics import FunctionMap

    tol, delta = 1e-13, 1e-8
    m = FunctionMap(step=_alternating)
    ds = edge_track(m, [-0.5], [0.7], 0.0, aux=jnp.asarray(n0), steps=300, tol=tol, delta=delta, options=OPTS)
    assert ds.attrs["status"] == "done" and ds.attrs["n_attractors"] == 2
    at = ds["bisection_step"].values
    assert np.max(np.abs(ds["edge"].values[at, 0])) <= 2 * tol
    k = np.ceil(np.log(delta / ds["width_after"].values[:-1]) / np.log(1.8))  # growing steps needed
    assert at.size >= 3 and np.all(np.abs(np.diff(at) - 2 * k) <= 2)
