"""How many threads torch and BLAS use: :func:`pinned_threads`, for the runner, the command
line, every worker process and the service's request path."""

from __future__ import annotations

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
