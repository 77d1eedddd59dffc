"""Runs described by value: a :class:`Job` (policy × environment × seed × T ...) with the content
hash of its configuration, and :func:`execute_job`, which computes it in whichever process
without writing anything.

What a sweep's ``device`` gives a job's policy (:func:`applied_device`: nothing to a policy
without a network) enters the hash, so that such a policy has the same hash on every device.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deepbandits._threads import pinned_threads
from deepbandits._version import __version__
from deepbandits.envs import Environment, make_env
from deepbandits.experiments.runner import run
from deepbandits.experiments.storage import RunResult
from deepbandits.policies import Policy, make_policy
from deepbandits.specs import parse_spec

#: Library version that enters every configuration hash (``major.minor``): results of another
#: minor version are not taken for this one's.
HASH_VERSION = ".".join(__version__.split(".")[:2])


@dataclass(frozen=True)
class Job:
    """One run of a sweep: ``policy_spec`` on ``env_spec`` with ``seed`` for ``T`` rounds, with
    hold-out forecasts at ``checkpoints`` (``holdout_size`` rounds), the neural networks on
    ``device`` (``None``: the policy's own default), its files at ``stem`` (``<stem>.json``,
    ``<stem>.csv`` ...).

    ``device`` enters the configuration hash as it is given: a sweep gives it only to the jobs
    it applies to (:func:`applied_device`), so that a policy without a network has the same
    hash on every device."""

    policy_spec: str
    env_spec: str
    seed: int
    T: int
    stem: Path
    checkpoints: tuple[int, ...] = ()
    holdout_size: int = 500
    device: str | None = None

    @property
    def identity(self) -> dict[str, Any]:
        """What the run's results depend on: every field but ``stem`` (``holdout_size`` only
        with checkpoints), and the library's ``major.minor`` version."""
        return {
            "policy": self.policy_spec,
            "env": self.env_spec,
            "seed": self.seed,
            "T": self.T,
            "checkpoints": list(self.checkpoints),
            "holdout_size": self.holdout_size if self.checkpoints else None,
            "device": self.device,
            "version": HASH_VERSION,
        }

    def execute(self, progress: bool = False) -> RunResult:
        """:func:`execute_job` of this job (the :class:`~deepbandits.experiments.executors.Task`
        protocol)."""
        return execute_job(self, progress)

    @property
    def config_hash(self) -> str:
        """The first 16 hexadecimal digits of the SHA-256 of :attr:`identity` as canonical
        JSON: two jobs with the same hash compute the same run."""
        return hash_identity(self.identity)


def hash_identity(identity: dict[str, Any]) -> str:
    """:attr:`Job.config_hash` of an :attr:`Job.identity`."""
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def identity_of(config: dict[str, Any]) -> dict[str, Any]:
    """The :attr:`Job.identity` a saved run's configuration records (``"job"``), or, for a run
    saved before identities were recorded, the one rebuilt from its specifications, seed, T,
    checkpoints, hold-out size and version (its device: the policy's default)."""
    recorded = config.get("job")
    if isinstance(recorded, dict):
        return recorded
    return {
        "policy": _spec(config, "policy"),
        "env": _spec(config, "env"),
        "seed": config.get("seed"),
        "T": config.get("T"),
        "checkpoints": list(config.get("checkpoints") or ()),
        "holdout_size": config.get("holdout_size"),
        "device": None,
        "version": ".".join(str(config.get("version", "")).split(".")[:2]),
    }


def _spec(config: dict[str, Any], part: str) -> Any:
    section = config.get(part)
    return section.get("spec") if isinstance(section, dict) else None


def applied_device(spec: str, device: str | None) -> str | None:
    """What ``device`` (a sweep's device, e.g. ``"cuda"``) gives the policy of ``spec``:
    ``device`` when the policy has a network (a ``device`` parameter) and ``spec`` names no
    device of its own, else ``None``."""
    if device is None:
        return None
    name, params = parse_spec(spec)
    return device if "device" not in params and "device" in make_policy(name).get_params() else None


def job_device(job: Job) -> str | None:
    """Where ``job``'s networks run: the device its policy specification names, else
    :func:`applied_device` of the job's device (``None``: no network, or the policy's default
    device, the CPU)."""
    own = parse_spec(job.policy_spec)[1].get("device")
    return str(own) if own is not None else applied_device(job.policy_spec, job.device)


def build_policy(spec: str, env: Environment | None, device: str | None = None) -> Policy:
    """The policy of ``spec`` with the environment's recommended settings
    (:func:`~deepbandits.policies.make_policy` with ``env``), its network on ``device`` when
    one is given, the policy has a network and ``spec`` names no device
    (:func:`applied_device`)."""
    name, params = parse_spec(spec)
    applied = applied_device(spec, device)
    if applied is not None:
        params["device"] = applied
    return make_policy(name, env=env, **params)


def build_env(spec: str, T: int | None = None) -> Environment:
    """The environment of ``spec``, with ``horizon=T`` unless ``spec`` gives one (or ``T`` is
    None), as every job builds it."""
    name, params = parse_spec(spec)
    if T is not None:
        params.setdefault("horizon", T)
    return make_env(name, **params)


def execute_job(job: Job, progress: bool = False) -> RunResult:
    """Compute ``job``'s run and return it, its configuration completed with the job's
    specifications, :attr:`~Job.identity` (``"job"``) and ``"config_hash"``; no file is
    written. Torch's and the BLAS's threads are pinned to one for the whole job; ``progress``
    shows a bar over its rounds."""
    with pinned_threads(1):
        env = build_env(job.env_spec, job.T)
        result = run(
            build_policy(job.policy_spec, env, job.device),
            env,
            job.T,
            seed=job.seed,
            progress=progress,
            checkpoints=job.checkpoints,
            holdout_size=job.holdout_size,
            threads=None,
        )
    result.config["policy"]["spec"] = job.policy_spec
    result.config["env"]["spec"] = job.env_spec
    result.config["job"] = job.identity
    result.config["config_hash"] = job.config_hash
    return result


__all__ = [
    "HASH_VERSION",
    "Job",
    "applied_device",
    "build_env",
    "build_policy",
    "execute_job",
    "hash_identity",
    "identity_of",
    "job_device",
]
