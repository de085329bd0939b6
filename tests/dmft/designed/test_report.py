"""Does a design work: emitted patterns, the cycle report and its figure (theory: docs/theory/designed.md §4)."""

import json

import numpy as np
import pytest
from matplotlib.figure import Figure

from attnphys.dmft.designed import (
    DesignedModel,
    cycle_figure,
    cycle_report,
    designed_config,
    emitted_patterns,
    follows_cycle,
    load_design,
)
from attnphys.dmft.designed._report import base_overlaps, is_cycle
from attnphys.errors import InputError


def test_emitted_pattern_is_the_leading_base_pattern():
    d = load_design("4_duplicity_loop_4")  # the output's patterns 1 and 3 both decode base pattern 1
    mo_se = np.array(
        [
            [0.0, 1.0, 0.0, 1.0],  # base 1
            [0.388, 0.0, 0.612, 0.0],  # base 2, leading by 0.224
            [0.5, 0.45, 0.0, 0.45],  # base 0 by only 0.05: none
            [0.5, 0.5, 0.5, 0.5],  # a tie: none
        ]
    )
    np.testing.assert_array_equal(base_overlaps(mo_se, d)[0], [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(emitted_patterns(mo_se, d), [1, 2, -1, -1])
    np.testing.assert_array_equal(emitted_patterns(mo_se, d, margin=0.01), [1, 2, 0, -1])


def test_following_a_cycle_from_a_step_on():
    cycle = [0, 1, 2, 1]
    e = [3, 3, 2, 1, 0, 1, 2, 1, 0, 1, 2, 1, 0]
    assert follows_cycle(e, cycle) == (2, 0)  # e_t = cycle[t mod 4] from step 2 on
    assert follows_cycle([0, 1, 2, 1, 0, 1, 2, 2], cycle) == (-1, -1)
    assert follows_cycle([1, 2, 1, 0] * 3, cycle) == (0, 1)
    assert is_cycle([2, 1, 0, 1], cycle) and is_cycle([1, 0, 1, 2] * 2, cycle)
    assert not is_cycle([0, 1, 2], cycle) and not is_cycle([0, 1, 2, 2], cycle) and not is_cycle([0, 2, 1, 1], cycle)


@pytest.fixture(scope="module")
def loop4():
    """A small report of 4_duplicity_loop_4 at β_o = 3, γ = 20, ε = 0.2 (one of the reference runs)."""
    cfg = designed_config("4_duplicity_loop_4", beta_o=3.0, gamma=20.0, epsilon=0.2)
    return cycle_report(
        cfg, steps=600, max_period=8, ics=8, census_steps=600, params=("beta_o",), grid=5, continuation=False
    )


@pytest.mark.slow
def test_loop_4_settles_on_its_cycle(loop4):
    ds = loop4
    assert bool(ds["on_cycle"]) and int(ds["period"]) == 4
    assert json.loads(ds.attrs["cycle"]) == [0, 1, 2, 1]
    # the reference run: emitted 1, 2, 1, 0, … from the first generated token on
    assert int(ds["cycle_step"]) == 0 and int(ds["cycle_phase"]) == 1
    np.testing.assert_array_equal(ds["emitted"].values[:8], [1, 2, 1, 0, 1, 2, 1, 0])
    assert 0 <= int(ds["settle_step"]) < 100


def test_loop_4_is_stable_with_the_toolkits_multipliers(loop4):
    ds = loop4
    assert bool(ds["stable"]) and int(ds["floquet_resolved"]) >= 3
    mu = ds["floquet_abs"].values
    assert 0 < mu[0] < 1 and np.all(np.diff(mu[:3]) <= 1e-12)
    assert float(ds["monodromy_norm"]) >= mu[0] * (1 - 1e-9)
    np.testing.assert_allclose(ds["floquet_exponent"].values[0], np.log(mu[0]) / 4)


def test_loop_4_census_and_survival(loop4):
    ds = loop4
    assert float(ds["basin_fraction"]) == 1.0 and float(ds["unsettled_fraction"]) == 0.0
    assert float(ds["basin_ci_low"]) < 1.0 == float(ds["basin_ci_high"])
    assert bool(ds["attractor_on_cycle"].values.all())
    assert list(ds["param"].values) == ["beta_o"]
    lo, hi = float(ds["sweep_low"][0]), float(ds["sweep_high"][0])
    assert lo <= 3.0 <= hi and hi == 1000.0
    np.testing.assert_allclose(ds["sweep_value"].values[0], [0.1, 1.0, 3.0, 10.0, 100.0, 1000.0])
    assert not bool(ds["sweep_on_cycle"].values[0, 0])  # at β_o = 0.1 nothing is emitted clearly
    assert lo == 3.0  # at β_o = 1 the tokens no longer lead by the margin
    assert "continuation_low" not in ds


def test_the_figure(loop4):
    from attnphys.plots import cycle_figure as figure_of

    fig = figure_of(loop4)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "step" and "settles on 0 → 1 → 2 → 1" in ax.get_title()
    assert "stable, max|μ| = " in ax.get_title()
    other = Figure()
    axis = other.add_subplot()
    assert figure_of(loop4, ax=axis, steps=12) is other
    assert axis.get_images()[0].get_array().shape[1] == 12
    # the old place forwards, with a warning, for one release (ax positional as before)
    old = Figure()
    with pytest.warns(DeprecationWarning, match="moved to attnphys.plots.cycle_figure"):
        assert cycle_figure(loop4, old.add_subplot()) is old


def test_a_design_that_misses_its_cycle_says_so():
    """4_duplicity_loop_1 at β_o = γ = 100, ε = 0.5 settles on a period-4 orbit whose tokens overlap two
    base patterns equally every other step (the reference run): it does not emit its cycle."""
    cfg = designed_config("4_duplicity_loop_1", beta_o=100.0, gamma=100.0, epsilon=0.5)
    ds = cycle_report(cfg, steps=600, max_period=8, ics=0, params=(), continuation=False)
    assert int(ds["period"]) == 4 and not bool(ds["on_cycle"]) and int(ds["cycle_step"]) == -1
    assert list(ds["emitted"].values[-4:]).count(-1) == 2


def test_report_arguments_are_checked():
    cfg = designed_config("4_duplicity_loop_no_pe")
    with pytest.raises(InputError, match="names no intended cycle"):
        cycle_report(cfg)
    with pytest.raises(InputError, match="base patterns run over 0..2"):
        cycle_report(cfg, cycle=[0, 3])
    with pytest.raises(InputError, match="unknown parameter 'beta_att'"):
        cycle_report(cfg, cycle=[0, 1], params=("beta_att",))
    with pytest.raises(InputError, match="at least 4·max_period"):
        cycle_report(cfg, cycle=[0, 1], steps=10)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, cycle, emitted",
    [("4_duplicity_loop_4", [0, 1, 2, 1], [1, 2, 1, 0]), ("4_no_duplicity", [0, 1, 2, 3], [1, 2, 3, 0])],
)
@pytest.mark.long
def test_full_report_at_the_reference_parameters(name, cycle, emitted):
    """β_o = γ = 100, ε = 0.5 (the reference's script): the cycle from the first token, every random start,
    a superstable orbit (its monodromy vanishes to round-off), and a range in every parameter found by
    the sweep and by continuation."""
    model = DesignedModel.of(designed_config(name, beta_o=100.0, gamma=100.0, epsilon=0.5))
    ds = cycle_report(model)
    assert json.loads(ds.attrs["cycle"]) == cycle
    assert bool(ds["on_cycle"]) and int(ds["period"]) == 4 and int(ds["cycle_step"]) == 0
    np.testing.assert_array_equal(ds["emitted"].values[:4], emitted)
    assert bool(ds["stable"]) and float(ds["monodromy_norm"]) < 1e-12
    assert float(ds["basin_fraction"]) == 1.0
    for i, p in enumerate(ds["param"].values):
        s0 = float(getattr(model.config, str(p)))
        assert float(ds["sweep_low"][i]) <= s0 <= float(ds["sweep_high"][i])
        assert float(ds["continuation_low"][i]) <= s0 <= float(ds["continuation_high"][i])
    # the continuation reaches the end of its range (1000, to round-off of the arclength steps)
    assert float(ds["continuation_high"].sel(param="beta_o")) == pytest.approx(1000.0, rel=1e-12)
    # below some γ the orbit stops emitting the cycle: a located end inside the searched range
    assert 0.1 < float(ds["continuation_low"].sel(param="gamma")) < 10.0
    assert str(ds["continuation_low_reason"].sel(param="gamma").values) != "range_end"


def test_a_superstable_orbit_with_a_large_monodromy_norm_is_stable():
    """4_cycle_0_1_2_1 at β_o = γ = 100, ε = 0.5 settles on a period-4 orbit (emitting 1 every other step)
    whose monodromy has ‖M‖₂ = β_o/2 = 50 and is nilpotent to round-off: ‖M²‖₂ ≈ 1e−49, so ρ(M) < 1.
    The norm bound above one does not make it unstable (perturbations die within a few periods and the
    census finds it as an attractor)."""
    cfg = designed_config("4_cycle_0_1_2_1", beta_o=100.0, gamma=100.0, epsilon=0.5)
    ds = cycle_report(cfg, steps=600, max_period=8, ics=0, params=(), continuation=False)
    assert int(ds["period"]) == 4 and int(ds["floquet_resolved"]) == 0
    np.testing.assert_allclose(float(ds["monodromy_norm"]), 50.0, rtol=1e-6)
    assert str(ds["stability"].values) == "stable" and bool(ds["stable"])
    assert str(ds["stability_method"].values) == "monodromy_power_2"
    assert float(ds["radius_bound"]) < 1e-3


def test_perturbation_decay_decides_where_no_bound_does():
    """The last resort of the report's stability verdict, on the logistic map at r = 3.5: its period-4
    orbit attracts (perturbations die), its period-2 orbit repels (|μ| = |4 + 2r − r²| = 1.25)."""
    import jax.numpy as jnp

    from attnphys.dmft.designed._report import _by_perturbation
    from attnphys.dynamics.maps import LOGISTIC
    from attnphys.dynamics.periodic import refine

    r = jnp.asarray(3.5)
    p4 = refine(LOGISTIC, jnp.array([0.38281968]), None, r, 4)
    p2 = refine(LOGISTIC, jnp.array([0.42857143]), None, r, 2)
    assert bool(p4.converged) and bool(p2.converged)
    assert _by_perturbation(LOGISTIC, p4, r, 4) == "stable"
    assert _by_perturbation(LOGISTIC, p2, r, 2) == "unstable"
