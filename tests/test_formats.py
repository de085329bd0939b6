"""Every dataset the Python functions return writes to NetCDF and Zarr with plain xarray calls, and reads
back the same (the NetCDF writer here is xarray's built-in NetCDF-3 one: no int64 beyond 32 bits, no
attribute that clashes with the writer's own)."""

import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr


def _dmft_trajectories():
    from attnphys.dmft import preset, trajectories

    return trajectories(preset("paper"), start="checkpoint", steps=300, transient=100, sweep={"beta_o": [1.26, 1.3]})


def _dmft_analyse():
    from attnphys.dmft import bifurcation, preset

    cfg = preset("paper").with_field("seed", 4)  # with recorded warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return bifurcation(cfg, {"beta_o": [1.26, 1.3]}, steps=400, transient=200, exponents=2, n_orbit=100)


def _dmft_continuation():
    from attnphys.dmft import bifurcation, preset

    return bifurcation(preset("paper"), {"beta_o": [1.26, 1.3]}, steps=400, transient=200, exponents=1, n_orbit=50,
                       continuation="both")


def _dmft_lyapunov():
    from attnphys.dmft import lyapunov_spectrum, preset

    return lyapunov_spectrum(preset("paper"), sweep={"beta_o": [1.0, 2.0]}, steps=300, transient=100, exponents=2)


def _dmft_converge():
    from attnphys.dmft import converge, preset

    return converge(preset("paper"), [99, 990], sweep={"beta_o": [1.0]}, paths=2, steps=60, horizon=20, transient=30)


def _dmft_finite():
    from attnphys.dmft import finite_trajectories, preset

    return finite_trajectories(preset("paper"), 990, paths=2, steps=50)


def _census():
    from attnphys.dynamics._census import CensusOptions, census_batch
    from attnphys.dynamics._tracks import tracks
    from attnphys.dynamics.maps import LOGISTIC

    rs = np.array([3.2, 3.5, 3.9])
    o = CensusOptions(budget=3000, lyap_steps=1000, n_classify=500, merge_steps=1000, merge_points=100)
    return tracks(census_batch(LOGISTIC, rs, n_ics=16, options=o, param_values=rs, param_name="r"))


def _branch():
    import jax.numpy as jnp

    from attnphys.dynamics.bifurcations import continue_orbit
    from attnphys.dynamics.maps import LOGISTIC

    return continue_orbit(LOGISTIC, jnp.array([0.6]), None, lambda r: r, 2.8, 3.1).to_dataset("r")


def _cloud_run():
    import jax

    from attnphys.clouds import run_cloud, standard_layer

    X0 = jax.random.normal(jax.random.PRNGKey(0), (32, 3))
    return run_cloud(X0, standard_layer("layernorm", beta=1.0), 4, 2, (0, 4))


def _flow():
    import jax

    from attnphys.clouds.attention import SoftmaxAttention
    from attnphys.clouds.flow import flow_dataset, solve_flow, uniform_sphere

    X0 = uniform_sphere(jax.random.PRNGKey(0), 8, 3)
    return flow_dataset(solve_flow(SoftmaxAttention(beta=1.0), X0, np.linspace(0, 2, 5)), 1.0)


def _fluctuations():
    from attnphys.dmft import fluctuations, preset

    return fluctuations(preset("paper"), steps=60, transient=10)


def _open_result():
    """A sweep store read back with `attnphys.sweeps.open_result` (uint32 point seeds)."""
    import tempfile

    from attnphys.clouds.phase import ClusteringTask
    from attnphys.sweeps import Axis, Grid, Sweep, open_result, run_sweep

    store = Path(tempfile.mkdtemp()) / "s.zarr"
    task = ClusteringTask(dim=3, tokens=6, t_max=1.0, saves=3, samples=1)
    run_sweep(Sweep(grid=Grid(axes=(Axis(name="beta", values=(0.5, 1.0)),), chunk=2), task=task), store=store)
    return open_result(store)


BUILDERS = {f.__name__.lstrip("_"): f for f in (_dmft_trajectories, _dmft_analyse, _dmft_continuation, _dmft_lyapunov,
                                                 _dmft_converge, _dmft_finite, _census, _branch, _cloud_run, _flow,
                                                 _fluctuations, _open_result)}
FAST = ("fluctuations", "open_result")


@pytest.mark.parametrize("name", FAST)
def test_plain_xarray_writes_netcdf_and_zarr_fast(name, tmp_path):
    test_plain_xarray_writes_netcdf_and_zarr(name, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_plain_xarray_writes_netcdf_and_zarr(name, tmp_path):
    ds = BUILDERS[name]()
    ds.to_netcdf(tmp_path / "r.nc")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*(Zarr V3|Consolidated metadata).*")
        ds.to_zarr(tmp_path / "r.zarr")
    for back in (xr.open_dataset(tmp_path / "r.nc"), xr.open_zarr(tmp_path / "r.zarr")):
        back = back.load()
        assert set(back.data_vars) == set(ds.data_vars)
        for v in ds.data_vars:
            a, b = ds[v].values, back[v].values
            if a.dtype.kind in "fc":
                np.testing.assert_array_equal(a, b.astype(a.dtype))
            else:
                np.testing.assert_array_equal(a.astype(str) if a.dtype.kind in "OUS" else a, b.astype(a.dtype))
        if "warnings" in ds.attrs:
            assert back.attrs["warnings"] == ds.attrs["warnings"]
