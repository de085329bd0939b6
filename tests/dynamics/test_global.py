"""Global stability measures against closed forms (theory: docs/theory/dynamics.md §10): the minimal
critical shock of the bistable map, convergence times of a linear contraction, the basin entropy of a
straight boundary and of Newton's basins for z³ = 1, and the uncertainty exponent of a smooth and of a
Cantor-set boundary."""

import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.dynamics import (
    CensusOptions,
    GridSampler,
    autonomous,
    basin_entropy,
    box_entropy,
    census,
    convergence_times,
    minimal_shock,
    uncertainty_exponent,
)
from attnphys.dynamics.maps import BISTABLE
from attnphys.errors import InputError

OPTS = CensusOptions(budget=2048, block=64, max_period=16)


def _cantor(x, p):
    """[0, 1/3] and [2/3, 1] stretched onto [0, 1]; (1/3, 1/2) → −1, [1/2, 2/3) → 2; outside, a contraction
    to −1 (below 0) or to 2 (above 1). The boundary of the two basins in [0, 1] is the middle-thirds Cantor
    set: box-counting dimension log 2 / log 3."""
    y = x[0]
    inner = jnp.where(y <= 1 / 3, 3 * y, jnp.where(y >= 2 / 3, 3 * y - 2, jnp.where(y < 0.5, -1.0, 2.0)))
    return jnp.where(y < 0, (y - 1) / 2, jnp.where(y > 1, (y + 2) / 2, inner))[None]


def _newton(x, p):
    """Newton's method for z³ = 1 in real coordinates."""
    z = x[0] + 1j * x[1]
    z2 = z - (z**3 - 1) / (3 * z**2)
    return jnp.stack([z2.real, z2.imag])


def _tilted(x, p):
    """The bistable map on the coordinate along (cos θ, sin θ), θ = 0.3, and a contraction by ½ across it:
    two fixed points, basins split by straight lines (through 0 and at ±√1.8 along the axis)."""
    c, s = jnp.cos(0.3), jnp.sin(0.3)
    u, v = c * x[0] + s * x[1], -s * x[0] + c * x[1]
    u2, v2 = 1.8 * u - u**3, 0.5 * v
    return jnp.stack([c * u2 - s * v2, s * u2 + c * v2])


@pytest.mark.slow
def test_the_minimal_shock_of_the_bistable_map_is_the_distance_to_the_nearest_preimage_of_the_repeller():
    """x ↦ a x − x³, a = 1.8: the basin of x* = √(a − 1) in the invariant interval is (0, √a) (f maps it into
    itself: max f = 2(a/3)^{3/2} < √a), just beyond √a f is negative and goes to −x*; so the minimal shock is
    √a − √(a − 1) = 0.4472 upwards, not the distance x* = 0.894 to the repeller 0 (theory:
    docs/theory/dynamics.md §10.2)."""
    ds = minimal_shock(BISTABLE, 1.8, ics=64, options=OPTS, directions=4, rounds=1, seed=3)
    want = np.sqrt(1.8) - np.sqrt(0.8)
    assert ds.sizes["attractor"] == 2
    np.testing.assert_allclose(ds["shock_norm"].values, want, rtol=1e-9)
    assert np.all(ds["shock_norm_low"].values <= ds["shock_norm"].values)
    # the shock points away from the repeller, and lands on the other attractor
    np.testing.assert_allclose(np.abs(ds["origin"].values[:, 0]), np.sqrt(0.8), rtol=1e-9)
    assert np.all(np.sign(ds["shock"].values[:, 0]) == np.sign(ds["origin"].values[:, 0]))
    assert ds["lands_on"].values.tolist() == [1, 0]
    # along −e_0 from x* (and +e_0 from −x*) the first crossing is the repeller itself, x* away
    np.testing.assert_allclose(
        np.sort(ds["ray_norm"].values[:, :2].ravel()), [want, want, np.sqrt(0.8), np.sqrt(0.8)], rtol=1e-8
    )
    again = minimal_shock(BISTABLE, 1.8, ics=64, options=OPTS, directions=4, rounds=1, seed=3)
    np.testing.assert_array_equal(again["shock"].values, ds["shock"].values)


