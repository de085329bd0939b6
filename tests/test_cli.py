import pytest
from typer.testing import CliRunner

from attnphys.cli import app

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.mark.slow
def test_help_is_complete():
    for cmd in ([], ["dmft"], ["dmft", "trajectory"], ["dmft", "lyapunov"], ["dmft", "bifurcation"],
                ["dmft", "phase-diagram"], ["dmft", "finite"], ["dmft", "converge"], ["clouds"], ["clouds", "run"],
                ["verify"], ["demo"]):
        res = invoke(*cmd, "--help")
        assert res.exit_code == 0, res.output
    res = invoke("dmft", "trajectory", "--help")
    for opt in ("--preset", "--beta-o", "--steps", "--transient", "--start", "--out", "--record-every", "--plot"):
        assert opt in res.output


def test_an_interrupted_run_is_told_to_resume_only_where_finished_chunks_are_kept():
    from attnphys.cli import interrupt_advice
    from attnphys.jobs import job_class

    sweep = job_class("dmft phase-diagram")
    resume, again = "re-run the same command to resume", "re-run the same command to start again"
    assert interrupt_advice(sweep.model_validate({"out": "p.zarr"})) == resume
    assert again in interrupt_advice(sweep.model_validate({"out": "p.nc"}))  # NetCDF: written whole at the end
    assert again in interrupt_advice(job_class("dmft trajectory").model_validate({}))
    assert again in interrupt_advice(None)
    assert resume not in interrupt_advice(job_class("clouds run").model_validate({}))



@pytest.mark.parametrize(
    "interrupt, message",
    [
        ("os.kill(os.getpid(), signal.SIGINT); time.sleep(5)", "interrupted"),  # Ctrl-C: the signal
        ("raise KeyboardInterrupt", "interrupted while starting; nothing was written"),  # one raised inside
    ],
)
def test_ctrl_c_while_the_command_line_is_imported_is_a_clean_stop(interrupt, message):
    """The console script handles Ctrl-C before it imports the command line (JAX and all): an interrupt
    arriving during that import (here from the import itself) exits 130 with one line, no traceback."""
    import subprocess
    import sys

    code = (
        "import importlib.abc, os, signal, sys, time\n"
        "class Stop(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'attnphys.cli':\n"
        f"            {interrupt}\n"
        "sys.meta_path.insert(0, Stop())\n"
        "from attnphys._entry import main\n"
        "main()\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 130, res.stderr
    assert res.stderr.strip() == message


_ENTRY = """
import atexit, sys, threading, time
from pathlib import Path
mode, marker = sys.argv[1], Path(sys.argv[2])
import gc
atexit.register(lambda: print("collector", "on" if gc.isenabled() else "off", "exit handler ran", flush=False))
if mode == "thread":
    def late():
        time.sleep(0.5)
        marker.write_text("written")
    threading.Thread(target=late, daemon=False).start()
sys.argv = ["attnphys", *sys.argv[3:]]
print("buffered line", end="")  # left in stdout's buffer: the exit must flush it
from attnphys._entry import main
main()
"""


@pytest.mark.parametrize(
    "mode, args, code, out",
    [
        ("plain", ["--help"], 0, "Usage: attnphys"),
        ("plain", ["dmft", "presets"], 0, "paper"),
        ("plain", ["dmft", "trajectory", "--steps", "-3"], 2, "--steps"),
        ("plain", ["no-such-command"], 2, "No such command"),
        ("thread", ["--help"], 0, "Usage: attnphys"),
    ],
)
@pytest.mark.slow
def test_the_console_script_exits_with_the_commands_status_after_the_exit_handlers(tmp_path, mode, args, code, out):
    """The console script skips Python's teardown of the numerical stack, but not what a normal exit does:
    the status is the command's, exit handlers run, buffered output is flushed, and a thread the process
    still runs is waited for."""
    import subprocess
    import sys

    marker = tmp_path / "marker"
    res = subprocess.run(
        [sys.executable, "-c", _ENTRY, mode, str(marker), *args], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == code, res.stderr[-2000:]
    assert out in res.stdout + res.stderr
    assert res.stdout.startswith("buffered line")
    assert res.stdout.rstrip().endswith("exit handler ran")
    assert marker.exists() == (mode == "thread")
    if code == 0 and "--help" not in args:  # a command that computed: the collector paused for the start-up runs
        assert "collector on" in res.stdout


def test_the_start_up_pause_of_the_garbage_collector_resumes_only_what_it_paused():
    import gc

    from attnphys import _startup

    assert gc.isenabled()
    _startup.resume()  # nothing paused: nothing changes
    assert gc.isenabled()
    gc.disable()
    try:
        _startup.pause()  # already off (the caller's choice): left off, and resume leaves it off
        _startup.resume()
        assert not gc.isenabled()
    finally:
        gc.enable()
    _startup.pause()
    assert not gc.isenabled()
    _startup.resume()
    assert gc.isenabled()
    gc.unfreeze()


@pytest.mark.slow
def test_importing_the_package_does_not_import_jax_until_configure_is_used():
    import subprocess
    import sys

    code = "import sys, attnphys\nprint('jax' in sys.modules)\nattnphys.configure\nprint('jax' in sys.modules)\n"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.stdout.split() == ["False", "True"], res.stderr
