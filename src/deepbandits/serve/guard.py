"""What every request passes before the API sees it: the bearer token, the body's size limit,
and the timing of the answer.

A plain ASGI middleware (not one of Starlette's request wrappers, which cost a task per
request): it refuses a request without the token (401; ``/v1/health`` is open) or with a body
above the limit (413, from ``Content-Length`` before anything is read, or while a body without
it is streamed), and records each answer's latency and error status in the metrics.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
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
#: The media type of the answers (the Arrow form of decide_batch excepted).
JSON = b"application/json"


class BodyTooLarge(HTTPException):
    """A body found above the limit while it is read (the API answers it as 413)."""

    def __init__(self, detail: str) -> None:
        super().__init__(413, detail)


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
        self, app: ASGIApp, *, token: str | None, max_body_bytes: int, metrics: ServiceMetrics
    ) -> None:
        self.app = app
        self.expected = None if token is None else f"Bearer {token}".encode()
        self.max_body_bytes = max_body_bytes
        self.metrics = metrics

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

            async def limited_receive() -> Message:
                nonlocal received
                message = await receive()
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
        finally:
            self.metrics.observe(scope["path"], status, time.perf_counter() - start)

    def _too_large(self, size: int) -> str:
        return (
            f"the request body must be at most {self.max_body_bytes} bytes (the service's "
            f"--max-body-bytes), but {size} bytes are given: split a batch into smaller ones"
        )
