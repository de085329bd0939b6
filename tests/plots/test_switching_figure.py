"""The least-action path figure of the switching analysis (docs/theory/switching.md §2.1): what it draws,
the plane it draws in, and the results it refuses."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from attnphys.errors import InputError
from tests.plots.test_figures import check_figure


def path_result(laws=("gaussian", "binomial"), crossing: bool = True) -> xr.Dataset:
    """A switching result with the path variables: two attractors (periods 28 and 56) on loops around two
    different centres in 12 dimensions, each path a straight line between them with a crossing halfway and a
    period-28 saddle there."""
    from tests.dmft.test_switching_command import fake_result

    ds = fake_result(laws=laws)
    D, pmax, nl = 12, 56, len(laws)
    rng = np.random.default_rng(0)
    basis = np.linalg.qr(rng.normal(size=(D, 3)))[0]
    centres = np.stack([np.zeros(D), 0.3 * basis[:, 2]])
    orbit = np.full((2, pmax, D), np.nan)
    for i, p in enumerate((28, 56)):
        s = 2 * np.pi * np.arange(p) / p
        orbit[i, :p] = centres[i] + 0.5 * np.cos(s)[:, None] * basis[:, 0] + 0.5 * np.sin(s)[:, None] * basis[:, 1]
    T = np.array([[20] * nl, [30] * nl])
    path = np.full((2, nl, 31, D), np.nan)
    step_action = np.full((2, nl, 31), np.nan)
    cross = np.full((2, nl, D), np.nan)
    saddle = np.full((2, nl, pmax, D), np.nan)
    for i in range(2):
        a, b = orbit[i, 0], orbit[1 - i, 0]
        for c in range(nl):
            s = np.linspace(0.0, 1.0, T[i, c] + 1)[:, None]
            path[i, c, : T[i, c] + 1] = a + s * (b - a) + 0.05 * np.sin(np.pi * s) * basis[:, 2]
            step_action[i, c, : T[i, c]] = ds.action.values[i, c] / T[i, c]
            if crossing:
                cross[i, c] = path[i, c, T[i, c] // 2]
            saddle[i, c, :28] = cross[i, c] + 0.01 * orbit[0, :28]
    al = ("attractor", "law")
    return ds.assign_coords(step=np.arange(31), orbit_point=np.arange(pmax), component=np.arange(D)).assign(
        orbit=(("attractor", "orbit_point", "component"), orbit),
        loop_step=("attractor", np.array([1, 1])),
        path=(al + ("step", "component"), path),
        step_action=(al + ("step",), step_action),
        horizon=(al, T),
        crossing_step=(al, np.where(crossing, T // 2 - 1, -1)),
        crossing=(al + ("component",), cross),
        saddle=(al + ("orbit_point", "component"), saddle),
        saddle_period=(al, np.full((2, nl), 28 if crossing else -1)),
    )


def test_the_figure_draws_both_orbits_the_path_the_crossing_and_the_saddle():
    from attnphys.plots import switching_path_figure

    ds = path_result()
    fig = switching_path_figure(ds)
    check_figure(fig, title_has=("β_o=1.27", "least-action paths"))
    axes = fig.get_axes()
    assert len(axes) == 2 * 3  # two attractors; two laws and the distance panel
    labels = [line.get_label() for line in axes[0].lines]
    assert labels == [
        "attractor 0 (period 28)", "attractor 1 (period 56)", "least-action path (20 steps)", "path start",
        "edge state (period-28 saddle)", "boundary crossing (step 9)",
    ]  # fmt: skip
    assert [len(line.get_xdata()) for line in axes[0].lines] == [28, 56, 21, 1, 28, 1]
    assert "centre 0 → centre 1" in axes[0].get_xlabel() and "boundary crossing" in axes[0].get_ylabel()
    assert axes[3].get_title().startswith("1 → 0, gaussian")
    dist = axes[2]  # the distances: from 0 at the start to 0 at the end
    d_a, d_b = (np.asarray(line.get_ydata()) for line in dist.lines[:2])
    assert d_a[0] == pytest.approx(0.0, abs=1e-12) and d_b[-1] == pytest.approx(0.0, abs=1e-12)
    one = switching_path_figure(ds, law="binomial")
    assert len(one.get_axes()) == 2 * 2 and "binomial" in one.get_axes()[0].get_title()


def test_the_plane_passes_through_the_centres_and_the_crossing():
    from attnphys.plots._switching import path_plane

    ds = path_result()
    o, e1, e2, what = path_plane(ds, 0, "gaussian")
    cb = np.nanmean(ds.orbit.values[1], axis=0)
    assert what == "the boundary crossing"
    assert abs(e1 @ e2) < 1e-12 and np.linalg.norm(e1) == pytest.approx(1) and np.linalg.norm(e2) == pytest.approx(1)
    for x in (cb, ds.crossing.values[0, 0]):  # both lie in the plane
        r = x - o
        assert np.linalg.norm(r - (r @ e1) * e1 - (r @ e2) * e2) < 1e-12
    # without a crossing: the path's costliest step
    ds2 = path_result(crossing=False)
    ds2["step_action"][0, 0, 7] = 1.0
    o, e1, e2, what = path_plane(ds2, 0, "gaussian")
    r = ds2.path.values[0, 0, 7] - o
    assert what == "the path's costliest step" and np.linalg.norm(r - (r @ e1) * e1 - (r @ e2) * e2) < 1e-12
    fig = __import__("attnphys.plots", fromlist=["x"]).switching_path_figure(ds2)
    assert not any("crossing" in line.get_label() or "saddle" in line.get_label() for line in fig.axes[0].lines)


@pytest.mark.parametrize("drop", ["path", "orbit", "crossing"])
def test_a_result_without_the_paths_is_refused_naming_ds(drop):
    from attnphys.plots import switching_path_figure

    with pytest.raises(InputError) as e:
        switching_path_figure(path_result().drop_vars(drop))
    assert e.value.field == "ds" and drop in e.value.detail
    with pytest.raises(InputError) as e:
        switching_path_figure(xr.Dataset())
    assert e.value.field == "ds"


def test_an_unknown_law_is_refused_naming_law():
    from attnphys.plots import switching_path_figure

    with pytest.raises(InputError) as e:
        switching_path_figure(path_result(laws=("gaussian",)), law="binomial")
    assert e.value.field == "law"
