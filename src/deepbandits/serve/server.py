"""Running the API on uvicorn: in the foreground (``deepbandits serve``) or in a thread
(:class:`BackgroundServer`: tests, notebooks, a process that embeds the service).

The socket is bound here, before uvicorn starts, so that an address in use or not allowed is a
clear error of the command (``deepbandits: error: ...``) rather than a log line of the server.

The foreground server raises the garbage collector's first threshold (:data:`GC_THRESHOLD`)
and freezes what the start allocated: a batch request's body parses into tens of thousands of
lists (acyclic, freed with the request), and at CPython's default of 700 allocations the
collector ran dozens of times per batch, walking the decisions just made each time; it cost
more CPU than deciding and logging the batch (about 40 µs per decision of 10 arms x 20
features). It also runs torch and numpy's BLAS on one thread each
(:func:`~deepbandits._threads.pinned_threads`): a request's products are small, and
OpenBLAS's pool, spinning for the cores the log's writer and the clients need, made a batch of
1,000 LinUCB decisions three times slower (19 µs per decision instead of 7).

Connections are uvicorn's httptools protocol with one addition (:class:`HeaderDeadline`): a
request's headers must arrive within :data:`HEADER_TIMEOUT` seconds of its first byte (or of the
connection), else the connection is closed. Without it a client that opens connections and
trickles a header byte now and then holds each one, and its file descriptor, for ever; enough
of them lock every other client out. Idle keep-alive connections close after uvicorn's
keep-alive timeout, and a body must arrive within the guard's read timeout
(:mod:`deepbandits.serve.guard`).
"""

from __future__ import annotations

import asyncio
import gc
import ipaddress
import socket
import threading
import time
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from deepbandits._threads import pinned_threads
from deepbandits.errors import InputValueError, ServiceError

#: Allocations between two collections of the youngest generation (CPython's default: 700).
GC_THRESHOLD = 100_000
#: Seconds uvicorn lets requests in flight finish on shutdown (a SIGTERM's budget:
#: :data:`~deepbandits.serve.state.CLOSE_WAIT`).
GRACEFUL_SECONDS = 3
#: Seconds a request's headers may take to arrive (module notes).
HEADER_TIMEOUT = 10.0
#: Seconds an idle keep-alive connection stays open.
KEEP_ALIVE_SECONDS = 5


class HeaderDeadline(HttpToolsProtocol):  # type: ignore[misc]
    """uvicorn's httptools protocol, closing a connection whose request headers do not arrive
    within :attr:`header_timeout` seconds (module notes).

    The connections waiting for headers sit in :attr:`waiting` with their deadlines, and one
    task of the server closes those past theirs every so often: a timer per request cost about
    10 µs of each. :func:`make_server` makes a subclass per server, so that each has its own.
    """

    header_timeout = HEADER_TIMEOUT
    waiting: dict[HeaderDeadline, float]
    sweeper: asyncio.Task[None] | None = None

    def _arm(self) -> None:
        cls = type(self)
        if self not in cls.waiting:
            cls.waiting[self] = self.loop.time() + self.header_timeout
        if cls.sweeper is None:
            cls.sweeper = self.loop.create_task(cls.sweep(self.loop))

    @classmethod
    async def sweep(cls, loop: asyncio.AbstractEventLoop) -> None:
        """Close, every so often, the connections past their deadline."""
        every = min(1.0, cls.header_timeout / 4)
        while True:
            await asyncio.sleep(every)
            now = loop.time()
            for connection, deadline in list(cls.waiting.items()):
                if deadline <= now:
                    del cls.waiting[connection]
                    if not connection.transport.is_closing():
                        connection.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()

    def on_headers_complete(self) -> None:
        type(self).waiting.pop(self, None)
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        type(self).waiting.pop(self, None)
        super().connection_lost(exc)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # asyncio: no Nagle
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise InputValueError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc} (another service on that "
            "port? choose another with --port)"
        ) from None
    sock.set_inheritable(True)
    return sock


def make_server(
    app: Any, *, log_level: str = "warning", header_timeout: float = HEADER_TIMEOUT
) -> uvicorn.Server:
    """A uvicorn server for ``app`` (no access log: the metrics count requests), with a
    deadline for every request's headers (module notes)."""
    protocol = type(
        "HeaderDeadline", (HeaderDeadline,), {"header_timeout": header_timeout, "waiting": {}}
    )
    config = uvicorn.Config(
        app,
        log_level=log_level,
        access_log=False,
        lifespan="off",
        http=protocol,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        timeout_graceful_shutdown=GRACEFUL_SECONDS,
    )
    return uvicorn.Server(config)


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def run(
    app: Any,
    sock: socket.socket,
    *,
    log_level: str = "warning",
    header_timeout: float = HEADER_TIMEOUT,
) -> None:
    """Serve ``app`` on ``sock`` until SIGINT or SIGTERM (the collector tuned: module notes)."""
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    with pinned_threads(1):
        server = make_server(app, log_level=log_level, header_timeout=header_timeout)
        server.run(sockets=[sock])


class BackgroundServer:
    """``app`` served on ``host:port`` (default: a free loopback port) by a thread.

    Use as a context manager, or :meth:`start` and :meth:`stop`; :attr:`url` is where it
    answers.
    """

    def __init__(
        self,
        app: Any,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        header_timeout: float = HEADER_TIMEOUT,
    ) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.header_timeout = header_timeout
        self.url = ""
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self, timeout: float = 20.0) -> str:
        """Start serving; returns the URL once the server accepts connections."""
        sock = bind(self.host, self.port)
        self.url = url_of(sock)
        server = self._server = make_server(self.app, header_timeout=self.header_timeout)
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="deepbandits-http", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ServiceError(f"the server on {self.url} did not start")
            time.sleep(0.01)
        return self.url

    def stop(self) -> None:
        """Stop serving (requests in flight finish first) and wait for the thread."""
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(GRACEFUL_SECONDS + 5)
        self._server = self._thread = None

    def __enter__(self) -> BackgroundServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
