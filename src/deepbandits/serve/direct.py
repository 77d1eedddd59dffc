"""The hot endpoints (decide, decide_batch, reward) answered on ASGI directly, in front of
FastAPI.

FastAPI's middleware, routing, dependency solving and response handling cost about 0.1 ms of CPU
per request, more than a decision and its log entry together. :class:`Direct` answers ``POST``
on the paths it is given itself: it reads the body, validates it with the route's pydantic model
(:func:`parse`: orjson, or pydantic's JSON parser, which reads ``NaN`` as Python's does, so
that the policy's own check refuses it by name), awaits the handler and writes its answer with
orjson. A route may also take an Arrow IPC body (:mod:`deepbandits.serve.arrow`): its Arrow
handler gets the bytes and answers in Arrow. A JSON body above :data:`THREAD_PARSE_BYTES` is
parsed in a worker thread. Everything else goes to FastAPI, which also
documents the same routes (``/docs``) and answers them the same way if called. Invalid bodies
and the library's errors get the answers the FastAPI app gives
(:mod:`deepbandits.serve.answers`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException

from deepbandits.errors import DeepBanditsError, InputValueError
from deepbandits.serve import arrow
from deepbandits.serve.answers import (
    NOT_AN_OBJECT,
    dumps,
    error_answer,
    error_body,
    invalid_body,
)
from deepbandits.serve.guard import JSON, ASGIApp, Receive, Scope, Send, respond

#: A hot endpoint: the validated body → the answer (sent once the handler returns).
Handler = Callable[[Any], Awaitable[Any]]
#: A hot endpoint's Arrow form: the body's bytes → the answer's Arrow IPC bytes.
ArrowHandler = Callable[[bytes], Awaitable[bytes]]
ARROW = arrow.MEDIA_TYPE.encode()
LOG = logging.getLogger("deepbandits.serve")
#: A JSON body longer than this is parsed in a worker thread, so that the event loop keeps
#: answering the other requests meanwhile (a 3 MiB batch takes tens of milliseconds to parse).
THREAD_PARSE_BYTES = 256 * 2**10
INTERNAL = "the service failed to answer this request (its log says why)"


def content_type(scope: Scope) -> bytes:
    """The request's media type, lower case, without parameters (empty if none is given)."""
    for name, value in scope["headers"]:
        if name == b"content-type":
            return value.split(b";", 1)[0].strip().lower()
    return b""


def is_json(kind: bytes) -> bool:
    """Whether a media type is JSON (``application/json`` or ``+json``), as FastAPI requires
    before it parses a body."""
    return kind == b"application/json" or (
        kind.startswith(b"application/") and kind.endswith(b"+json")
    )


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
    """``POST`` on the paths of ``routes`` (path → request model, handler) answered directly,
    and in Arrow on the paths of ``arrow_routes`` (path → Arrow handler); every other request
    goes to ``fallback`` (module notes)."""

    def __init__(
        self,
        fallback: ASGIApp,
        routes: dict[str, tuple[type[BaseModel], Handler]],
        arrow_routes: dict[str, ArrowHandler],
    ):
        self.fallback = fallback
        self.routes = routes
        self.arrow_routes = arrow_routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = self.routes.get(scope["path"]) if scope.get("method") == "POST" else None
        if route is None:
            await self.fallback(scope, receive, send)
            return
        model, handler = route
        body = await read_body(receive)
        kind = content_type(scope)
        in_arrow = kind == ARROW and scope["path"] in self.arrow_routes
        try:
            if in_arrow:
                answer = await self.arrow_routes[scope["path"]](body)
            elif is_json(kind) and len(body) > THREAD_PARSE_BYTES:
                answer = dumps(await handler(await asyncio.to_thread(parse, model, body)))
            elif is_json(kind):
                answer = dumps(await handler(parse(model, body)))
            else:
                raise InputValueError(NOT_AN_OBJECT)
        except ValidationError as exc:
            await respond(send, 422, invalid_body(exc.errors(include_url=False)))
        except DeepBanditsError as exc:
            await respond(send, *error_answer(exc))
        except HTTPException:  # the guard's (a body too large or too slow): it answers them
            raise
        except Exception:  # a defect, not the user's input: logged, answered in the API's form
            LOG.exception("answering %s failed", scope["path"])
            await respond(send, 500, error_body(INTERNAL, "ServiceError"))
        else:
            await respond(send, 200, answer, media_type=ARROW if in_arrow else JSON)
