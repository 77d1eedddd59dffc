"""Decisions as values, the table of decisions awaiting their reward, and exact propensities.

A :class:`Decision` is what :meth:`~deepbandits.policies.base.Policy.decide` returns: an
immutable record of one choice (its id, the arm, the probability the policy had of choosing it,
every arm's mean and width, the model version) together with what learning from its reward needs
(the context of the arm played and the features the policy saw). The policy keeps the decisions
it made in a :class:`PendingDecisions` table until their reward arrives, they expire
(``reward_timeout``) or the table, bounded by ``max_pending`` decisions and ``max_pending_bytes``
bytes, makes room for new ones.

The rules of the table, in one place:

* a reward is learned at most once: a second reward for the same id raises
  :class:`~deepbandits.errors.DecisionError` saying it was already learned (the last
  ``max_pending`` learned ids are remembered; older ones read as unknown);
* a decision older than ``reward_timeout`` (decisions made since, or seconds) expires: it leaves
  the table and a reward for it raises ``DecisionError`` saying it expired;
* when the table holds ``max_pending`` decisions, or a new decision's arrays would take its
  bytes past ``max_pending_bytes``, the new decision expires the oldest ones until it fits
  (``when_full="expire-oldest"``, the default: live traffic never stops) or is refused
  (``when_full="refuse"``: ``decide`` raises and changes nothing); a decision bigger than
  ``max_pending_bytes`` on its own is refused in both cases. A decision's size
  (:func:`decision_nbytes`) is that of its arrays (means, widths, mask, context, features and
  any array among its extra values), taken once when it is kept; the table checks it before
  the arm is chosen, from the request's scores (every arm's row has the same size).

Every decision made is, at any moment, exactly one of pending, learned or expired
(:meth:`PendingDecisions.counts`).

The propensity of a deterministic index policy is exact: among the available arms (``mask``)
with the top score, ties are broken uniformly, and an exploration floor ε plays a uniformly drawn
available arm with probability ε, so that arm ``a`` has probability
``(1 − ε)·[a ∈ ties]/#ties + ε/#available`` (:func:`greedy_propensities`).
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from deepbandits._convert import as_numpy
from deepbandits.encoding import BlockContexts
from deepbandits.errors import (
    DecisionError,
    ExpiredDecisionError,
    InputValueError,
    RewardAlreadyLearnedError,
    UnknownDecisionError,
)

Array = NDArray[np.float64]
#: Random bytes of a decision id (128 bits: 32 hexadecimal digits).
_ID_BYTES = 16


class FrozenDict(dict[str, Any]):
    """A dict that cannot change (a decision's ``extra``); it pickles and copies like a dict."""

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("a decision's extra values cannot change")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse  # type: ignore[assignment]
    __ior__ = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))


#: The ``extra`` of a decision or observation that has none (shared: it cannot change).
NO_EXTRA = FrozenDict()


class Decision(NamedTuple):
    """One choice of a policy: an immutable value (a named tuple; its arrays are read-only).

    Attributes
    ----------
    id : str
        Unique identifier, 32 hexadecimal digits of 128 random bits from the operating system
        (:func:`os.urandom`, not the policy's generator): the key a reward is learned by. One id
        tells nothing of any other (ids made of a prefix and a count gave every other decision's
        id away); two ids are equal with a probability of about n²/2¹²⁹ among n decisions.
    arm : int
        Index of the arm chosen among the rows of the contexts.
    propensity : float
        Probability that the policy chose this arm given the contexts and the mask (exact for
        index policies, a Monte Carlo estimate for NeuralTS; see each policy).
    mean, width : ndarray ``[K]``
        Every arm's estimated mean reward and exploration width at the time of the decision.
    model_version : int
        Rewards the policy had learned when it decided (its ``t_``).
    round : int
        Decisions the policy had made before this one.
    time : float
        Wall-clock time of the decision (seconds since the epoch).
    mask : ndarray of bool ``[K]`` or None
        The arms that were available (None: all).
    context : ndarray ``[d]`` or one-row BlockContexts
        Context of the arm played, as given.
    features : ndarray or None
        What the policy's head saw for the arm played: φ(x) of the ridge policies (the
        identity's x for LinUCB, the last layer of the network for the neural-linear family);
        None for policies that learn from the context itself.
    head : int
        The ridge head the observation goes to (per-arm and per-block layouts), else 0.
    extra : dict
        Policy-specific values the update needs (SAVE's layer and width).
    """

    id: str
    arm: int
    propensity: float
    mean: Array
    width: Array
    model_version: int
    round: int
    time: float
    mask: NDArray[np.bool_] | None
    context: Any
    features: Array | None = None
    head: int = 0
    extra: Mapping[str, Any] = NO_EXTRA

    def __repr__(self) -> str:
        return (
            f"Decision(id={self.id!r}, arm={self.arm}, propensity={self.propensity:.4g}, "
            f"model_version={self.model_version}, round={self.round})"
        )


