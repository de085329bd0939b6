"""Nothing lost, nothing silently wrong: outputs under real kills, interrupts and concurrent runs.

Runs that must die at a precise moment are real ``attnphys`` processes that send themselves a real
signal (SIGKILL, SIGINT, SIGTERM) from a small hook installed before the command starts: after the first
sweep chunk, in the middle of writing a store, just before a finished store is moved into place. Other
tests signal a running process from outside (``os.kill``) at a moment read off the file system.
"""

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from typer.testing import CliRunner

from attnphys.cli import app
from attnphys.errors import IncompleteResultError, OutputError
from attnphys.io import load, staged
from attnphys.sweeps import done_mask, open_result
from tests.sweeps.test_sweeps import assert_same_store

runner = CliRunner()

HOOKS = {
    # write one variable of the result, then die: a half-written store
    "kill-mid-write": """
import os, signal, xarray as xr
_to_zarr = xr.Dataset.to_zarr
def to_zarr(self, store, *args, **kwargs):
    first = list(self.data_vars)[0]
    if kwargs.get("encoding"):
        kwargs["encoding"] = {k: v for k, v in kwargs["encoding"].items() if k == first}
    _to_zarr(self[[first]], store, *args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
xr.Dataset.to_zarr = to_zarr
""",
    # the result is completely written into its hidden sibling; die before it is moved into place
    "kill-before-commit": """
import os, signal, attnphys.io as io
def _commit(tmp, path, replace):
    os.kill(os.getpid(), signal.SIGKILL)
io._commit = _commit
""",
    # wait before moving the result into place until the test says go (the file ATTNPHYS_TEST_GO exists)
    "hold-before-commit": """
import os, time, attnphys.io as io
_commit = io._commit
def held(tmp, path, replace):
    while not os.path.exists(os.environ["ATTNPHYS_TEST_GO"]):
        time.sleep(0.05)
    _commit(tmp, path, replace)
io._commit = held
""",
    # SIGINT one second into the first chunk (while it compiles or computes, in native code); a chunk that
    # is done sooner (compiled programs from the cache) waits for it before it is handed back
    "sigint-during-first-chunk": """
import os, signal, threading, time, attnphys.sweeps.engine as engine
_compute_chunk = engine.compute_chunk
def compute_chunk(sweep, i):
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    out = _compute_chunk(sweep, i)
    time.sleep(60)
    return out
engine.compute_chunk = compute_chunk
""",
    # the signal ATTNPHYS_TEST_SIGNAL right after the first chunk of a sweep is written
    "signal-after-first-chunk": """
import os, signal, time, attnphys.sweeps.engine as engine
_run_chunk = engine.run_chunk
def run_chunk(definition, store, i):
    out = _run_chunk(definition, store, i)
    os.kill(os.getpid(), getattr(signal, os.environ["ATTNPHYS_TEST_SIGNAL"]))
    time.sleep(60)
    return out
engine.run_chunk = run_chunk
""",
}


JAX_CACHE: dict[str, str] = {}


