"""A Python client of the decision service (``deepbandits serve``), on httpx.

:class:`ServiceClient` has the calls of a local policy that a live system uses, with the same
arguments and the same exceptions, so that code moves from a policy in the process to the service
by changing the line that makes it::

    policy = db.make_policy("neural-sigma2-linucb", reward_range=(0, 1))
    policy = ServiceClient("http://127.0.0.1:8000", token=...)   # the same code below

    d = policy.decide(contexts)            # d.id, d.arm, d.propensity, d.mean, d.width
    policy.learn(d, reward)                # or policy.learn(d.id, reward); alias: reward

The service's errors come back as the library's exceptions: invalid input (422) as
:class:`~deepbandits.errors.InputValueError` (or :class:`~deepbandits.errors.InputTypeError`,
as the policy raised it), a reward of an unknown or expired decision (404) as
:class:`~deepbandits.errors.UnknownDecisionError` or
:class:`~deepbandits.errors.ExpiredDecisionError`, a second reward (409) as
:class:`~deepbandits.errors.RewardAlreadyLearnedError`, a missing or wrong token (401) as
:class:`~deepbandits.errors.AuthenticationError`, a body above the limit (413) as
:class:`~deepbandits.errors.PayloadTooLargeError`; a service that cannot be reached or fails
raises :class:`~deepbandits.errors.ServiceError`.

The service's live experiment has its calls too: :meth:`~ServiceClient.lift` (the policy's
lift over the control group), :meth:`~ServiceClient.challengers`,
:meth:`~ServiceClient.add_challenger`, :meth:`~ServiceClient.remove_challenger` and
:meth:`~ServiceClient.promote`; an unknown or duplicate name, or a bad specification, raises
:class:`~deepbandits.errors.InputValueError` (422), and a service without an experiment (Ray
Serve's replicas) :class:`~deepbandits.errors.NotSupportedError` (501).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Sequence
from typing import Any, NamedTuple
from urllib.parse import quote

import httpx
import numpy as np
from numpy.typing import NDArray

from deepbandits import errors
from deepbandits.errors import DeepBanditsError, InputTypeError, ServiceError
from deepbandits.serve import arrow

JSON = "application/json"
ARROW = arrow.MEDIA_TYPE

#: The exception of each status the service answers, when its body names none.
_BY_STATUS: dict[int, type[DeepBanditsError]] = {
    401: errors.AuthenticationError,
    404: errors.UnknownDecisionError,
    409: errors.RewardAlreadyLearnedError,
    413: errors.PayloadTooLargeError,
    422: errors.InputValueError,
    501: errors.NotSupportedError,
    503: ServiceError,
}


class ServedDecision(NamedTuple):
    """A decision made by the service: the fields of
    :class:`~deepbandits.policies.decision.Decision` that travel (what learning needs stays in
    the service)."""

    id: str
    arm: int
    propensity: float
    mean: NDArray[np.float64]
    width: NDArray[np.float64]
    model_version: int


def _plain(value: Any) -> Any:
    """Arrays and numpy scalars as JSON values; anything else as it is (the service checks)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _stacked(contexts: Any) -> NDArray[np.float64] | None:
    """The requests as one float64 array ``[B, K, d]``, or None when they are not (then JSON
    carries them, and the service's check names what is wrong)."""
    try:
        array = np.asarray(contexts)
    except (TypeError, ValueError):
        return None
    if array.ndim != 3 or array.dtype.kind not in "biuf" or 0 in array.shape[:2]:
        return None
    return array.astype(np.float64, copy=False)


def _booleans(mask: Any) -> bool:
    """Whether a request's mask travels as Arrow booleans (None: no mask)."""
    if mask is None:
        return True
    try:
        values = np.asarray(mask)
    except (TypeError, ValueError):
        return False
    return values.ndim == 1 and values.dtype == np.bool_


def _decision(data: dict[str, Any]) -> ServedDecision:
    def array(values: list[float | None]) -> NDArray[np.float64]:
        return np.array([np.nan if v is None else v for v in values], dtype=np.float64)

    return ServedDecision(
        id=data["decision_id"],
        arm=int(data["arm"]),
        propensity=float(data["propensity"]),
        mean=array(data["mean"]),
        width=array(data["width"]),
        model_version=int(data["model_version"]),
    )


