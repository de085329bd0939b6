"""Run gallery scripts (``python run_gallery.py OUT SCRIPT=KEY ...``), each in ``OUT/<stem>/``.

The scripts run one after another in this process (``runpy``), so the library and JAX are imported
once. A script's figures are the PNG files it leaves in its working directory; they are listed, with
the script's key and run time, in ``OUT/<stem>/_meta.json`` (written last, so a failed script has no
metadata and runs again next time).
"""

from __future__ import annotations

import json
import os
import runpy
import shutil
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve()
    for item in argv[1:]:
        script, _, key = item.rpartition("=") if "=" in item else (item, "", "")
        script = Path(script).resolve()
        folder = out / script.stem
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        here = os.getcwd()
        t0 = time.perf_counter()
        os.chdir(folder)
        try:
            runpy.run_path(str(script), run_name="__main__")
        finally:
            os.chdir(here)
        seconds = time.perf_counter() - t0
        figures = sorted(p.name for p in folder.glob("*.png"))
        (folder / "_meta.json").write_text(json.dumps({"key": key, "seconds": seconds, "figures": figures}))
        print(f"{script.name}: {len(figures)} figures in {seconds:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
