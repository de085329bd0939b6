"""How the process-pool and Dask executors fail: clearly, and without leaving anything running
(theory: docs/theory/sweeps.md §3.1).

* Worker processes of the ``processes`` executor end with the process that started them, however it
  ends (SIGKILL included): the kernel is asked to kill them (Linux ``PR_SET_PDEATHSIG``) and a watchdog
  thread in each worker ends it when its parent changes.
* The Dask executor hands the workers an absolute store path, refuses a store that the workers cannot
  see, reports when no worker has been connected for :func:`no_workers_policy`'s timeout (and then keeps
  waiting or stops, as the user chose), and turns a scheduler that stopped answering into one message
  with the way to resume.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from attnphys.errors import ExecutorError, InputError

PARENT_POLL_S = 0.2
"""Seconds between a worker's checks that the process that started it is still there."""

NO_WORKERS_ENV = "ATTNPHYS_DASK_NO_WORKERS"
"""Environment variable: what a Dask run does when no worker has been connected for the timeout, ``wait``
(report it and keep waiting; the default) or ``stop`` (end with a message; the finished chunks are kept),
where :func:`set_no_workers_policy` (the command line's ``--dask-no-workers``) set nothing."""

NO_WORKERS_TIMEOUT_ENV = "ATTNPHYS_DASK_NO_WORKERS_TIMEOUT"
"""Environment variable: seconds without a connected worker before that is reported (default
:data:`NO_WORKERS_TIMEOUT_S`), where :func:`set_no_workers_policy` set none."""

_POLICY: dict[str, str | None] = {"action": None, "timeout": None}
"""This process's choice, set by :func:`set_no_workers_policy`."""


def set_no_workers_policy(action: str | None = None, timeout: float | None = None) -> None:
    """Choose what a Dask run of this process does without workers (None: the environment's, else wait
    60 s and report).

    Raises:
        InputError: naming ``--dask-no-workers`` or ``--dask-no-workers-timeout``.
    """
    no_workers_policy(action, timeout)
    _POLICY.update(action=action, timeout=None if timeout is None else repr(float(timeout)))


NO_WORKERS_TIMEOUT_S = 60.0
"""Default seconds without a connected Dask worker before a run reports it."""

POLL_S = 1.0
"""Seconds between the Dask executor's looks at its workers while it waits for chunks."""


class NoWorkersWarning(UserWarning):
    """No Dask worker has been connected for the stated time; the run keeps waiting."""


# -- worker processes that end with their parent -----------------------------------------------------


def die_with_parent(parent: int, kernel: bool = True) -> None:
    """Make this (worker) process end when process ``parent`` ends.

    Args:
        parent: the pid of the process that started this one.
        kernel: also ask the kernel (Linux ``prctl(PR_SET_PDEATHSIG, SIGKILL)``) to kill this process when
            the thread that started it ends; only right when that thread lives as long as the pool.
    """
    if kernel:
        with contextlib.suppress(Exception):
            import ctypes

            pr_set_pdeathsig = 1
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:  # already gone before the request above took effect
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(PARENT_POLL_S)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="attnphys-parent-watchdog", daemon=True).start()


def worker_setup(parent: int, kernel: bool, x64: bool, cache: str | None) -> None:
    """Initializer of a pool worker: end with the parent, then configure JAX as the driver did."""
    die_with_parent(parent, kernel)
    from attnphys.runtime import configure

    configure(x64=x64, host_devices=1, compilation_cache=cache)


