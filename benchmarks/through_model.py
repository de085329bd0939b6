"""Wall time of `attnphys clouds through-model` with a cloud of 1024 tokens (target for MiniLM: <= 60 s),
split into model loading and the three operator sets; prints its figures, with the process's CPU time and
the machine's load average (the wall time of a busy machine is not comparable).

    python benchmarks/through_model.py [--model minilm|smollm2] [--tokens 1024]
"""

import argparse
import os
import time

from attnphys.runtime import configure

configure()

from attnphys.clouds import through_model  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--model", default="minilm")
ap.add_argument("--tokens", type=int, default=1024)
args = ap.parse_args()
os.environ.setdefault("HF_HUB_OFFLINE", "1")
print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
for init in ("gaussian", "tokens"):
    t0, c0 = time.perf_counter(), time.process_time()
    stamps: list[str] = []
    ds = through_model(args.model, init=init, tokens=args.tokens, log=stamps.append)
    total, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(
        f"through-model {args.model}, init={init}, {args.tokens} tokens: {total:.1f} s in all, {cpu:.1f} s CPU "
        f"(model loading and weights {ds.attrs['load_time_s']:.1f} s); "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    for m in stamps:
        print(f"  {m}")
    st = ds.stat.sel(statistic="cov_trace")
    for op in ds.operator.values:
        print(
            f"  cov trace {op}: {float(st.sel(operator=op).isel(layer=0, stage=0)):.4g} -> "
            f"{float(st.sel(operator=op).isel(layer=-1, stage=-1)):.4g}"
        )
    if args.model == "minilm":
        print(f"  {'PASS' if total <= 60 else 'SLOWER THAN'} the 60 s target")
