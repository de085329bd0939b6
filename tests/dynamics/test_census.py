"""Attractor censuses against closed forms and independent computations (theory: docs/theory/dynamics.md §7)."""

import json

import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.dynamics._census import OUTCOMES, CensusOptions, census, census_batch
from attnphys.dynamics.classify import REGIME_CODE
from attnphys.dynamics.intervals import wilson_interval
from attnphys.dynamics.maps import BISTABLE, HENON, LOGISTIC, FunctionMap
from attnphys.dynamics.samplers import ExplicitSampler, PerturbationSampler

OPTS = CensusOptions(budget=4096, block=128, max_period=64, lyap_steps=20_000)


@pytest.fixture(scope="module")
def bistable_batch():
    """a = 1.8 (bistable) and a = 1 (the origin attracts only algebraically), the same 512 starts."""
    return census_batch(BISTABLE, np.array([1.8, 1.0]), ics=512, options=OPTS, param_values=[1.8, 1.0])


@pytest.fixture(scope="module")
def bistable(bistable_batch):
    ds = bistable_batch.sel(param=1.8)
    return ds.isel(attractor=slice(0, int(ds["n_attractors"])))


@pytest.fixture(scope="module")
def logistic():
    """One batch: r = 2.8, 3.2, 3.5, 3.83 (periods 1, 2, 4, 3), the same 32 starts at every r."""
    rs = np.array([2.8, 3.2, 3.5, 3.83])
    return census_batch(LOGISTIC, rs, ics=32, options=OPTS, param_values=rs, param_name="r")


@pytest.fixture(scope="module")
def henon():
    return census(HENON, jnp.array([1.4, 0.3]), ics=256, options=OPTS)


@pytest.mark.slow
def test_bistable_two_attractors_with_half_basins(bistable):
    """x ↦ 1.8x − x³: attractors ±√0.8 (multiplier 3 − 2a = −0.6), basins exchanged by x ↦ −x: ½ each."""
    ds = bistable
    assert ds.sizes["attractor"] == 2
    assert list(ds["kind"].values) == [REGIME_CODE["fixed_point"]] * 2 and list(ds["period"].values) == [1, 1]
    np.testing.assert_allclose(np.sort(ds["points"].values[:, 0, 0]), [-np.sqrt(0.8), np.sqrt(0.8)], atol=1e-15)
    np.testing.assert_allclose(ds["exponents"].values[:, 0], np.log(0.6), atol=1e-14)
    np.testing.assert_allclose(ds["floquet_abs"].values[:, 0], 0.6, atol=1e-14)
    assert np.all(ds["basin_ci_low"].values <= 0.5) and np.all(0.5 <= ds["basin_ci_high"].values)
    assert float(ds["unsettled_fraction"]) == 0.0
    assert ds["basin_fraction"].values.sum() == pytest.approx(1.0)
    # starts in (0, √a) stay positive (x(a − x²) ∈ (0, √a)): they must all be on the + attractor
    x0 = ds["ic_state"].values[:, 0]
    plus = int(np.argmax(ds["points"].values[:, 0, 0]))
    inside = (x0 > 0) & (x0 < np.sqrt(1.8))
    assert np.all(ds["label"].values[inside] == plus)
    assert np.all(ds["label"].values[(x0 < 0) & (x0 > -np.sqrt(1.8))] == 1 - plus)


@pytest.mark.slow
def test_henon_one_chaotic_attractor_plus_divergent_starts(henon):
    ds = henon
    kinds = sorted(ds["kind"].values.tolist())
    assert kinds == sorted([REGIME_CODE["chaotic"], REGIME_CODE["divergent"]])
    a = int(np.flatnonzero(ds["kind"].values == REGIME_CODE["chaotic"])[0])
    assert float(ds["exponents"][a, 0]) == pytest.approx(0.419, abs=0.01)
    assert float(ds["exponents"][a, 1]) == pytest.approx(-1.623, abs=0.01)
    assert int(ds["period"][a]) == 0 and np.all(np.isnan(ds["floquet_abs"].values[a]))
    total = ds["basin_fraction"].values.sum() + float(ds["unsettled_fraction"])
    assert total == pytest.approx(1.0, abs=1e-12)


def test_divergence_steps_match_plain_iteration(henon):
    """Each divergent start's settling step is the first step with |x| > bound, by plain numpy iteration."""
    ds = henon
    div = int(np.flatnonzero(ds["kind"].values == REGIME_CODE["divergent"])[0])
    lanes = np.flatnonzero(ds["label"].values == div)
    assert lanes.size > 10
    for i in lanes[:20]:
        x, y = ds["ic_state"].values[i]
        t = 0
        with np.errstate(over="ignore", invalid="ignore"):
            while np.isfinite(x) and max(abs(x), abs(y)) <= OPTS.bound:
                x, y = 1 - 1.4 * x * x + y, 0.3 * x
                t += 1
        assert int(ds["settle_step"][i]) == t


