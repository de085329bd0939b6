"""The full probe (all five experiments of spec §5) of all-MiniLM-L6-v2 on 200 sentences of the built-in
corpus. Target on a 2-core machine: <= 60 s (model loading included).

    python benchmarks/probe_minilm.py [--sentences 200] [--out probe-out]
"""

from __future__ import annotations

import argparse
import tempfile
import time

from attnphys.runtime import configure


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sentences", type=int, default=200)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    configure(x64=True)
    from attnphys.probes import probe, write_outputs

    t0 = time.perf_counter()
    ds = probe("minilm", max_sentences=args.sentences, log=lambda *a: None)
    write_outputs(ds, args.out or tempfile.mkdtemp())
    wall = time.perf_counter() - t0
    print(f"probe of all-MiniLM-L6-v2 on {ds.attrs['n_sentences']} sentences ({ds.attrs['n_tokens']} tokens), "
          f"all experiments, outputs written: {wall:.1f} s")


if __name__ == "__main__":
    main()