@pytest.mark.slow
def test_a_lone_attractor_has_no_critical_shock_and_bad_arguments_are_named():
    m = autonomous(lambda x, p: 0.5 * x)
    start = GridSampler(lo=[-1.0], hi=[1.0], shape=(9,))
    ds = minimal_shock(m, 0.0, start, ics=9, options=OPTS, directions=2, rounds=0)
    assert np.isnan(ds["shock_norm"].values).all() and ds["lands_on"].values.tolist() == [-1]
    for kw, name in (({"directions": 0}, "directions"), ({"radius": -1.0}, "radius"), ({"tol": 0.0}, "tol")):
        with pytest.raises(InputError, match=name):
            minimal_shock(m, 0.0, start, ics=9, options=OPTS, **kw)
    with pytest.raises(InputError, match="attractors"):
        minimal_shock(m, 0.0, start, attractors=start)  # type: ignore[arg-type]


@pytest.mark.slow
def test_convergence_times_of_contractions_to_two_fixed_points_are_the_closed_form():
    """x ↦ s + λ(x − s), s = sign x, λ = ½: |x_n − s| = λⁿ|x₀ − s|, so τ = ⌈log(|x₀ − s|/ε)/log 2⌉ (theory:
    docs/theory/dynamics.md §10.3)."""
    m = autonomous(lambda x, p: jnp.sign(x) + 0.5 * (x - jnp.sign(x)))
    grid = GridSampler(lo=[-3.0], hi=[3.0], shape=(40,))
    ds = convergence_times(m, 0.0, grid, ics=40, options=OPTS, tol=1e-6)
    x0 = grid.states()[:, 0]
    with np.errstate(divide="ignore"):  # two starts sit on the fixed points: τ = 0
        want = np.maximum(0, np.ceil(np.log2(np.abs(x0 - np.sign(x0)) / 1e-6)))
    np.testing.assert_array_equal(ds["time"].values, want)
    assert float(ds["agreement"]) == 1.0
    assert ds["n_starts"].values.tolist() == [20, 20]
    for a in range(2):
        t = want[ds["label"].values == a]
        np.testing.assert_allclose(float(ds["time_mean"][a]), t.mean())
        np.testing.assert_allclose(ds["time_quantile"].values[a], np.quantile(t, ds["quantile"].values))
    with pytest.raises(InputError, match="quantiles"):
        convergence_times(m, 0.0, grid, ics=40, options=OPTS, quantiles=(0.5, 2.0))


def test_box_entropy_counts_colours_per_box():
    """A picture of four 2×2 boxes: one of one colour (S = 0), one half and half (log 2), one of three
    colours (−½ log ½ − 2·¼ log ¼), one of four (log 4) (theory: docs/theory/dynamics.md §10.4)."""
    pic = np.array([[0, 0, 0, 1], [0, 0, 0, 1], [0, 1, 0, 1], [2, 0, 2, 3]])
    ds = box_entropy(pic, 2)
    s = [0.0, np.log(2), -0.5 * np.log(0.5) - 0.5 * np.log(0.25), np.log(4)]
    np.testing.assert_allclose(ds["box_entropy"].values.ravel(), s)
    np.testing.assert_allclose(float(ds["basin_entropy"]), np.mean(s))
    np.testing.assert_allclose(float(ds["boundary_basin_entropy"]), np.mean(s[1:]))
    assert int(ds["n_boundary_boxes"]) == 3 and bool(ds["fractal_by_log2"])
    with pytest.raises(InputError, match="box"):
        box_entropy(pic, 1)
    with pytest.raises(InputError, match="labels"):
        box_entropy(pic.astype(float), 2)