@pytest.fixture(scope="module", autouse=True)
def jax_cache(tmp_path_factory):
    """One persistent XLA compilation cache for the processes of this module (they compile the same maps)."""
    JAX_CACHE.update(JAX_COMPILATION_CACHE_DIR=str(tmp_path_factory.mktemp("jax-cache")),
                     JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    yield
    JAX_CACHE.clear()


def attnphys(*args, hook: str | None = None, cwd: Path, env: dict | None = None) -> subprocess.Popen:
    """A real ``attnphys`` process (one XLA device), with an optional hook installed first."""
    code = (HOOKS[hook] if hook else "") + "\nimport sys\nfrom attnphys.cli import main\nmain(sys.argv[1:])\n"
    return subprocess.Popen([sys.executable, "-c", code, "--devices", "1", *map(str, args)], cwd=cwd,
                            env={**os.environ, **JAX_CACHE, **(env or {})}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out + err


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def wait_for(condition, proc: subprocess.Popen, timeout: float = 120, what: str = "condition") -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return
        if proc.poll() is not None:
            raise AssertionError(f"the process ended (status {proc.returncode}) before {what}: {finish(proc)[1]}")
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def hidden(folder: Path, name: str) -> list[Path]:
    return sorted(folder.glob(f".{name}.*"))


TRAJ = ["dmft", "trajectory", "--steps", "40", "--start", "checkpoint"]
PHASE = ["dmft", "phase-diagram", "--x", "beta_o", "0.5", "2.5", "2", "--y", "beta_att", "1.5", "2.2", "2", "--steps",
         "1500", "--transient", "1000", "--exponents", "1", "--n-orbit", "100", "--chunk", "2"]
slow_variant = pytest.mark.slow


# -- existing paths ------------------------------------------------------------------------------------

WRITERS = {
    "dmft trajectory": ["dmft", "trajectory", "--steps", "5"],
    "dmft lyapunov": ["dmft", "lyapunov", "--steps", "20", "--transient", "10"],
    "dmft bifurcation": ["dmft", "bifurcation", "--steps", "30", "--transient", "10", "--num", "2"],
    "dmft bifurcation --continuation": ["dmft", "bifurcation", "--steps", "30", "--transient", "10", "--num", "2",
                                        "--continuation", "up"],
    "dmft phase-diagram": PHASE,
    "dmft finite": ["dmft", "finite", "--steps", "5", "--n", "990"],
    "dmft converge": ["dmft", "converge", "--steps", "20", "--transient", "5", "--horizon", "5", "--n", "99,990"],
    "clouds run": ["clouds", "run", "--dim", "3", "--tokens", "8", "--layers", "2"],
    "clouds flow": ["clouds", "flow", "--tokens", "4", "--t-max", "1", "--saves", "3"],
    "clouds phase-diagram": ["clouds", "phase-diagram", "--tokens", "4", "--t-max", "1", "--saves", "3"],
    "clouds through-model": ["clouds", "through-model"],
    "probe": ["probe"],
    "demo": ["demo", "--quick"],
}


@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("command", list(WRITERS))
def test_out_naming_an_ordinary_folder_never_deletes_it(tmp_path, command, overwrite):
    folder = tmp_path / "results"
    (folder / "sub").mkdir(parents=True)
    (folder / "notes.txt").write_text("keep")
    (folder / "sub" / "data.csv").write_text("1,2")
    res = invoke(*WRITERS[command], "--out", folder, *(["--overwrite"] if overwrite else []))
    assert res.exit_code == 2, res.output
    assert "is a folder that is not an attnphys result; refusing to touch it" in " ".join(res.output.split())
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) == ["notes.txt", "sub", "sub/data.csv"]
    assert (folder / "notes.txt").read_text() == "keep" and (folder / "sub" / "data.csv").read_text() == "1,2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]


@pytest.mark.slow
def test_overwrite_of_an_output_folder_never_deletes_what_the_user_added(tmp_path):
    """--overwrite replaces a result folder (reproductions, probe reports, the demo) only while it holds
    nothing but what the result wrote: the marker lists it."""
    out = tmp_path / "fig5"
    assert invoke("reproduce", "fig5", "--quick", "--out", out).exit_code == 0
    written = sorted(p.name for p in out.iterdir())
    (out / "MY_NOTES.txt").write_text("keep")
    (out / "mysub").mkdir()
    res = invoke("reproduce", "fig5", "--quick", "--out", out, "--overwrite")
    assert res.exit_code == 2, res.output
    assert "--out" in res.output and "holds MY_NOTES.txt, mysub besides the result" in " ".join(res.output.split())
    assert sorted(p.name for p in out.iterdir()) == sorted(written + ["MY_NOTES.txt", "mysub"])
    assert (out / "MY_NOTES.txt").read_text() == "keep"
    (out / "MY_NOTES.txt").unlink()
    (out / "mysub").rmdir()
    assert invoke("reproduce", "fig5", "--quick", "--out", out, "--overwrite").exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == written


def test_rerun_onto_an_ordinary_folder_never_deletes_it(tmp_path):
    assert invoke(*TRAJ, "--out", tmp_path / "r.zarr").exit_code == 0
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "a.txt").write_text("a")
    for extra in ([], ["--overwrite"]):
        res = invoke("rerun", tmp_path / "r.zarr", "--out", tmp_path / "keep", *extra)
        assert res.exit_code == 2 and "refusing to touch it" in res.output
    assert [p.name for p in (tmp_path / "keep").iterdir()] == ["a.txt"]


