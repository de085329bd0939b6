"""The figure of an edge-tracking run (theory: docs/theory/dynamics.md §11.6)."""

import numpy as np
import pytest

from attnphys.dynamics import CensusOptions, edge_track
from attnphys.dynamics.maps import BISTABLE
from attnphys.errors import InputError
from attnphys.plots import edge_figure, save_figure


@pytest.fixture(scope="module")
def run():
    return edge_track(
        BISTABLE, [-0.5], [0.7], 1.8, steps=100, tol=1e-12, delta=1e-8, options=CensusOptions(budget=2048)
    )


@pytest.mark.slow
def test_the_edge_figure_draws_the_width_and_the_distance_to_the_saddle(run, tmp_path):
    fig = edge_figure(run, reference=[[0.0]])
    ax, bx = fig.axes
    # the width curve is the stored one; the distance curve is |x_a(t) − 0|
    np.testing.assert_allclose(ax.lines[0].get_ydata(), run["pair_distance"].values)
    np.testing.assert_allclose(
        bx.lines[0].get_ydata(), np.abs(run["edge"].values[:, 0]) + (run["edge"].values[:, 0] == 0) * 1e-300
    )
    assert len(ax.lines[1].get_xdata()) == run.sizes["bisection"]
    assert save_figure(fig, tmp_path / "edge.png").stat().st_size > 10_000
    assert len(edge_figure(run).axes) == 1


def test_the_bisections_of_a_slice_stay_at_their_steps(run):
    """A slice of the run keeps its own step labels: each bisection in it is marked at its step with the width
    it started from, and the bisections outside it are left out."""
    cut = run.isel(step=slice(50, None))
    ax = edge_figure(cut).axes[0]
    at, before = run["bisection_step"].values, run["width_before"].values
    kept = at >= 50
    np.testing.assert_array_equal(ax.lines[1].get_xdata(), at[kept])
    np.testing.assert_allclose(ax.lines[1].get_ydata(), before[kept])


@pytest.mark.parametrize(
    "ds, ref, name",
    [
        ("x", None, "ds"),
        (None, [[0.0, 1.0]], "reference"),
        (None, np.zeros((0, 1)), "reference"),
        (None, "x", "reference"),
        ("no bisections", None, "ds"),
    ],
)
def test_bad_inputs_are_named(run, ds, ref, name):
    with pytest.raises(InputError) as e:
        data = run if ds is None else (run[["edge", "pair_distance"]] if ds == "no bisections" else ds)
        edge_figure(data, reference=ref)
    assert e.value.field == name