@pytest.mark.slow
def test_a_straight_boundary_has_boundary_basin_entropy_near_one_half_below_log_2():
    """Boxes crossed by a straight line split in shares p spread evenly over (0, 1): the mean of
    −p log p − (1 − p) log(1 − p) is ½, below the log 2 of the fractal criterion (theory:
    docs/theory/dynamics.md §10.4)."""
    grid = GridSampler(lo=[-1.0, -1.0], hi=[1.0, 1.0], shape=(100, 100))
    ds = basin_entropy(autonomous(_tilted), 0.0, grid, box=10, options=OPTS)
    assert int(ds["n_colours"]) == 2 and float(ds["unsettled_fraction"]) == 0.0
    assert abs(float(ds["boundary_basin_entropy"]) - 0.5) < 0.06
    assert not bool(ds["fractal_by_log2"])
    # S_b = S_bb · N_b / N: a line crosses about 10·(|cos θ| + |sin θ|) of the 10 × 10 boxes
    assert 0.1 <= int(ds["n_boundary_boxes"]) / int(ds["n_boxes"]) <= 0.15
    assert ds["label"].dims == ("grid0", "grid1") and ds["label"].shape == (100, 100)


@pytest.mark.slow
def test_newtons_basins_for_z_cubed_have_boundary_basin_entropy_above_log_2():
    """Newton's method for z³ = 1: three basins with a common (Wada) fractal boundary; at boxes of 3 × 3
    points S_bb exceeds log 2 (measured 0.74–0.75 at 400 × 400; theory: docs/theory/dynamics.md §10.4)."""
    grid = GridSampler(lo=[-1.5123, -1.4929], hi=[1.4877, 1.5071], shape=(150, 150))
    ds = basin_entropy(autonomous(_newton), 0.0, grid, box=3, options=OPTS)
    assert int(ds["n_colours"]) == 3
    assert float(ds["boundary_basin_entropy"]) > np.log(2)
    assert bool(ds["fractal_by_log2"])


@pytest.mark.slow
def test_a_cantor_set_boundary_has_uncertainty_exponent_one_minus_log2_over_log3():
    """The boundary in [0, 1] is the middle-thirds Cantor set, D_b = log 2/log 3, so α = 1 − D_b = 0.3691
    (theory: docs/theory/dynamics.md §10.5)."""
    ds = uncertainty_exponent(
        autonomous(_cantor), 0.0, [0.0], [1.0], eps=np.geomspace(1e-9, 1e-3, 7), ics=8000, census_ics=32, options=OPTS
    )
    alpha, err = float(ds["uncertainty_exponent"]), float(ds["uncertainty_exponent_stderr"])
    want = 1 - np.log(2) / np.log(3)
    assert abs(alpha - want) < max(3 * err, 0.02), (alpha, err)
    np.testing.assert_allclose(float(ds["boundary_dimension"]), 1 - alpha)
    assert int(ds["n_attractors"]) == 2 and (ds["n_valid"] == 8000).all()


@pytest.mark.slow
def test_a_smooth_boundary_has_uncertainty_exponent_one():
    """Bistable map on [−1.2, 1.2]: the one boundary point 0, so f(ε) = 2ε/2.4 exactly in expectation and
    α = 1, D_b = 0 (theory: docs/theory/dynamics.md §10.5)."""
    ds = uncertainty_exponent(
        BISTABLE, 1.8, [-1.2], [1.2], eps=np.geomspace(1e-3, 3e-2, 5), ics=20000, census_ics=32, options=OPTS
    )
    alpha, err = float(ds["uncertainty_exponent"]), float(ds["uncertainty_exponent_stderr"])
    assert abs(alpha - 1.0) < max(3 * err, 0.05), (alpha, err)
    expected = 20000 * 2 * ds["eps"].values / 2.4  # binomial counts: within 4 standard deviations
    assert np.all(np.abs(ds["n_uncertain"].values - expected) <= 4 * np.sqrt(expected))
    with pytest.raises(InputError, match="eps"):
        uncertainty_exponent(BISTABLE, 1.8, [-1.2], [1.2], eps=[1e-3])
    with pytest.raises(InputError, match="hi"):
        uncertainty_exponent(BISTABLE, 1.8, [1.2], [-1.2])


