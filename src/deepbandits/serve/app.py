"""The HTTP API of a decision service (FastAPI; its OpenAPI page at ``/docs``).

===================== ======================================================================
``POST /v1/decide``        ``{"contexts": [[...], ...], "mask": [...]?}`` → a decision
``POST /v1/decide_batch``  ``{"requests": [...]}`` → ``{"decisions": [...]}``, or the same in
                           Arrow IPC (:mod:`deepbandits.serve.arrow`)
``POST /v1/reward``        ``{"decision_id", "reward", "reward_range"?, "sigma2"?}`` → 200
``GET /v1/health``         status, model version, events, pending decisions (open without token)
``GET /metrics``           Prometheus text format (:mod:`deepbandits.serve.metrics`)
``POST /v1/snapshot``      write a checkpoint now
===================== ======================================================================

Errors answer ``{"detail": message, "error": exception class}``: 422 for invalid input (the
library's message, naming the field), 404 for a reward of an unknown or expired decision, 409
for a second reward, 401 without the token, 413 for a body above the limit, 503 when the log
cannot be written or the pending table refuses a decision. A decision or reward is answered only
once its event is committed to the log.

Requests pass :class:`~deepbandits.serve.guard.Guard` (token, body limit, timing) first; the hot
endpoints (decide, decide_batch, reward) are then answered by
:class:`~deepbandits.serve.direct.Direct` without FastAPI's middleware and routing, everything
else by FastAPI, which documents all of them. The handlers run on the event loop: a decision
takes a fraction of a millisecond of CPU, and while one request waits for its commit the loop
serves the next, whose events join the same group commit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import BaseModel
from starlette.exceptions import HTTPException

from deepbandits._version import __version__
from deepbandits.errors import DeepBanditsError, InputValueError
from deepbandits.policies import Decision
from deepbandits.serve import MAX_BODY_BYTES, arrow
from deepbandits.serve.answers import (
    decision_out,
    decisions_out,
    dumps,
    error_answer,
    error_body,
    invalid_body,
)
from deepbandits.serve.direct import Direct, Handler
from deepbandits.serve.guard import ASGIApp, Guard, Receive, Scope, Send
from deepbandits.serve.metrics import ServiceMetrics
from deepbandits.serve.schemas import (
    DecideBatchRequest,
    DecideRequest,
    DecisionOut,
    DecisionsOut,
    ErrorOut,
    HealthOut,
    RewardOut,
    RewardRequest,
    SnapshotOut,
)
from deepbandits.serve.state import ServiceState

ERRORS = {
    401: "AuthenticationError",
    404: "UnknownDecisionError",
    413: "PayloadTooLargeError",
    422: "InputValueError",
}
_ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorOut} for code in (401, 404, 409, 413, 422, 503)
}
_BINARY = {"schema": {"type": "string", "format": "binary"}}
#: The Arrow form of decide_batch, beside its JSON body and answer, on the OpenAPI page.
_ARROW_BODY = {
    "requestBody": {"content": {arrow.MEDIA_TYPE: _BINARY}},
    "responses": {"200": {"content": {arrow.MEDIA_TYPE: _BINARY}}},
}
T = TypeVar("T")


def _json(body: bytes, status: int = 200) -> Response:
    return Response(body, status_code=status, media_type="application/json")


def _routed(model: type[BaseModel], handler: Handler) -> Callable[..., Awaitable[Response]]:
    """``handler`` as a FastAPI endpoint whose body is a ``model``."""

    async def endpoint(body: Any) -> Response:
        return _json(dumps(await handler(body)))

    endpoint.__annotations__ = {"body": model, "return": Response}
    endpoint.__name__ = handler.__name__
    endpoint.__doc__ = handler.__doc__
    return endpoint


class ServiceApp(FastAPI):
    """The FastAPI app of a service, entered through :attr:`entry` (the guard, then the direct
    endpoints, then FastAPI itself: module notes)."""

    entry: ASGIApp

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.entry(scope, receive, send)

    async def routed(self, scope: Scope, receive: Receive, send: Send) -> None:
        """FastAPI's own handling of a request."""
        await super().__call__(scope, receive, send)


