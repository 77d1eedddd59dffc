"""The replicas of ``deepbandits serve --backend ray`` as one backend of the HTTP API
(:class:`RayBackend`, a :class:`~deepbandits.serve.backend.Backend`): decisions go to the
replicas in turn, a reward to the replica of its id, health and snapshots gather every
replica's, and the merge rounds run here (:mod:`deepbandits.serve.replicas`; the merged state
is written to ``STATE/merged/`` before the replicas absorb it). :mod:`deepbandits.serve.ray_app`
deploys it on Ray Serve. A live experiment (a control group, challengers, promotion) is not run
on replicas yet: its routes answer :class:`~deepbandits.errors.NotSupportedError` (501).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ray.serve.handle import DeploymentHandle, DeploymentResponse

from deepbandits._io import write_atomic
from deepbandits.errors import (
    DeepBanditsError,
    NotSupportedError,
    ServiceError,
    UnknownDecisionError,
)
from deepbandits.serve.backend import Decided
from deepbandits.serve.replicas import MergeRounds
from deepbandits.serve.store import policy_bytes, sha256

LOG = logging.getLogger("deepbandits.serve")


async def _answer(response: DeploymentResponse) -> Any:
    """What a replica answered; the library's error it raised is raised here as it is, anything
    else as :class:`~deepbandits.errors.ServiceError` (503)."""
    try:
        return await response
    except Exception as exc:
        cause = getattr(exc, "cause", None) or exc  # a RayTaskError carries the replica's error
        if isinstance(cause, DeepBanditsError):
            raise cause from None
        LOG.error("a replica failed: %s", exc)
        raise ServiceError(f"a replica failed: {type(cause).__name__}: {cause}") from None


#: What the experiment's routes answer on replicas.
NO_EXPERIMENT = (
    "a control group and challengers need --backend local: replicas on Ray Serve do not run "
    "a live experiment yet"
)
#: The health fields that add up over the replicas.
SUMMED = (
    "events",
    "pending",
    "decided",
    "learned",
    "expired",
    "pending_bytes",
    "training_failures",
)


class RayBackend:
    """The replicas of a Serve application as a :class:`~deepbandits.serve.backend.Backend`:
    decisions go to the replicas in turn, a reward to the replica of its id; runs the merge
    rounds (module notes)."""

    merges = True
    experiments = False

    def __init__(
        self, root: str | Path, replicas: list[DeploymentHandle], merge_every: float | None
    ) -> None:
        self.root = Path(root)
        self.replicas = replicas
        self.merge_every = merge_every
        self.training_listeners: list[Callable[[float], None]] = []
        self.turn = 0
        self.rounds: MergeRounds | None = None
        self.paused: str | None = None
        self.lock = asyncio.Lock()
        self.merge_seconds: list[float] = []
        self.loop: asyncio.Task[None] | None = None

    def _next(self) -> DeploymentHandle:
        if self.merge_every and self.loop is None:  # the periodic rounds, from the first call
            self.loop = asyncio.get_running_loop().create_task(self._merge_forever())
        self.turn = (self.turn + 1) % len(self.replicas)
        return self.replicas[self.turn]

    async def decide(self, contexts: Any, mask: Any) -> dict[str, Any]:
        answer: dict[str, Any] = await _answer(self._next().decide.remote(contexts, mask))
        return answer

    async def decide_batch(self, contexts: Any, masks: Any) -> Decided:
        decided: Decided = await _answer(self._next().decide_batch.remote(contexts, masks))
        return decided

    async def learn(
        self, decision_id: str, reward: Any, reward_range: Any, sigma2: Any
    ) -> dict[str, Any]:
        index, _, inner = decision_id.partition(":")
        if not index.isdigit() or int(index) >= len(self.replicas):
            raise UnknownDecisionError(
                f"decision {decision_id} is not pending in this service: its ids are "
                f"'<replica>:<id>' with a replica from 0 to {len(self.replicas) - 1}"
            )
        replica = self.replicas[int(index)]
        out: dict[str, Any] = await _answer(
            replica.learn.remote(inner, reward, reward_range, sigma2)
        )
        return out

    async def _healths(self) -> list[dict[str, Any]]:
        return list(await asyncio.gather(*(_answer(r.health.remote()) for r in self.replicas)))

    async def health(self) -> dict[str, Any]:
        replicas = await self._healths()
        out: dict[str, Any] = {key: sum(int(h.get(key, 0)) for h in replicas) for key in SUMMED}
        first = replicas[0]
        out.update(
            status="ok" if all(h["status"] == "ok" for h in replicas) else "degraded",
            model_version=max(h["model_version"] for h in replicas),
            rewards_learned=out["learned"],
            training=self.lock.locked(),
            trainings=0 if self.rounds is None else self.rounds.model_version,
            last_event=sum(h["last_event"] for h in replicas),
            last_checkpoint=min(h["last_checkpoint"] for h in replicas),
            policy=first["policy"],
            champion=first.get("champion"),
            champion_version=first.get("champion_version"),
            control=first.get("control"),
            challengers=first.get("challengers", []),
            durability=first["durability"],
            notes=[f"replica {i}: {n}" for i, h in enumerate(replicas) for n in h["notes"]],
            generation=0 if self.rounds is None else self.rounds.generation,
            merge_every=self.merge_every,
            merge_seconds=self.merge_seconds[-20:],
            merges_paused=self.paused,
            replicas=replicas,
        )
        return out

    async def snapshot(self) -> dict[str, Any]:
        metas = await asyncio.gather(*(_answer(r.snapshot.remote()) for r in self.replicas))
        return {
            "seq": sum(m["seq"] for m in metas),
            "model_version": max(m["model_version"] for m in metas),
            "rewards_learned": sum(m["rewards_learned"] for m in metas),
            "replicas": list(metas),
        }

    async def lift(self) -> dict[str, Any]:
        raise NotSupportedError(NO_EXPERIMENT)

    async def challengers(self) -> dict[str, Any]:
        raise NotSupportedError(NO_EXPERIMENT)

    async def add_challenger(self, spec: Any, name: Any) -> dict[str, Any]:
        raise NotSupportedError(NO_EXPERIMENT)

    async def remove_challenger(self, name: Any) -> None:
        raise NotSupportedError(NO_EXPERIMENT)

    async def promote(self, name: Any) -> dict[str, Any]:
        raise NotSupportedError(NO_EXPERIMENT)

    async def _start_rounds(self) -> MergeRounds:
        """The coordinator: the merged state of ``STATE/merged`` if any, else the replicas'
        common base; merges pause when the replicas did not all absorb its generation."""
        folder = self.root / "merged"
        sidecar = folder / "merged.json"
        if sidecar.exists():
            meta = json.loads(sidecar.read_text(encoding="utf-8"))
            data = (folder / "merged.pt").read_bytes()
            if sha256(data) != meta["sha256"]:
                raise ServiceError(f"{folder / 'merged.pt'} does not match its checksum")
            rounds = MergeRounds(data)
            rounds.generation = int(meta["generation"])
            rounds.model_version = int(meta["model_version"])
            rounds.trained_at = int(meta["trained_at"])
        else:
            rounds = MergeRounds(await _answer(self.replicas[0].base.remote()))
        seen = {h["merged_generation"] for h in await self._healths()} | {rounds.generation}
        if rounds.generation and seen != {rounds.generation}:
            self.paused = (
                f"the replicas absorbed merge generations {sorted(seen)}, not all "
                f"{rounds.generation} (restarted during a round?): merges are paused"
            )
            LOG.warning(self.paused)
        return rounds

    async def stop(self) -> None:
        """No more merge rounds (the one in flight finishes first), then every replica closes
        with a checkpoint."""
        async with self.lock:
            self.paused = "the service is stopping"
            if self.loop is not None:
                self.loop.cancel()
        await asyncio.gather(*(_answer(r.close.remote()) for r in self.replicas))

    async def merge(self) -> dict[str, Any]:
        """One merge round (and a training of the merged network when it is due)."""
        async with self.lock:
            if self.rounds is None:
                self.rounds = await self._start_rounds()
            if self.paused:
                raise ServiceError(self.paused)
            start = time.perf_counter()
            rounds = self.rounds
            snapshots = await asyncio.gather(
                *(_answer(r.merge_snapshot.remote()) for r in self.replicas)
            )
            merged = await asyncio.to_thread(rounds.merge, list(snapshots))
            network = None
            if rounds.training_due():
                network = await asyncio.to_thread(rounds.train)
            self._save(merged if network is None else None, rounds)
            generation = rounds.generation
            await asyncio.gather(
                *(_answer(r.absorb.remote(merged, generation)) for r in self.replicas)
            )
            if network is not None:
                version, t = rounds.model_version, rounds.trained_at
                await asyncio.gather(
                    *(_answer(r.swap_network.remote(version, network, t)) for r in self.replicas)
                )
                for listener in self.training_listeners:
                    listener(float(network["seconds"]))
            self.merge_seconds.append(time.perf_counter() - start)
            return {
                "generation": generation,
                "rewards_learned": rounds.base.t_,
                "model_version": rounds.model_version,
                "seconds": self.merge_seconds[-1],
            }

    def _save(self, merged: bytes | None, rounds: MergeRounds) -> None:
        data = merged if merged is not None else policy_bytes(rounds.base)
        folder = self.root / "merged"
        write_atomic(folder / "merged.pt", data)
        meta = {
            "generation": rounds.generation,
            "model_version": rounds.model_version,
            "trained_at": rounds.trained_at,
            "rewards_learned": rounds.base.t_,
            "sha256": sha256(data),
            "time": time.time(),
        }
        write_atomic(folder / "merged.json", json.dumps(meta, indent=2) + "\n")

    async def _merge_forever(self) -> None:
        while True:
            await asyncio.sleep(float(self.merge_every or 0))
            try:
                await self.merge()
            except Exception as exc:
                LOG.warning("a merge round failed: %s", exc)
