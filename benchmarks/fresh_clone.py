"""A contributor's first hour, timed: clone the repository into an empty folder with empty caches and run
``make test``, ``make demo`` and ``make docs`` there, one after another (theory: docs/theory/sweeps.md §6).

"Empty caches": the clone gets its own temporary folder (``TMPDIR``, where the test suite keeps its
compilation cache), its own ``XDG_CACHE_HOME`` (the command line's compilation cache) and its own home for
matplotlib; nothing compiled by an earlier run is read. The install (``make install``: a new ``.venv``, from
the package registries, whose own download cache may be warm) is timed apart, as are the docs' extra
install and the KaTeX fetch (``make docs`` after ``make docs-vendor`` and the docs install). The figures are
printed with the load average before and after each step and the CPU time (user + system) of each.

    python benchmarks/fresh_clone.py [--repo .] [--keep DIR] [--only test,demo,docs]

Targets: ``make test`` ≤ 10 min, ``make demo`` ≤ 90 s of running, ``make docs`` ≤ 5 min when no gallery
script or tutorial changed.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGETS = {"test": 600.0, "demo": 90.0, "docs": 300.0}


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _run(name: str, cmd: list[str], cwd: Path, env: dict, log: Path) -> tuple[float, float, int]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with log.open("w") as f:
        rc = subprocess.run(cmd, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT).returncode
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, rc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1], help="repository to clone")
    ap.add_argument("--keep", type=Path, default=None, help="clone here and keep it (default: a temporary folder)")
    ap.add_argument("--only", default="test,demo,docs", help="steps to time, of test,demo,docs")
    args = ap.parse_args(argv)
    steps = [s for s in args.only.split(",") if s]
    for s in steps:
        if s not in TARGETS:
            print(f"--only: unknown step {s!r}; steps: {', '.join(TARGETS)}", file=sys.stderr)
            return 2
    base = Path(tempfile.mkdtemp(prefix="attnphys-fresh-")) if args.keep is None else args.keep.resolve()
    base.mkdir(parents=True, exist_ok=True)
    clone, tmp, cache, home = base / "clone", base / "tmp", base / "cache", base / "home"
    if clone.exists():
        print(f"{clone} exists: give another --keep", file=sys.stderr)
        return 2
    for d in (tmp, cache, home):
        d.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", str(args.repo.resolve()), str(clone)], check=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=clone, capture_output=True, text=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTNPHYS_", "JAX_", "XLA_"))}
    env.update(TMPDIR=str(tmp), XDG_CACHE_HOME=str(cache), MPLCONFIGDIR=str(home / "mpl"))
    print(f"fresh clone of {args.repo} at {commit.stdout.strip()} in {clone}; {os.cpu_count()} CPUs", flush=True)
    plan = [("install", ["make", "install"])]
    if "docs" in steps:
        plan.append(("docs install", ["make", ".venv/.docs-installed", "docs-vendor"]))
    plan += [(s, ["make", s]) for s in steps]
    failed = False
    rows = []
    for name, cmd in plan:
        load0 = _load()
        wall, cpu, rc = _run(name, cmd, clone, env, base / f"{name.replace(' ', '_')}.log")
        target = TARGETS.get(name)
        verdict = "" if target is None else ("  within target" if wall <= target else f"  OVER {target:.0f} s")
        line = (f"{name:13s} {wall:8.1f} s wall {cpu:8.1f} s CPU  rc {rc}  load {load0} → {_load()}"
                f"{verdict}")
        print(line, flush=True)
        rows.append(line)
        failed |= rc != 0
    print(f"logs in {base}")
    if args.keep is None and not failed:
        shutil.rmtree(clone, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
