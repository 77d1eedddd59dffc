"""How many threads torch and BLAS use.

* :func:`pinned_threads`: torch and BLAS for a whole run (the runner, the command line, every
  worker process, the service's request path).
* :class:`per_round_threads`: torch's intra-op pool for one public call of a policy (``decide``,
  ``learn``, ...), whoever calls it: a script, a notebook, a web worker. The per-round work is a
  forward pass and rank-one updates on matrices of a few dozen rows; a pool of several threads
  spinning for them against other busy processes made Neural-LinUCB 5x slower with one busy
  process per core, and 50x slower at a load of 6 (``benchmarks/speed.py``, contention rows).
  The count is the policy's ``threads`` option (default 1; None leaves torch's setting alone).
* :func:`training_threads`: a network training started inside such a call runs with the
  caller's setting (``torch.set_num_threads``, or :func:`pinned_threads`), not the call's.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from threadpoolctl import threadpool_limits

from deepbandits._validation import check_int


@contextmanager
def pinned_threads(threads: int | None) -> Iterator[None]:
    """Run the block with torch's intra-op pool and numpy's BLAS limited to ``threads`` threads
    (restored afterwards); ``None`` leaves both as they are.

    Bandit rounds are many small operations: a multi-threaded BLAS pool next to torch's own
    pool makes both spin for the same cores (25-30x slower LinUCB updates at d=378 on 2 cores;
    a training step 50x slower with another process on the machine), so the runner, the
    command line and every worker process use one thread per run by default.
    """
    if threads is None:
        yield
        return
    threads = check_int(threads, "threads", minimum=1)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with threadpool_limits(limits=threads, user_api="blas"):
            yield
    finally:
        torch.set_num_threads(before)


#: torch's intra-op count is a thread's own (OpenMP's per-thread setting): so is the bookkeeping
_local = threading.local()


class per_round_threads:
    """Run the block with torch's intra-op pool at ``threads`` threads in this thread (restored
    afterwards); ``None`` leaves it alone.

    Blocks may nest: the first to enter sets the count and the last to leave restores it. The
    count is per thread (as torch's is), so callers in other threads are not affected. A class
    rather than a generator-based context manager: it runs on every decision and reward.
    """

    __slots__ = ("_threads",)

    def __init__(self, threads: int | None) -> None:
        self._threads = threads

    def __enter__(self) -> None:
        if self._threads is None:
            return
        depth = getattr(_local, "depth", 0)
        if depth == 0:
            _local.outer = outer = torch.get_num_threads()
            if outer != self._threads:
                torch.set_num_threads(self._threads)
        _local.depth = depth + 1

    def __exit__(self, *exc: object) -> None:
        if self._threads is None:
            return
        _local.depth -= 1
        if _local.depth == 0 and torch.get_num_threads() != _local.outer:
            torch.set_num_threads(_local.outer)


@contextmanager
def training_threads() -> Iterator[None]:
    """Run the block (a network training) with the thread count this thread had before the
    policy call it runs in (:class:`per_round_threads`); outside such a call, as it is."""
    now = torch.get_num_threads()
    if getattr(_local, "depth", 0) == 0 or now == _local.outer:
        yield
        return
    torch.set_num_threads(_local.outer)
    try:
        yield
    finally:
        torch.set_num_threads(now)
