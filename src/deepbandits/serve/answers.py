"""The JSON answers of the HTTP API: bodies, the status of each error, the messages of invalid
requests.

Every body is written by orjson: a non-finite float (not JSON) becomes null, and the bytes are
those of the standard library's ``json.dumps(..., separators=(",", ":"))`` at a tenth of its
time.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from deepbandits import errors

#: The library's error classes by the HTTP status that answers them (the first match wins;
#: any other library error is a 500).
STATUSES: tuple[tuple[int, tuple[type[errors.DeepBanditsError], ...]], ...] = (
    (401, (errors.AuthenticationError,)),
    (413, (errors.PayloadTooLargeError,)),
    (404, (errors.UnknownDecisionError, errors.ExpiredDecisionError)),
    (409, (errors.RewardAlreadyLearnedError,)),
    (501, (errors.NotSupportedError,)),
    # the log cannot be written, or the pending table refuses (try later)
    (503, (errors.EventLogError, errors.ServiceError, errors.DecisionError)),
    (422, (errors.InputValueError, errors.InputTypeError)),
)
LOG = logging.getLogger("deepbandits.serve")
NOT_AN_OBJECT = "the request body must be a JSON object, sent with Content-Type: application/json"


def dumps(obj: Any) -> bytes:
    """JSON bytes of ``obj`` (numpy arrays included); a non-finite float becomes null."""
    return orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY)


def status_of(exc: errors.DeepBanditsError) -> int:
    """The HTTP status of one of the library's errors."""
    for status, kinds in STATUSES:
        if isinstance(exc, kinds):
            return status
    return 500


def error_body(detail: str, error: str) -> bytes:
    """The body of an error answer: ``{"detail": message, "error": exception class}``."""
    return dumps({"detail": detail, "error": error})


def error_answer(exc: errors.DeepBanditsError) -> tuple[int, bytes]:
    """The status and body that answer one of the library's errors (a 500 is logged)."""
    status = status_of(exc)
    if status == 500:
        LOG.error("%s: %s", type(exc).__name__, exc)
    return status, error_body(str(exc), type(exc).__name__)


def invalid_body(problems: Iterable[Mapping[str, Any]]) -> bytes:
    """The body of the 422 that answers a request body failing its model's validation."""
    return error_body(field_error(problems), "InputValueError")


def field_error(problems: Iterable[Mapping[str, Any]]) -> str:
    """One message for the validation errors of a request body (pydantic's, or FastAPI's with
    ``"body"`` first in each location), naming each field."""
    parts = []
    for error in problems:
        loc = [str(x) for x in error.get("loc", ()) if x != "body"]
        where = ".".join(loc) or "body"
        kind = error.get("type")
        if kind == "json_invalid":
            parts.append(f"the request body is not valid JSON ({error.get('ctx', {})})")
        elif not loc and kind in ("model_attributes_type", "model_type", "dict_type"):
            parts.append(NOT_AN_OBJECT)
        else:
            parts.append(f"{where}: {error.get('msg')}")
    return "; ".join(parts)
