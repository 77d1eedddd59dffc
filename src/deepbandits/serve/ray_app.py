"""``deepbandits serve --backend ray``: one policy served by several replicas on Ray Serve.

The Serve application has one deployment per replica (``replica-0`` … ``replica-{N-1}``, one Serve
replica each, so that a reward can be sent to the replica that made its decision) and an ingress
deployment (``ingress``) that serves the very app of :func:`deepbandits.serve.app.create_app`
over a :class:`RayBackend` (the replicas' handles): every route, schema, status, error body,
limit, token check and metric of a single service is the same here, checked from the headers
before the body is read, as on one process.

* ``POST /v1/decide`` and ``/v1/decide_batch`` (JSON or Arrow) go to the replicas in turn; each
  replica decides
  and logs on its own, in its own state folder ``STATE/replica-<i>`` (a
  :class:`~deepbandits.serve.replicas.ReplicaState`: the event log, checkpoints and recovery of
  a single service), and answers once its log committed the decision. A decision's id is
  ``"<i>:<the replica's id>"``;
* ``POST /v1/reward`` goes to replica ``i`` of the id;
* ``POST /v1/merge`` runs a merge round now (:mod:`deepbandits.serve.replicas`); the ingress runs
  one every ``merge_every`` seconds. The merged state is written to ``STATE/merged/`` (policy file
  and sidecar) before the replicas absorb it, and each replica checkpoints after absorbing;
* ``GET /v1/health``: the replicas' sums (events, pending, ...), every replica's health, the
  merge generation, the network version; ``GET /metrics`` the same as Prometheus gauges;
* ``POST /v1/snapshot``: every replica writes a checkpoint.

Every replica starts from the same policy: the spec with one seed for all (drawn once, kept in
``STATE/ray.json``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from ray import serve
from ray.serve.handle import DeploymentHandle, DeploymentResponse
from threadpoolctl import threadpool_limits

from deepbandits._io import write_atomic
from deepbandits.errors import DeepBanditsError, InputValueError, ServiceError, UnknownDecisionError
from deepbandits.serve import MAX_BODY_BYTES
from deepbandits.serve.app import create_app
from deepbandits.serve.backend import Decided
from deepbandits.serve.replicas import (
    MergeRounds,
    ReplicaState,
    absorb,
    merge_snapshot,
    swap_network,
)
from deepbandits.serve.store import policy_bytes, sha256
from deepbandits.specs import parse_spec

LOG = logging.getLogger("deepbandits.serve")
RAY_FILE = "ray.json"


def fixed_spec(root: Path, spec: str | None, replicas: int) -> str:
    """The spec every replica of ``root`` serves, with one seed (drawn and kept in
    ``ray.json`` for a new folder; a folder made for another spec or replica count refuses)."""
    path = root / RAY_FILE
    if path.exists():
        saved = json.loads(path.read_text(encoding="utf-8"))
        if saved["replicas"] != replicas:
            raise InputValueError(
                f"{root} was created for {saved['replicas']} replicas, not {replicas}: give "
                f"--replicas {saved['replicas']} or use another --state folder"
            )
        if spec is not None:
            name, params = parse_spec(spec)
            _, kept = parse_spec(saved["spec"])
            if params.get("seed") is None:
                kept.pop("seed", None)
            if (name, params) != (parse_spec(saved["spec"])[0], kept):
                raise InputValueError(f"{root} serves {saved['spec']!r}, not {spec!r}")
        return str(saved["spec"])
    if spec is None:
        raise InputValueError(f"a new state folder {root} needs --policy SPEC")
    fixed = spec
    if parse_spec(spec)[1].get("seed") is None:
        seed = int.from_bytes(os.urandom(7), "big")
        fixed = f"{spec},seed={seed}" if ":" in spec else f"{spec}:seed={seed}"
    write_atomic(path, json.dumps({"spec": fixed, "replicas": replicas}, indent=2) + "\n")
    return fixed


#: The Ray actor options of every deployment: no CPU asked (any number of replicas fits a small
#: instance), and the handlers run on the replica's own event loop rather than in a thread of
#: their own (they never block it: a decision holds the policy's lock for a fraction of a
#: millisecond and waits for its commit asynchronously); measured with benchmarks/serve_load.py,
#: LinUCB decisions through one replica went from 60 to 75 per second on a 2-core machine.
ACTOR_OPTIONS: dict[str, Any] = {
    "num_cpus": 0,
    "runtime_env": {"env_vars": {"RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD": "0"}},
}
#: Ray Serve's logging of the deployments and of its proxy: warnings only, no line per request
#: (the service counts requests in its metrics; a log line per request and per hop cost CPU
#: that the two-core measurements of benchmarks/serve_load.py need for answering).
LOGGING = {"enable_access_log": False, "log_level": "WARNING"}


@serve.deployment(
    num_replicas=1,
    max_ongoing_requests=256,
    ray_actor_options=ACTOR_OPTIONS,
    logging_config=LOGGING,
)
class PolicyReplica:
    """Replica ``index``: a :class:`ReplicaState` on ``STATE/replica-<index>``; its answers
    carry ids ``"<index>:<id>"``."""

    def __init__(self, root: str, index: int, spec: str, options: dict[str, Any]) -> None:
        torch.set_num_threads(1)
        threadpool_limits(limits=1, user_api="blas")  # as the foreground server (serve.server)
        self.index = index
        self.state = ReplicaState(Path(root) / f"replica-{index}", policy=spec, **options)

    def _id(self, decision_id: str) -> str:
        return f"{self.index}:{decision_id}"

    async def decide(self, contexts: Any, mask: Any) -> dict[str, Any]:
        decision, future = self.state.decide(contexts, mask)
        out = Decided.of([decision], self.state.model_version).answer(0)
        out["decision_id"] = self._id(decision.id)
        await asyncio.wrap_future(future)
        return out

    async def decide_batch(self, contexts: Any, masks: Any) -> Decided:
        decisions, future = self.state.decide_batch(contexts, masks)
        decided = Decided.of(decisions, self.state.model_version)
        decided.ids = [self._id(i) for i in decided.ids]
        await asyncio.wrap_future(future)
        return decided.packed()

    async def learn(
        self, decision_id: str, reward: Any, bounds: Any, sigma2: Any
    ) -> dict[str, Any]:
        learned, future = self.state.learn(decision_id, reward, reward_range=bounds, sigma2=sigma2)
        out = {
            "decision_id": self._id(decision_id),
            "rewards_learned": self.state.policy.t_,
            "sigma2": learned.sigma2,
            "model_version": self.state.model_version,
        }
        await asyncio.wrap_future(future)
        return out

    def health(self) -> dict[str, Any]:
        return {**self.state.health(), "merged_generation": self.state.merged_generation}

    def snapshot(self) -> dict[str, Any]:
        meta = self.state.snapshot()
        return {k: meta[k] for k in ("seq", "model_version", "rewards_learned")}

    def base(self) -> bytes:
        return (self.state.folder.root / "base.pt").read_bytes()

    def merge_snapshot(self) -> bytes:
        return merge_snapshot(self.state)

    def absorb(self, merged: bytes, generation: int) -> int:
        return int(absorb(self.state, merged, generation)["seq"])

    def swap_network(self, version: int, network: dict[str, Any], t: int) -> None:
        swap_network(self.state, version, network, t)

    def ridge(self) -> dict[str, Any]:
        """The ridge statistics (for tests and checks)."""
        with self.state.lock:
            ridge = self.state.policy.ridge_
            return {"A": np.array(ridge.A), "b": np.array(ridge.b), "t": self.state.policy.t_}

    def close(self) -> None:
        self.state.close(snapshot=True)


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


@serve.deployment(
    num_replicas=1,
    max_ongoing_requests=1024,
    ray_actor_options=ACTOR_OPTIONS,
    logging_config=LOGGING,
)
@serve.ingress()
class Ingress:
    """The HTTP API (:func:`~deepbandits.serve.app.create_app`) over a :class:`RayBackend`."""

    def __init__(
        self,
        root: str,
        replicas: list[DeploymentHandle],
        merge_every: float | None,
        token: str | None,
        max_body_bytes: int = MAX_BODY_BYTES,
        allowed_hosts: list[str] | None = None,
    ) -> None:
        self.backend = RayBackend(root, replicas, merge_every)
        self.options: dict[str, Any] = {
            "token": token,
            "max_body_bytes": max_body_bytes,
            "allowed_hosts": allowed_hosts,
        }

    def __serve_build_asgi_app__(self) -> Any:
        return create_app(self.backend, **self.options)

    async def stop(self) -> None:
        """Stop the merge rounds and close every replica with a checkpoint."""
        await self.backend.stop()


def build_app(
    root: str | Path,
    spec: str | None,
    replicas: int,
    *,
    merge_every: float | None = 10.0,
    token: str | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    allowed_hosts: Iterable[str] | None = None,
    options: dict[str, Any] | None = None,
) -> Any:
    """The Serve application of ``replicas`` replicas of ``spec`` on the state folder ``root``
    (module notes); ``token``, ``max_body_bytes`` and ``allowed_hosts`` as for
    :func:`~deepbandits.serve.app.create_app`, ``options`` go to each :class:`ReplicaState`
    (durability, snapshot_every)."""
    if type(replicas) is not int or replicas < 1:
        raise InputValueError(f"replicas must be an integer >= 1, but {replicas!r} is given")
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    fixed = fixed_spec(root, spec, replicas)
    handles = [
        PolicyReplica.options(name=f"replica-{i}").bind(str(root), i, fixed, options or {})
        for i in range(replicas)
    ]
    hosts = None if allowed_hosts is None else sorted(allowed_hosts)
    return Ingress.options(name="ingress").bind(
        str(root), handles, merge_every, token, max_body_bytes, hosts
    )
