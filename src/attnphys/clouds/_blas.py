"""Thread count of the BLAS libraries behind jaxlib's and numpy's LAPACK calls on the CPU.

jaxlib runs ``eigh`` and ``cholesky`` through scipy's bundled OpenBLAS. For the D × D covariance of a
token cloud (D of a few hundred) a multi-threaded call costs far more than it gains, and on a busy
machine its threads spin while they wait for each other: the statistics of
:mod:`attnphys.clouds.stats` run with one BLAS thread (:func:`single_threaded`), set through
threadpoolctl.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from threadpoolctl import threadpool_info, threadpool_limits


def blas_threads() -> list[int]:
    """Current thread count of every BLAS library loaded in this process (empty list: none found)."""
    return [int(i["num_threads"]) for i in threadpool_info() if i.get("user_api") == "blas"]


@contextlib.contextmanager
def single_threaded() -> Iterator[None]:
    """Run the enclosed BLAS/LAPACK calls on one thread, restoring the previous counts after. The count is
    process-wide: block on the enclosed results (``float(...)``, ``block_until_ready``) before leaving."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield
