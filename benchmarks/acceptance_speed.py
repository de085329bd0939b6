"""The speed figures of the package side by side in one run, before and after (theory:
docs/theory/dynamics.md §2, §3, §7, §8.1; docs/theory/dmft.md §3.7, §7.5).

Runs, each in its own process so that one does not warm the next, for this checkout and (``--before SRC``)
for another source tree (``git archive <commit> src | tar -x -C DIR``, then ``--before DIR/src``),
interleaved:

1. ``benchmarks/speed.py``: grid basins of Newton's map (n × n, default and tuned options, beside
   pynamicalsys when it is installed: the ratio of its time to ours, labels compared), the Hénon map's
   batched orbit diagram and spectra in point-steps/s and per CPU-second with the roofline fraction,
   attractors along a parameter, and the repeated 175,000-step ``attnphys dmft trajectory`` whole process;
2. "nothing slower elsewhere": the key lines of ``benchmarks/census_grid.py``,
   ``benchmarks/dynamics_attractors.py`` and ``benchmarks/attractors.py`` (DMFT census and basins).

Every line is printed as it comes, prefixed by the tree it ran; the load average of the machine is printed
before and after each script, and each script's CPU time (user + system of the child), which a loaded machine
changes less than wall time.

    python benchmarks/acceptance_speed.py [--before /tmp/base/src] [--n 500] [--quick]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"


def scripts(n: int, quick: bool) -> list[tuple[str, list[str]]]:
    """(name, argv after the script path) of every run."""
    cont = ["--continuation-values", "41"] if quick else []
    basins = ["--basins-run", "4" if quick else "16"]
    return [
        ("speed.py", ["--n", str(n), *cont]),
        ("census_grid.py", ["--n", str(n)]),
        ("dynamics_attractors.py", ["--ics", "256"]),
        ("attractors.py", ["--ics", "256", *basins]),
    ]


def run(tree: str, src: Path, name: str, argv: list[str]) -> None:
    env = dict(os.environ, PYTHONPATH=str(src))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    print(f"[{tree}] {name} {' '.join(argv)}: load average {os.getloadavg()[0]:.2f}", flush=True)
    with subprocess.Popen(
        [sys.executable, str(HERE / name), *argv],
        cwd=HERE.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as p:
        assert p.stdout is not None
        for line in p.stdout:
            if "Warning" in line or line.startswith(("  ", "points:")):
                continue
            print(f"[{tree}] {line.rstrip()}", flush=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(
        f"[{tree}] {name}: exit {p.returncode}, {time.perf_counter() - t0:.1f} s wall, {cpu:.1f} CPU-s; "
        f"load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, default=None, help="another source tree (its src/), run first")
    ap.add_argument("--n", type=int, default=500, help="grid points per side of the basin censuses")
    ap.add_argument("--quick", action="store_true", help="fewer parameter values in the runs along a parameter")
    args = ap.parse_args()
    try:
        import pynamicalsys  # noqa: F401

        peer = "pynamicalsys installed: compared"
    except ImportError:
        peer = "pynamicalsys not installed: the grid basins are not compared with it"
    print(f"{peer}; {os.cpu_count()} CPUs; load average {os.getloadavg()}", flush=True)
    trees = ([("before", args.before.resolve())] if args.before else []) + [("after", SRC)]
    for name, argv in scripts(args.n, args.quick):
        for tree, src in trees:
            run(tree, src, name, argv)


if __name__ == "__main__":
    main()