@pytest.mark.slow
def test_periodic_settling_step_is_the_start_of_the_periodic_stretch(logistic):
    """Logistic r = 3.2: the settling step s is the first step with |x_{t+2} − x_t| ≤ 1e-8 for all t ≥ s."""
    ds = logistic.sel(param=3.2)
    assert int(ds["n_attractors"]) == 1 and int(ds["period"][0]) == 2
    for i in range(16):
        xs = [float(ds["ic_state"][i, 0])]
        for _ in range(400):
            xs.append(3.2 * xs[-1] * (1 - xs[-1]))
        xs = np.asarray(xs)
        e = np.abs(xs[2:] - xs[:-2])
        s = int(ds["settle_step"][i])
        assert np.all(e[s:] <= 1e-8) and (s == 0 or e[s - 1] > 1e-8)
    # exact exponent from the closed-form multiplier of the period-2 orbit
    assert float(ds["exponents"][0, 0]) == pytest.approx(np.log(abs(-(3.2**2) + 2 * 3.2 + 4)) / 2, abs=1e-13)


def test_period4_exponent_against_the_product_of_derivatives(logistic):
    """Logistic r = 3.5: λ = (1/4) Σ log|r(1 − 2x_j)| over the orbit, computed independently in numpy."""
    ds = logistic.sel(param=3.5)
    assert int(ds["period"][0]) == 4 and float(ds["basin_fraction"][0]) == 1.0
    x = 0.3
    for _ in range(5000):
        x = 3.5 * x * (1 - x)
    orbit = []
    for _ in range(4):
        orbit.append(x)
        x = 3.5 * x * (1 - x)
    lam = np.mean(np.log(np.abs(3.5 * (1 - 2 * np.asarray(orbit)))))
    assert float(ds["exponents"][0, 0]) == pytest.approx(lam, abs=1e-13)
    np.testing.assert_allclose(np.sort(ds["points"].values[0, :4, 0]), np.sort(orbit), atol=1e-14)
    assert np.all(np.isnan(ds["points"].values[0, 4:]))


def test_a_start_that_has_not_settled_is_not_forced_into_a_class(bistable_batch):
    """x ↦ x − x³ (a = 1) approaches 0 only algebraically (x_t ~ 1/√(2t)): nothing settles in the budget."""
    ds = bistable_batch.sel(param=1.0)
    assert int(ds["n_attractors"]) == 0 and np.all(ds["kind"].values == -1)
    assert np.all(ds["label"].values == -1) and np.all(ds["settle_step"].values == -1)
    assert float(ds["unsettled_fraction"]) == 1.0
    assert set(ds["ic_outcome"].values.tolist()) <= {OUTCOMES.index("converging"), OUTCOMES.index("unsettled")}


def test_batch_of_parameter_values_and_cf_attributes(logistic):
    ds = logistic
    assert ds.sizes["param"] == 4 and ds["param"].attrs["long_name"] == "r"
    assert ds["n_attractors"].values.tolist() == [1, 1, 1, 1]
    assert ds["period"].values[:, 0].tolist() == [1, 2, 4, 3]
    assert ds["kind"].values[:, 0].tolist() == [REGIME_CODE["fixed_point"]] + [REGIME_CODE["periodic"]] * 3
    for name in (
        "kind",
        "period",
        "basin_fraction",
        "basin_ci_low",
        "basin_ci_high",
        "exponents",
        "floquet_abs",
        "label",
        "settle_step",
        "points",
    ):
        assert name in ds
    for v in list(ds.data_vars.values()):
        assert "long_name" in v.attrs, v.name
    assert ds["exponents"].attrs["units"] == "1/step" and ds["settle_step"].attrs["units"] == "step"
    lo, hi = wilson_interval(32, 32)
    assert ds["basin_ci_low"].values[0, 0] == pytest.approx(float(lo))


def test_explicit_and_perturbation_samplers():
    states = np.linspace(-1.2, 1.2, 16)[:, None]
    ds = census(BISTABLE, 1.8, ExplicitSampler(x=states), ics=16, options=OPTS)
    np.testing.assert_allclose(ds["ic_state"].values, states)
    plus = int(np.argmax(ds["points"].values[:, 0, 0]))
    inside = (states[:, 0] > 0) & (states[:, 0] < np.sqrt(1.8))
    assert np.all(ds["label"].values[inside] == plus) and np.all(ds["label"].values[~inside] == 1 - plus)
    pert = PerturbationSampler(x=np.array([np.sqrt(0.8)]), radius=0.05)
    ds = census(BISTABLE, 1.8, pert, ics=16, options=OPTS)
    assert np.all(np.abs(ds["ic_state"].values[:, 0] - np.sqrt(0.8)) <= 0.05)
    assert ds.sizes["attractor"] == 1 and float(ds["basin_fraction"][0]) == 1.0


