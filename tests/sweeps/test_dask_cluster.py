"""Scale-out that fails clearly, on a real Dask cluster: ``dask scheduler`` and ``dask worker`` started as
processes on 127.0.0.1, workers and the scheduler killed (docs/theory/sweeps.md §3.1). Also the local
process pool, whose workers must end with the process that started them.

Every run that is interrupted here is resumed, and the result compared with an uninterrupted in-process
run of the same sweep."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attnphys.cli import app
from attnphys.errors import ExecutorError
from attnphys.sweeps import done_mask, open_result
from tests.sweeps.test_sweeps import assert_same_store

distributed = pytest.importorskip("distributed")

runner = CliRunner()
BIN = Path(sys.executable).parent
PHASE = ["dmft", "phase-diagram", "--x", "beta_o", "0.5", "2.5", "3", "--y", "beta_att", "1.5", "2.2", "2",
         "--steps", "400", "--transient", "200", "--exponents", "1", "--n-orbit", "50", "--chunk", "1"]
"""A 6-point diagram in 6 chunks: seconds per chunk once compiled."""


def start_scheduler(folder: Path) -> tuple[subprocess.Popen, str]:
    """A ``dask scheduler`` process on 127.0.0.1 (its own process group) and its address."""
    folder.mkdir(parents=True, exist_ok=True)
    info = folder / "scheduler.json"
    proc = subprocess.Popen([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                             "--scheduler-file", str(info)], cwd=folder, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        if info.exists():
            try:
                return proc, json.loads(info.read_text())["address"]
            except (ValueError, KeyError):
                pass
        if proc.poll() is not None:
            raise RuntimeError(f"dask scheduler ended with status {proc.returncode}")
        time.sleep(0.1)
    stop(proc)
    raise RuntimeError("dask scheduler did not start")


def start_worker(address: str, folder: Path) -> subprocess.Popen:
    """A ``dask worker`` process (one single-threaded worker and its nanny, in their own process group)
    running in ``folder``, which is not the driver's folder."""
    folder.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([str(BIN / "dask"), "worker", address, "--nthreads", "1", "--nworkers", "1",
                             "--no-dashboard", "--local-directory", str(folder)], cwd=folder,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, "JAX_PLATFORMS": "cpu"})


