"""The cyclic garbage collector during the console script's start-up.

Starting a command imports JAX, xarray, pandas and the package: a few hundred thousand long-lived objects
(modules, classes, functions), which the cyclic collector would walk again and again while they are being
allocated, about a tenth of a second of a one-second run. The console script pauses the collector while the
command line is imported and its options are read (:func:`pause`). When the command starts to compute,
:func:`resume` moves everything allocated so far into the collector's permanent generation (:func:`gc.freeze`:
it is not walked again) and turns the collector back on, so that a long run collects its own cycles as
usual. The few reference cycles that the imports leave behind are kept (a normal start-up keeps them too,
until a full collection). Nothing changes for a program that calls :func:`attnphys.cli.main` itself: the
collector is resumed only if :func:`pause` stopped it.
"""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    """Stop the cyclic collector for the start-up (if it runs)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """End the start-up: freeze what is allocated and restart the collector, if :func:`pause` stopped it."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
