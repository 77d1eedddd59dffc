r"""The table of decisions awaiting their reward (:class:`PendingDecisions`).

A policy keeps the :class:`~deepbandits.policies.decision.Decision`\ s it made here until their
reward arrives, they expire (``reward_timeout``) or the table, bounded by ``max_pending``
decisions and ``max_pending_bytes`` bytes, makes room for new ones.

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
  (:func:`~deepbandits.policies.decision.decision_nbytes`) is that of its arrays (means, widths,
  mask, context, features and any array among its extra values), taken once when it is kept;
  the table checks it before the arm is chosen, from the request's scores (every arm's row has
  the same size).

Every decision made is, at any moment, exactly one of pending, learned or expired
(:meth:`PendingDecisions.counts`).
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from typing import Any

from deepbandits.errors import (
    DecisionError,
    ExpiredDecisionError,
    InputValueError,
    RewardAlreadyLearnedError,
    UnknownDecisionError,
)
from deepbandits.policies.decision import (
    Decision,
    decision_from_state,
    decision_nbytes,
    decisions_from_state,
    decisions_state,
)

#: Random bytes of a decision id (128 bits: 32 hexadecimal digits).
_ID_BYTES = 16


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

    def given_ids(self, ids: Any, n: int) -> list[str]:
        """``ids`` checked as the ids of ``n`` new decisions (a list of ``n`` distinct strings of
        1 to 128 printable ASCII characters, none of them pending, learned or expired as far as
        the table remembers), or ``n`` new random ids when ``ids`` is None."""
        if ids is None:
            return [self.next_id()] if n == 1 else self.next_ids(n)
        if isinstance(ids, str) or not isinstance(ids, list | tuple) or len(ids) != n:
            raise InputValueError(
                f"decision ids must be a list of {n} strings, one per request, but {ids!r:.80} "
                "is given"
            )
        for decision_id in ids:
            if not (
                isinstance(decision_id, str)
                and 0 < len(decision_id) <= 128
                and decision_id.isascii()
                and decision_id.isprintable()
            ):
                raise InputValueError(
                    "a decision id must be a string of 1 to 128 printable ASCII characters, but "
                    f"{decision_id!r:.80} is given"
                )
            if (
                decision_id in self._pending
                or decision_id in self._learned
                or (decision_id in self._expired)
            ):
                raise InputValueError(f"decision id {decision_id!r} is in use already")
        if len(set(ids)) != n:
            raise InputValueError("decision ids must be distinct, but one is given twice")
        return list(ids)

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
