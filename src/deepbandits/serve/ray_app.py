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
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from ray import serve
from ray.serve.handle import DeploymentHandle
from threadpoolctl import threadpool_limits

from deepbandits._io import write_atomic
from deepbandits.errors import InputValueError
from deepbandits.serve import MAX_BODY_BYTES
from deepbandits.serve.app import create_app
from deepbandits.serve.backend import Decided
from deepbandits.serve.ray_backend import RayBackend
from deepbandits.serve.replicas import (
    ReplicaState,
    absorb,
    merge_snapshot,
    swap_network,
)
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
#: millisecond and waits for its commit asynchronously). Measured with benchmarks/serve_load.py
#: on a 2-core machine, neither this nor LOGGING moved the rate beyond the runs' noise.
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