def run_processes(run_chunk, definition: str, store: str | None, todo: list[int], n: int, x64: bool, cache) -> Iterator:
    """Chunks in a pool of ``n`` fresh (spawned) processes that end with this one."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed

    kernel = threading.current_thread() is threading.main_thread()
    with ProcessPoolExecutor(
        max_workers=n,
        mp_context=mp.get_context("spawn"),
        initializer=worker_setup,
        initargs=(os.getpid(), kernel, x64, cache),
    ) as pool:
        futures = [pool.submit(run_chunk, definition, store, i) for i in todo]
        try:
            for f in as_completed(futures):
                yield f.result()
        finally:
            for f in futures:
                f.cancel()


# -- Dask ----------------------------------------------------------------------------------------------


def no_workers_policy(action: str | None = None, timeout: str | float | None = None) -> tuple[float, str]:
    """(seconds, ``"wait"`` or ``"stop"``): the values given, else :data:`NO_WORKERS_TIMEOUT_ENV` and
    :data:`NO_WORKERS_ENV`.

    Raises:
        InputError: a value that is neither, naming the command-line option.
    """
    action = action if action is not None else _POLICY["action"] or os.environ.get(NO_WORKERS_ENV, "wait")
    action = action.strip().lower() or "wait"
    if action not in ("wait", "stop"):
        raise InputError(f"must be wait or stop, got {action!r}", "--dask-no-workers")
    if timeout is None:
        timeout = _POLICY["timeout"] or os.environ.get(NO_WORKERS_TIMEOUT_ENV, "")
    text = str(timeout).strip()
    try:
        timeout = float(text) if text else NO_WORKERS_TIMEOUT_S
    except ValueError:
        raise InputError(f"must be a number of seconds, got {text!r}", "--dask-no-workers-timeout") from None
    if not timeout > 0 or timeout == float("inf"):
        raise InputError(f"must be a positive number of seconds, got {text!r}", "--dask-no-workers-timeout")
    return timeout, action


def store_for_workers(store: str | None) -> str | None:
    """The store path as the workers must get it: absolute (a worker runs in its own folder)."""
    return None if store is None else str(Path(store).absolute())


def check_store_visible(store: str) -> None:
    """In a worker, before computing: the store must be there (the same file system as the driver's).

    Raises:
        ExecutorError: naming the store, this worker's host and folder.
    """
    if not os.path.isdir(store):
        raise ExecutorError(
            f"the Dask worker on {socket.gethostname()} (in {os.getcwd()}) cannot see the store {store}; give an "
            "--out on a file system that the driver and every worker share"
        )


def check_workers_see(client, store: str) -> None:
    """Before submitting: every connected worker sees ``store`` (no worker yet: checked per chunk).

    Raises:
        ExecutorError: naming the workers that do not.
    """
    try:
        seen = client.run(os.path.isdir, store, on_error="return")
    except Exception:  # noqa: BLE001 - no workers yet, or an old Dask: every chunk checks again
        return
    blind = [addr for addr, ok in seen.items() if ok is not True]
    if blind:
        shown = ", ".join(blind[:3]) + (f" and {len(blind) - 3} more" if len(blind) > 3 else "")
        raise ExecutorError(
            f"the Dask worker(s) {shown} cannot see the store {store}; give an --out on a file system that "
            "the driver and every worker share"
        )


@contextlib.contextmanager
def quiet_dask_logs():
    """Dask's own log records (a lost connection logged with its traceback, retries) silenced while a run
    reports what happened itself; restored afterwards, except after an :class:`ExecutorError` (the client
    of a lost scheduler keeps trying to reconnect in its own thread, and would log each try)."""
    import logging

    prefixes = ("distributed", "tornado", "asyncio")
    known = [n for n in logging.root.manager.loggerDict if n.split(".")[0] in prefixes]
    names = sorted(set(prefixes) | set(known))  # children with a level of their own (distributed.client) too
    previous = {n: logging.getLogger(n).level for n in names}
    for n in names:
        logging.getLogger(n).setLevel(logging.CRITICAL + 1)
    failed = False
    try:
        yield
    except ExecutorError:
        failed = True
        raise
    finally:
        if not failed:
            for n, level in previous.items():
                logging.getLogger(n).setLevel(level)


def _finished(store: str | None, fallback: int) -> int:
    """Chunks flagged done in the store (what a resumed run keeps), else those received."""
    if store is None:
        return fallback
    try:
        from attnphys.io import read_done

        return int(read_done(store).sum())
    except Exception:  # noqa: BLE001 - the store is unreadable: say what was received
        return fallback


def lost_scheduler(scheduler: str | None, e: BaseException | None, done: int, total: int) -> ExecutorError:
    where = f"the Dask scheduler at {scheduler}" if scheduler else "the local Dask cluster"
    first = str(e).strip().splitlines()[0][:120] if e is not None and str(e).strip() else ""
    why = "" if e is None or "ancel" in type(e).__name__ else f" ({type(e).__name__}{': ' + first if first else ''})"
    again = (
        "start a scheduler and workers, and re-run the same command (with the new --scheduler address) to resume"
        if scheduler
        else "re-run the same command to resume"
    )
    return ExecutorError(f"{where} stopped answering{why}; {done} of {total} chunks are finished and kept: {again}")


def comm_errors() -> tuple[type[BaseException], ...]:
    from concurrent.futures import CancelledError

    errors: list[type[BaseException]] = [OSError, TimeoutError, CancelledError, EOFError]
    with contextlib.suppress(ImportError):
        from distributed.comm.core import CommClosedError

        errors.append(CommClosedError)
    with contextlib.suppress(ImportError):
        from distributed.client import FutureCancelledError  # pyright: ignore[reportAttributeAccessIssue]

        errors.append(FutureCancelledError)
    return tuple(errors)


def _n_workers(client) -> int:
    return len(client.nthreads())


def gather_dask(client, futures: list, scheduler: str | None, total: int, store: str | None = None) -> Iterable[Any]:
    """Results of ``futures`` as they finish; reports (or stops on) a cluster without workers and turns a
    lost scheduler into :class:`ExecutorError` (counting the chunks finished in ``store``; ``total``: all
    chunks of the sweep)."""
    from distributed import wait

    timeout, action = no_workers_policy()
    comm = comm_errors()
    pending = set(futures)
    received = 0

    def lost(e: BaseException | None) -> ExecutorError:
        return lost_scheduler(scheduler, e, _finished(store, received), total)

    alone_since: float | None = None
    reported = 0.0
    while pending:
        try:
            done, pending = wait(pending, timeout=POLL_S, return_when="FIRST_COMPLETED")  # pyright: ignore[reportGeneralTypeIssues]  (synchronous outside an event loop)
        except TimeoutError:
            done = set()
        except comm as e:
            raise lost(e) from None
        for f in done:
            if f.status == "cancelled":
                raise lost(None)
            try:
                result = f.result()
            except comm as e:
                raise lost(e) from None
            received += 1
            yield result
        if done or not pending:
            alone_since = None
            continue
        try:
            n = _n_workers(client)
        except comm as e:
            raise lost(e) from None
        if client.status not in ("running", "connecting", "newly-created"):
            raise lost(None)
        now = time.monotonic()
        if n:
            alone_since = None
            continue
        alone_since = alone_since or now
        if now - alone_since < timeout:
            continue
        where = f"the Dask scheduler at {scheduler}" if scheduler else "the local Dask cluster"
        start = f"start workers with `dask worker {scheduler}`" if scheduler else "its workers died"
        if action == "stop":
            raise ExecutorError(
                f"no Dask worker has been connected to {where} for {timeout:g} s ({start}); stopped as "
                f"--dask-no-workers stop asks. {_finished(store, received)} of {total} chunks are finished and kept: "
                "re-run the same command to resume"
            )
        if now - reported >= timeout:
            reported = now
            warnings.warn(
                f"no Dask worker has been connected to {where} for {now - alone_since:.0f} s ({start}); still "
                f"waiting ({_finished(store, received)} of {total} chunks finished). Ctrl-C stops (the finished "
                "chunks are kept); "
                "`attnphys --dask-no-workers stop …` stops by itself",
                NoWorkersWarning,
                stacklevel=2,
            )


def close_quietly(client, cluster) -> None:
    """Close a client and its local cluster without raising (the scheduler may be gone)."""
    with contextlib.suppress(Exception):
        client.close(timeout=5)
    if cluster is not None:
        with contextlib.suppress(Exception):
            cluster.close(timeout=10)


__all__ = [
    "NO_WORKERS_ENV",
    "NO_WORKERS_TIMEOUT_ENV",
    "NO_WORKERS_TIMEOUT_S",
    "NoWorkersWarning",
    "check_store_visible",
    "die_with_parent",
    "gather_dask",
    "no_workers_policy",
    "run_processes",
    "set_no_workers_policy",
]
