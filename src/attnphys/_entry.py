"""The ``attnphys`` console script. Ctrl-C is a clean stop from the first moment: while the command line
is imported (JAX, pydantic, typer: a second or two) and its options are read, an interrupt ends the
process at once with exit status 130 and one line, no traceback. Nothing is written in that phase; a
running job installs its own handler (:func:`attnphys.cli.interruptible`), which removes partial outputs."""

from __future__ import annotations

import os
import signal
import sys


def _stop(signum, frame) -> None:
    sys.stderr.write("\ninterrupted\n")
    sys.stderr.flush()
    os._exit(130)


def main() -> None:
    """Run :func:`attnphys.cli.main` with an interrupt handler installed before anything heavy is imported."""
    try:
        signal.signal(signal.SIGINT, _stop)
    except ValueError:  # pragma: no cover - not the main thread
        pass
    try:
        from attnphys.cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write("\ninterrupted while starting; nothing was written\n")
        raise SystemExit(130) from None
    run()
