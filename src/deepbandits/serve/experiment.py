"""A live experiment around the served policy: a control group, challengers in shadow, and
promotion of a challenger to champion.

:class:`Experiment` is what :class:`~deepbandits.serve.state.ServiceState` and the replay of
its log (:mod:`deepbandits.serve.recovery`) both drive, in log order, so that a restarted
service is the uninterrupted one bit for bit:

* **deciding**: a request whose decision id hashes into the control share
  (:mod:`deepbandits.serve.control`) is decided by the control policy and logged with
  ``"group": "control"``; the others by the champion. With challengers, the request's contexts
  are kept until its reward (:class:`Round`, at most ``max_rounds``, the oldest dropped first);
* **learning**: the reward goes to the policy that decided (the control, the champion, or a
  former champion that still holds the decision pending) and counts in the lift of its group
  (:mod:`deepbandits.serve.lift`); the rewarded round is queued for the challengers, which are
  given the queue every :data:`SHADOW_BATCH` rewards (:meth:`Experiment.flush`): each keeps the
  round's off-policy terms under its policy as it stands, then learns it
  (:mod:`deepbandits.serve.shadow`);
* **challenger** events register or remove a challenger (``POST /v1/challengers``,
  ``DELETE /v1/challengers/{name}``, ``--challenger``);
* a **promote** event swaps a challenger and the champion: the challenger serves from the next
  request on, the former champion becomes a challenger of the same name it served under (so that
  the rewards of its pending decisions still reach it, and promoting it back is a rollback). The
  champion's version (``champion_version``: 0, then one more per promotion) is in every answer
  and in the log.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from deepbandits.errors import DeepBanditsError, InputValueError
from deepbandits.policies import Decision, Policy
from deepbandits.policies.choice import check_mask
from deepbandits.policies.evaluation import Learned
from deepbandits.serve import training
from deepbandits.serve.control import (
    control_mask,
    fixed_arm,
    in_control,
    make_control,
    seeded_policy,
)
from deepbandits.serve.lift import WINDOW, LiftTracker
from deepbandits.serve.shadow import Challenger

Array = NDArray[np.float64]
#: Most challengers a service runs at once (each costs a look per request and an update per
#: reward on the request path).
MAX_CHALLENGERS = 8


#: Rewarded rounds the challengers are given at once (:mod:`deepbandits.serve.shadow`).
SHADOW_BATCH = 32


@dataclass
class Round:
    """A served request, as the challengers need it: awaiting its reward, then queued."""

    contexts: Array
    arm: int
    propensity: float
    mask: NDArray[np.bool_] | None = None
    reward: float = 0.0
    #: The reward's ``sigma2`` and ``reward_range``, as learned.
    extra: dict[str, Any] = field(default_factory=dict)
    #: The challenger (a former champion) that decided it, which learns it as its own.
    owner: str | None = None


def check_name(name: Any) -> str:
    """A challenger's name: 1 to 64 printable ASCII characters."""
    if not (
        isinstance(name, str) and 0 < len(name) <= 64 and name.isascii() and name.isprintable()
    ):
        raise InputValueError(
            f"a challenger's name must be 1 to 64 printable ASCII characters, but {name!r:.80} "
            "is given"
        )
    return name


def policy_of_spec(spec: Any, seed: int) -> Policy:
    """The library policy of a challenger's specification (seeded by ``seed`` unless it names
    a seed)."""
    if not isinstance(spec, str) or not spec:
        raise InputValueError(f"a challenger needs a policy specification, but {spec!r} is given")
    return seeded_policy(spec, seed, "challenger")