@pytest.mark.slow
def test_the_default_sizes_fit_a_smooth_boundary_and_too_few_points_warn():
    """The bistable map's smooth boundary with the default sizes and 4,096 starts: at least three ε enter the fit
    and α = 1 within its interval; the old range (to 1e-2 of the side) leaves two and warns (theory:
    docs/theory/dynamics.md §10.5)."""
    import warnings

    from attnphys.errors import FitWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", FitWarning)
        ds = uncertainty_exponent(BISTABLE, 1.8, [-1.2], [1.2], ics=4096, census_ics=32, options=OPTS)
    assert int(ds["n_fit"]) >= 3
    alpha, err = float(ds["uncertainty_exponent"]), float(ds["uncertainty_exponent_stderr"])
    assert abs(alpha - 1.0) < 3 * err, (alpha, err)
    with pytest.warns(FitWarning, match="2 of 9 eps"):
        old = uncertainty_exponent(
            BISTABLE, 1.8, [-1.2], [1.2], eps=2.4 * np.geomspace(1e-6, 1e-2, 9), ics=4096, census_ics=32, options=OPTS
        )
    assert int(old["n_fit"]) == 2


def test_a_given_census_is_reused_and_must_come_from_the_same_starts():
    grid = GridSampler(lo=[-1.2], hi=[1.2], shape=(16,))
    ds = census(BISTABLE, 1.8, grid, ics=16, options=OPTS)
    ct = convergence_times(BISTABLE, 1.8, grid, attractors=ds, options=OPTS)
    assert float(ct["agreement"]) == 1.0
    other = GridSampler(lo=[-1.1], hi=[1.2], shape=(16,))
    with pytest.raises(InputError, match="sampler"):
        convergence_times(BISTABLE, 1.8, other, attractors=ds, options=OPTS)


@pytest.mark.slow
def test_on_the_dmft_map_convergence_times_follow_the_floquet_exponent():
    """The DMFT mean-field map (paper preset, β_o = 0.8: one period-4 attractor): near it the distance
    shrinks as e^{λ₁ n}, so tightening the radius from 1e-4 to 1e-8 adds log(1e4)/|λ₁| = 56.1 steps, λ₁ the
    census's exact exponent from the Floquet multipliers (theory: docs/theory/dynamics.md §10.3)."""
    import jax

    from attnphys.dmft.config import preset
    from attnphys.dmft.model import DMFTModel
    from attnphys.dmft.tasks import WindowSampler

    cfg = preset("paper")
    model = DMFTModel.of(cfg)
    m = model.map("mo_se")
    sc = jax.tree_util.tree_map(lambda a: a[0], model.scalars({"beta_o": np.array([0.8])}, n=1))
    start = WindowSampler(cfg.L, cfg.M, cfg.P)
    o = CensusOptions(budget=4000, max_period=64, block=64)
    ds = census(m, sc, start, ics=8, shared=model.couplings, options=o)
    assert ds["period"].values.tolist() == [4]
    loose, tight = (
        convergence_times(m, sc, start, attractors=ds, shared=model.couplings, options=o, tol=t) for t in (1e-4, 1e-8)
    )
    assert float(loose["agreement"]) == 1.0 and float(tight["agreement"]) == 1.0
    gap = float((tight["time"] - loose["time"]).mean())
    want = np.log(1e4) / -float(ds["exponents"].values[0, 0])
    assert abs(gap - want) < 2.0, (gap, want)


def test_a_convergence_time_run_moves_an_enclosing_bar():
    from attnphys.progress import nested_progress, piece

    moves = []
    with nested_progress(moves.append) as tracker, piece(1.0):
        convergence_times(BISTABLE, 1.8, ics=32, options=OPTS, progress=True)
        inner = sum(moves)
        tracker.complete(1.0)
    assert len(moves) >= 3 and 0.9 < inner <= 1.0