@pytest.mark.slow
def test_auxiliary_cycle_sets_the_period():
    """x' = −0.5x + 1 driven by a counter a' = (a + 1) mod 4: x is fixed but the full state has period 4."""
    m = FunctionMap(step=lambda x, a, p: (-0.5 * x + 1.0, (a + 1) % 4))
    ex = ExplicitSampler(x=np.array([[0.1], [3.0]]), aux=np.array([0, 2]))
    ds = census(m, jnp.zeros(()), ex, ics=2, options=OPTS)
    assert ds.sizes["attractor"] == 1
    assert int(ds["period"][0]) == 4 and int(ds["aux_closed"][0]) == 1
    assert float(ds["exponents"][0, 0]) == pytest.approx(np.log(0.5), abs=1e-14)


@pytest.mark.slow
@pytest.mark.long
def test_delayed_logistic_invariant_circle_is_quasi_periodic():
    from attnphys.dynamics.maps import DELAYED_LOGISTIC

    ds = census(DELAYED_LOGISTIC, 2.1, ics=128, options=OPTS)
    q = np.flatnonzero(ds["kind"].values == REGIME_CODE["quasi_periodic"])
    assert q.size == 1
    assert abs(float(ds["exponents"][q[0], 0])) < 1e-3


def test_chunks_combine_along_the_parameter(bistable_batch):
    from attnphys.dynamics._census import combine

    a, b = bistable_batch.isel(param=[1]), bistable_batch.isel(param=[0])  # 0 and 2 attractors
    ds = combine([a, b])
    assert ds.sizes["param"] == 2 and ds.sizes["attractor"] == 2
    assert ds["kind"].values[0].tolist() == [-1, -1] and np.all(ds["kind"].values[1] >= 0)
    np.testing.assert_array_equal(ds["label"].values[1], b["label"].values[0])
    assert ds["basin_fraction"].attrs["long_name"] == b["basin_fraction"].attrs["long_name"]


# ---------------------------------------------------------------- known numbers of attractors across ranges


RANGE_OPTS = CensusOptions(budget=8000, lyap_steps=4000, n_classify=1000, merge_steps=8000, merge_points=500)


@pytest.fixture(scope="module")
def logistic_range():
    """r over [3.6, 4] with the points where pieces of one banded attractor and unstable orbits were
    reported as attractors (3.85, 3.854, 3.857)."""
    rs = np.sort(np.r_[np.linspace(3.6, 4.0, 17), 3.85, 3.854, 3.857])
    return census_batch(LOGISTIC, rs, ics=48, options=RANGE_OPTS, param_values=rs, param_name="r")


@pytest.mark.slow
def test_logistic_has_one_attractor_at_every_r(logistic_range):
    """Singer's theorem: the logistic map has one attractor at every r; censuses and tracks say so."""
    from attnphys.dynamics._tracks import tracks

    ds = logistic_range
    assert np.all(ds["n_attractors"].values == 1), ds["n_attractors"].values
    assert np.all(ds["stable"].values[:, 0] != 0)  # never an unstable orbit
    assert int(tracks(ds)["n_coexisting"].max()) == 1


@pytest.mark.slow
@pytest.mark.long
def test_logistic_has_one_attractor_at_every_r_finely():
    rs = np.sort(np.r_[np.linspace(3.4, 4.0, 61), 3.85, 3.854, 3.857])
    ds = census_batch(LOGISTIC, rs, ics=64, param_values=rs, param_name="r")
    assert np.all(ds["n_attractors"].values == 1)


@pytest.mark.slow
def test_bistable_has_two_attractors_across_its_range():
    a = np.linspace(1.1, 1.95, 9)
    ds = census_batch(BISTABLE, a, ics=64, options=OPTS, param_values=a)
    assert np.all(ds["n_attractors"].values == 2)


