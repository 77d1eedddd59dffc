"""The batch event: the ``B`` decisions of one ``decide_batch`` call as one binary row of the log.

A batch of requests of one shape ``[K, d]`` (the requests the policy decides as arrays) is
logged as one ``batch`` event instead of ``B`` JSON ``decision`` events (log format 2;
:mod:`deepbandits.serve.log`): one insert, one hand-off to the writer and one checksum for the
whole batch, and no per-decision text. Its body is a line of JSON, the header, then the arrays'
raw little-endian bytes one after the other, in the order and with the dtype and shape the
header's ``arrays`` lists:

=============== ============== ============================================================
``ids``         ``S`` ``[B]``  the decision ids (ASCII)
``contexts``    f8 ``[B,K,d]`` every request's contexts, as the policy decided on them
``arms``        i8 ``[B]``     the arm played
``propensity``  f8 ``[B]``     its probability
``mean``        f8 ``[B,K]``   every arm's mean
``width``       f8 ``[B,K]``   every arm's width
``heads``       i8 ``[B]``     the ridge head of each observation
``masked``      b1 ``[B]``     which requests had a mask (only when one had)
``masks``       b1 ``[B,K]``   their masks (all arms for the others)
``features``    f8 ``[B,f]``   the features of the arm played (only when they are not its
                               context, ``"features": "own"``)
=============== ============== ============================================================

The header also holds the rewards learned when the batch was decided (``learned``), the round
of its first decision, whether the decisions carry features (``"context"``, ``"own"`` or
``"none"``) and the policy's generator state after the batch (``rng``). The bytes read back bit
for bit, so a replayed batch is the batch the live service decided.
"""

from __future__ import annotations

import json
import operator
from itertools import repeat
from typing import Any

import numpy as np
from numpy.typing import NDArray

from deepbandits.policies.decision import NO_EXTRA, Decision, freeze

KIND = "batch"
#: The positions of the fields in a Decision tuple (its model version: the rewards learned).
_ID, _ARM, _P, _MEAN, _WIDTH, _LEARNED, _ROUND, _TIME, _MASK, _CONTEXT, _FEATURES, _HEAD = (
    Decision._fields.index(name)
    for name in (
        *("id", "arm", "propensity", "mean", "width", "model_version", "round", "time"),
        *("mask", "context", "features", "head"),
    )
)


def batch_body(decisions: list[Decision], contexts: NDArray[np.float64], rng: str) -> bytes | None:
    """The body of the batch event of ``decisions`` (made together, in order, from the requests
    ``contexts`` ``[B, K, d]``), ``rng`` the generator state after them (JSON text); None when
    the batch does not fit the layout (decisions with extra values, or made at different
    times), which is then logged one decision event each."""
    columns = list(zip(*decisions, strict=True))
    B, K = contexts.shape[:2]
    if (
        any(columns[-1])
        or columns[_TIME].count(columns[_TIME][0]) != B
        or columns[_LEARNED].count(columns[_LEARNED][0]) != B
        or columns[_ROUND][-1] - columns[_ROUND][0] != B - 1
        or decisions[0].mean.shape != (K,)
    ):
        return None
    features = columns[_FEATURES]
    arms = np.array(columns[_ARM], dtype="<i8")
    contexts = np.ascontiguousarray(contexts, dtype="<f8")
    arrays: dict[str, NDArray[Any]] = {
        "ids": np.array(columns[_ID], dtype="S"),
        "contexts": contexts,
        "arms": arms,
        "propensity": np.array(columns[_P], dtype="<f8"),
        "mean": np.stack(columns[_MEAN]),
        "width": np.stack(columns[_WIDTH]),
        "heads": np.array(columns[_HEAD], dtype="<i8"),
    }
    masks = columns[_MASK]
    if _n_none(masks) != B:
        arrays["masked"] = np.array([m is not None for m in masks])
        arrays["masks"] = np.stack([np.ones(K, dtype=bool) if m is None else m for m in masks])
    n_none = _n_none(features)
    if n_none == B:
        kind = "none"
    elif n_none:
        return None
    else:
        own = np.stack(features).astype("<f8", copy=False)
        same = own.shape == (B, contexts.shape[2]) and np.array_equal(
            own, contexts[np.arange(B), arms]
        )
        kind = "context" if same else "own"
        if not same:
            arrays["features"] = own
    layout = [[name, a.dtype.str, list(a.shape)] for name, a in arrays.items()]
    header = {
        "n": B,
        "learned": columns[_LEARNED][0],
        "round": columns[_ROUND][0],
        "features": kind,
        "arrays": layout,
    }
    text = json.dumps(header, separators=(",", ":"))
    head = f'{text[:-1]},"rng":{rng}}}\n'.encode()
    return b"".join([head, *(np.ascontiguousarray(a).data for a in arrays.values())])


def _n_none(values: tuple[Any, ...]) -> int:
    """How many of ``values`` are None (arrays compared by identity, not by value)."""
    return sum(map(operator.is_, values, repeat(None)))


def read_batch(body: bytes) -> tuple[dict[str, Any], dict[str, NDArray[Any]]]:
    """The header and the arrays of a batch event's body (read-only views of it)."""
    end = body.index(b"\n")
    header = json.loads(body[:end])
    arrays: dict[str, NDArray[Any]] = {}
    offset = end + 1
    for name, dtype, shape in header["arrays"]:
        kind = np.dtype(dtype)
        count = int(np.prod(shape))
        arrays[name] = np.frombuffer(body, kind, count, offset).reshape(shape)
        offset += count * kind.itemsize
    return header, arrays


def batch_ids(body: bytes) -> list[str]:
    """The decision ids of a batch event, in order."""
    return _ids(read_batch(body)[1])


def _ids(arrays: dict[str, NDArray[Any]]) -> list[str]:
    return [i.decode("ascii") for i in arrays["ids"].tolist()]


def request_masks(arrays: dict[str, NDArray[Any]]) -> list[NDArray[np.bool_] | None]:
    """Each request's mask (a copy of its row; None for a request without one) of a batch
    event's arrays."""
    if "masks" not in arrays:
        return [None] * len(arrays["arms"])
    given = arrays["masked"].tolist()
    return [np.array(m) if g else None for m, g in zip(arrays["masks"], given, strict=True)]


def batch_decisions(
    body: bytes, time: float
) -> tuple[list[Decision], NDArray[np.float64], dict[str, Any]]:
    """The :class:`Decision` of each request of a batch event (as the policy made them, decided
    at ``time``), the requests' contexts ``[B, K, d]`` and the generator state after them."""
    header, arrays = read_batch(body)
    contexts, arms = arrays["contexts"], arrays["arms"]
    rows = np.arange(header["n"])
    chosen = contexts[rows, arms]  # a copy: each decision's context is its own
    mean, width = np.array(arrays["mean"]), np.array(arrays["width"])
    masks = request_masks(arrays)
    features: Any = {
        "context": chosen,
        "none": [None] * len(rows),
        "own": np.array(arrays.get("features")),
    }[header["features"]]
    freeze(mean, width, chosen, features, *masks)
    learned, first, new = header["learned"], header["round"], tuple.__new__
    columns = zip(
        _ids(arrays),
        arms.tolist(),
        arrays["propensity"].tolist(),
        mean,
        width,
        masks,
        chosen,
        features,
        arrays["heads"].tolist(),
        strict=True,
    )
    decisions = [
        new(Decision, (i, arm, p, m, w, learned, first + k, time, mask, x, f, h, NO_EXTRA))
        for k, (i, arm, p, m, w, mask, x, f, h) in enumerate(columns)
    ]
    return decisions, contexts, header["rng"]
