"""The hot endpoints (decide, decide_batch, reward) answered on ASGI directly, in front of
FastAPI.

FastAPI's middleware, routing, dependency solving and response handling cost about 0.1 ms of CPU
per request, more than a decision and its log entry together. :class:`Direct` answers ``POST``
on the paths it is given itself: it reads the body, validates it with the route's pydantic model
(:func:`parse`: orjson, or pydantic's JSON parser, which reads ``NaN`` as Python's does, so
that the policy's own check refuses it by name), awaits the handler and writes its answer with
orjson. Everything else goes to FastAPI, which also documents the same routes (``/docs``) and
answers them the same way if called. Invalid bodies and the library's errors get the answers the
FastAPI app gives (:mod:`deepbandits.serve.answers`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from pydantic import BaseModel, ValidationError

from deepbandits.errors import DeepBanditsError, InputValueError
from deepbandits.serve.answers import NOT_AN_OBJECT, dumps, error_answer, invalid_body
from deepbandits.serve.guard import ASGIApp, Receive, Scope, Send, respond

#: A hot endpoint: the validated body → the answer (sent once the handler returns).
Handler = Callable[[Any], Awaitable[Any]]


def is_json(scope: Scope) -> bool:
    """Whether the request says its body is JSON (``application/json`` or ``+json``), as
    FastAPI requires before it parses a body."""
    for name, value in scope["headers"]:
        if name == b"content-type":
            kind = value.split(b";", 1)[0].strip().lower()
            return kind == b"application/json" or (
                kind.startswith(b"application/") and kind.endswith(b"+json")
            )
    return False


async def read_body(receive: Receive) -> bytes:
    """The whole request body."""
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def parse(model: type[BaseModel], body: bytes) -> BaseModel:
    """``body`` validated as a ``model``: parsed by orjson, or, for what orjson refuses (not
    JSON, or ``NaN``, which Python's JSON reads), by pydantic's parser and its messages."""
    try:
        values = orjson.loads(body)
    except orjson.JSONDecodeError:
        return model.model_validate_json(body)
    return model.model_validate(values)


class Direct:
    """``POST`` on the paths of ``routes`` (path → request model, handler) answered directly;
    every other request goes to ``fallback`` (module notes)."""

    def __init__(self, fallback: ASGIApp, routes: dict[str, tuple[type[BaseModel], Handler]]):
        self.fallback = fallback
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = self.routes.get(scope["path"]) if scope.get("method") == "POST" else None
        if route is None:
            await self.fallback(scope, receive, send)
            return
        model, handler = route
        body = await read_body(receive)
        try:
            if not is_json(scope):
                raise InputValueError(NOT_AN_OBJECT)
            answer = await handler(parse(model, body))
        except ValidationError as exc:
            await respond(send, 422, invalid_body(exc.errors(include_url=False)))
        except DeepBanditsError as exc:
            await respond(send, *error_answer(exc))
        else:
            await respond(send, 200, dumps(answer))
