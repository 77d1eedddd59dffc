"""The events of a decision service, as rows of its log and back.

Four kinds of event make up everything a service did, in the order it did it:

* ``decision``: one decision with every arm's context, the mask, the arm, its propensity, every
  arm's mean and width, the rewards learned when it was made (the library's
  ``Decision.model_version``), the round, what learning needs (the features, unless they are the
  context itself; the head; the exploration's extra values) and the policy's generator state
  after it (so that a restarted service continues the same random draws);
* ``batch``: the decisions of one ``decide_batch`` call, as binary arrays in one row
  (:mod:`deepbandits.serve.batches`; log format 2: a log of format 1 holds one decision event
  per decision of a batch, and still replays);
* ``reward``: a reward learned for a decision id, with its reward range and oracle σ²;
* ``network``: a network version swapped in by training (the file holding its weights);
* ``challenger``: a challenger added to the service's experiment or removed from it, and
  ``promote``: a challenger swapped in as champion (:mod:`deepbandits.serve.experiment`).

A decision of the control group (:mod:`deepbandits.serve.control`) is a decision event whose
body holds ``"group": "control"`` and the control policy's generator state.

Every row carries the service's model version (the network version in force) and a CRC-32 of
its contents, so that a row damaged on disk is found, not replayed. Floats are written by JSON
as Python's shortest round-trip representation (or, in a batch event, as their bytes), so every
number reads back bit for bit.
"""

from __future__ import annotations

import json
import zlib
from typing import Any, NamedTuple

import numpy as np
import orjson
from numpy.typing import NDArray

from deepbandits.policies.decision import Decision, decision_from_state

KINDS = ("decision", "batch", "reward", "network", "challenger", "promote")


class Event(NamedTuple):
    """One row of the log: its columns in order (as :mod:`sqlite3` reads them), the CRC aside.

    Attributes
    ----------
    seq : int
        Position in the log (1, 2, ...; the order the service applied the events in).
    kind : {"decision", "batch", "reward", "network"}
    time : float
        Wall-clock time (seconds since the epoch).
    decision_id : str or None
        The decision's id (decision and reward events; None for a batch, whose body holds
        its decisions' ids).
    model_version : int
        The network version in force (0 until the first training is swapped in).
    body : str or bytes
        The event's values as JSON (bytes: a batch event's header and arrays).
    """

    seq: int
    kind: str
    time: float
    decision_id: str | None
    model_version: int
    body: str | bytes

    def values(self) -> dict[str, Any]:
        """The body as a dict."""
        return json.loads(self.body)  # type: ignore[no-any-return]

    def crc(self) -> int:
        """CRC-32 of every field (what the log stores beside the row)."""
        return row_crc(
            self.seq, self.kind, self.time, self.decision_id, self.model_version, self.body
        )


def row_crc(
    seq: int, kind: str, time: float, decision_id: str | None, model_version: int, body: str | bytes
) -> int:
    """CRC-32 of a row's fields: of ``seq|kind|time|decision_id|model_version|body`` in UTF-8
    (a binary body as it is)."""
    head = zlib.crc32(f"{seq}|{kind}|{time!r}|{decision_id}|{model_version}|".encode())
    return zlib.crc32(body if isinstance(body, bytes) else body.encode("utf-8"), head)


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def rng_json(state: dict[str, Any]) -> str:
    """A generator's state as the JSON text of a decision event's ``rng`` (written once per
    call that decides: a batch's decisions all log the state after the batch)."""
    return json.dumps(state, separators=(",", ":"))