def test_an_existing_result_is_replaced_only_with_overwrite(tmp_path):
    out = tmp_path / "r.zarr"
    assert invoke(*TRAJ, "--beta-o", "1.0", "--out", out).exit_code == 0
    first = load(out)
    res = invoke(*TRAJ, "--beta-o", "2.0", "--out", out)
    assert res.exit_code == 2 and "pass --overwrite to replace it" in res.output
    xr.testing.assert_identical(load(out), first)
    res = invoke(*TRAJ, "--beta-o", "2.0", "--out", out, "--overwrite")
    assert res.exit_code == 0, res.output
    second = load(out)
    assert json.loads(second.attrs["config"])["beta_o"] == 2.0
    assert not np.allclose(second.mo_se.values, first.mo_se.values)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.zarr"]  # no lock, no partial, no old copy left


def test_an_existing_figure_is_replaced_only_with_overwrite(tmp_path):
    fig = tmp_path / "f.png"
    fig.write_bytes(b"someone's figure")
    args = ["clouds", "run", "--dim", "3", "--tokens", "8", "--layers", "2", "--snapshots", "0", "--plot", fig]
    res = invoke(*args, "--out", tmp_path / "c.zarr")
    assert res.exit_code == 2 and "--plot" in res.output and "--overwrite" in res.output
    assert fig.read_bytes() == b"someone's figure" and not (tmp_path / "c.zarr").exists()
    assert invoke(*args, "--out", tmp_path / "c.zarr", "--overwrite").exit_code == 0
    assert fig.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_continuation_never_overwrites_a_cold_start_store(tmp_path):
    out = tmp_path / "bif.zarr"
    common = ["dmft", "bifurcation", "--start-value", "1.0", "--stop-value", "2.0", "--num", "2", "--steps", "300",
              "--transient", "200", "--exponents", "0", "--n-orbit", "50", "--out", out]
    assert invoke(*common).exit_code == 0
    cold = open_result(out)
    for direction in ("up", "both"):
        res = invoke(*common, "--continuation", direction)
        assert res.exit_code == 2
        assert "holds a different sweep; refusing to write into it" in res.output and "--overwrite" in res.output
    xr.testing.assert_identical(open_result(out), cold)


@pytest.mark.parametrize("args", [
    ["dmft", "bifurcation", "--M", "2", "--num", "3", "--steps", "30", "--transient", "10", "--start", "checkpoint"],
    ["dmft", "phase-diagram", "--x", "M", "2", "4", "3", "--y", "beta_o", "0", "1", "2", "--steps", "30", "--transient",
     "10", "--n-orbit", "20", "--start", "checkpoint"],
])
def test_the_checkpoint_start_at_another_size_creates_nothing(tmp_path, args):
    res = invoke(*args, "--out", tmp_path / "s.zarr")
    assert res.exit_code == 2 and "the paper checkpoint has M=3" in res.output
    assert list(tmp_path.iterdir()) == []


# -- killed single results ---------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("hook", ["kill-mid-write", pytest.param("kill-before-commit", marks=slow_variant)])
def test_sigkill_while_replacing_a_result_keeps_the_previous_one(tmp_path, hook):
    out = tmp_path / "r.zarr"
    assert invoke(*TRAJ, "--beta-o", "1.0", "--out", out).exit_code == 0
    before = load(out)
    code, output = finish(attnphys(*TRAJ, "--beta-o", "2.0", "--out", out, "--overwrite", hook=hook, cwd=tmp_path))
    assert code == -signal.SIGKILL, output
    xr.testing.assert_identical(load(out), before)
    raw = xr.open_zarr(out, consolidated=False).load()
    assert raw.attrs.pop("attnphys_manifest")  # the store's record of its files, which load leaves out
    xr.testing.assert_identical(raw, before)
    [partial] = hidden(tmp_path, "r.zarr")  # the killed run's hidden sibling: never the result
    if hook == "kill-mid-write":
        with pytest.raises(IncompleteResultError, match="no completion marker"):
            load(partial)
    # the next run cleans up after the killed one (its stale lock and partial) and replaces the result
    res = invoke(*TRAJ, "--beta-o", "2.0", "--out", out, "--overwrite")
    assert res.exit_code == 0, res.output
    assert json.loads(load(out).attrs["config"])["beta_o"] == 2.0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.zarr"]


