"""Diagram drawing: the library's regime filter, the reference's count filter, component and pair choice."""

import numpy as np
import pytest
import xarray as xr

from attnphys.dynamics.classify import REGIMES
from attnphys.plots._bifurcation import (
    COUNT_LEVELS,
    NOT_PERIODIC,
    choose_pair,
    count_labels,
    count_scale,
    dequantise,
    diagram_points,
    quantise,
)

PERIODIC, QP, CHAOTIC = (REGIMES.index(n) for n in ("periodic", "quasi_periodic", "chaotic"))


def synthetic(n_samples=1000, directions=False):
    """Three values: a period-5 orbit, a circle (quasi-periodic) and noise (chaotic), with sections."""
    rng = np.random.default_rng(0)
    t = np.arange(n_samples)
    period5 = np.stack([np.cos(2 * np.pi * t / 5 + k + 0.3) * 0.5 for k in range(3)], -1)
    circle = np.stack([0.3 * np.cos(0.1234 * t), 0.3 * np.sin(0.1234 * t), 0.1 * np.cos(0.05 * t)], -1)
    noise = rng.uniform(-0.8, 0.8, (n_samples, 3))
    orbit = np.stack([period5, circle, noise])
    pairs = ["0|1", "0|2", "1|0", "2|0"]
    section = np.full((3, 4, 50), np.nan)
    for i, o in enumerate(orbit):
        for j, name in enumerate(pairs):
            f, g = (int(x) for x in name.split("|"))
            hits = o[np.abs(o[:, g]) <= 0.01, f][:50]
            section[i, j, : hits.size] = hits
    ds = xr.Dataset(
        {"orbit": (("beta_o", "sample", "feature"), orbit), "section": (("beta_o", "pair", "crossing"), section),
         "regime": (("beta_o",), np.array([PERIODIC, QP, CHAOTIC], np.int8)),
         "exponents": (("beta_o", "exponent"), np.array([[-0.1, -0.2], [0.0, -0.1], [0.2, 0.0]]))},
        coords={"beta_o": [1.0, 1.1, 1.2], "pair": pairs, "feature": [0, 1, 2]})
    if directions:
        ds = xr.concat([ds, ds], dim=xr.DataArray(["up", "down"], dims="direction", name="direction"))
        ds = ds.transpose("direction", "beta_o", ...)
    return ds


def test_quantisation_levels_and_centres():
    Y = 0.5
    # y = -Y is level 0, y = +Y level R; the centre of a level maps back into the level
    assert quantise(-Y, Y) == 0 and quantise(Y, Y) == COUNT_LEVELS
    q = quantise(np.linspace(-Y, Y * 0.999, 101), Y)
    np.testing.assert_array_equal(quantise(dequantise(q, Y), Y), q)
    assert np.max(np.abs(dequantise(q, Y) - np.linspace(-Y, Y * 0.999, 101))) <= Y / COUNT_LEVELS


def test_count_scale_is_the_largest_value_not_magnitude():
    ds = synthetic()
    assert count_scale(ds) == pytest.approx(float(ds.orbit.max()))
    neg = ds.assign(orbit=-np.abs(ds.orbit))
    assert count_scale(neg) == pytest.approx(float(np.abs(ds.orbit).max()))


def test_count_filter_labels():
    ds = synthetic()
    U, code = count_labels(ds, feature=0)
    assert U[0] == 5  # five distinct values of a period-5 orbit
    assert 80 <= U[1] < 2500 and 80 <= U[2] < 2500  # 1000 samples cannot reach the chaotic threshold
    np.testing.assert_array_equal(code, [PERIODIC, NOT_PERIODIC, NOT_PERIODIC])
    U, code = count_labels(synthetic(20_000), feature=0)
    assert U[1] < 2500 <= U[2]
    np.testing.assert_array_equal(code, [PERIODIC, QP, CHAOTIC])


def test_library_filter_draws_periodic_values_in_full_and_sections_otherwise():
    ds = synthetic()
    x, y, c = diagram_points(ds, feature=0, pair=0)
    np.testing.assert_allclose(np.sort(y[x == 1.0]), np.sort(np.unique(np.round(ds.orbit.values[0, :, 0], 10))))
    sec = ds.section.values[2, 0]
    np.testing.assert_array_equal(y[x == 1.2], sec[np.isfinite(sec)])
    assert set(c[x == 1.2]) == {CHAOTIC}
    x, y, _ = diagram_points(ds, feature=0, pair=0, max_points=3)
    assert all(np.sum(x == v) <= 3 for v in (1.0, 1.1, 1.2))


def test_reference_filter_draws_quantised_values():
    ds = synthetic()
    Y = count_scale(ds)
    x, y, c = diagram_points(ds, feature=0, pair=0, filter="reference")
    assert np.sum(x == 1.0) == 5 and set(c[x == 1.0]) == {PERIODIC}
    np.testing.assert_array_equal(quantise(y, Y), quantise(dequantise(quantise(y, Y), Y), Y))
    with pytest.raises(ValueError, match="filter"):
        diagram_points(ds, filter="other")


@pytest.mark.parametrize(
    "component, pair, expected",
    [(None, None, (0, 1, 0)), (1, None, (1, 0, 2)), (None, "2|0", (2, 0, 3)), (2, "2|0", (2, 0, 3))],
)
def test_component_and_pair(component, pair, expected):
    assert choose_pair(["0|1", "0|2", "1|0", "2|0"], 3, component, pair) == expected


@pytest.mark.parametrize("component, pair, message", [(1, "0|1", "not the plotted component"),
                                                     (None, "1|2", "not stored"), (None, "x", "f|g"),
                                                     (5, None, "not in")])
def test_bad_component_or_pair(component, pair, message):
    with pytest.raises(ValueError, match=message):
        choose_pair(["0|1", "0|2", "1|0", "2|0"], 3, component, pair)


@pytest.mark.slow
def test_figures_are_returned_and_saved_by_the_caller(tmp_path):
    from matplotlib.figure import Figure

    from attnphys.plots import bifurcation_figure, save_figure, sections_figure

    ds = synthetic(directions=True)
    fig = bifurcation_figure(ds, component=1, pair="1|0", max_points=100, filter="reference")
    assert isinstance(fig, Figure) and not list(tmp_path.iterdir())  # nothing written by the figure function
    paths = [save_figure(fig, tmp_path / "b.png"), save_figure(sections_figure(ds), tmp_path / "b_sections.pdf")]
    assert [p.name for p in paths] == ["b.png", "b_sections.pdf"]
    assert all(p.stat().st_size > 1000 for p in paths)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.png", "b_sections.pdf"]  # no partial files left
    outer = Figure()
    left, right = outer.subfigures(1, 2)
    assert bifurcation_figure(ds, fig=left) is outer and sections_figure(ds, fig=right) is outer


def test_every_regime_has_a_colour():
    from attnphys.dynamics.classify import REGIMES
    from attnphys.plots import REGIME_COLORS

    assert set(REGIME_COLORS) == set(REGIMES)
