"""Process set-up: the compilation cache."""

import os
import subprocess
import sys
import time

import pytest

from attnphys.runtime import COMPILATION_CACHE_ENV, configure, default_compilation_cache


@pytest.mark.parametrize(
    ("env", "xdg", "expected"),
    [
        ("off", None, None),
        ("", None, None),
        ("0", None, None),
        ("False", None, None),
        ("none", None, None),
        ("/some/where", None, "/some/where"),
        (None, "/xdg", "/xdg/attnphys/xla"),
        (None, "relative/xdg", "HOME"),  # a relative XDG_CACHE_HOME is ignored
    ],
)
def test_default_compilation_cache(monkeypatch, env, xdg, expected):
    monkeypatch.setenv("HOME", "/home/someone")
    if expected == "HOME":
        expected = "/home/someone/.cache/attnphys/xla"
    for name, value in ((COMPILATION_CACHE_ENV, env), ("XDG_CACHE_HOME", xdg)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    got = default_compilation_cache()
    assert (None if got is None else str(got)) == expected


def test_default_compilation_cache_under_home(monkeypatch, tmp_path):
    monkeypatch.delenv(COMPILATION_CACHE_ENV, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_compilation_cache() == tmp_path / ".cache" / "attnphys" / "xla"


def test_an_unusable_cache_directory_is_reported_and_left_out(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    import jax

    before = jax.config.jax_compilation_cache_dir
    with pytest.warns(RuntimeWarning, match="compilation cache .* left out.*=off"):
        configure(host_devices=2, compilation_cache=blocker / "xla")
    with pytest.warns(RuntimeWarning, match="empty directory name"):
        configure(host_devices=2, compilation_cache="")
    assert jax.config.jax_compilation_cache_dir == before


def test_a_read_only_cache_directory_is_reported_and_left_out(tmp_path):
    import os

    import jax

    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as a user who can write anywhere")
        before = jax.config.jax_compilation_cache_dir
        with pytest.warns(RuntimeWarning, match="not writable"):
            configure(host_devices=2, compilation_cache=ro)
        assert jax.config.jax_compilation_cache_dir == before
    finally:
        ro.chmod(0o700)


_PROGRAM = """
import sys
import numpy as np
from attnphys.runtime import configure
configure(compilation_cache=sys.argv[1])
import jax, jax.numpy as jnp
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
hits = []
jax.monitoring.register_event_listener(lambda event, **kw: hits.append(event) if event.endswith("cache_hits") else None)
f = jax.jit(lambda x: jnp.tanh(x) @ x.T)
print(repr(float(f(jnp.linspace(0.0, 1.0, 12).reshape(3, 4)).sum())), len(hits))
"""


@pytest.mark.slow
def test_a_second_process_reads_the_programs_the_first_wrote(tmp_path):
    cache = tmp_path / "xla"

    def run():
        out = subprocess.run([sys.executable, "-c", _PROGRAM, str(cache)], capture_output=True, text=True, check=True)
        return out.stdout.strip()

    def files():
        return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in cache.iterdir()}

    first, hits = run().split()
    written = files()
    assert any(name.startswith("jit__lambda") for name in written), written
    assert hits == "0"
    second, hits = run().split()
    assert second == first  # the same program from disk: the same number
    assert int(hits) >= 1  # read from the cache, not compiled again
    assert files() == written


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_a_corrupted_cache_entry_is_compiled_again_not_fatal(tmp_path, damage):
    cache = tmp_path / "xla"

    def run():
        out = subprocess.run([sys.executable, "-c", _PROGRAM, str(cache)], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr[-2000:]
        assert "Traceback" not in out.stderr
        return out.stdout.strip().split()

    first, _ = run()
    entries = [p for p in cache.iterdir() if p.name.startswith("jit__lambda") and p.is_file()]
    assert entries
    for p in entries:
        data = p.read_bytes()
        p.write_bytes(
            {"garbage": b"\x00not an executable" * 7, "truncated": data[: len(data) // 3], "empty": b""}[damage]
        )
    second, _ = run()
    assert second == first  # compiled again: the same number


def test_the_command_line_reports_an_unusable_cache_and_goes_on(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from attnphys.cli import app

    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(COMPILATION_CACHE_ENV, str(blocker / "xla"))
    out = CliRunner().invoke(app, ["dmft", "presets"])
    assert out.exit_code == 0, out.output
    assert f"warning: compilation cache {blocker / 'xla'} left out" in out.output
    assert "Traceback" not in out.output


_MAPPINGS = """
import jax, jax.numpy as jnp
def maps():
    with open("/proc/self/maps") as f:
        return sum(1 for _ in f)
x = jnp.ones((3, 3))
jax.jit(lambda x: x + 1)(x).block_until_ready()
before = maps()
keep = [jax.jit(lambda x, i=i: jnp.tanh(x * i) @ x.T + i) for i in range(200)]
for f in keep:
    f(x).block_until_ready()
compiled = maps()
jax.clear_caches()
print(before, compiled, maps())
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts /proc/self/maps")
def test_released_programs_give_back_their_memory_mappings():
    """The test suite's guard against the kernel's per-process mapping limit (conftest) relies on this:
    compiled programs hold memory mappings, and jax.clear_caches() gives them back even while the jitted
    functions are alive."""
    out = subprocess.run([sys.executable, "-c", _MAPPINGS], capture_output=True, text=True, check=True)
    before, compiled, released = map(int, out.stdout.split())
    assert compiled - before >= 3 * 200  # several mappings per program
    assert released - before <= 0.2 * (compiled - before)


_STORED = """
import sys
import numpy as np
import jax, jax.numpy as jnp
from attnphys.runtime import configure, stored_jit, shard_batch
configure(compilation_cache=sys.argv[1], host_devices=2)
traced = []

def f(x, y, n):
    traced.append(1)
    for _ in range(n):
        x = jnp.tanh(x * y + 0.1)
    return {"x": x, "s": (x.sum(axis=-1), y)}

g = stored_jit(f, "test-program", static_argnames=("n",))
x = np.linspace(-1.0, 1.0, 24).reshape(6, 4)
out = shard_batch(lambda a, b: g(a, b, n=5), (x, np.full((6, 4), 0.7)), 6)
ref = jax.jit(f, static_argnames=("n",))(x, np.full((6, 4), 0.7), n=5)
same = all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(jax.tree_util.tree_leaves(out),
                                                                      jax.tree_util.tree_leaves(ref)))
print(repr(float(np.asarray(out["x"]).sum())), len(traced), same)
"""


@pytest.mark.slow
def test_a_stored_program_is_loaded_without_tracing_and_gives_the_same_bits(tmp_path):
    cache = tmp_path / "xla"

    def run():
        out = subprocess.run([sys.executable, "-c", _STORED, str(cache)], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout.split()

    first, traced, same = run()
    assert (traced, same) == ("2", "True")  # traced for the stored program and for the reference
    (entry,) = (cache / "programs").iterdir()
    second, traced, same = run()
    assert (second, traced, same) == (first, "1", "True")  # only the reference traced: the program was loaded
    entry.write_bytes(entry.read_bytes()[:-100])  # truncated: compiled again, rewritten
    third, traced, same = run()
    assert (third, traced, same) == (first, "2", "True")
    assert run()[1] == "1"


def test_building_a_result_imports_no_dask_and_dask_arrays_still_work():
    code = """
import sys
import numpy as np
import attnphys
attnphys.configure()
import xarray as xr
ds = xr.Dataset({"a": (("x",), np.arange(4.0))}, coords={"x": np.arange(4)})
print("dask.array" in sys.modules or "dask.base" in sys.modules)
import dask.array as da
c = xr.Dataset({"a": (("x",), da.arange(4.0, chunks=2))})
print(c.chunks["x"], float(c["a"].sum().compute()), xr.DataArray(da.ones(3, chunks=1)).chunks)
"""
    pytest.importorskip("dask.array")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[:2] == ["False", "(2, 2) 6.0 ((1, 1, 1),)"]


_STORED_AFTER_UPGRADE = """
import sys
import attnphys.runtime as rt
rt._source_digest = sys.argv[2]  # another version of the package: the same program under another key
sys.argv = ["attnphys", "dmft", "trajectory", "--steps", "3000", "--transient", "2000", "--start", "checkpoint",
            "--out", sys.argv[3]]
from attnphys._entry import main
main()
"""


@pytest.mark.slow
@pytest.mark.long
def test_a_program_stored_after_an_upgrade_is_loaded_and_kept(tmp_path):
    """The compilation cache already holds the DMFT program (written under another package version); the
    program stored by the new version must run when the next process loads it, not fail and be rewritten
    on every start (a serialized CPU executable read back from the compilation cache lost functions)."""
    cache = tmp_path / "xla"
    env = dict(os.environ, ATTNPHYS_COMPILATION_CACHE=str(cache))

    def run(version: str) -> dict[str, int]:
        out = tmp_path / f"t-{time.perf_counter_ns()}.zarr"
        res = subprocess.run(
            [sys.executable, "-c", _STORED_AFTER_UPGRADE, str(cache), version, str(out)],
            capture_output=True,
            text=True,
            env=env,
        )
        assert res.returncode == 0, res.stderr[-2000:]
        return {p.name: p.stat().st_mtime_ns for p in (cache / "programs").iterdir()}

    run("old")
    written = run("new")
    assert len(written) == 2
    assert run("new") == written  # loaded and run, not replaced