@pytest.mark.slow
@pytest.mark.long
def test_sigkill_during_a_first_write_leaves_nothing_loadable(tmp_path):
    out = tmp_path / "r.zarr"
    code, output = finish(attnphys(*TRAJ, "--out", out, hook="kill-mid-write", cwd=tmp_path))
    assert code == -signal.SIGKILL, output
    assert not out.exists()
    with pytest.raises(IncompleteResultError, match="interrupted"):
        load(out)
    res = invoke(*TRAJ, "--out", out)  # the same command simply runs again
    assert res.exit_code == 0, res.output
    assert load(out).sizes["step"] == 40 and sorted(p.name for p in tmp_path.iterdir()) == ["r.zarr"]


def test_a_failed_first_write_leaves_nothing_loadable(tmp_path, monkeypatch):
    """The same as the SIGKILL test above, in this process: the write fails half-way."""
    out = tmp_path / "r.zarr"
    real = xr.Dataset.to_zarr

    def half(self, store, *args, **kwargs):
        real(self[[list(self.data_vars)[0]]], store, *args, **kwargs)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(xr.Dataset, "to_zarr", half)
    res = invoke(*TRAJ, "--out", out)
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert f"{out}: no space left on the device while writing it" in " ".join(res.output.split())  # the output
    assert list(tmp_path.iterdir()) == []  # the partial is removed, the lock released
    with pytest.raises(FileNotFoundError):
        load(out)
    (tmp_path / ".r.zarr.partial-1").mkdir()  # what a killed first write leaves behind
    with pytest.raises(IncompleteResultError, match="interrupted"):
        load(out)


def test_a_failed_store_creation_leaves_nothing_and_reruns(tmp_path, monkeypatch):
    out = tmp_path / "p.zarr"
    real = xr.Dataset.to_zarr

    def half(self, store, *args, **kwargs):
        first = list(self.data_vars)[0]
        kwargs["encoding"] = {k: v for k, v in (kwargs.get("encoding") or {}).items() if k == first}
        real(self[[first]], store, *args, **kwargs)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(xr.Dataset, "to_zarr", half)
    assert invoke(*PHASE, "--out", out).exit_code == 2
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(xr.Dataset, "to_zarr", real)
    res = invoke(*PHASE, "--out", out)
    assert res.exit_code == 0, res.output
    assert done_mask(out).all()


@pytest.mark.slow
@pytest.mark.long
def test_sigkill_mid_computation_keeps_the_previous_result(tmp_path):
    out = tmp_path / "r.zarr"
    assert invoke(*TRAJ, "--out", out).exit_code == 0
    before = load(out)
    proc = attnphys("dmft", "trajectory", "--steps", "5000000", "--record-every", "1000", "--out", out, "--overwrite",
                    cwd=tmp_path)
    wait_for(lambda: (tmp_path / "r.zarr.lock").exists(), proc, what="the run to start computing")
    time.sleep(1.0)
    proc.send_signal(signal.SIGKILL)
    assert finish(proc)[0] == -signal.SIGKILL
    xr.testing.assert_identical(load(out), before)


# -- concurrent runs ---------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("args", [TRAJ, pytest.param(PHASE, marks=slow_variant)], ids=["result", "sweep store"])
def test_a_second_run_on_the_same_path_gets_a_clear_message(tmp_path, args):
    out = tmp_path / "o.zarr"
    go = tmp_path / "go"
    first = attnphys(*args, "--out", out, hook="hold-before-commit", cwd=tmp_path, env={"ATTNPHYS_TEST_GO": str(go)})
    try:
        wait_for(lambda: hidden(tmp_path, "o.zarr"), first, what="the first run to write")
        res = invoke(*args, "--out", out)
        assert res.exit_code == 2
        assert f"--out {out}: another attnphys run (pid {first.pid} on" in " ".join(res.output.split())
        assert not out.exists()
    finally:
        go.touch()
    code, output = finish(first)
    assert code == 0, output
    assert (load(out) if args is TRAJ else open_result(out)) is not None


