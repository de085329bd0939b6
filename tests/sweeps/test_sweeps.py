"""The sweep engine: grids, resumable stores, executors, faults (SIGKILL, lost Dask workers)."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import xarray as xr

from attnphys.dmft import bifurcation, phase_diagram, preset
from attnphys.dmft.tasks import OrbitTask as DMFTOrbitTask
from attnphys.sweeps import Axis, Grid, StoreMismatchError, Sweep, done_mask, open_result, point_seed, run_sweep

CFG = preset("paper")


def small_sweep(chunk=4, **task) -> Sweep:
    t = dict(config=CFG, steps=1500, transient=1000, lyapunov=2, n_orbit=200)
    t.update(task)
    grid = Grid(axes=(Axis.linspace("beta_o", 0.5, 2.5, 5), Axis.linspace("beta_att", 1.5, 2.2, 3)), chunk=chunk)
    return Sweep(grid=grid, task=DMFTOrbitTask(**t))


def assert_same_store(a: xr.Dataset, b: xr.Dataset) -> None:
    """Same variables and coordinates; integers (regimes, periods, seeds) exactly equal, floats equal to
    the last bits (numpy reductions in the 0–1 statistic may round differently in another process)."""
    assert set(a.data_vars) == set(b.data_vars)
    for name in a.data_vars:
        x, y = a[name].values, b[name].values
        if np.issubdtype(x.dtype, np.floating):
            np.testing.assert_array_equal(np.isnan(x), np.isnan(y), err_msg=name)
            np.testing.assert_allclose(x, y, rtol=1e-13, atol=1e-15, err_msg=name)
        else:
            np.testing.assert_array_equal(x, y, err_msg=name)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    path = tmp_path_factory.mktemp("ref") / "ref.zarr"
    return run_sweep(small_sweep(), path, progress=False)


def test_grid_chunks_and_points():
    g = Grid(axes=(Axis.linspace("beta_o", 0, 1, 3), Axis(name="seed", values=(1, 2))), chunk=4)
    assert g.shape == (3, 2) and g.size == 6 and g.n_chunks == 2
    assert g.chunk_range(1) == (4, 6)
    p = g.points(0, 6)
    np.testing.assert_array_equal(p["beta_o"], [0, 0, 0.5, 0.5, 1, 1])
    np.testing.assert_array_equal(p["seed"], [1, 2, 1, 2, 1, 2])


def test_point_seed_is_a_pure_function_of_the_index():
    a = point_seed(7, range(10))
    b = np.array([point_seed(7, i) for i in range(10)])
    np.testing.assert_array_equal(a, b)
    assert len(set(a.tolist())) == 10 and point_seed(8, 3) != point_seed(7, 3)


@pytest.mark.slow
def test_result_matches_direct_analysis(reference):
    """The store holds what `phase_diagram` computes for the same grid, reshaped to the grid axes."""
    direct = phase_diagram(
        CFG,
        {"beta_o": np.linspace(0.5, 2.5, 5), "beta_att": np.linspace(1.5, 2.2, 3)},
        steps=1500,
        transient=1000,
        exponents=2,
        n_orbit=200,
        keep_orbit=True,
    )
    assert reference.regime.dims == ("beta_o", "beta_att")
    np.testing.assert_array_equal(reference.regime.values, direct.regime.values)
    np.testing.assert_allclose(reference.exponents.values, direct.exponents.values, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(reference.point_seed.values.ravel(), point_seed(0, range(15)))
    assert json.loads(reference.attrs["sweep"])["task"]["steps"] == 1500


@pytest.mark.slow
def test_chunking_does_not_change_results(tmp_path, reference):
    other = run_sweep(small_sweep(chunk=7), tmp_path / "c7.zarr", progress=False)
    for name in ("regime", "period", "exponents", "obs_mean", "obs_std", "point_seed"):
        np.testing.assert_allclose(other[name].values, reference[name].values, rtol=0, atol=1e-12, err_msg=name)


def test_resume_computes_only_missing_chunks(tmp_path, reference, monkeypatch):
    path = tmp_path / "s.zarr"
    sweep = small_sweep()
    import attnphys.sweeps.engine as engine

    calls = []
    real = engine.run_chunk

    def flaky(definition, store, i):
        calls.append(i)
        if i == 2:
            raise KeyboardInterrupt  # interrupted part-way
        return real(definition, store, i)

    monkeypatch.setattr(engine, "run_chunk", flaky)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(sweep, path, progress=False)
    assert done_mask(path).tolist() == [True, True, False, False]
    with pytest.raises(RuntimeError, match="not done"):
        open_result(path)
    monkeypatch.setattr(engine, "run_chunk", real)
    calls.clear()
    monkeypatch.setattr(engine, "run_chunk", lambda d, s, i: (calls.append(i), real(d, s, i))[1])
    res = run_sweep(sweep, path, progress=False)
    assert calls == [2, 3]
    assert_same_store(res.drop_attrs(), reference.drop_attrs())


@pytest.mark.slow
def test_different_sweep_refuses_the_store(tmp_path):
    path = tmp_path / "s.zarr"
    run_sweep(small_sweep(steps=1200), path, progress=False)
    with pytest.raises(StoreMismatchError, match="task.steps"):
        run_sweep(small_sweep(steps=1300), path, progress=False)
    (tmp_path / "notastore").mkdir()
    with pytest.raises(StoreMismatchError, match="not a sweep store"):
        run_sweep(small_sweep(), tmp_path / "notastore", progress=False)


@pytest.mark.parametrize(
    "axes,match",
    [
        ((Axis(name="beta_q", values=(1.0,)),), "unknown sweep field 'beta_q'"),
        ((Axis(name="L", values=(4.0, 5.0)),), "axis L=5.0"),
        ((Axis(name="M", values=(1.0, 2.0)),), "exponents: must be in"),
    ],
)
def test_bad_grids_fail_before_computing(tmp_path, axes, match):
    sweep = Sweep(grid=Grid(axes=axes, chunk=2), task=DMFTOrbitTask(config=CFG, steps=1500, transient=1000, lyapunov=9))
    with pytest.raises(ValueError, match=match):
        run_sweep(sweep, tmp_path / "x.zarr", progress=False)
    assert not (tmp_path / "x.zarr").exists()


@pytest.mark.parametrize(
    "args,match",
    [(("beta_o", 1.0, 0.0, 5), "reversed"), (("beta_o", 1.0, 1.0, 3), "empty"), (("beta_o", 0.0, 1.0, 0), "num")],
)
def test_bad_ranges(args, match):
    with pytest.raises(ValueError, match=match):
        Axis.linspace(*args)


@pytest.mark.slow
def test_structural_axes_group_points(tmp_path):
    """Seeds and M change the couplings: each group runs with its own configuration."""
    grid = Grid(
        axes=(Axis(name="seed", values=(1, 2)), Axis(name="M", values=(2, 3)), Axis.linspace("beta_o", 1, 2, 2)),
        chunk=8,
    )
    task = DMFTOrbitTask(config=CFG, steps=1500, transient=1000, lyapunov=1, n_orbit=100, start="token")
    res = run_sweep(Sweep(grid=grid, task=task), tmp_path / "g.zarr", progress=False)
    assert res.obs_mean.dims == ("seed", "M", "beta_o", "feature") and res.sizes["feature"] == 3
    assert np.isnan(res.obs_mean.sel(M=2).values[..., 2]).all() and np.isfinite(res.obs_mean.sel(M=3).values).all()
    cfg2 = CFG.replace(M=2, correlations={**CFG.correlations.model_dump(), "seed": 2})
    direct = bifurcation(
        cfg2, {"beta_o": [1.0, 2.0]}, steps=1500, transient=1000, exponents=1, n_orbit=100, start="token"
    )
    np.testing.assert_allclose(res.exponents.sel(seed=2, M=2).values, direct.exponents.values, atol=1e-12)


@pytest.mark.slow
@pytest.mark.long
def test_local_process_executor_matches(tmp_path, reference):
    res = run_sweep(small_sweep(), tmp_path / "p.zarr", "processes", workers=2, progress=False)
    assert_same_store(res.drop_attrs(), reference.drop_attrs())


@pytest.mark.slow
def test_dask_local_cluster_matches_inprocess(tmp_path, reference):
    res = run_sweep(small_sweep(), tmp_path / "d.zarr", "dask", workers=2, progress=False)
    assert_same_store(res.drop_attrs(), reference.drop_attrs())


@pytest.mark.slow
def test_dask_worker_killed_mid_sweep_loses_nothing(tmp_path, reference):
    from dask.distributed import Client, LocalCluster

    sweep = small_sweep(chunk=2, steps=20_000, transient=1000)  # 8 chunks, each long enough to kill into
    ref = run_sweep(sweep, tmp_path / "ref.zarr", progress=False)
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster,
        Client(cluster) as client,
    ):
        import threading

        def kill_one():
            time.sleep(8.0)  # workers are computing by now
            pids = client.run(os.getpid)
            os.kill(next(iter(pids.values())), signal.SIGKILL)

        killer = threading.Thread(target=kill_one)
        killer.start()
        res = run_sweep(sweep, tmp_path / "k.zarr", "dask", scheduler=cluster.scheduler_address, progress=False)
        killer.join()
    assert done_mask(tmp_path / "k.zarr").all()
    assert_same_store(res.drop_attrs(), ref.drop_attrs())


@pytest.mark.slow
def test_sigkill_then_rerun_gives_identical_store(tmp_path):
    """A CLI sweep killed with SIGKILL part-way, re-run, equals an uninterrupted run."""
    args = [
        "--x",
        "beta_o",
        "0.5",
        "2.5",
        "4",
        "--y",
        "beta_att",
        "1.5",
        "2.2",
        "3",
        "--steps",
        "20000",
        "--transient",
        "1000",
        "--exponents",
        "1",
        "--chunk",
        "2",
        "--n-orbit",
        "200",
    ]
    cmd = [sys.executable, "-m", "attnphys.cli", "--devices", "1", "dmft", "phase-diagram", *args]
    killed = tmp_path / "killed.zarr"
    proc = subprocess.Popen(cmd + ["--out", str(killed)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while time.time() < deadline:
        if killed.exists():
            try:
                if 1 <= done_mask(killed).sum() < 6:
                    break
            except Exception:
                pass
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = done_mask(killed)
    assert 0 < partial.sum() < partial.size
    subprocess.run(cmd + ["--out", str(killed)], check=True, stdout=subprocess.DEVNULL)
    whole = tmp_path / "whole.zarr"
    subprocess.run(cmd + ["--out", str(whole)], check=True, stdout=subprocess.DEVNULL)
    assert_same_store(open_result(killed).drop_attrs(), open_result(whole).drop_attrs())


def test_memory_running_out_during_a_run_is_named_and_keeps_the_finished_chunks(tmp_path, reference, monkeypatch):
    """XLA's RESOURCE_EXHAUSTED in the third chunk: a ResourceError naming ``chunk`` (not XLA's traceback),
    the first two chunks kept, and the same call resumes to the full result. Any other error passes."""
    import attnphys.sweeps.engine as engine
    from attnphys.errors import ResourceError
    from attnphys.sweeps import run_task

    XlaRuntimeError = type("XlaRuntimeError", (RuntimeError,), {})
    real = engine.run_chunk

    def exhausted(definition, store, i):
        if i == 2:
            raise XlaRuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 9.31GiB.")
        return real(definition, store, i)

    sweep = small_sweep()
    path = tmp_path / "s.zarr"
    monkeypatch.setattr(engine, "run_chunk", exhausted)
    with pytest.raises(ResourceError, match=r"^chunk: memory ran out .*RESOURCE_EXHAUSTED.*kept in the store"):
        run_task(sweep.task, sweep.grid.axes, store=path, chunk=4)
    assert done_mask(path).tolist() == [True, True, False, False]
    monkeypatch.setattr(engine, "run_chunk", lambda d, s, i: (_ for _ in ()).throw(ZeroDivisionError("a bug")))
    with pytest.raises(ZeroDivisionError):
        run_task(sweep.task, sweep.grid.axes, store=path, chunk=4)
    monkeypatch.setattr(engine, "run_chunk", real)
    res = run_task(sweep.task, sweep.grid.axes, store=path, chunk=4)
    assert_same_store(res.drop_attrs(), reference.drop_attrs())


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["folder", "file"])
def test_overwrite_never_replaces_what_is_not_an_attnphys_result(tmp_path, kind):
    """``store=path, overwrite=True`` starts over on an attnphys result (a different sweep here), and on
    an empty folder; a user's own folder or file at that path is refused and left as it was."""
    from attnphys.errors import OutputError
    from attnphys.sweeps import run_task

    sweep = small_sweep(steps=1200)
    mine = tmp_path / "mine"
    if kind == "folder":
        mine.mkdir()
        (mine / "notes.txt").write_text("mine")
    else:
        mine.write_text("mine")
    with pytest.raises(OutputError, match="not an attnphys result"):
        run_task(sweep.task, sweep.grid.axes, store=mine, overwrite=True, chunk=8)
    assert (mine / "notes.txt" if kind == "folder" else mine).read_text() == "mine"

    other = tmp_path / "other.zarr"
    run_sweep(small_sweep(steps=1100), other, progress=False)
    run_task(sweep.task, sweep.grid.axes, store=other, overwrite=True, chunk=8)
    assert json.loads(xr.open_zarr(other, consolidated=False).attrs["sweep"])["task"]["steps"] == 1200
    (tmp_path / "empty").mkdir()
    run_task(sweep.task, sweep.grid.axes, store=tmp_path / "empty", overwrite=True, chunk=8)
