"""``deepbandits serve --backend ray``: one policy served by several replicas on Ray Serve.

The Serve application has one deployment per replica (``replica-0`` … ``replica-{N-1}``, one Serve
replica each, so that a reward can be sent to the replica that made its decision) and an ingress
deployment (``ingress``) with the HTTP API of :mod:`deepbandits.serve.app`:

* ``POST /v1/decide`` and ``/v1/decide_batch`` go to the replicas in turn; each replica decides
  and logs on its own, in its own state folder ``STATE/replica-<i>`` (a
  :class:`~deepbandits.serve.replicas.ReplicaState`: the event log, checkpoints and recovery of
  a single service), and answers once its log committed the decision. A decision's id is
  ``"<i>:<the replica's id>"``;
* ``POST /v1/reward`` goes to replica ``i`` of the id;
* ``POST /v1/merge`` runs a merge round now (:mod:`deepbandits.serve.replicas`); the ingress runs
  one every ``merge_every`` seconds. The merged state is written to ``STATE/merged/`` (policy file
  and sidecar) before the replicas absorb it, and each replica checkpoints after absorbing;
* ``GET /v1/health``: every replica's health, the merge generation, the network version.

Every replica starts from the same policy: the spec with one seed for all (drawn once, kept in
``STATE/ray.json``).
"""

# no ``from __future__ import annotations``: FastAPI reads the routes' annotations as types

import asyncio
import json
import logging
import os
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from fastapi import FastAPI, Request
from fastapi.responses import Response
from ray import serve
from ray.serve.handle import DeploymentHandle
from threadpoolctl import threadpool_limits

from deepbandits._io import write_atomic
from deepbandits.errors import (
    AuthenticationError,
    DeepBanditsError,
    InputValueError,
    PayloadTooLargeError,
    ServiceError,
    UnknownDecisionError,
)
from deepbandits.experiments.specs import parse_spec
from deepbandits.serve import MAX_BODY_BYTES
from deepbandits.serve.answers import decision_out, dumps, status_of
from deepbandits.serve.replicas import (
    MergeRounds,
    ReplicaState,
    absorb,
    merge_snapshot,
    swap_network,
)
from deepbandits.serve.schemas import DecideBatchRequest, DecideRequest, RewardRequest
from deepbandits.serve.store import policy_bytes, sha256

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


@serve.deployment(num_replicas=1, max_ongoing_requests=256, ray_actor_options={"num_cpus": 0})
class PolicyReplica:
    """Replica ``index``: a :class:`ReplicaState` on ``STATE/replica-<index>``."""

    def __init__(self, root: str, index: int, spec: str, options: dict[str, Any]) -> None:
        torch.set_num_threads(1)
        threadpool_limits(limits=1, user_api="blas")  # as the foreground server (serve.server)
        self.index = index
        self.state = ReplicaState(Path(root) / f"replica-{index}", policy=spec, **options)

    def _id(self, decision_id: str) -> str:
        return f"{self.index}:{decision_id}"

    async def decide(self, contexts: Any, mask: Any) -> dict[str, Any]:
        decision, future = self.state.decide(contexts, mask)
        out = decision_out(decision, self.state.model_version)
        await asyncio.wrap_future(future)
        out["decision_id"] = self._id(decision.id)
        return out

    async def decide_batch(self, contexts: list[Any], masks: list[Any]) -> list[dict[str, Any]]:
        decisions, future = self.state.decide_batch(contexts, masks)
        version = self.state.model_version
        outs = [{**decision_out(d, version), "decision_id": self._id(d.id)} for d in decisions]
        await asyncio.wrap_future(future)
        return outs

    async def learn(
        self, decision_id: str, reward: Any, bounds: Any, sigma2: Any
    ) -> dict[str, Any]:
        learned, future = self.state.learn(decision_id, reward, reward_range=bounds, sigma2=sigma2)
        await asyncio.wrap_future(future)
        return {"rewards_learned": self.state.policy.t_, "sigma2": learned.sigma2}

    def health(self) -> dict[str, Any]:
        return {**self.state.health(), "merged_generation": self.state.merged_generation}

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


def _error(exc: BaseException) -> Response:
    cause = getattr(exc, "cause", None) or exc  # a RayTaskError carries the replica's error
    if not isinstance(cause, DeepBanditsError):
        LOG.error("a replica failed: %s", exc)
        return Response(dumps({"detail": str(cause), "error": "ServiceError"}), 503)
    body = {"detail": str(cause), "error": type(cause).__name__}
    return Response(dumps(body), status_of(cause), media_type="application/json")


def _json(obj: Any) -> Response:
    return Response(dumps(obj), media_type="application/json")


api = FastAPI(title="deepbandits decision service (Ray Serve replicas)")