def test_a_store_created_meanwhile_by_another_run_is_not_replaced(tmp_path):
    path = tmp_path / "s.zarr"
    with pytest.raises(OutputError, match="created by another run"):
        with staged(path, replace=False) as tmp:
            tmp.mkdir()
            (tmp / "mine").write_text("mine")
            path.mkdir()  # the other run
            (path / "theirs").write_text("theirs")
    assert [p.name for p in path.iterdir()] == ["theirs"] and not hidden(tmp_path, "s.zarr")


# -- sweep stores ------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("hook", ["kill-mid-write", "kill-before-commit"])
@pytest.mark.long
def test_a_sweep_store_killed_while_being_created_is_recovered_by_rerunning(tmp_path, hook):
    out = tmp_path / "p.zarr"
    code, output = finish(attnphys(*PHASE, "--out", out, hook=hook, cwd=tmp_path))
    assert code == -signal.SIGKILL, output
    assert not out.exists()  # the template is created atomically: nothing half-made at the path
    res = invoke(*PHASE, "--out", out)
    assert res.exit_code == 0, res.output
    assert done_mask(out).all() and sorted(p.name for p in tmp_path.iterdir()) == ["p.zarr"]
    assert invoke(*PHASE, "--out", tmp_path / "q.zarr").exit_code == 0
    assert_same_store(open_result(out).drop_attrs(), open_result(tmp_path / "q.zarr").drop_attrs())


@pytest.mark.slow
def test_a_start_file_edited_before_the_resume_is_refused(tmp_path):
    win = tmp_path / "w.json"
    pe = [[1, 1], [1, -1], [-1, 1], [-1, -1]]
    original = json.dumps({"att_window": [[0.1, -0.2, 0.3]] * 4, "pe_window": pe})
    win.write_text(original)
    out = tmp_path / "bif.zarr"
    args = ["dmft", "bifurcation", "--start", win, "--start-value", "1.0", "--stop-value", "2.0", "--num", "4",
            "--chunk", "2", "--steps", "300", "--transient", "200", "--exponents", "0", "--n-orbit", "50", "--out", out]
    code, output = finish(attnphys(*args, hook="signal-after-first-chunk", cwd=tmp_path,
                                   env={"ATTNPHYS_TEST_SIGNAL": "SIGKILL"}))
    assert code == -signal.SIGKILL, output
    assert done_mask(out).tolist() == [True, False]
    sweep = json.loads(xr.open_zarr(out, consolidated=False).attrs["sweep"])
    assert sweep["task"]["start"]["sha256"] == hashlib.sha256(original.encode()).hexdigest()
    win.write_text(original.replace("0.1", "0.2"))
    res = invoke(*args)
    assert res.exit_code == 2
    text = " ".join(res.output.split())
    assert "task.start.sha256" in text and "The initial-condition file (task.start) changed" in text
    assert done_mask(out).tolist() == [True, False]
    win.write_text(original)
    res = invoke(*args)
    assert res.exit_code == 0, res.output
    assert done_mask(out).all()


# -- Ctrl-C --------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    path = tmp_path_factory.mktemp("whole") / "whole.zarr"
    code, output = finish(attnphys(*PHASE, "--out", path, cwd=path.parent))
    assert code == 0, output
    return open_result(path)


@pytest.mark.slow
@pytest.mark.parametrize("signame, code", [("SIGINT", 130), pytest.param("SIGTERM", 143, marks=slow_variant)])
def test_an_interrupt_between_chunks_exits_cleanly_and_resumes(tmp_path, uninterrupted, signame, code):
    out = tmp_path / "p.zarr"
    status, output = finish(attnphys(*PHASE, "--out", out, hook="signal-after-first-chunk", cwd=tmp_path,
                                     env={"ATTNPHYS_TEST_SIGNAL": signame}))
    assert status == code, output
    word = "interrupted" if signame == "SIGINT" else "terminated"
    assert f"{word}; re-run the same command to resume" in output and "Traceback" not in output
    assert done_mask(out).tolist() == [True, False]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.zarr"]  # no lock or partial left behind
    status, output = finish(attnphys(*PHASE, "--out", out, cwd=tmp_path))
    assert status == 0, output
    assert_same_store(open_result(out).drop_attrs(), uninterrupted.drop_attrs())


