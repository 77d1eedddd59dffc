"""The HTTP API of a decision service (FastAPI; its OpenAPI page at ``/docs``).

===================== ======================================================================
``POST /v1/decide``        ``{"contexts": [[...], ...], "mask": [...]?}`` → a decision
``POST /v1/decide_batch``  ``{"requests": [...]}`` → ``{"decisions": [...]}``
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

The handlers run on the event loop: a decision takes a fraction of a millisecond of CPU, and
while one request waits for its commit the loop serves the next, whose events join the same
group commit.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException

from deepbandits._version import __version__
from deepbandits.errors import (
    DecisionError,
    DeepBanditsError,
    EventLogError,
    ExpiredDecisionError,
    InputTypeError,
    InputValueError,
    RewardAlreadyLearnedError,
    ServiceError,
    UnknownDecisionError,
)
from deepbandits.policies import Decision
from deepbandits.serve import MAX_BODY_BYTES
from deepbandits.serve.guard import Guard
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

LOG = logging.getLogger("deepbandits.serve")
ERRORS = {
    401: "AuthenticationError",
    404: "UnknownDecisionError",
    413: "PayloadTooLargeError",
    422: "InputValueError",
}
_ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorOut} for code in (401, 404, 409, 413, 422, 503)
}


def status_of(exc: DeepBanditsError) -> int:
    """The HTTP status of one of the library's errors."""
    if isinstance(exc, UnknownDecisionError | ExpiredDecisionError):
        return 404
    if isinstance(exc, RewardAlreadyLearnedError):
        return 409
    if isinstance(exc, EventLogError | ServiceError | DecisionError):
        return 503  # the log cannot be written, or the pending table refuses (try later)
    if isinstance(exc, InputValueError | InputTypeError):
        return 422
    return 500


def dumps(obj: Any) -> bytes:
    """JSON bytes; a non-finite float (not JSON) becomes null."""
    try:
        return json.dumps(obj, allow_nan=False, separators=(",", ":")).encode()
    except ValueError:
        return dumps(_sanitize(obj))


def _sanitize(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _sanitize(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_sanitize(v) for v in obj]
    return obj


def _json(obj: Any, status: int = 200) -> Response:
    return Response(dumps(obj), status_code=status, media_type="application/json")


def decision_out(decision: Decision, model_version: int) -> dict[str, Any]:
    return {
        "decision_id": decision.id,
        "arm": decision.arm,
        "propensity": decision.propensity,
        "mean": decision.mean.tolist(),
        "width": decision.width.tolist(),
        "model_version": model_version,
    }


async def _committed(futures: Sequence[Future[int]]) -> None:
    """Wait until the last of ``futures`` is committed (one commit holds them in order)."""
    if futures:
        await asyncio.wrap_future(futures[-1])


def _field_error(exc: RequestValidationError) -> str:
    parts = []
    for error in exc.errors():
        loc = [str(x) for x in error.get("loc", ()) if x != "body"]
        where = ".".join(loc) or "body"
        if error.get("type") == "json_invalid":
            parts.append(f"the request body is not valid JSON ({error.get('ctx', {})})")
        elif not loc and error.get("type") in ("model_attributes_type", "dict_type"):
            parts.append(
                "the request body must be a JSON object, sent with Content-Type: application/json"
            )
        else:
            parts.append(f"{where}: {error.get('msg')}")
    return "; ".join(parts)


def create_app(
    state: ServiceState, *, token: str | None = None, max_body_bytes: int = MAX_BODY_BYTES
) -> FastAPI:
    """The HTTP API over ``state`` (module notes); ``token`` requires ``Authorization: Bearer
    <token>`` on every endpoint but ``/v1/health``, ``max_body_bytes`` bounds a request body."""
    app = FastAPI(
        title="deepbandits decision service",
        version=__version__,
        description="Decisions with ids, late rewards by id, a durable event log.",
    )
    metrics = ServiceMetrics(state)
    app.state.service = state
    app.state.metrics = metrics

    @app.exception_handler(DeepBanditsError)
    async def library_error(request: Request, exc: DeepBanditsError) -> Response:
        status = status_of(exc)
        if status == 500:
            LOG.error("%s: %s", type(exc).__name__, exc)
        return _json({"detail": str(exc), "error": type(exc).__name__}, status)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> Response:
        return _json({"detail": _field_error(exc), "error": "InputValueError"}, 422)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        error = ERRORS.get(exc.status_code, "ServiceError")
        return _json({"detail": str(exc.detail), "error": error}, exc.status_code)

    @app.post("/v1/decide", response_model=DecisionOut, responses=_ERROR_RESPONSES)
    async def decide(body: DecideRequest) -> Response:
        """Choose an arm among the rows of ``contexts``; send its reward with ``decision_id``."""
        decision, future = state.decide(body.contexts, body.mask)
        metrics.decisions.inc()
        out = decision_out(decision, state.model_version)
        await asyncio.wrap_future(future)
        return _json(out)

    @app.post("/v1/decide_batch", response_model=DecisionsOut, responses=_ERROR_RESPONSES)
    async def decide_batch(body: DecideBatchRequest) -> Response:
        """Decide several requests at once (with the model as it is)."""
        if not body.requests:
            raise InputValueError("requests must hold at least one request, but 0 are given")
        contexts = [r.contexts for r in body.requests]
        masks = [r.mask for r in body.requests]
        decisions, futures = state.decide_batch(contexts, masks)
        metrics.decisions.inc(len(decisions))
        version = state.model_version
        out = {"decisions": [decision_out(d, version) for d in decisions]}
        await _committed(futures)
        return _json(out)

    @app.post("/v1/reward", response_model=RewardOut, responses=_ERROR_RESPONSES)
    async def reward(body: RewardRequest) -> Response:
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
        return _json(out)

    @app.get("/v1/health", response_model=HealthOut)
    async def health() -> Response:
        """Status, network version, events logged, pending decisions."""
        return _json(state.health())

    @app.get("/metrics", response_class=Response)
    async def prometheus() -> Response:
        """The service's metrics in Prometheus' text format."""
        return Response(metrics.render(), media_type=metrics.content_type)

    @app.post("/v1/snapshot", response_model=SnapshotOut, responses=_ERROR_RESPONSES)
    async def snapshot() -> Response:
        """Write a checkpoint now (in a worker thread; its events committed first)."""
        meta = await asyncio.to_thread(state.snapshot)
        keys = ("seq", "model_version", "rewards_learned")
        return _json({k: meta[k] for k in keys})

    app.add_middleware(Guard, token=token, max_body_bytes=max_body_bytes, metrics=metrics)
    return app