def decision_body(
    decision: Decision, contexts: NDArray[np.float64], rng: str, control: bool = False
) -> str:
    """The JSON body of a decision event: ``contexts`` are every arm's (the checked array the
    policy decided on), ``rng`` the policy's generator state after the decision
    (:func:`rng_json`); ``control``: decided by the control group's policy."""
    features = decision.features
    same = features is None or (
        features is decision.context
        or (
            isinstance(decision.context, np.ndarray)
            and features.shape == decision.context.shape
            and np.array_equal(features, decision.context)
        )
    )
    body = {
        "arm": decision.arm,
        "propensity": decision.propensity,
        "learned": decision.model_version,
        "round": decision.round,
        "mask": None if decision.mask is None else decision.mask.tolist(),
        "no_features": decision.features is None,
        "head": decision.head,
        "extra": {k: _plain(v) for k, v in decision.extra.items()},
    }
    if control:
        body["group"] = "control"
    text = json.dumps(body, separators=(",", ":"))
    arrays = f'"mean":{_array_json(decision.mean)},"width":{_array_json(decision.width)},'
    arrays += f'"rng":{rng},"contexts":{_array_json(contexts)},"features":'
    arrays += "null" if same else _array_json(features)
    return f"{text[:-1]},{arrays}}}"


def _array_json(values: Any) -> str:
    """An array of floats as JSON text. Finite values go through orjson (ten times faster than
    :mod:`json` on a decision's contexts; the same shortest round-trip representation, so they
    read back bit for bit), anything else through :mod:`json`."""
    array = np.ascontiguousarray(values, dtype=np.float64)
    if np.isfinite(array).all():
        return orjson.dumps(array, option=orjson.OPT_SERIALIZE_NUMPY).decode()
    return json.dumps(array.tolist(), separators=(",", ":"))


def is_control(event: Event) -> bool:
    """Whether a decision event was decided by the control group's policy."""
    return event.kind == "decision" and '"group":"control"' in str(event.body)


def decision_of(event: Event) -> tuple[Decision, NDArray[np.float64], dict[str, Any]]:
    """The :class:`Decision` a decision event logged (as the policy made it), every arm's
    context and the policy's generator state after it."""
    v = event.values()
    contexts = np.asarray(v["contexts"], dtype=np.float64)
    context = contexts[v["arm"]].copy()
    if v["no_features"]:
        features = None
    elif v["features"] is None:
        features = context
    else:
        features = v["features"]
    decision = decision_from_state(
        {
            "id": event.decision_id,
            "arm": v["arm"],
            "propensity": v["propensity"],
            "mean": v["mean"],
            "width": v["width"],
            "model_version": v["learned"],
            "round": v["round"],
            "time": event.time,
            "mask": v["mask"],
            "context": context,
            "block": None,
            "features": features,
            "head": v["head"],
            "extra": v["extra"],
        }
    )
    return decision, contexts, v["rng"]


def reward_body(
    reward: float, reward_range: tuple[float, float] | None, sigma2: float | None
) -> str:
    """The JSON body of a reward event (the values as the policy checked them)."""
    return json.dumps(
        {
            "reward": reward,
            "reward_range": None if reward_range is None else list(reward_range),
            "sigma2": sigma2,
        },
        separators=(",", ":"),
    )


def network_body(version: int, file: str, sha256: str, snapshot_t: int, seconds: float) -> str:
    """The JSON body of a network event: the version, its file (relative to the state folder)
    and checksum, the rewards learned when the training copied the policy, and how long the
    training took."""
    return json.dumps(
        {
            "version": version,
            "file": file,
            "sha256": sha256,
            "snapshot_t": snapshot_t,
            "seconds": seconds,
        },
        separators=(",", ":"),
    )


def challenger_body(action: str, name: str, spec: str | None) -> str:
    """The JSON body of a challenger event: ``action`` ``"add"`` or ``"remove"``."""
    return json.dumps({"action": action, "name": name, "spec": spec}, separators=(",", ":"))


def promote_body(name: str, champion_version: int) -> str:
    """The JSON body of a promote event: the challenger promoted and the champion's version it
    starts."""
    return json.dumps({"name": name, "champion_version": champion_version}, separators=(",", ":"))