@pytest.mark.slow
def test_ctrl_c_during_the_first_chunk_exits_cleanly_and_resumes(tmp_path, uninterrupted):
    out = tmp_path / "p.zarr"
    status, output = finish(attnphys(*PHASE, "--out", out, hook="sigint-during-first-chunk", cwd=tmp_path))
    assert status == 130, output  # not a segmentation fault (139), not a traceback
    assert "interrupted; re-run the same command to resume" in output and "Traceback" not in output
    assert not done_mask(out).any()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.zarr"]
    status, output = finish(attnphys(*PHASE, "--out", out, cwd=tmp_path))
    assert status == 0, output
    assert_same_store(open_result(out).drop_attrs(), uninterrupted.drop_attrs())


@pytest.mark.slow
@pytest.mark.long
def test_ctrl_c_in_a_long_chunk_acts_at_once(tmp_path):
    """Ctrl-C from outside while the first chunk computes in native code for many seconds."""
    out = tmp_path / "p.zarr"
    long = [a if a != "1500" else "300000" for a in PHASE]
    proc = attnphys(*long, "--out", out, cwd=tmp_path)
    wait_for(out.exists, proc, what="the store to be created")
    time.sleep(1.5)
    assert not done_mask(out).any()
    t0 = time.time()
    os.kill(proc.pid, signal.SIGINT)
    status, output = finish(proc)
    assert status == 130, output
    assert time.time() - t0 < 5  # not after the chunk
    assert "interrupted; re-run the same command to resume" in output and "Traceback" not in output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.zarr"]


# -- one path resolution, and no debris in any exit path -----------------------------------------------------

def test_a_tilde_output_is_written_in_the_home_folder_and_checked_there(tmp_path, monkeypatch):
    """``--out '~/x.zarr'`` (not expanded by a shell) and ``out: ~/x.zarr`` in an options file: the checks
    and the writer look at the same place, and nothing is left in ``./~`` or beside the result."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    assert invoke(*TRAJ, "--out", "~/x.zarr").exit_code == 0
    assert load(home / "x.zarr").sizes["step"] == 40
    res = invoke(*TRAJ, "--out", "~/x.zarr")  # the check sees the result the writer wrote
    assert res.exit_code == 2 and "already holds a result" in res.output
    (work / "opts.yaml").write_text("steps: 40\nstart: checkpoint\nout: ~/y.zarr\n")
    assert invoke("dmft", "trajectory", "--config", work / "opts.yaml").exit_code == 0
    assert sorted(p.name for p in home.iterdir()) == ["x.zarr", "y.zarr"]
    assert sorted(p.name for p in work.iterdir()) == ["opts.yaml"]


def test_a_file_url_output_is_the_local_path(tmp_path):
    out = tmp_path / "u.zarr"
    assert invoke(*TRAJ, "--out", f"file://{out}").exit_code == 0
    assert load(out).sizes["step"] == 40 and load(f"file://{out}").sizes["step"] == 40
    assert sorted(p.name for p in tmp_path.iterdir()) == ["u.zarr"]


def test_a_relative_start_in_an_options_file_is_relative_to_the_file(tmp_path, monkeypatch):
    (tmp_path / "conf").mkdir()
    (tmp_path / "elsewhere").mkdir()
    window = {"att_window": [[0.1, -0.2, 0.3]] * 4, "pe_window": [[1, 1], [1, -1], [-1, 1], [-1, -1]]}
    (tmp_path / "conf" / "w.json").write_text(json.dumps(window))
    (tmp_path / "conf" / "opts.yaml").write_text("steps: 5\nstart: w.json\n")
    monkeypatch.chdir(tmp_path / "elsewhere")
    res = invoke("dmft", "trajectory", "--config", "../conf/opts.yaml", "--out", "t.zarr")
    assert res.exit_code == 0, res.output
    assert load(tmp_path / "elsewhere" / "t.zarr").attrs["start"].startswith(f"file {tmp_path / 'conf' / 'w.json'} ")


def test_a_full_disk_when_locking_leaves_no_lock_file(tmp_path, monkeypatch):
    import errno

    import attnphys.io as io

    real = os.write

    def full(fd, data):
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".lock"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(io.os, "write", full)
    res = invoke(*TRAJ, "--out", tmp_path / "r.zarr")
    assert res.exit_code == 2, res.output
    assert f"--out {tmp_path / 'r.zarr'}: cannot create files in {tmp_path} (no space left on the device)" in \
        " ".join(res.output.split())
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_relative_output_in_a_deleted_folder_is_refused(tmp_path):
    code = f"""