def create_app(
    state: ServiceState, *, token: str | None = None, max_body_bytes: int = MAX_BODY_BYTES
) -> ServiceApp:
    """The HTTP API over ``state`` (module notes); ``token`` requires ``Authorization: Bearer
    <token>`` on every endpoint but ``/v1/health``, ``max_body_bytes`` bounds a request body."""
    app = ServiceApp(
        title="deepbandits decision service",
        version=__version__,
        description="Decisions with ids, late rewards by id, a durable event log.",
    )
    metrics = ServiceMetrics(state)
    app.state.service = state
    app.state.metrics = metrics

    @app.exception_handler(DeepBanditsError)
    async def library_error(request: Request, exc: DeepBanditsError) -> Response:
        status, body = error_answer(exc)
        return _json(body, status)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> Response:
        return _json(invalid_body(exc.errors()), 422)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        error = ERRORS.get(exc.status_code, "ServiceError")
        return _json(error_body(str(exc.detail), error), exc.status_code)

    async def decide(body: DecideRequest) -> dict[str, Any]:
        """Choose an arm among the rows of ``contexts``; send its reward with ``decision_id``."""
        decision, future = state.decide(body.contexts, body.mask)
        metrics.decisions.inc()
        out = decision_out(decision, state.model_version)
        await asyncio.wrap_future(future)
        return out

    async def batch(contexts: Any, masks: Any, answer: Callable[[list[Decision], int], T]) -> T:
        """The answer to a batch of requests, sent once their events are committed."""
        decisions, future = state.decide_batch(contexts, masks)
        metrics.decisions.inc(len(decisions))
        out = answer(decisions, state.model_version)
        await asyncio.wrap_future(future)
        return out

    async def decide_batch(body: DecideBatchRequest) -> dict[str, Any]:
        """Decide several requests at once (with the model as it is). The same in Arrow: send
        an Arrow IPC stream (``Content-Type: application/vnd.apache.arrow.stream``) with a
        ``contexts`` column (and optionally ``mask``), one row per request, for an Arrow answer
        with one row per decision."""
        if not body.requests:
            raise InputValueError("requests must hold at least one request, but 0 are given")
        contexts = [r.contexts for r in body.requests]
        masks = [r.mask for r in body.requests]
        return await batch(contexts, masks, decisions_out)

    async def decide_batch_arrow(body: bytes) -> bytes:
        return await batch(*arrow.read_requests(body), arrow.decisions_table)

    async def reward(body: RewardRequest) -> dict[str, Any]:
        """Learn the reward of a pending decision."""
        learned, future = state.learn(
            body.decision_id, body.reward, reward_range=body.reward_range, sigma2=body.sigma2
        )
        metrics.rewards.inc()
        out = {
            "decision_id": body.decision_id,
            "rewards_learned": state.policy.t_,
            "sigma2": learned.sigma2,
            "model_version": state.model_version,
        }
        await asyncio.wrap_future(future)
        return out

    hot: dict[str, tuple[type[BaseModel], type[BaseModel], Handler]] = {
        "/v1/decide": (DecideRequest, DecisionOut, decide),
        "/v1/decide_batch": (DecideBatchRequest, DecisionsOut, decide_batch),
        "/v1/reward": (RewardRequest, RewardOut, reward),
    }
    for path, (request, answer, handler) in hot.items():
        app.add_api_route(
            path,
            _routed(request, handler),
            methods=["POST"],
            response_model=answer,
            responses=_ERROR_RESPONSES,
            openapi_extra=_ARROW_BODY if path == "/v1/decide_batch" else None,
        )

    @app.get("/v1/health", response_model=HealthOut)
    async def health() -> Response:
        """Status, network version, events logged, pending decisions."""
        return _json(dumps(state.health()))

    @app.get("/metrics", response_class=Response)
    async def prometheus() -> Response:
        """The service's metrics in Prometheus' text format."""
        return Response(metrics.render(), media_type=metrics.content_type)

    @app.post("/v1/snapshot", response_model=SnapshotOut, responses=_ERROR_RESPONSES)
    async def snapshot() -> Response:
        """Write a checkpoint now (in a worker thread; its events committed first)."""
        meta = await asyncio.to_thread(state.snapshot)
        keys = ("seq", "model_version", "rewards_learned")
        return _json(dumps({k: meta[k] for k in keys}))

    routes = {path: (r, h) for path, (r, _, h) in hot.items()}
    direct = Direct(app.routed, routes, {"/v1/decide_batch": decide_batch_arrow})
    app.entry = Guard(direct, token=token, max_body_bytes=max_body_bytes, metrics=metrics)
    return app