def test_a_start_on_an_unstable_orbit_is_counted_apart():
    """r = 3.02: the fixed point 1 − 1/r has μ = 2 − r = −1.02; a start on it looks periodic for a few
    hundred steps but is no attractor: outcome ``unstable``, counted in ``unstable_fraction``, not as
    unsettled (it did not fail to settle); the period-2 orbit is the attractor."""
    r = 3.02
    starts = np.array([[1 - 1 / r], [0.3], [0.5], [0.9]])
    ds = census(LOGISTIC, jnp.asarray(r), ExplicitSampler(x=starts), ics=4, options=OPTS)
    assert int(ds["n_attractors"]) == 1 and int(ds["period"][0]) == 2 and int(ds["stable"][0]) == 1
    assert int(ds["label"][0]) == -1 and OUTCOMES[int(ds["ic_outcome"][0])] == "unstable"
    assert float(ds["unsettled_fraction"]) == 0.0 and float(ds["unstable_fraction"]) == 0.25
    assert float(ds["basin_fraction"].sum()) + float(ds["unstable_fraction"]) == 1.0


def test_starts_exactly_on_the_repellers_are_not_unsettled():
    """The logistic map at r = 3.5: the starts 0 and 1 land exactly on the repelling fixed point 0 and
    stay there; they are on an unstable orbit, not unsettled (they were counted as unsettled)."""
    starts = np.array([[0.0], [1.0], [0.3], [0.6]])
    ds = census(LOGISTIC, jnp.asarray(3.5), ExplicitSampler(x=starts), ics=4, options=OPTS)
    assert int(ds["n_attractors"]) == 1 and int(ds["period"][0]) == 4
    assert ds["label"].values.tolist() == [-1, -1, 0, 0]
    assert float(ds["unsettled_fraction"]) == 0.0 and float(ds["unstable_fraction"]) == 0.5


@pytest.mark.slow
def test_weak_chaos_is_chaotic_not_undetermined():
    """The logistic map at r = 3.85: λ₁ ≈ 0.006 > 0 on a banded chaotic attractor; the 0–1 test on a record
    of a few Lyapunov times says regular (K ≈ 0), which is no verdict there: chaotic (was undetermined)."""
    from attnphys.dynamics.classify import REGIME_CODE

    ds = census(LOGISTIC, jnp.asarray(3.85), ics=32, seed=0, options=OPTS)
    assert int(ds["n_attractors"]) == 1
    assert int(ds["kind"][0]) == REGIME_CODE["chaotic"]
    assert float(ds["exponents"][0, 0]) > 0.003


@pytest.mark.slow
def test_chunks_within_a_memory_budget_give_the_same_census():
    """A budget that fits 5 starts per settle call: the same attractors, labels and steps as one call."""
    rs = np.array([3.5, 3.9])
    small = OPTS._replace(memory_budget=5 * OPTS._replace(n_state=1).lane_bytes())
    assert small._replace(n_state=1).lanes_per_chunk() == 5
    a = census_batch(LOGISTIC, rs, ics=16, options=OPTS, param_values=rs)
    b = census_batch(LOGISTIC, rs, ics=16, options=small, param_values=rs)
    for v in ("label", "settle_step", "ic_outcome", "kind", "period", "basin_fraction"):
        np.testing.assert_array_equal(a[v].values, b[v].values)


@pytest.mark.slow
def test_grid_sampler_basins_of_the_bistable_map():
    """Starts on a symmetric grid of [−1.5, 1.5]: the two basins are mirror images (x ↦ −x)."""
    from attnphys.dynamics.samplers import GridSampler

    g = GridSampler(lo=[-1.5], hi=[1.5], shape=(61,))
    ds = census(BISTABLE, jnp.asarray(1.8), g, ics=g.size, options=OPTS)
    lab = ds["label"].values
    plus = int(np.argmax(ds["points"].values[:, 0, 0]))
    mirror = np.where(lab >= 0, 1 - lab, lab)
    np.testing.assert_array_equal(lab, mirror[::-1])
    assert lab[40] == plus and lab[20] == 1 - plus
    assert "grid" in ds.attrs["sampler"]


@pytest.mark.slow
def test_the_starts_are_ics_as_in_the_dmft_census_and_n_ics_still_works_with_a_warning():
    from attnphys.errors import InputError

    new = census(LOGISTIC, jnp.asarray(3.2), ics=8, steps=2048, options=OPTS)
    with pytest.warns(DeprecationWarning, match="n_ics is renamed ics"):
        old = census(LOGISTIC, jnp.asarray(3.2), n_ics=8, options=OPTS._replace(budget=2048))
    assert new.sizes["ic"] == old.sizes["ic"] == 8
    assert np.array_equal(new["label"].values, old["label"].values)
    assert json.loads(new.attrs["census_options"])["budget"] == 2048
    with pytest.raises(InputError, match="n_ics"):
        census(LOGISTIC, jnp.asarray(3.2), ics=8, n_ics=8, options=OPTS)
    with pytest.raises(InputError, match="steps"):
        census(LOGISTIC, jnp.asarray(3.2), ics=8, steps=0, options=OPTS)