import os, sys
os.makedirs("{tmp_path}/gone")
os.chdir("{tmp_path}/gone")
os.rmdir("{tmp_path}/gone")
from attnphys.cli import main
main(sys.argv[1:])
"""
    proc = subprocess.run([sys.executable, "-c", code, "--devices", "1", *TRAJ, "--out", "r.zarr"],
                          capture_output=True, text=True, timeout=300, env={**os.environ, **JAX_CACHE})
    assert proc.returncode == 2, proc.stderr
    assert "--out r.zarr: the current folder no longer exists; give an absolute path" in " ".join(proc.stderr.split())
    assert "Traceback" not in proc.stderr and list(tmp_path.iterdir()) == []


HOOKS["signal-mid-final-write"] = """
import os, signal, threading, time, xarray as xr
_to_zarr = xr.Dataset.to_zarr
def to_zarr(self, store, *args, **kwargs):
    # the signal arrives while this (main) thread is still writing the result's variables, one by one
    names = list(self.data_vars)
    for i, name in enumerate(names):
        if i == 1:
            os.kill(os.getpid(), getattr(signal, os.environ["ATTNPHYS_TEST_SIGNAL"]))
        _to_zarr(self[[name]], store, *args, **{**kwargs, "mode": "w-" if i == 0 else "a"})
        time.sleep(0.01)
    return None
xr.Dataset.to_zarr = to_zarr
"""


@pytest.mark.slow
@pytest.mark.parametrize("signame, code", [("SIGTERM", 143), ("SIGINT", 130)])
def test_a_signal_during_the_final_write_leaves_no_debris(tmp_path, signame, code):
    """The watcher thread removes the hidden partial while the main thread still writes into it: the removal
    is repeated, and what the writer adds after the process has ended is removed once it has ended."""
    out = tmp_path / "r.zarr"
    for _ in range(3):
        status, output = finish(attnphys(*TRAJ, "--out", out, hook="signal-mid-final-write", cwd=tmp_path,
                                         env={"ATTNPHYS_TEST_SIGNAL": signame}))
        assert status == code, output
        assert "Traceback" not in output
        deadline = time.time() + 10
        while time.time() < deadline and list(tmp_path.iterdir()):
            time.sleep(0.05)
        assert list(tmp_path.iterdir()) == []


def test_a_folder_that_refuses_new_files_is_named_with_the_option(tmp_path, monkeypatch):
    """An immutable folder (or any file system that refuses a new file) is told about --out, not about the
    lock file, and leaves nothing behind."""
    import errno

    import attnphys.io as io

    real = os.open

    def refuse(path, *args, **kwargs):
        if str(path).endswith(".lock"):
            raise PermissionError(errno.EPERM, "Operation not permitted", str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(io.os, "open", refuse)
    res = invoke(*TRAJ, "--out", tmp_path / "r.zarr")
    assert res.exit_code == 2, res.output
    assert f"--out {tmp_path / 'r.zarr'}: cannot create files in {tmp_path} (Operation not permitted)" in \
        " ".join(res.output.split())
    assert list(tmp_path.iterdir()) == []


def test_overwrite_refuses_a_store_holding_a_users_file_and_keeps_it(tmp_path):
    """`--overwrite` replaces a result of the same kind, never what the user put beside its data."""
    import numpy as np
    import pytest
    import xarray as xr

    from attnphys.errors import OutputError
    from attnphys.io import check_output, save

    from attnphys.metadata import base_attrs

    store = tmp_path / "traj.zarr"
    ds = xr.Dataset({"x": ("t", np.arange(3.0))}, attrs=base_attrs(None))
    save(ds, store, command="dmft trajectory")
    assert check_output(store, "dmft trajectory", overwrite=True) == "replace"  # the store's own files only
    (store / "my_notes.txt").write_text("notes")
    with pytest.raises(OutputError, match="my_notes.txt"):
        check_output(store, "dmft trajectory", overwrite=True)
    with pytest.raises(OutputError, match="my_notes.txt"):
        save(ds, store, overwrite=True, command="dmft trajectory")
    assert (store / "my_notes.txt").read_text() == "notes"
