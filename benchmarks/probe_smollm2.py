"""SmolLM2-135M-Instruct, offline: the first load (dequantizing the package's GGUF weights into a fresh model
cache), later loads from the cache, and the full probe (every experiment, every claim's test, the
temperatures and particle flows, all outputs written) on 200 sentences of the built-in corpus. Targets on a
2-core machine: later loads <= 10 s, the full probe <= 5 min. Prints its figures with the process's CPU time
and the machine's load average (the wall time of a busy machine is not comparable).

    python benchmarks/probe_smollm2.py [--sentences 200] [--skip-conversion] [--out DIR]

The first load runs in a fresh subprocess with ATTNPHYS_MODEL_CACHE pointed at a temporary folder (the
user's cache is left alone); later loads are timed in fresh subprocesses too (imports included), as a
user starting the command would see them.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

LOAD = "import time; t0 = time.perf_counter(); from attnphys.probes import load_model; load_model('smollm2'); print(time.perf_counter() - t0)"


def timed_load(env: dict) -> tuple[float, float]:
    """(wall time of a fresh process loading smollm2, the load as the process measured it)."""
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", LOAD], env=env, capture_output=True, text=True, check=True)
    return time.perf_counter() - t0, float(r.stdout.strip().splitlines()[-1])


def load_avg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sentences", type=int, default=200)
    ap.add_argument("--skip-conversion", action="store_true", help="time only later loads and the probe")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    print(f"load average before: {load_avg()} on {os.cpu_count()} CPUs")
    if not args.skip_conversion:
        with tempfile.TemporaryDirectory() as cache:
            wall, inner = timed_load({**env, "ATTNPHYS_MODEL_CACHE": cache})
            print(
                f"first load, converting the GGUF weights into an empty cache: {wall:.1f} s in all "
                f"({inner:.1f} s after the imports); load average {load_avg()}"
            )
    timed_load(env)  # make sure the user's cache holds the converted model
    for i in range(3):
        wall, inner = timed_load(env)
        print(
            f"later load {i + 1}: {wall:.1f} s in a fresh process ({inner:.1f} s after the interpreter started); "
            f"load average {load_avg()}  [{'PASS' if wall <= 10 else 'SLOWER THAN'} the 10 s target]"
        )

    os.environ["HF_HUB_OFFLINE"] = "1"
    from attnphys.runtime import configure

    configure(x64=True)
    from attnphys.probes import probe, write_outputs

    t0, c0 = time.perf_counter(), time.process_time()
    stamps: list[tuple[str, float]] = []
    ds = probe("smollm2", max_sentences=args.sentences, log=lambda m: stamps.append((m, time.perf_counter() - t0)))
    write_outputs(ds, args.out or tempfile.mkdtemp())
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(
        f"full probe of smollm2 on {ds.attrs['n_sentences']} sentences ({ds.attrs['n_tokens']} tokens, "
        f"{ds.sizes['layer']} layers), outputs written: {wall:.1f} s, {cpu:.1f} s CPU; load average {load_avg()}  "
        f"[{'PASS' if wall <= 300 else 'SLOWER THAN'} the 5 min target]"
    )
    for m, t in stamps:
        print(f"  {t:7.1f} s  {m}")


if __name__ == "__main__":
    main()
