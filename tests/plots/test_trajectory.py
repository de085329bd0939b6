"""Trajectory figures: the memory numbers in the figure, the multi-panel figures of the reproductions."""

import json

import numpy as np
import pytest
import xarray as xr

from attnphys.dmft.memory import autocorrelation_time, low_frequency_fraction
from attnphys.plots import planes_figure, series_figure, trajectory_figures
from attnphys.plots._trajectory import context_length, memory_text


def synthetic(record_every=1):
    """Two 'trajectories': a period-28 orbit and an AR(1) series, with the memory variables."""
    n = 8000
    t = np.arange(n)
    periodic = np.stack([np.cos(2 * np.pi * t / 28 + k) for k in range(3)], -1) * 0.1
    rng = np.random.default_rng(0)
    noise = np.cumsum(rng.standard_normal((n, 3)), axis=0) * 0.001
    noise -= noise.mean(0)
    mo_se = np.stack([periodic, noise])
    ds = xr.Dataset({"mo_se": (("beta_o", "step", "feature"), mo_se), "att": (("beta_o", "step", "feature"), mo_se)},
                    coords={"beta_o": [1.255, 1.28], "step": 1000 + record_every * t, "feature": [0, 1, 2]},
                    attrs={"config": json.dumps({"L": 4, "M": 3})})
    x = np.swapaxes(mo_se, -1, -2)
    ds["mo_se_autocorr_time"] = (("beta_o", "feature"), autocorrelation_time(x, dt=record_every))
    ds["mo_se_lowfreq_power"] = (("beta_o", "feature"), low_frequency_fraction(x, 4, dt=record_every))
    return ds


def test_memory_text():
    ds = synthetic()
    assert context_length(ds) == 4
    assert memory_text(ds.mo_se.values[0, :, 0], 4).startswith("τ = ∞")
    text = memory_text(np.random.default_rng(1).standard_normal(4000), 4)
    assert "steps" in text and "power below 1/L: " in text and "(white noise: 50%, p = " in text


def test_trajectory_figures_by_name():
    figs = trajectory_figures(synthetic(record_every=5))
    assert sorted(figs) == ["planes", "spectrum", "timeseries"]
    assert "white noise" in figs["spectrum"]._suptitle.get_text()


@pytest.mark.slow
def test_multi_panel_figures():
    ds = synthetic()
    fig = planes_figure(ds, ["periodic (period 28)", "chaotic"])
    assert len(fig.axes) == 4
    fig = series_figure(ds, ["periodic", "chaotic"])
    assert len(fig.axes) == 6 and "τ = ∞" in fig.axes[0].get_title()