def freeze(*arrays: Any) -> None:
    """Make a decision's arrays read-only (they are its own: computed or copied for it),
    block-encoded contexts included."""
    for array in arrays:
        if isinstance(array, np.ndarray):
            array.setflags(write=False)
        elif isinstance(array, BlockContexts):
            array.blocks.setflags(write=False)
            array.slots.setflags(write=False)


class PendingDecisions:
    """Decisions awaiting their reward, by id, oldest first (module notes give the rules).

    Parameters
    ----------
    reward_timeout : int or float or None
        Age after which a decision expires, in ``timeout_unit``; None: never.
    timeout_unit : {"decisions", "seconds"}
        Age counted in decisions made since, or in wall-clock seconds.
    max_pending : int
        Most decisions kept.
    when_full : {"expire-oldest", "refuse"}
        What a new decision does when the table is full.
    max_pending_bytes : int, default=2**30
        Most bytes the arrays of the decisions kept may take (:func:`decision_nbytes`).

    Attributes
    ----------
    n_bytes : int
        Bytes the arrays of the pending decisions take now.
    """

    def __init__(
        self,
        reward_timeout: float | None,
        timeout_unit: str,
        max_pending: int,
        when_full: str,
        max_pending_bytes: int = 2**30,
    ) -> None:
        self.reward_timeout = reward_timeout
        self.timeout_unit = timeout_unit
        self.max_pending = max_pending
        self.when_full = when_full
        self.max_pending_bytes = max_pending_bytes
        self._pending: OrderedDict[str, Decision] = OrderedDict()
        self._sizes: dict[str, int] = {}
        self.n_bytes = 0
        self._learned: OrderedDict[str, None] = OrderedDict()
        self._expired: OrderedDict[str, None] = OrderedDict()
        self.n_decided = 0
        self.n_learned = 0
        self.n_expired = 0

    def __len__(self) -> int:
        return len(self._pending)

    def __contains__(self, decision_id: object) -> bool:
        return decision_id in self._pending

    def counts(self) -> dict[str, int]:
        """``decided = pending + learned + expired`` at every moment."""
        return {
            "decided": self.n_decided,
            "pending": len(self._pending),
            "learned": self.n_learned,
            "expired": self.n_expired,
        }

    def next_id(self) -> str:
        """Id of the next decision (:attr:`Decision.id`)."""
        return os.urandom(_ID_BYTES).hex()

    def next_ids(self, n: int) -> list[str]:
        """Ids of the next ``n`` decisions, from one read of the system's random bytes."""
        text, width = os.urandom(_ID_BYTES * n).hex(), 2 * _ID_BYTES
        return [text[i : i + width] for i in range(0, width * n, width)]

    def ids(self) -> list[str]:
        """Ids of the pending decisions, oldest first."""
        return list(self._pending)

    def _remember(self, book: OrderedDict[str, None], decision_id: str) -> None:
        book[decision_id] = None
        while len(book) > self.max_pending:
            book.popitem(last=False)

    def _is_old(self, decision: Decision, round_now: int, now: float) -> bool:
        if self.reward_timeout is None:
            return False
        if self.timeout_unit == "decisions":
            return round_now - decision.round > self.reward_timeout
        return now - decision.time > self.reward_timeout

    def expire(self, round_now: int, now: float | None = None) -> list[str]:
        """Remove the decisions older than the timeout at decision count ``round_now`` (the
        index of the latest decision) and time ``now``; return their ids."""
        if self.reward_timeout is None:
            return []
        now = time.time() if now is None else now
        gone = []
        while self._pending:
            oldest = next(iter(self._pending.values()))
            if not self._is_old(oldest, round_now, now):
                break  # decisions are kept in the order made, so the rest are younger
            gone.append(self._drop_oldest())
        return gone

    def _drop_oldest(self) -> str:
        decision_id, _ = self._pending.popitem(last=False)
        self.n_bytes -= self._sizes.pop(decision_id)
        self._remember(self._expired, decision_id)
        self.n_expired += 1
        return decision_id

    def _old(self, round_now: int, now: float) -> tuple[int, int]:
        """How many of the oldest pending decisions are past the timeout (they expire at the
        next successful call), and their bytes."""
        n = size = 0
        for decision_id, decision in self._pending.items():
            if not self._is_old(decision, round_now, now):
                break
            n += 1
            size += self._sizes[decision_id]
        return n, size

    def check_room(self, sizes: list[int], now: float) -> None:
        """Raise :class:`DecisionError` if new decisions of ``sizes`` bytes each
        (:func:`decision_nbytes`) do not fit and the table refuses, or if one of them is bigger
        than ``max_pending_bytes`` on its own (checked before a decision changes anything);
        decisions past their timeout count as room, since they expire as the new ones are
        added."""
        n_new, total = len(sizes), sum(sizes)
        fits = len(self._pending) + n_new <= self.max_pending
        if fits and self.n_bytes + total <= self.max_pending_bytes:
            return  # room for them all (so none is bigger than the bound on its own)
        biggest = max(sizes)
        if biggest > self.max_pending_bytes:
            raise DecisionError(
                f"a decision of {biggest} bytes is bigger than max_pending_bytes="
                f"{self.max_pending_bytes} on its own (its means, widths, mask, context and "
                "features): raise max_pending_bytes, or decide among fewer arms"
            )
        if self.when_full != "refuse":
            return
        n_old, old_bytes = self._old(self.n_decided + n_new - 1, now)
        if len(self._pending) - n_old + n_new > self.max_pending:
            raise DecisionError(
                f"{len(self._pending)} decisions await their reward and max_pending="
                f"{self.max_pending} with when_full='refuse': learn or expire some before "
                f"deciding {n_new} more"
            )
        if self.n_bytes - old_bytes + total > self.max_pending_bytes:
            raise DecisionError(
                f"the {len(self._pending)} decisions awaiting their reward hold {self.n_bytes} "
                f"bytes and max_pending_bytes={self.max_pending_bytes} with when_full='refuse': "
                f"learn or expire some before deciding {n_new} more of {total} bytes"
            )

    def add(self, decision: Decision, size: int | None = None) -> None:
        """Keep a new decision (of ``size`` bytes, :func:`decision_nbytes` when not given),
        expiring first those past their timeout, then the oldest while the table is still
        full (in decisions or bytes)."""
        size = decision_nbytes(decision) if size is None else size
        if len(self._pending) >= self.max_pending or self.n_bytes + size > self.max_pending_bytes:
            self.expire(decision.round, decision.time)
            while self._pending and (
                len(self._pending) >= self.max_pending
                or self.n_bytes + size > self.max_pending_bytes
            ):
                self._drop_oldest()
        self._pending[decision.id] = decision
        self._sizes[decision.id] = size
        self.n_bytes += size
        self.n_decided += 1

    def add_many(self, decisions: list[Decision], sizes: list[int] | None = None) -> None:
        """:meth:`add` each of ``decisions`` (made together, in order), of ``sizes`` bytes
        (:func:`decision_nbytes` when not given)."""
        if sizes is None:
            sizes = [decision_nbytes(d) for d in decisions]
        total = sum(sizes)
        if (
            len(self._pending) + len(decisions) > self.max_pending
            or self.n_bytes + total > self.max_pending_bytes
        ):
            for decision, size in zip(decisions, sizes, strict=True):
                self.add(decision, size)
            return
        self._pending.update((d.id, d) for d in decisions)
        self._sizes.update((d.id, size) for d, size in zip(decisions, sizes, strict=True))
        self.n_bytes += total
        self.n_decided += len(decisions)

    def lookup(self, key: Decision | str, round_now: int, now: float) -> Decision:
        """The pending decision of ``key`` (a Decision or its id) at decision count
        ``round_now`` and time ``now``, or a :class:`DecisionError` saying why there is none
        (a decision past its timeout reads as expired); changes nothing."""
        decision_id = key.id if isinstance(key, Decision) else key
        if not isinstance(decision_id, str):
            raise InputValueError(
                f"decision must be a Decision or a decision id (str), but "
                f"{type(key).__name__} is given"
            )
        found = self._pending.get(decision_id)
        if found is not None and not self._is_old(found, round_now, now):
            return found
        if decision_id in self._learned:
            raise RewardAlreadyLearnedError(
                f"decision {decision_id} was already learned: a decision takes one reward"
            )
        if found is not None or decision_id in self._expired:
            raise ExpiredDecisionError(
                f"decision {decision_id} expired (reward_timeout={self.reward_timeout} "
                f"{self.timeout_unit}, or the table of max_pending={self.max_pending} decisions "
                f"and max_pending_bytes={self.max_pending_bytes} was full) before its reward "
                "arrived"
            )
        raise UnknownDecisionError(
            f"decision {decision_id} is not pending in this policy: it was made by another "
            "policy or replica, or so long ago that it is forgotten"
        )

    def lookup_many(self, keys: list[Decision | str], round_now: int, now: float) -> list[Decision]:
        """:meth:`lookup` of each key (a pending Decision passed back is found by its id)."""
        pending, live = self._pending, self.reward_timeout is None
        found = []
        for key in keys:
            decision = pending.get(key.id) if type(key) is Decision else None
            if decision is None or not (live or not self._is_old(decision, round_now, now)):
                decision = self.lookup(key, round_now, now)
            found.append(decision)
        return found

    def pop_many(self, decision_ids: list[str]) -> None:
        """:meth:`pop` each of ``decision_ids``."""
        pending, learned, sizes = self._pending, self._learned, self._sizes
        for decision_id in decision_ids:
            del pending[decision_id]
            self.n_bytes -= sizes.pop(decision_id)
            learned[decision_id] = None
        while len(learned) > self.max_pending:
            learned.popitem(last=False)
        self.n_learned += len(decision_ids)

    def pop(self, decision_id: str) -> Decision:
        """Remove a pending decision whose reward is being learned."""
        decision = self._pending.pop(decision_id)
        self.n_bytes -= self._sizes.pop(decision_id)
        self._remember(self._learned, decision_id)
        self.n_learned += 1
        return decision

    def state_dict(self) -> dict[str, Any]:
        return {
            "columns": decisions_state(list(self._pending.values())),
            "learned": list(self._learned),
            "expired": list(self._expired),
            "counts": [self.n_decided, self.n_learned, self.n_expired],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """The table of :meth:`state_dict`, or of a file of a version that stored one dict per
        decision (``"pending"``)."""
        if "columns" in state:
            decisions = decisions_from_state(state["columns"])
        else:
            decisions = [decision_from_state(d) for d in state["pending"]]
        self._pending = OrderedDict((d.id, d) for d in decisions)
        self._sizes = {i: decision_nbytes(d) for i, d in self._pending.items()}
        self.n_bytes = sum(self._sizes.values())
        self._learned = OrderedDict.fromkeys(state["learned"])
        self._expired = OrderedDict.fromkeys(state["expired"])
        self.n_decided, self.n_learned, self.n_expired = (int(c) for c in state["counts"])


def array_bytes(value: Any) -> int:
    """Bytes of an array or of a BlockContexts' arrays; 0 for anything else (None, numbers)."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, BlockContexts):
        return value.blocks.nbytes + value.slots.nbytes
    return 0


def decision_nbytes(decision: Decision) -> int:
    """Bytes of a decision's arrays (what a pending table holds for it): means, widths, mask,
    context, features (once when they are the context) and any array among its extra values."""
    size = (
        decision.mean.nbytes
        + decision.width.nbytes
        + array_bytes(decision.mask)
        + array_bytes(decision.context)
    )
    if decision.features is not decision.context:
        size += array_bytes(decision.features)
    if decision.extra:
        size += sum(array_bytes(value) for value in decision.extra.values())
    return size


def decision_from_state(state: dict[str, Any]) -> Decision:
    """A decision from its fields as plain values and arrays (arrays may come back as tensors
    from a file): one decision of a log, or of a checkpoint written before the pending table was
    stored as columns (:func:`decisions_state`)."""

    def arr(value: Any, dtype: Any = np.float64) -> Any:
        return None if value is None else np.array(as_numpy(value, dtype))

    context = arr(state["context"])
    features = arr(state["features"])
    if state["block"] is not None:
        slot, n_blocks = state["block"]
        context = BlockContexts(context, [slot], n_blocks)
    elif features is not None and features.shape == context.shape:
        if np.array_equal(features, context):  # the identity's: one array, as when decided
            features = context
    decision = Decision(
        id=str(state["id"]),
        arm=int(state["arm"]),
        propensity=float(state["propensity"]),
        mean=arr(state["mean"]),
        width=arr(state["width"]),
        model_version=int(state["model_version"]),
        round=int(state["round"]),
        time=float(state["time"]),
        mask=arr(state["mask"], np.bool_),
        context=context,
        features=features,
        head=int(state["head"]),
        extra=FrozenDict(state["extra"]),
    )
    freeze(decision.mean, decision.width, decision.mask, decision.context, decision.features)
    return decision


# ---------------------------------------------------------------- the pending table as columns
# torch.save writes a record per tensor: 100,000 pending decisions of five arrays each (10 arms x
# 20 features) took 17 s to save and 35 s to load, and a service's SIGTERM waited for it. As
# columns (every decision's value of a field concatenated, with each one's shape) the same table
# is a dozen arrays. A ragged column holds ``values`` (the arrays raveled and concatenated),
# ``present`` (False where a decision has None), ``ndim`` and ``shape`` (padded to MAX_DIM).

#: Most dimensions an array of a decision has (a block context's ``[1, D]``).
MAX_DIM = 3


def pack(arrays: Sequence[Any], dtype: Any) -> dict[str, NDArray[Any]]:
    """A ragged column of arrays (None allowed) as four arrays (notes above)."""
    n = len(arrays)
    present = np.zeros(n, dtype=bool)
    ndim = np.zeros(n, dtype=np.int64)
    shape = np.zeros((n, MAX_DIM), dtype=np.int64)
    flat = []
    for i, value in enumerate(arrays):
        if value is None:
            continue
        array = np.asarray(value, dtype=dtype)
        present[i], ndim[i] = True, array.ndim
        shape[i, : array.ndim] = array.shape
        flat.append(array.ravel())
    values = np.concatenate(flat) if flat else np.zeros(0, dtype=dtype)
    return {"values": values, "present": present, "ndim": ndim, "shape": shape}


def unpack(column: dict[str, Any], dtype: Any) -> list[NDArray[Any] | None]:
    """Inverse of :func:`pack` (arrays may come back as tensors from a file): a read-only copy
    of each array, None where none was."""
    values = as_numpy(column["values"], dtype)
    present = as_numpy(column["present"], np.bool_)
    ndim = as_numpy(column["ndim"], np.int64)
    shape = as_numpy(column["shape"], np.int64)
    sizes = np.where(present, np.prod(np.where(np.arange(MAX_DIM) < ndim[:, None], shape, 1), 1), 0)
    ends = np.cumsum(sizes)
    out: list[NDArray[Any] | None] = []
    for i in range(len(present)):
        if not present[i]:
            out.append(None)
            continue
        array = values[ends[i] - sizes[i] : ends[i]].reshape(shape[i, : ndim[i]]).copy()
        array.flags.writeable = False
        out.append(array)
    return out


def decisions_state(decisions: Sequence[Decision]) -> dict[str, Any]:
    """``decisions`` as columns (notes above): what a checkpoint stores of the pending table.
    :func:`decisions_from_state` gives every field of every decision back as it was."""
    blocks = [isinstance(d.context, BlockContexts) for d in decisions]
    contexts = [
        d.context.blocks if b else d.context for d, b in zip(decisions, blocks, strict=True)
    ]
    block = np.full((len(decisions), 2), -1, dtype=np.int64)
    for i, (d, b) in enumerate(zip(decisions, blocks, strict=True)):
        if b:
            block[i] = int(d.context.slots[0]), int(d.context.n_blocks)
    return {
        "id": [d.id for d in decisions],
        "arm": np.array([d.arm for d in decisions], dtype=np.int64),
        "propensity": np.array([d.propensity for d in decisions], dtype=np.float64),
        "model_version": np.array([d.model_version for d in decisions], dtype=np.int64),
        "round": np.array([d.round for d in decisions], dtype=np.int64),
        "time": np.array([d.time for d in decisions], dtype=np.float64),
        "head": np.array([d.head for d in decisions], dtype=np.int64),
        "block": block,
        "mean": pack([d.mean for d in decisions], np.float64),
        "width": pack([d.width for d in decisions], np.float64),
        "mask": pack([d.mask for d in decisions], np.bool_),
        "context": pack(contexts, np.float64),
        "features": pack([d.features for d in decisions], np.float64),
        "extra": [
            {k: v.item() if isinstance(v, np.generic) else v for k, v in d.extra.items()}
            for d in decisions
        ],
    }


def decisions_from_state(state: dict[str, Any]) -> list[Decision]:
    """Inverse of :func:`decisions_state`."""
    columns = {
        name: unpack(state[name], np.bool_ if name == "mask" else np.float64)
        for name in ("mean", "width", "mask", "context", "features")
    }
    scalars = {
        name: as_numpy(state[name], dtype).tolist()
        for name, dtype in (
            ("arm", np.int64),
            ("propensity", np.float64),
            ("model_version", np.int64),
            ("round", np.int64),
            ("time", np.float64),
            ("head", np.int64),
        )
    }
    block = as_numpy(state["block"], np.int64)
    decisions = []
    for i, decision_id in enumerate(state["id"]):
        context, features = columns["context"][i], columns["features"][i]
        if block[i, 0] >= 0:
            context = BlockContexts(context, [int(block[i, 0])], int(block[i, 1]))
            freeze(context)
        elif features is not None and features.shape == context.shape:  # type: ignore[union-attr]
            if np.array_equal(features, context):  # the identity's: one array, as when decided
                features = context
        decisions.append(
            Decision(
                id=str(decision_id),
                arm=scalars["arm"][i],
                propensity=scalars["propensity"][i],
                mean=columns["mean"][i],
                width=columns["width"][i],
                model_version=scalars["model_version"][i],
                round=scalars["round"][i],
                time=scalars["time"][i],
                mask=columns["mask"][i],
                context=context,
                features=features,
                head=scalars["head"][i],
                extra=FrozenDict(state["extra"][i]),
            )
        )
    return decisions
