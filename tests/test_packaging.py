"""The light core install: nothing imports torch unless a probe runs, and a command that needs a missing
extra says which one.

The fast tests run in subprocesses of the test interpreter (a clean ``sys.modules``); torch is made
unimportable there by a meta-path finder. The slow test builds a fresh virtual environment, installs the
package without extras from the package registry and runs the core commands in it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"

# the modules a command-line run imports before any job executes
JOB_MODULES = ("attnphys.dmft._commands.trajectory", "attnphys.dmft._commands.diagrams", "attnphys.clouds.jobs", "attnphys.probes.jobs", "attnphys.expfam.jobs",
               "attnphys.reproduce", "attnphys.demo", "attnphys.cli")

# makes ``import torch`` and ``import transformers`` fail as if the probes extra were not installed
BLOCKER = textwrap.dedent("""
    import importlib.abc, sys

    class _NoExtra(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("torch", "transformers"):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, _NoExtra())
""")


def _env(extra_path: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    parts = [str(extra_path)] if extra_path else []
    parts += [str(SRC)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env["PYTHONPATH"] = os.pathsep.join(parts)
    env.setdefault("JAX_PLATFORMS", "cpu")
    return env


def _python(code: str, extra_path: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(extra_path),
                          timeout=timeout, cwd=ROOT)


@pytest.fixture
def no_probes_extra(tmp_path) -> Path:
    """A folder whose ``sitecustomize.py`` blocks torch and transformers (put it first on PYTHONPATH)."""
    d = tmp_path / "blocker"
    d.mkdir()
    (d / "sitecustomize.py").write_text(BLOCKER)
    return d


def test_imports_do_not_import_torch():
    """`import attnphys`, each job module and the registration of every job leave torch unimported (one
    fresh interpreter, the modules imported in turn; the first one that pulls torch in is named)."""
    code = textwrap.dedent(f"""
        import importlib, json, sys
        heavy = lambda: sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers'))
        found = {{}}
        for name in {("attnphys",) + JOB_MODULES!r}:
            importlib.import_module(name)
            found[name] = heavy()
        from attnphys.jobs import load_jobs
        found['load_jobs'] = [len(load_jobs())] + heavy()
        print(json.dumps(found))
    """)
    r = _python(code)
    assert r.returncode == 0, r.stderr
    found = json.loads(r.stdout.strip().splitlines()[-1])
    n_jobs, *pulled_by_jobs = found.pop("load_jobs")
    assert n_jobs >= 10 and pulled_by_jobs == [], pulled_by_jobs
    assert list(found) == ["attnphys", *JOB_MODULES]
    pulled = {name: mods for name, mods in found.items() if mods}
    assert not pulled, f"torch/transformers imported by: {pulled}"


def test_the_blocker_blocks_torch(no_probes_extra):
    """The simulated missing extra is real: torch cannot be imported under it."""
    r = _python("import torch", extra_path=no_probes_extra)
    assert r.returncode != 0 and "No module named 'torch'" in r.stderr


@pytest.mark.parametrize("command", [
    ["probe", "--model", "minilm"],
    ["clouds", "through-model", "--tokens", "16"],
])
@pytest.mark.slow
def test_commands_that_need_the_probes_extra_name_it(command, no_probes_extra, tmp_path):
    out = tmp_path / "out"
    target = out / "r.zarr" if command[0] == "clouds" else out
    r = subprocess.run([sys.executable, "-m", "attnphys", *command, "--out", str(target)], capture_output=True,
                       text=True, env=_env(no_probes_extra), timeout=300, cwd=tmp_path)
    text = r.stdout + r.stderr
    assert r.returncode != 0, text
    assert "attnphys[probes]" in text and "pip install" in text, text
    assert "Traceback" not in text, text
    assert not out.exists(), "nothing is written when the extra is missing"


# -- a fresh virtual environment with the core install only ----------------------------------------------

@pytest.mark.slow
@pytest.mark.long
def test_core_install_in_a_fresh_venv(tmp_path):
    """`pip install .` without extras: no torch; dmft trajectory, verify and clouds run work; probe names
    the missing extra. Needs the package registry (skipped when it cannot be reached)."""
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    bindir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    py = bindir / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["JAX_PLATFORMS"] = "cpu"

    def run(*args, timeout=600, cwd=tmp_path):
        return subprocess.run([str(a) for a in args], capture_output=True, text=True, env=env, timeout=timeout,
                              cwd=cwd)

    # build from a copy of what a source distribution holds, so the build leaves nothing in the working tree
    srcdir = tmp_path / "source"
    srcdir.mkdir()
    for name in ("pyproject.toml", "README.md", "CITATION.cff"):
        shutil.copy(ROOT / name, srcdir / name)
    shutil.copytree(SRC, srcdir / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    inst = run(py, "-m", "pip", "install", "--disable-pip-version-check", "--quiet", srcdir, timeout=1800)
    if inst.returncode != 0 and any(s in inst.stderr for s in ("Could not find a version", "NewConnectionError",
                                                                 "Temporary failure in name resolution")):
        pytest.skip(f"package registry unreachable: {inst.stderr.strip().splitlines()[-1]}")
    assert inst.returncode == 0, inst.stderr[-3000:]

    listed = run(py, "-m", "pip", "list", "--format", "json")
    names = {p["name"].lower() for p in json.loads(listed.stdout)}
    assert "attnphys" in names
    assert not names & {"torch", "transformers", "distributed", "mkdocs"}, sorted(names)

    attnphys = bindir / "attnphys"
    traj = run(attnphys, "dmft", "trajectory", "--preset", "paper", "--beta-o", "1.26", "--steps", "200",
               "--start", "token", "--out", tmp_path / "t.zarr")
    assert traj.returncode == 0, traj.stdout + traj.stderr
    assert (tmp_path / "t.zarr").is_dir()

    ver = run(attnphys, "verify")
    assert ver.returncode == 0, ver.stdout + ver.stderr

    clouds = run(attnphys, "clouds", "run", "--dim", "4", "--tokens", "32", "--layers", "5", "--out",
                 tmp_path / "c.zarr")
    assert clouds.returncode == 0, clouds.stdout + clouds.stderr
    assert (tmp_path / "c.zarr").is_dir()

    probe = run(attnphys, "probe", "--out", tmp_path / "probe-out")
    text = probe.stdout + probe.stderr
    assert probe.returncode != 0 and "attnphys[probes]" in text and "Traceback" not in text, text

    mod = run(py, "-m", "attnphys", "--help")
    assert mod.returncode == 0, mod.stderr
