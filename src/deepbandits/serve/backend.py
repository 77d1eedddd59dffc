"""What the HTTP API drives: a backend that decides, learns and reports, in this process or
elsewhere.

The API (:func:`deepbandits.serve.app.create_app`) is written once over :class:`Backend`: every
route, schema, status code, error body, limit, token check and metric is the same whatever
answers behind it. Two backends exist:

* :class:`LocalBackend`: one :class:`~deepbandits.serve.state.ServiceState` in this process
  (``deepbandits serve``);
* :class:`~deepbandits.serve.ray_backend.RayBackend`: replicas on Ray Serve, each with its own
  state folder, sharing what they learn by merge rounds (``deepbandits serve --backend ray``).

A backend raises the library's errors (:mod:`deepbandits.errors`); the API turns them into
answers. The live experiment (a control group, challengers in shadow, promotion:
:mod:`deepbandits.serve.experiment`) is a local backend's only (:attr:`Backend.experiments`);
another answers those calls with :class:`~deepbandits.errors.NotSupportedError` (501). A
batch of decisions travels as :class:`Decided` (columns, not one object per decision), which the
API writes as JSON or as an Arrow table.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:  # the client reads Decided without the policies (torch)
    from deepbandits.policies import Decision
    from deepbandits.serve.state import ServiceState

#: Requests in a batch above which :class:`LocalBackend` decides it in a worker thread, so that
#: building its answer does not hold the event loop (module notes of :mod:`deepbandits.serve.app`).
THREAD_BATCH = 64


@dataclass
class Decided:
    """Decisions as the API answers them: one entry per decision, in order.

    Attributes
    ----------
    ids : list of str
        The ids to send the rewards with.
    arms : list of int
    propensities : list of float
    mean, width : list of float64 arrays, or a ``[B, K]`` array
        Every arm's estimated mean and exploration width (``K`` values each).
    model_version : int
        The network version that decided.
    """

    ids: list[str]
    arms: list[int]
    propensities: list[float]
    mean: list[NDArray[np.float64]]
    width: list[NDArray[np.float64]]
    model_version: int

    @classmethod
    def of(cls, decisions: list[Decision], model_version: int) -> Decided:
        """The columns of ``decisions`` made with network ``model_version``."""
        return cls(
            [d.id for d in decisions],
            [d.arm for d in decisions],
            [d.propensity for d in decisions],
            [d.mean for d in decisions],
            [d.width for d in decisions],
            model_version,
        )

    def __len__(self) -> int:
        return len(self.ids)

    def packed(self) -> Decided:
        """The same decisions with ``mean`` and ``width`` as two ``[B, K]`` arrays when every
        decision has the same ``K`` (two arrays travel to another process far faster than
        ``2 B`` small ones; rows of an array index as the list's entries do)."""
        if len({len(m) for m in self.mean}) != 1:
            return self
        mean, width = np.stack(self.mean), np.stack(self.width)
        return Decided(self.ids, self.arms, self.propensities, mean, width, self.model_version)  # type: ignore[arg-type]

    def answer(self, i: int) -> dict[str, Any]:
        """Decision ``i`` as the JSON answer of ``/v1/decide``."""
        return {
            "decision_id": self.ids[i],
            "arm": self.arms[i],
            "propensity": self.propensities[i],
            "mean": self.mean[i],
            "width": self.width[i],
            "model_version": self.model_version,
        }

    def answers(self) -> dict[str, Any]:
        """The JSON answer of ``/v1/decide_batch``."""
        return {"decisions": [self.answer(i) for i in range(len(self))]}


class Backend(Protocol):
    """What the API needs from whatever decides (module notes).

    Attributes
    ----------
    merges : bool
        Whether the backend has merge rounds (``POST /v1/merge``).
    experiments : bool
        Whether the backend runs a live experiment (``GET /v1/lift``, ``/v1/challengers``,
        ``POST /v1/promote``, ...); one that does not raises
        :class:`~deepbandits.errors.NotSupportedError` from those calls.
    training_listeners : list of callables
        Called with a training's seconds each time a network version is swapped in.
    """

    merges: bool
    experiments: bool
    training_listeners: list[Callable[[float], None]]

    async def decide(self, contexts: Any, mask: Any) -> dict[str, Any]:
        """One decision, answered once its event is committed (``/v1/decide``'s answer)."""
        ...

    async def decide_batch(self, contexts: Any, masks: Any) -> Decided:
        """Decisions of several requests (``[B, K, d]`` or a list of ``[K, d]``), answered
        once committed."""
        ...

    async def learn(
        self, decision_id: str, reward: Any, reward_range: Any, sigma2: Any
    ) -> dict[str, Any]:
        """Learn a reward; ``/v1/reward``'s answer once its event is committed."""
        ...

    async def health(self) -> dict[str, Any]:
        """Status, network version, events, pending decisions and notes."""
        ...

    async def snapshot(self) -> dict[str, Any]:
        """Write a checkpoint now: ``seq``, ``model_version``, ``rewards_learned``."""
        ...

    async def merge(self) -> dict[str, Any]:
        """Run a merge round now (only where :attr:`merges`)."""
        ...

    async def lift(self) -> dict[str, Any]:
        """The lift of the served policy over the control group (``/v1/lift``'s answer)."""
        ...

    async def challengers(self) -> dict[str, Any]:
        """The champion and every challenger's report (``GET /v1/challengers``' answer)."""
        ...

    async def add_challenger(self, spec: Any, name: Any) -> dict[str, Any]:
        """Register a challenger in shadow; its report once the event is committed."""
        ...

    async def remove_challenger(self, name: Any) -> None:
        """Remove a challenger, once the event is committed."""
        ...

    async def promote(self, name: Any) -> dict[str, Any]:
        """Swap a challenger in as champion: ``champion``, ``champion_version``, ``former``."""
        ...


class LocalBackend:
    """A :class:`~deepbandits.serve.state.ServiceState` of this process as a backend.

    The handlers run on the event loop: a decision takes a fraction of a millisecond of CPU,
    and while one request waits for its commit the loop serves the next, whose events join the
    same group commit. A batch of more than :data:`THREAD_BATCH` requests is decided in a
    worker thread, so that converting its contexts and building its answer leave the loop free
    (only the policy's own work, under its lock, is shared with the other requests). So are
    the experiment's calls that build a policy, wait for a commit or compute the challengers'
    estimates.
    """

    merges = False
    experiments = True

    def __init__(self, state: ServiceState) -> None:
        self.state = state
        self.training_listeners = state.training_listeners

    async def decide(self, contexts: Any, mask: Any) -> dict[str, Any]:
        decision, future = self.state.decide(contexts, mask)
        out = Decided.of([decision], self.state.model_version).answer(0)
        await asyncio.wrap_future(future)
        return out

    def _decide_batch(self, contexts: Any, masks: Any) -> tuple[Decided, Any]:
        decisions, future = self.state.decide_batch(contexts, masks)
        return Decided.of(decisions, self.state.model_version), future

    async def decide_batch(self, contexts: Any, masks: Any) -> Decided:
        if len(contexts) > THREAD_BATCH:
            decided, future = await asyncio.to_thread(self._decide_batch, contexts, masks)
        else:
            decided, future = self._decide_batch(contexts, masks)
        await asyncio.wrap_future(future)
        return decided

    async def learn(
        self, decision_id: str, reward: Any, reward_range: Any, sigma2: Any
    ) -> dict[str, Any]:
        state = self.state
        learned, future = state.learn(decision_id, reward, reward_range=reward_range, sigma2=sigma2)
        out = {
            "decision_id": decision_id,
            "rewards_learned": state.policy.t_,
            "sigma2": learned.sigma2,
            "model_version": state.model_version,
        }
        await asyncio.wrap_future(future)
        return out

    async def health(self) -> dict[str, Any]:
        return self.state.health()

    async def snapshot(self) -> dict[str, Any]:
        meta = await asyncio.to_thread(self.state.snapshot)
        return {k: meta[k] for k in ("seq", "model_version", "rewards_learned")}

    async def merge(self) -> dict[str, Any]:
        raise NotImplementedError("a local backend has no merge rounds")

    async def lift(self) -> dict[str, Any]:
        return self.state.lift()

    async def challengers(self) -> dict[str, Any]:
        return await asyncio.to_thread(self.state.challengers)

    async def add_challenger(self, spec: Any, name: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.state.add_challenger, spec, name)

    async def remove_challenger(self, name: Any) -> None:
        await asyncio.to_thread(self.state.remove_challenger, name)

    async def promote(self, name: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.state.promote, name)