class Experiment:
    """The control group, the challengers and the champion's version (module notes).

    Parameters
    ----------
    champion : str
        The name the served policy is listed under, and its specification (the folder's).
    control : str, optional
        The control (``"uniform"``, ``"arm=K"``, a policy specification or file).
    share : float, default=0.0
        The share of requests the control decides.
    seed : int, default=0
        The seed of the hash that draws the control group, and of the control's and the
        challengers' policies.
    window : int, default=WINDOW
        Rewards in the lift's sliding window.
    max_rounds : int, default=100_000
        Requests kept for the challengers until their reward.
    """

    def __init__(
        self,
        champion: str,
        control: str | None = None,
        share: float = 0.0,
        seed: int = 0,
        window: int = WINDOW,
        max_rounds: int = 100_000,
    ) -> None:
        self.champion_name = champion
        #: The champion's specification (the folder's, until a promotion).
        self.champion_spec = champion
        self.control_spec = control
        self.control: Policy | None = None if control is None else make_control(control, seed)
        self.arm = None if control is None else fixed_arm(control)
        self.share = share if control is not None else 0.0
        self.seed = seed
        self.lift = LiftTracker(window)
        self.challengers: dict[str, Challenger] = {}
        self.rounds: OrderedDict[str, Round] = OrderedDict()
        #: Rewarded rounds not yet given to the challengers.
        self.queue: list[Round] = []
        self.shadow_batch = SHADOW_BATCH
        self.max_rounds = max_rounds
        self.champion_version = 0

    @property
    def active(self) -> bool:
        """Whether requests take the experiment's path (a control or a challenger)."""
        return self.control is not None or bool(self.challengers)

    def group(self, decision_id: str) -> str:
        """``"control"`` or ``"policy"``: who decides request ``decision_id``."""
        return "control" if in_control(decision_id, self.seed, self.share) else "policy"

    # ------------------------------------------------------------------ deciding
    def decide(self, champion: Policy, contexts: Any, mask: Any) -> tuple[Decision, bool]:
        """Decide one request; the decision and whether the control decided it."""
        (decision_id,) = champion.pending_.next_ids(1)
        if self.group(decision_id) == "policy":
            return champion.decide(contexts, mask, decision_id=decision_id), False
        self._check_control(champion, contexts, mask)
        return self._control_decide(contexts, mask, decision_id), True

    def decide_batch(
        self, champion: Policy, batch: list[Any], masks: list[Any]
    ) -> tuple[list[int], list[Decision], list[int], list[Decision]]:
        """Decide ``batch`` (a list of requests' contexts): the indices and decisions of the
        champion's requests (one ``decide_batch``), then the control's (one each). The
        control's requests are checked before anything is decided, so that a request that fails
        leaves every policy as it was."""
        ids = champion.pending_.next_ids(len(batch))
        mine = [i for i, d in enumerate(ids) if self.group(d) == "policy"]
        theirs = sorted(set(range(len(batch))) - set(mine))
        for i in theirs:
            self._check_control(champion, batch[i], masks[i])
        ours: list[Decision] = []
        if mine:
            ours = champion.decide_batch(
                [batch[i] for i in mine],
                [masks[i] for i in mine],
                decision_ids=[ids[i] for i in mine],
            )
        controlled = [self._control_decide(batch[i], masks[i], ids[i]) for i in theirs]
        return mine, ours, theirs, controlled

    def _check_control(self, champion: Policy, contexts: Any, mask: Any) -> None:
        """Refuse a request for the control as the champion would refuse it (its contexts
        checked by both policies' ``predict``, which changes nothing, and its mask)."""
        assert self.control is not None
        champion.predict(contexts)
        self.control.predict(contexts)
        check_mask(mask, len(contexts))

    def _control_decide(self, contexts: Any, mask: Any, decision_id: str) -> Decision:
        assert self.control is not None
        decision = self.control.decide(
            contexts, control_mask(mask, len(contexts), self.arm), decision_id=decision_id
        )
        if self.arm is not None:  # the log keeps the request's own mask (what was available)
            given = None if mask is None else np.asarray(mask, dtype=bool).copy()
            decision = decision._replace(mask=given)
        return decision

    def keep(self, decisions: list[Decision], contexts: list[Array]) -> None:
        """Keep the requests of ``decisions`` (made from ``contexts``, in log order) for the
        challengers, until their rewards (only while there are challengers)."""
        if not self.challengers:
            return
        for decision, X in zip(decisions, contexts, strict=True):
            mask = None if decision.mask is None else np.asarray(decision.mask, dtype=bool)
            self.rounds[decision.id] = Round(X, decision.arm, decision.propensity, mask)
            while len(self.rounds) > self.max_rounds:
                self.rounds.popitem(last=False)

    # ------------------------------------------------------------------ learning
    def learn(self, champion: Policy, decision_id: str, reward: float, **kwargs: Any) -> Learned:
        """Learn a reward (module notes); a call that raises changes nothing."""
        mine = decision_id in champion.pending_  # then no hash is needed
        group = "policy" if mine else self.group(decision_id)
        round_ = self.rounds.get(decision_id)
        owner: Challenger | None = None
        if group == "control":
            assert self.control is not None
            learned = self.control.learn(decision_id, reward, **kwargs)
        else:  # the champion's, or a former champion's (now a challenger) that holds it
            owner = None if mine else self._former(decision_id)
            decider = champion if owner is None else owner.policy
            learned = decider.learn(decision_id, reward, **kwargs)  # raises when not pending
            if owner is not None and round_ is not None:  # the champion saw it in shadow
                with contextlib.suppress(DeepBanditsError):  # as a challenger's update would
                    champion.update(round_.contexts, round_.arm, reward, **kwargs)
        self.lift.add(group, float(reward))
        if round_ is not None:
            del self.rounds[decision_id]
            round_.reward, round_.extra = float(reward), kwargs
            round_.owner = None if owner is None else owner.name
            self.queue.append(round_)
            if len(self.queue) >= self.shadow_batch:
                self.flush()
        return learned

    def flush(self) -> None:
        """Give the queued rounds to the challengers (each but the one that decided a round);
        done every :attr:`shadow_batch` rewards, and before a challenger is added, removed or
        promoted, so that the batches are the same in a replay."""
        queue, self.queue = self.queue, []
        for name, challenger in self.challengers.items():
            rounds = [r for r in queue if r.owner != name]
            if rounds:
                challenger.learn(rounds, [r.reward for r in rounds], [r.extra for r in rounds])

    def _former(self, decision_id: str) -> Challenger | None:
        """The challenger (a former champion) that holds decision ``decision_id`` pending."""
        for challenger in self.challengers.values():
            if decision_id in challenger.policy.pending_:
                return challenger
        return None

    # ------------------------------------------------------------------ challengers
    def check_new(self, name: Any, spec: Any) -> tuple[str, str]:
        """``(name, spec)`` of a challenger that can be added (its policy is made to check the
        specification, and dropped)."""
        if not isinstance(spec, str) or not spec:
            raise InputValueError(
                f"a challenger needs a policy specification (a string), but {spec!r:.80} is given"
            )
        if name is None and len(spec) > 64:
            raise InputValueError(
                f"a challenger is named by its specification unless it is given a name, and a "
                f"name has at most 64 characters: give this one of {len(spec)} a name"
            )
        spec_name = spec if name is None else name
        check_name(spec_name)
        if spec_name in self.challengers or spec_name == self.champion_name:
            raise InputValueError(f"a policy named {spec_name!r} is in the experiment already")
        if len(self.challengers) >= MAX_CHALLENGERS:
            raise InputValueError(
                f"a service runs at most {MAX_CHALLENGERS} challengers; remove one first"
            )
        policy_of_spec(spec, self.seed)
        return spec_name, spec

    def add(self, name: str, spec: str) -> Challenger:
        """Register challenger ``name`` of ``spec`` (checked by :meth:`check_new`)."""
        self.flush()
        challenger = Challenger(name, spec, policy_of_spec(spec, self.seed))
        self.challengers[name] = challenger
        return challenger

    def challenger(self, name: Any) -> Challenger:
        """The challenger ``name``; an :class:`~deepbandits.errors.InputValueError` naming the
        challengers otherwise."""
        if not isinstance(name, str) or name not in self.challengers:
            known = ", ".join(map(repr, self.challengers)) or "none"
            raise InputValueError(f"no challenger named {name!r:.80} (challengers: {known})")
        return self.challengers[name]

    def remove(self, name: str) -> None:
        """Remove challenger ``name``."""
        self.challenger(name)
        self.flush()
        del self.challengers[name]

    def promote(self, name: str, champion: Policy) -> Policy:
        """Swap challenger ``name`` and the champion; returns the new champion (module notes)."""
        challenger = self.challenger(name)
        self.flush()
        former = Challenger(self.champion_name, self.champion_spec, champion)
        del self.challengers[name]
        self.challengers[former.name] = former
        self.champion_name, self.champion_spec = name, challenger.spec
        self.champion_version += 1
        training.hand_over(champion, challenger.policy)
        return challenger.policy

    # ------------------------------------------------------------------ reports
    def report_lift(self) -> dict[str, Any]:
        """The lift report (:meth:`~deepbandits.serve.lift.LiftTracker.report`) with the
        control's description."""
        return {
            "control": self.control_spec,
            "share": self.share,
            "champion": self.champion_name,
            "champion_version": self.champion_version,
            **self.lift.report(),
        }