class ServiceClient:
    """A client of the decision service at ``url`` (``http://127.0.0.1:8000``).

    Parameters
    ----------
    url : str
        Where the service answers.
    token : str, optional
        The bearer token the service was started with (``--token``).
    timeout : float, default=30.0
        Seconds to wait for an answer.
    """

    def __init__(self, url: str, token: str | None = None, *, timeout: float = 30.0) -> None:
        headers = {}
        if token is not None:
            headers["authorization"] = f"Bearer {token}"
        self.url = url.rstrip("/")
        # no Nagle delay: httpx writes the headers and the body of a request separately
        nodelay = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
        self._http = httpx.Client(
            base_url=self.url,
            headers=headers,
            timeout=timeout,
            transport=httpx.HTTPTransport(socket_options=nodelay),
        )

    # ------------------------------------------------------------------ transport
    def _request(self, method: str, path: str, payload: Any = None) -> Any:
        content = None
        if payload is not None:
            try:
                content = json.dumps(_plain(payload), allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise InputTypeError(
                    f"the request cannot be sent as JSON (real numbers, booleans and lists "
                    f"only): {exc}"
                ) from None
        response = self._send(method, path, content)
        if path == "/metrics":
            return response.text
        return response.json()

    def _send(
        self, method: str, path: str, content: str | bytes | None, media_type: str = JSON
    ) -> httpx.Response:
        """The service's answer (200) to one request; any other status raises."""
        try:
            response = self._http.request(
                method, path, content=content, headers={"content-type": media_type}
            )
        except httpx.HTTPError as exc:
            raise ServiceError(f"the service at {self.url} cannot be reached: {exc}") from None
        if response.status_code != 200:
            raise self._error(response)
        return response

    @staticmethod
    def _error(response: httpx.Response) -> DeepBanditsError:
        status = response.status_code
        try:
            data = response.json()
            detail, name = str(data["detail"]), str(data.get("error", ""))
        except (ValueError, KeyError, TypeError):
            detail, name = response.text.strip() or response.reason_phrase, ""
        named = getattr(errors, name, None)
        if isinstance(named, type) and issubclass(named, DeepBanditsError):
            return named(detail)
        kind = _BY_STATUS.get(status, ServiceError)
        return kind(f"{detail} (HTTP {status})" if kind is ServiceError else detail)

    # ------------------------------------------------------------------ the policy's calls
    def decide(self, contexts: Any, mask: Any = None) -> ServedDecision:
        """Choose an arm among the rows of ``contexts`` ``[K, d]`` (``mask``: the arms
        available), as ``policy.decide``."""
        return _decision(self._request("POST", "/v1/decide", {"contexts": contexts, "mask": mask}))

    def decide_batch(
        self, contexts: Sequence[Any] | NDArray[Any], masks: Sequence[Any] | None = None
    ) -> list[ServedDecision]:
        """Decide ``B`` requests at once, as ``policy.decide_batch``: ``contexts`` an array
        ``[B, K, d]`` or a list of ``[K, d]`` matrices, ``masks`` one per request (or None).
        Requests of one shape travel as Arrow (:mod:`deepbandits.serve.arrow`: no text to
        write or parse), any others as JSON."""
        batch = list(contexts)
        mask_list = [None] * len(batch) if masks is None else list(masks)
        if len(mask_list) != len(batch):
            raise errors.InputValueError(
                f"masks must have one entry per request ({len(batch)}), but {len(mask_list)} "
                "are given"
            )
        stacked = _stacked(contexts)
        if stacked is not None and all(_booleans(m) for m in mask_list):
            body = arrow.requests_table(stacked, None if masks is None else mask_list)
            table = arrow.read_table(self._send("POST", "/v1/decide_batch", body, ARROW).content)
            return [_decision(row) for row in table.to_pylist()]
        requests = [{"contexts": X, "mask": m} for X, m in zip(batch, mask_list, strict=True)]
        data = self._request("POST", "/v1/decide_batch", {"requests": requests})
        return [_decision(d) for d in data["decisions"]]

    def learn(
        self,
        decision: Any,
        reward: float,
        *,
        sigma2: float | None = None,
        reward_range: tuple[float, float] | None = None,
    ) -> dict[str, Any]:
        """Learn the reward of a decision (given as the decision or its id), as
        ``policy.learn``; returns the service's answer (``rewards_learned``, ``sigma2``,
        ``model_version``)."""
        decision_id = decision if isinstance(decision, str) else getattr(decision, "id", decision)
        payload = {
            "decision_id": decision_id,
            "reward": reward,
            "reward_range": reward_range,
            "sigma2": sigma2,
        }
        return self._request("POST", "/v1/reward", payload)  # type: ignore[no-any-return]

    reward = learn

    # ------------------------------------------------------------------ the service's own
    def health(self) -> dict[str, Any]:
        """Status, model version, events logged, pending decisions."""
        return self._request("GET", "/v1/health")  # type: ignore[no-any-return]

    def snapshot(self) -> dict[str, Any]:
        """Have the service write a checkpoint now; returns the last event it includes."""
        return self._request("POST", "/v1/snapshot")  # type: ignore[no-any-return]

    def metrics(self) -> str:
        """The service's metrics, in Prometheus' text format."""
        return self._request("GET", "/metrics")  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ the live experiment
    def lift(self) -> dict[str, Any]:
        """The served policy's lift over the control group: each group's rewards, mean and
        standard deviation, the lift and its interval, over ``"all"`` time and the recent
        ``"window"``."""
        return self._request("GET", "/v1/lift")  # type: ignore[no-any-return]

    def challengers(self) -> dict[str, Any]:
        """The ``"champion"`` and the ``"challengers"``' reports (each one's estimates with
        intervals, support and errors)."""
        return self._request("GET", "/v1/challengers")  # type: ignore[no-any-return]

    def add_challenger(self, spec: str, name: str | None = None) -> dict[str, Any]:
        """Run the policy of specification ``spec`` in shadow, listed under ``name`` (default:
        ``spec``); returns its report."""
        payload = {"spec": spec, "name": name}
        return self._request("POST", "/v1/challengers", payload)  # type: ignore[no-any-return]

    def remove_challenger(self, name: str) -> dict[str, Any]:
        """Remove challenger ``name``; returns ``{"removed": name}``."""
        if not isinstance(name, str):
            raise InputTypeError(f"a challenger's name must be a string, but {name!r} is given")
        segment = quote(name, safe="")
        if segment in (".", ".."):  # a dot segment the URL would resolve away
            segment = segment.replace(".", "%2E")
        return self._request("DELETE", f"/v1/challengers/{segment}")  # type: ignore[no-any-return]

    def promote(self, name: str) -> dict[str, Any]:
        """Swap challenger ``name`` in as champion; returns ``{"champion",
        "champion_version", "former"}`` (the former champion is a challenger now)."""
        return self._request("POST", "/v1/promote", {"name": name})  # type: ignore[no-any-return]

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ServiceClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
