"""The HTTP API of a decision service (FastAPI; its OpenAPI page at ``/docs``), written once
over a :class:`~deepbandits.serve.backend.Backend`: one process
(:class:`~deepbandits.serve.backend.LocalBackend`) or replicas on Ray Serve
(:class:`~deepbandits.serve.ray_backend.RayBackend`) answer the same routes the same way.

===================== ======================================================================
``POST /v1/decide``        ``{"contexts": [[...], ...], "mask": [...]?}`` → a decision
``POST /v1/decide_batch``  ``{"requests": [...]}`` → ``{"decisions": [...]}``, or the same in
                           Arrow IPC (:mod:`deepbandits.serve.arrow`)
``POST /v1/reward``        ``{"decision_id", "reward", "reward_range"?, "sigma2"?}`` → 200
``GET /v1/health``         status, model version, events, pending decisions (open without token)
``GET /metrics``           Prometheus text format (:mod:`deepbandits.serve.metrics`)
``POST /v1/snapshot``      write a checkpoint now
``POST /v1/merge``         run a merge round now (backends with replicas only)
``GET /v1/lift``           the served policy's lift over the control group
                           (:mod:`deepbandits.serve.lift`)
``GET /v1/challengers``    the champion and every challenger's estimated value
                           (:mod:`deepbandits.serve.shadow`)
``POST /v1/challengers``   ``{"spec", "name"?}`` → the new challenger's report
``DELETE /v1/challengers/{name}`` → ``{"removed": name}``
``POST /v1/promote``       ``{"name"}`` → ``{"champion", "champion_version", "former"}``
===================== ======================================================================

Errors answer ``{"detail": message, "error": exception class}``: 422 for invalid input (the
library's message, naming the field), 404 for a reward of an unknown or expired decision, 409
for a second reward, 401 without the token, 421 for a ``Host`` the service does not answer to,
408 for a body not sent in time, 413 for a body above the limit (declared, streamed, or once an
Arrow body is decompressed), 503 when the log cannot be written or the pending table refuses a
decision, 501 for the live experiment's routes on a backend without one (Ray Serve). A decision,
reward or change of the experiment is answered only once its event is committed to the log; an
unknown challenger's name is invalid input (422), as is a duplicate or a bad specification.

Requests pass :class:`~deepbandits.serve.guard.Guard` (host, token, body limit and read timeout,
timing) first; the hot endpoints (decide, decide_batch, reward) and the other ``POST`` routes
with a body (challengers, promote) are then answered by
:class:`~deepbandits.serve.direct.Direct` without FastAPI's middleware and routing (one parser
and one set of answers for every body), everything else by FastAPI, which documents all of
them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import BaseModel
from starlette.exceptions import HTTPException

from deepbandits._version import __version__
from deepbandits.errors import DeepBanditsError, InputValueError
from deepbandits.serve import MAX_BODY_BYTES, arrow
from deepbandits.serve.answers import dumps, error_answer, error_body, invalid_body
from deepbandits.serve.backend import THREAD_BATCH, Backend, LocalBackend
from deepbandits.serve.direct import THREAD_PARSE_BYTES, Direct, Handler
from deepbandits.serve.guard import ASGIApp, Guard, Receive, Scope, Send
from deepbandits.serve.metrics import ServiceMetrics
from deepbandits.serve.schemas import (
    ChallengerOut,
    ChallengerRequest,
    ChallengersOut,
    DecideBatchRequest,
    DecideRequest,
    DecisionOut,
    DecisionsOut,
    ErrorOut,
    HealthOut,
    LiftOut,
    MergeOut,
    PromoteOut,
    PromoteRequest,
    RemovedOut,
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
    code: {"model": ErrorOut} for code in (401, 404, 408, 409, 413, 421, 422, 503)
}
#: The answers of the live experiment's routes (501: a backend without one).
_EXPERIMENT_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorOut} for code in (401, 408, 413, 421, 422, 501, 503)
}
_BINARY = {"schema": {"type": "string", "format": "binary"}}
#: The Arrow form of decide_batch, beside its JSON body and answer, on the OpenAPI page.
_ARROW_BODY = {
    "requestBody": {"content": {arrow.MEDIA_TYPE: _BINARY}},
    "responses": {"200": {"content": {arrow.MEDIA_TYPE: _BINARY}}},
}


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
    backend: Backend | ServiceState,
    *,
    token: str | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    allowed_hosts: Iterable[str] | None = None,
    body_timeout: float | None = None,
) -> ServiceApp:
    """The HTTP API over ``backend`` (module notes).

    Parameters
    ----------
    backend : Backend or ServiceState
        What decides (a :class:`ServiceState` is served by a
        :class:`~deepbandits.serve.backend.LocalBackend`).
    token : str, optional
        Require ``Authorization: Bearer <token>`` on every endpoint but ``/v1/health``.
    max_body_bytes : int, default=MAX_BODY_BYTES
        Largest request body, declared, streamed or decompressed (413 above it).
    allowed_hosts : iterable of str, optional
        Host names (``Host`` header, port aside) the service answers; others get 421. None:
        any (:func:`deepbandits.serve.guard.loopback_hosts` for a service on loopback).
    body_timeout : float, optional
        Seconds a request may take to send its body (408 after);
        default :data:`~deepbandits.serve.guard.BODY_TIMEOUT`.
    """
    if isinstance(backend, ServiceState):
        backend = LocalBackend(backend)
    app = ServiceApp(
        title="deepbandits decision service",
        version=__version__,
        description="Decisions with ids, late rewards by id, a durable event log.",
    )
    metrics = ServiceMetrics(backend)
    app.state.backend = backend
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
        out = await backend.decide(body.contexts, body.mask)
        metrics.decisions.inc()
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
        decided = await backend.decide_batch(contexts, masks)
        metrics.decisions.inc(len(decided))
        return decided.answers()

    async def decide_batch_arrow(body: bytes) -> bytes:
        if len(body) <= THREAD_PARSE_BYTES:
            contexts, masks = arrow.read_requests(body, max_body_bytes)
        else:  # as a large JSON body: off the event loop
            contexts, masks = await asyncio.to_thread(arrow.read_requests, body, max_body_bytes)
        decided = await backend.decide_batch(contexts, masks)
        metrics.decisions.inc(len(decided))
        if len(decided) <= THREAD_BATCH:
            return arrow.decisions_table(decided)
        return await asyncio.to_thread(arrow.decisions_table, decided)

    async def reward(body: RewardRequest) -> dict[str, Any]:
        """Learn the reward of a pending decision."""
        out = await backend.learn(body.decision_id, body.reward, body.reward_range, body.sigma2)
        metrics.rewards.inc()
        return out

    async def add_challenger(body: ChallengerRequest) -> dict[str, Any]:
        """Run a challenger in shadow: it sees every request and reward, never serves, and its
        value on the served traffic is estimated (IPS, SNIPS, DR) as rewards arrive. Its name
        defaults to its specification."""
        return await backend.add_challenger(body.spec, body.name)

    async def promote(body: PromoteRequest) -> dict[str, Any]:
        """Swap a challenger in as champion: it serves from the next request on, and the
        former champion becomes a challenger under its own name (promoting it back is a
        rollback)."""
        return await backend.promote(body.name)

    hot: dict[str, tuple[type[BaseModel], type[BaseModel], Handler]] = {
        "/v1/decide": (DecideRequest, DecisionOut, decide),
        "/v1/decide_batch": (DecideBatchRequest, DecisionsOut, decide_batch),
        "/v1/reward": (RewardRequest, RewardOut, reward),
    }
    #: The experiment's routes with a body, answered as the hot ones are.
    bodies: dict[str, tuple[type[BaseModel], type[BaseModel], Handler]] = {
        "/v1/challengers": (ChallengerRequest, ChallengerOut, add_challenger),
        "/v1/promote": (PromoteRequest, PromoteOut, promote),
    }
    for path, (request, answer, handler) in (hot | bodies).items():
        app.add_api_route(
            path,
            _routed(request, handler),
            methods=["POST"],
            response_model=answer,
            responses=_ERROR_RESPONSES if path in hot else _EXPERIMENT_RESPONSES,
            openapi_extra=_ARROW_BODY if path == "/v1/decide_batch" else None,
        )

    @app.get("/v1/health", response_model=HealthOut)
    async def health() -> Response:
        """Status, network version, events logged, pending decisions."""
        return _json(dumps(await backend.health()))

    @app.get("/metrics", response_class=Response)
    async def prometheus() -> Response:
        """The service's metrics in Prometheus' text format."""
        return Response(await metrics.render(), media_type=metrics.content_type)

    @app.post("/v1/snapshot", response_model=SnapshotOut, responses=_ERROR_RESPONSES)
    async def snapshot() -> Response:
        """Write a checkpoint now (in a worker thread; its events committed first)."""
        return _json(dumps(await backend.snapshot()))

    if backend.merges:

        @app.post("/v1/merge", response_model=MergeOut, responses=_ERROR_RESPONSES)
        async def merge() -> Response:
            """Run a merge round of the replicas now (and a training when one is due)."""
            return _json(dumps(await backend.merge()))

    @app.get("/v1/lift", response_model=LiftOut, responses=_EXPERIMENT_RESPONSES)
    async def lift() -> Response:
        """The served policy's lift over the control group: each group's rewards, mean and
        standard deviation, the difference and Welch's interval, over all time and over the
        window of recent rewards."""
        return _json(dumps(await backend.lift()))

    @app.get("/v1/challengers", response_model=ChallengersOut, responses=_EXPERIMENT_RESPONSES)
    async def challengers() -> Response:
        """The champion and every challenger's estimated value on the served traffic, with 95 %
        intervals and the support diagnostics."""
        return _json(dumps(await backend.challengers()))

    @app.delete(
        "/v1/challengers/{name:path}", response_model=RemovedOut, responses=_EXPERIMENT_RESPONSES
    )
    async def remove_challenger(name: str) -> Response:
        """Remove a challenger (its name URL-encoded)."""
        await backend.remove_challenger(name)
        return _json(dumps({"removed": name}))

    routes = {path: (r, h) for path, (r, _, h) in (hot | bodies).items()}
    direct = Direct(app.routed, routes, {"/v1/decide_batch": decide_batch_arrow})
    app.entry = Guard(
        direct,
        token=token,
        max_body_bytes=max_body_bytes,
        metrics=metrics,
        allowed_hosts=allowed_hosts,
        body_timeout=body_timeout,
    )
    return app
