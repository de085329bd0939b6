"""Process set-up: the compilation cache."""

import subprocess
import sys

import pytest

from attnphys.runtime import COMPILATION_CACHE_ENV, configure, default_compilation_cache


@pytest.mark.parametrize(
    ("env", "xdg", "expected"),
    [
        ("off", None, None),
        ("", None, None),
        ("/some/where", None, "/some/where"),
        (None, "/xdg", "/xdg/attnphys/xla"),
    ],
)
def test_default_compilation_cache(monkeypatch, env, xdg, expected):
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
    with pytest.warns(RuntimeWarning, match="compilation cache .* left out"):
        configure(compilation_cache=blocker / "xla")
    assert jax.config.jax_compilation_cache_dir == before


_PROGRAM = """
import sys
import numpy as np
from attnphys.runtime import configure
configure(compilation_cache=sys.argv[1])
import jax, jax.numpy as jnp
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
f = jax.jit(lambda x: jnp.tanh(x) @ x.T)
print(repr(float(f(jnp.linspace(0.0, 1.0, 12).reshape(3, 4)).sum())))
"""


def test_a_second_process_reads_the_programs_the_first_wrote(tmp_path):
    cache = tmp_path / "xla"

    def run():
        out = subprocess.run([sys.executable, "-c", _PROGRAM, str(cache)], capture_output=True, text=True, check=True)
        return out.stdout.strip()

    def files():
        return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in cache.iterdir()}

    first = run()
    written = files()
    assert any(name.startswith("jit__lambda") for name in written), written
    assert run() == first  # the same program from disk: the same number
    assert files() == written  # read, not compiled and written again


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
