"""Start-up of the command line, whole process: help texts, and a repeated run that compiles nothing.

Prints, for `attnphys --help` and `attnphys COMMAND --help` (every command), the median and range of the wall
time over several runs and whether JAX, diffrax, scipy, xarray or torch were imported (they must not be:
target <= 0.5 s); then one 175,000-step trajectory (`attnphys dmft trajectory`), whole process, with an empty
compilation cache and again with the cache it filled (target on the repeat: <= 2 s).

    python benchmarks/startup.py [--runs 7] [--steps 175000]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAVY = ("jax", "diffrax", "scipy", "xarray", "torch", "matplotlib")

PROBE = """
import atexit, sys, runpy
sys.argv = ["attnphys", *{args!r}]
# an exit handler: the console script ends the process itself once the exit handlers have run
atexit.register(lambda: print("LOADED", ",".join(m for m in {heavy!r} if m in sys.modules), file=sys.stderr))
runpy.run_module("attnphys", run_name="__main__")
"""


def timed(cmd: list[str], env: dict) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return time.perf_counter() - t0, res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--steps", type=int, default=175_000)
    args = ap.parse_args()
    exe = str(Path(sys.executable).with_name("attnphys"))
    env = dict(os.environ)
    print(f"load average {os.getloadavg()[0]:.2f}; {args.runs} runs each")

    from attnphys.jobs import command_names

    for words in [[]] + [name.split() for name in command_names()]:
        times = [timed([exe, *words, "--help"], env)[0] for _ in range(args.runs)]
        _, probe = timed([sys.executable, "-c", PROBE.format(args=[*words, "--help"], heavy=HEAVY)], env)
        loaded = [line.split(" ", 1)[1] for line in probe.stderr.splitlines() if line.startswith("LOADED")]
        print(f"attnphys {' '.join(words + ['--help']):34s} median {statistics.median(times):.3f} s "
              f"(min {min(times):.3f}, max {max(times):.3f}); heavy modules imported: {loaded[0] if loaded and loaded[0] else 'none'}")

    with tempfile.TemporaryDirectory() as tmp:
        env = dict(env, ATTNPHYS_COMPILATION_CACHE=str(Path(tmp) / "xla"))
        for label in ("empty cache", "repeat"):
            out = Path(tmp) / f"t-{label.replace(' ', '-')}.zarr"
            wall, res = timed([exe, "dmft", "trajectory", "--steps", str(args.steps), "--transient",
                               str(args.steps - 1000), "--start", "checkpoint", "--out", str(out)], env)
            ok = "ok" if res.returncode == 0 else f"FAILED: {res.stderr[-300:]}"
            print(f"dmft trajectory, {args.steps} steps, whole process, {label}: {wall:.2f} s ({ok})")


if __name__ == "__main__":
    main()