def stop(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    """Send ``sig`` to the process group this test started, and reap it."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:  # pragma: no cover
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def wait_for_workers(address: str, n: int = 1, timeout: float = 120) -> None:
    from distributed import Client

    with Client(address, timeout="30s") as client:
        client.wait_for_workers(n, timeout=timeout)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The diagram computed in this process."""
    path = tmp_path_factory.mktemp("ref") / "ref.zarr"
    res = runner.invoke(app, [*PHASE, "--out", str(path)])
    assert res.exit_code == 0, res.output
    return open_result(path)


@contextlib.contextmanager
def processes_cluster(folder: Path):
    """A scheduler and one worker, as processes, in folders of their own under ``folder``: yields the
    address and the processes by name (a test may replace them); all are stopped at the end."""
    sched, address = start_scheduler(folder / "scheduler")
    procs = {"scheduler": sched, "worker": start_worker(address, folder / "worker")}
    try:
        wait_for_workers(address)
        yield address, procs
    finally:
        for proc in procs.values():
            stop(proc)


@pytest.fixture
def cluster(tmp_path):
    with processes_cluster(tmp_path) as (address, procs):
        yield address, procs["scheduler"], procs["worker"]


def attnphys(*args, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "attnphys", "--devices", "1", *map(str, args)], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_a_relative_out_runs_on_workers_in_another_folder_and_reruns_anywhere(cluster, reference, tmp_path,
                                                                             monkeypatch):
    """The workers run in their own folder: the store path they get is absolute. `rerun` of the store the
    cluster made runs in this process, without the scheduler (which may be long gone)."""
    address, sched, _ = cluster
    (tmp_path / "driver").mkdir()
    monkeypatch.chdir(tmp_path / "driver")
    res = runner.invoke(app, [*PHASE, "--executor", "dask", "--scheduler", address, "--out", "rel.zarr"])
    assert res.exit_code == 0, res.output
    made = open_result(tmp_path / "driver" / "rel.zarr")
    assert_same_store(made.drop_attrs(), reference.drop_attrs())
    assert not (tmp_path / "worker" / "rel.zarr").exists()
    stop(sched)
    res = runner.invoke(app, ["rerun", "rel.zarr", "--out", "again.zarr"])
    assert res.exit_code == 0, res.output
    assert_same_store(open_result(tmp_path / "driver" / "again.zarr").drop_attrs(), reference.drop_attrs())


@pytest.mark.slow
def test_a_store_the_workers_cannot_see_is_refused_naming_them(cluster, tmp_path):
    from distributed import Client

    from attnphys.sweeps._executors import check_workers_see
    from attnphys.sweeps.engine import run_chunk

    address, _, _ = cluster
    with Client(address, timeout="30s") as client:
        with pytest.raises(ExecutorError, match="cannot see the store /no/such/store.zarr; give an --out on a file"):
            check_workers_see(client, "/no/such/store.zarr")
        future = client.submit(run_chunk, "{}", "/no/such/store.zarr", 0, pure=False)
        with pytest.raises(ExecutorError, match=r"the Dask worker on .* cannot see the store /no/such/store.zarr"):
            future.result(timeout=60)


@pytest.mark.slow
def test_no_workers_is_reported_after_the_stated_time_and_stops_as_asked(tmp_path, monkeypatch):
    sched, address = start_scheduler(tmp_path / "scheduler")
    monkeypatch.chdir(tmp_path)
    try:
        t0 = time.perf_counter()
        res = runner.invoke(app, ["--dask-no-workers", "stop", "--dask-no-workers-timeout", "2", *PHASE,
                                  "--executor", "dask", "--scheduler", address, "--out", "s.zarr"])
        elapsed = time.perf_counter() - t0
    finally:
        stop(sched)
    text = " ".join(res.output.split())
    assert res.exit_code == 2, res.output
    assert f"no Dask worker has been connected to the Dask scheduler at {address} for 2 s" in text
    assert "re-run the same command to resume" in text and "Traceback" not in res.output
    assert elapsed < 60
    assert not done_mask(tmp_path / "s.zarr").any()


@pytest.mark.slow
@pytest.mark.long
def test_waiting_without_workers_is_reported(tmp_path):
    """The default: keep waiting, and say so; a worker that arrives later finishes the run."""
    from attnphys.sweeps import Grid, Sweep, run_sweep
    from attnphys.sweeps._executors import NoWorkersWarning, set_no_workers_policy
    from attnphys.sweeps.task import task_class

    task, grid = task_class("dmft-trajectory").example()
    sweep = Sweep(grid=Grid(axes=grid.axes[:1], chunk=3), task=task)
    sched, address = start_scheduler(tmp_path / "scheduler")
    set_no_workers_policy("wait", 1)
    worker = None
    try:
        def late():
            nonlocal worker
            time.sleep(4)
            worker = start_worker(address, tmp_path / "worker")

        threading.Thread(target=late, daemon=True).start()
        with pytest.warns(NoWorkersWarning, match=f"no Dask worker has been connected to the Dask scheduler at {address}"):
            res = run_sweep(sweep, tmp_path / "s.zarr", "dask", scheduler=address, progress=False)
    finally:
        set_no_workers_policy(None, None)
        if worker is not None:
            stop(worker)
        stop(sched)
    assert done_mask(tmp_path / "s.zarr").all()
    assert_same_store(res.drop_attrs(), run_sweep(sweep, progress=False).drop_attrs())


def _after_first_chunk(store: Path, proc: subprocess.Popen, timeout: float = 300) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if done_mask(store).any():
                return
        except Exception:  # noqa: BLE001 - not created yet
            pass
        if proc.poll() is not None:
            raise AssertionError(f"the run ended early ({proc.returncode}): {proc.communicate()}")
        time.sleep(0.1)
    raise AssertionError("no chunk was finished in time")


def _resume(out: Path, folder: Path, reference) -> None:
    """The same command on a new cluster finishes the store, identical to the uninterrupted run."""
    with processes_cluster(folder) as (address, _):
        proc = attnphys(*PHASE, "--executor", "dask", "--scheduler", address, "--out", out.name, cwd=out.parent)
        stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr
    assert_same_store(open_result(out).drop_attrs(), reference.drop_attrs())


@pytest.mark.slow
@pytest.mark.long
def test_a_dead_scheduler_ends_with_a_clear_message_and_the_run_resumes(reference, tmp_path):
    (tmp_path / "driver").mkdir()
    out = tmp_path / "driver" / "s.zarr"
    with processes_cluster(tmp_path / "first") as (address, procs):
        proc = attnphys(*PHASE, "--executor", "dask", "--scheduler", address, "--out", "s.zarr", cwd=out.parent)
        _after_first_chunk(out, proc)
        stop(procs["scheduler"])
        stdout, stderr = proc.communicate(timeout=180)
    text = " ".join(stderr.split())
    assert proc.returncode == 2, stderr
    assert f"the Dask scheduler at {address} stopped answering" in text
    assert "chunks are finished and kept: start a scheduler and workers, and re-run the same command" in text
    assert "Traceback" not in stderr + stdout and len(stderr.splitlines()) < 15, stderr
    done = done_mask(out)
    assert 0 < done.sum() < done.size
    _resume(out, tmp_path / "second", reference)


@pytest.mark.slow
@pytest.mark.long
def test_workers_killed_mid_run_are_reported_and_the_run_resumes(reference, tmp_path):
    """Every worker killed (SIGKILL of the worker and its nanny) after the first chunk: with
    --dask-no-workers stop the run ends after the stated time with what to do; a new cluster and the same
    command finish it, identical to an uninterrupted run."""
    (tmp_path / "driver").mkdir()
    out = tmp_path / "driver" / "s.zarr"
    with processes_cluster(tmp_path / "first") as (address, procs):
        proc = attnphys("--dask-no-workers", "stop", "--dask-no-workers-timeout", "5", *PHASE, "--executor", "dask",
                        "--scheduler", address, "--out", "s.zarr", cwd=out.parent)
        _after_first_chunk(out, proc)
        stop(procs["worker"])
        stdout, stderr = proc.communicate(timeout=180)
    text = " ".join(stderr.split())
    assert proc.returncode == 2, stderr
    assert f"no Dask worker has been connected to the Dask scheduler at {address} for 5 s" in text
    assert "re-run the same command to resume" in text and "Traceback" not in stderr + stdout
    assert done_mask(out).any()
    _resume(out, tmp_path / "second", reference)


# -- the local process pool ------------------------------------------------------------------------------

_POOL = """
import attnphys
attnphys.configure(host_devices=1)
from attnphys.sweeps import Grid, Sweep, run_sweep
from attnphys.sweeps.task import task_class
task, grid = task_class("dmft-trajectory").example()
run_sweep(Sweep(grid=Grid(axes=grid.axes, chunk=1), task=task), "pool.zarr", "processes", workers=2, progress=False)
"""


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
@pytest.mark.long
def test_pool_workers_end_with_their_parent(tmp_path, sig):
    psutil = pytest.importorskip("psutil")
    proc = subprocess.Popen([sys.executable, "-c", _POOL], cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    parent = psutil.Process(proc.pid)
    deadline = time.time() + 120
    while time.time() < deadline and len(parent.children(recursive=True)) < 3:  # two workers, the tracker
        time.sleep(0.1)
    children = parent.children(recursive=True)
    assert len(children) >= 3
    wait = time.time() + 60  # until the workers have started (their set-up asks to end with the parent)
    while time.time() < wait and not (tmp_path / "pool.zarr").exists():
        time.sleep(0.1)
    time.sleep(3)
    proc.send_signal(sig)
    proc.wait(timeout=60)
    gone, alive = psutil.wait_procs(children, timeout=15)
    for p in alive:  # pragma: no cover - the failure being tested: clean up, then fail
        p.kill()
    assert not alive, [p.pid for p in alive]
