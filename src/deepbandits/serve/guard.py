"""What every request passes before the API sees it: the ``Host`` it was sent to, the bearer
token, the body's size limit and read timeout, and the timing of the answer.

A plain ASGI middleware (not one of Starlette's request wrappers, which cost a task per
request): it refuses a request sent to a host the service does not answer to (421: a page that
rebinds its own DNS name to 127.0.0.1 reaches a service on loopback with its own name as
``Host``), without the token (401; ``/v1/health`` is open), with a body above the limit (413,
from ``Content-Length`` before anything is read, or while a body without it is streamed) or
with a body that is not sent within :data:`BODY_TIMEOUT` seconds of its headers (408: a client
that trickles its body holds a connection and a task), and records each answer's latency and
error status in the metrics. Everything here is checked from the headers before any of the body
is read.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping, Sequence
from typing import Any

from starlette.exceptions import HTTPException

from deepbandits.serve.answers import error_body
from deepbandits.serve.metrics import ServiceMetrics

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Paths open without the token.
OPEN_PATHS = frozenset({"/v1/health"})
#: Seconds a request may take to send its whole body once its headers arrived.
BODY_TIMEOUT = 30.0
#: The names of this machine's loopback interface (the hosts a service on loopback answers).
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
#: The media type of the answers (the Arrow form of decide_batch excepted).
JSON = b"application/json"
#: The header that ends a connection after its answer.
CLOSE = (b"connection", b"close")


class BodyTooLarge(HTTPException):
    """A body found above the limit while it is read (the API answers it as 413)."""

    def __init__(self, detail: str) -> None:
        super().__init__(413, detail)


class BodyTimeout(HTTPException):
    """A body not sent in time (the API answers it as 408)."""

    def __init__(self, detail: str) -> None:
        super().__init__(408, detail)


def host_name(value: bytes) -> str:
    """The host of a ``Host`` header, its port aside, lower case (``[::1]:80`` → ``::1``)."""
    text = value.decode("latin-1").strip().lower()
    if text.startswith("["):
        return text[1 : text.find("]")] if "]" in text else text
    return text.rsplit(":", 1)[0] if text.count(":") == 1 else text


def loopback_hosts(extra: Iterable[str] = ()) -> frozenset[str]:
    """The hosts a service bound to loopback answers: this machine's loopback names, and
    ``extra``."""
    return frozenset({*LOOPBACK_HOSTS, *(h.lower() for h in extra)})


async def respond(
    send: Send,
    status: int,
    body: bytes,
    headers: Sequence[tuple[bytes, bytes]] = (),
    *,
    media_type: bytes = JSON,
) -> None:
    """Send an answer (JSON unless ``media_type`` says otherwise)."""
    length = str(len(body)).encode()
    head = [(b"content-type", media_type), (b"content-length", length), *headers]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})


async def _refuse(
    send: Send, status: int, detail: str, error: str, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    await respond(send, status, error_body(detail, error), headers)


class Guard:
    """The middleware over ``app`` (module notes)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str | None,
        max_body_bytes: int,
        metrics: ServiceMetrics,
        allowed_hosts: Iterable[str] | None = None,
        body_timeout: float | None = None,
    ) -> None:
        self.app = app
        self.expected = None if token is None else f"Bearer {token}".encode()
        self.max_body_bytes = max_body_bytes
        self.metrics = metrics
        self.allowed_hosts = (
            None
            if allowed_hosts is None
            else frozenset(h.lower().strip("[]") for h in allowed_hosts)
        )
        self.body_timeout = BODY_TIMEOUT if body_timeout is None else body_timeout
        #: The requests waiting for body data now, with their deadlines, and those stopped late.
        self._reading: dict[asyncio.Task[Any], float] = {}
        self._late_tasks: set[asyncio.Task[Any]] = set()
        self._sweeper: asyncio.Task[None] | None = None

    async def _sweep(self) -> None:
        """Stop, every so often, the reads that passed their deadline (one task for all the
        requests: a timer per request cost 10 us of each)."""
        every = min(1.0, self.body_timeout / 4)
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(every)
            now = loop.time()
            for task, deadline in list(self._reading.items()):
                if deadline <= now and task not in self._late_tasks:
                    self._late_tasks.add(task)
                    task.cancel()

    def _host_allowed(self, scope: Scope) -> bool:
        if self.allowed_hosts is None:
            return True
        for name, value in scope["headers"]:
            if name == b"host":
                return host_name(value) in self.allowed_hosts
        return False

    def _authorized(self, scope: Scope) -> bool:
        if self.expected is None or scope["path"] in OPEN_PATHS:
            return True
        for name, value in scope["headers"]:
            if name == b"authorization":
                return secrets.compare_digest(value, self.expected)
        return False

    def _declared_size(self, scope: Scope) -> int | None:
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    return int(value)
                except ValueError:
                    return None
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500
        started = False

        async def timed_send(message: Message) -> None:
            nonlocal status, started
            if message["type"] == "http.response.start":
                status, started = int(message["status"]), True
            await send(message)

        try:
            if not self._host_allowed(scope):
                await _refuse(
                    timed_send,
                    421,
                    "this service does not answer to the Host this request was sent to (the "
                    "service's --allowed-hosts)",
                    "MisdirectedRequestError",
                )
                return
            if not self._authorized(scope):
                await _refuse(
                    timed_send,
                    401,
                    "this service requires 'Authorization: Bearer <token>' (the token it was "
                    "started with, --token or DEEPBANDITS_TOKEN)",
                    "AuthenticationError",
                    [(b"www-authenticate", b"Bearer")],
                )
                return
            limit = self.max_body_bytes
            declared = self._declared_size(scope)
            if declared is not None and declared > limit:
                await _refuse(timed_send, 413, self._too_large(declared), "PayloadTooLargeError")
                return
            received = 0

            loop = asyncio.get_running_loop()
            deadline = loop.time() + self.body_timeout
            task = asyncio.current_task()
            if self._sweeper is None:
                self._sweeper = loop.create_task(self._sweep())

            async def limited_receive() -> Message:
                nonlocal received
                if loop.time() >= deadline or task is None:
                    raise self._late(received)
                self._reading[task] = deadline  # while it waits: the sweeper's to stop
                try:
                    message = await receive()
                except asyncio.CancelledError:
                    if task not in self._late_tasks:
                        raise
                    self._late_tasks.discard(task)
                    task.uncancel()
                    raise self._late(received) from None
                finally:
                    self._reading.pop(task, None)
                if message["type"] == "http.request":
                    received += len(message.get("body", b""))
                    if received > limit:
                        raise BodyTooLarge(self._too_large(received))
                return message

            try:
                await self.app(scope, limited_receive, timed_send)
            except BodyTooLarge:
                if not started:
                    await _refuse(
                        timed_send, 413, self._too_large(received), "PayloadTooLargeError"
                    )
            except BodyTimeout as exc:
                if not started:
                    await _refuse(timed_send, 408, str(exc.detail), "RequestTimeoutError", [CLOSE])
        finally:
            self.metrics.observe(scope["path"], status, time.perf_counter() - start)

    def _late(self, received: int) -> BodyTimeout:
        return BodyTimeout(
            f"the request body must arrive within {self.body_timeout:g} s of its headers, but "
            f"{received} bytes came in that time"
        )

    def _too_large(self, size: int) -> str:
        return (
            f"the request body must be at most {self.max_body_bytes} bytes (the service's "
            f"--max-body-bytes), but {size} bytes are given: split a batch into smaller ones"
        )