@serve.deployment(num_replicas=1, ray_actor_options={"num_cpus": 0})
@serve.ingress(api)
class Ingress:
    """The HTTP API over the replicas' handles; runs the merge rounds (module notes)."""

    def __init__(
        self,
        root: str,
        replicas: list[DeploymentHandle],
        merge_every: float | None,
        token: str | None,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        self.root = Path(root)
        self.replicas = replicas
        self.merge_every = merge_every
        self.expected = None if token is None else f"Bearer {token}"
        self.max_body_bytes = max_body_bytes
        self.turn = 0
        self.rounds: MergeRounds | None = None
        self.paused: str | None = None
        self.lock = asyncio.Lock()
        self.merge_seconds: list[float] = []
        self.loop: asyncio.Task[None] | None = None

    def _check(self, request: Request) -> None:
        if self.expected is not None:
            given = request.headers.get("authorization", "")
            if not secrets.compare_digest(given.encode(), self.expected.encode()):
                raise AuthenticationError("a bearer token is required (Authorization: Bearer T)")
        size = int(request.headers.get("content-length") or 0)
        if size > self.max_body_bytes:
            raise PayloadTooLargeError(f"the body has {size} bytes, above {self.max_body_bytes}")

    async def _call(self, request: Request | None, work: Callable[[], Any]) -> Response:
        if self.merge_every and self.loop is None:  # the periodic rounds, from the first request
            self.loop = asyncio.get_running_loop().create_task(self._merge_forever())
        try:
            if request is not None:
                self._check(request)
            return _json(await work())
        except AuthenticationError as exc:
            return Response(dumps({"detail": str(exc), "error": "AuthenticationError"}), 401)
        except PayloadTooLargeError as exc:
            return Response(dumps({"detail": str(exc), "error": "PayloadTooLargeError"}), 413)
        except Exception as exc:
            return _error(exc)

    def _next(self) -> DeploymentHandle:
        self.turn = (self.turn + 1) % len(self.replicas)
        return self.replicas[self.turn]

    @api.post("/v1/decide")
    async def decide(self, body: DecideRequest, request: Request) -> Response:
        async def work() -> Any:
            return await self._next().decide.remote(body.contexts, body.mask)

        return await self._call(request, work)

    @api.post("/v1/decide_batch")
    async def decide_batch(self, body: DecideBatchRequest, request: Request) -> Response:
        async def work() -> Any:
            if not body.requests:
                raise InputValueError("requests must hold at least one request, but 0 are given")
            contexts = [r.contexts for r in body.requests]
            masks = [r.mask for r in body.requests]
            return {"decisions": await self._next().decide_batch.remote(contexts, masks)}

        return await self._call(request, work)

    @api.post("/v1/reward")
    async def reward(self, body: RewardRequest, request: Request) -> Response:
        async def work() -> Any:
            index, _, inner = body.decision_id.partition(":")
            if not index.isdigit() or int(index) >= len(self.replicas):
                raise UnknownDecisionError(f"no decision has the id {body.decision_id!r}")
            replica = self.replicas[int(index)]
            out = await replica.learn.remote(inner, body.reward, body.reward_range, body.sigma2)
            return {"decision_id": body.decision_id, **out}

        return await self._call(request, work)

    @api.get("/v1/health")
    async def health(self) -> Response:
        async def work() -> Any:
            replicas = await asyncio.gather(*(r.health.remote() for r in self.replicas))
            return {
                "status": "ok" if all(h["status"] == "ok" for h in replicas) else "degraded",
                "events": sum(h["events"] for h in replicas),
                "generation": 0 if self.rounds is None else self.rounds.generation,
                "model_version": max(h["model_version"] for h in replicas),
                "merge_every": self.merge_every,
                "merge_seconds": self.merge_seconds[-20:],
                "merges_paused": self.paused,
                "replicas": replicas,
            }

        return await self._call(None, work)

    @api.post("/v1/merge")
    async def merge(self, request: Request) -> Response:
        return await self._call(request, self.merge_round)

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
            rounds = MergeRounds(await self.replicas[0].base.remote())
        healths = await asyncio.gather(*(r.health.remote() for r in self.replicas))
        seen = {h["merged_generation"] for h in healths} | {rounds.generation}
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
        await asyncio.gather(*(r.close.remote() for r in self.replicas))

    async def merge_round(self) -> dict[str, Any]:
        """One merge round (and a training of the merged network when it is due)."""
        async with self.lock:
            if self.rounds is None:
                self.rounds = await self._start_rounds()
            if self.paused:
                raise ServiceError(self.paused)
            start = time.perf_counter()
            rounds = self.rounds
            snapshots = await asyncio.gather(*(r.merge_snapshot.remote() for r in self.replicas))
            merged = await asyncio.to_thread(rounds.merge, list(snapshots))
            network = None
            if rounds.training_due():
                network = await asyncio.to_thread(rounds.train)
            self._save(merged if network is None else None, rounds)
            generation = rounds.generation
            await asyncio.gather(*(r.absorb.remote(merged, generation) for r in self.replicas))
            if network is not None:
                version, t = rounds.model_version, rounds.trained_at
                await asyncio.gather(
                    *(r.swap_network.remote(version, network, t) for r in self.replicas)
                )
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
                await self.merge_round()
            except Exception as exc:
                LOG.warning("a merge round failed: %s", exc)


def build_app(
    root: str | Path,
    spec: str | None,
    replicas: int,
    *,
    merge_every: float | None = 10.0,
    token: str | None = None,
    options: dict[str, Any] | None = None,
) -> Any:
    """The Serve application of ``replicas`` replicas of ``spec`` on the state folder ``root``
    (module notes); ``options`` go to each :class:`ReplicaState` (durability, snapshot_every)."""
    if type(replicas) is not int or replicas < 1:
        raise InputValueError(f"replicas must be an integer >= 1, but {replicas!r} is given")
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    fixed = fixed_spec(root, spec, replicas)
    handles = [
        PolicyReplica.options(name=f"replica-{i}").bind(str(root), i, fixed, options or {})
        for i in range(replicas)
    ]
    return Ingress.options(name="ingress").bind(str(root), handles, merge_every, token)
