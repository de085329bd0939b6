"""The ``attnphys`` console script. Ctrl-C is a clean stop from the first moment: while the command line
is imported (JAX, pydantic, typer: a second or two) and its options are read, an interrupt ends the
process at once with exit status 130 and one line, no traceback. Nothing is written in that phase; a
running job installs its own handler (:func:`attnphys.cli.interruptible`), which removes partial outputs.

When the command has finished, the process ends without Python's teardown of the numerical stack (freeing
JAX's, xarray's, pandas' and zarr's modules one object at a time: a quarter of a second after a store is
written). Everything a normal exit does first still happens: the exit handlers run (Dask, logging, temporary
folders) and the output streams are flushed. A process that still has a thread of its own running, or
whose streams cannot be flushed (a closed pipe), exits the normal way. The cyclic garbage collector is
paused while the command line starts (:mod:`attnphys._startup`)."""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading

from attnphys._startup import pause


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
    pause()
    try:
        from attnphys.cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write("\ninterrupted while starting; nothing was written\n")
        raise SystemExit(130) from None
    try:
        run()
    except SystemExit as e:
        _finish(e.code)
    _finish(0)


def _finish(code: object) -> None:
    """End the process with exit status ``code`` once the command is done: the exit handlers run and the
    streams are flushed, then the process exits at once (:func:`os._exit`). Falls back to the normal
    ``SystemExit`` when ``code`` is not a status number, another non-daemon thread is alive, or a stream
    cannot be flushed."""
    status = 0 if code is None else code
    if not isinstance(status, int) or isinstance(status, bool):
        raise SystemExit(code)
    if any(t is not threading.current_thread() and not t.daemon and t.is_alive() for t in threading.enumerate()):
        raise SystemExit(status)
    atexit._run_exitfuncs()
    atexit._clear()  # run once, whichever way the process ends
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        raise SystemExit(status) from None
    os._exit(status)
