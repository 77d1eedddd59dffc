"""The files of a decision service's state folder, apart from the event log.

::

    STATE/
      service.json            what the folder serves (policy spec or source checkpoint), created
      events.sqlite           the event log (deepbandits.serve.log)
      base.pt, base.json      the policy as it was when the folder was created (event 0)
      base.experiment.pt      the experiment (control group, challengers) at event 0, if any
      checkpoints/            ckpt-<seq>.pt + ckpt-<seq>.json: the newest two snapshots, and
                              ckpt-<seq>.experiment.pt with a control group or challengers
      networks/               net-<version>.pt: each network version swapped in by training

Every file is written through :func:`~deepbandits._io.write_atomic`; a checkpoint is the
policy's file (``policy.save``'s format: tensors and JSON, read with ``weights_only=True``) and a
JSON sidecar naming the last event it includes, the network version, a training still due,
the file's SHA-256 and the folder's id (``folder_id``, from ``service.json``).
:meth:`StateFolder.load_newest` loads the newest checkpoint of this folder whose file matches
its checksum and loads; a damaged one, or one of another folder, is reported and the previous
one (then the base) is used. A sidecar without ``folder_id`` (written by an older version) is
taken as the folder's.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import time
from pathlib import Path
from typing import Any

import torch

from deepbandits._io import write_atomic
from deepbandits.errors import CheckpointError, DeepBanditsError, EventLogError
from deepbandits.policies import Policy, load_policy
from deepbandits.policies.checkpoint import to_saveable

SERVICE_FILE = "service.json"
LOG_FILE = "events.sqlite"
KEEP = 2
#: The suffix of a checkpoint's experiment file (:mod:`deepbandits.serve.experiment`).
EXPERIMENT_SUFFIX = ".experiment.pt"
LOG = logging.getLogger("deepbandits.serve")


def policy_bytes(policy: Policy) -> bytes:
    """The policy's file (``policy.save``'s bytes), made in memory."""
    buffer = io.BytesIO()
    torch.save(to_saveable(policy.state_dict()), buffer)
    return buffer.getvalue()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class StateFolder:
    """The state folder ``root`` (module notes)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.checkpoints = self.root / "checkpoints"
        self.networks = self.root / "networks"
        #: The folder's id, once known (:func:`deepbandits.serve.recovery.open_log`).
        self.id: str | None = None

    @property
    def log_path(self) -> Path:
        return self.root / LOG_FILE

    # ------------------------------------------------------------------ service.json
    def read_service(self) -> dict[str, Any] | None:
        """What the folder serves, or None for a new folder."""
        path = self.root / SERVICE_FILE
        if not path.exists():
            if self.log_path.exists():
                raise EventLogError(
                    f"{self.root} holds an event log but no {SERVICE_FILE}: it was not created "
                    "by deepbandits serve, or that file was removed"
                )
            return None
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise EventLogError(f"{path} cannot be read: {exc}") from None
        if not isinstance(info, dict) or "policy" not in info:
            raise EventLogError(f"{path} is not a deepbandits service description")
        return info

    def write_service(self, info: dict[str, Any]) -> None:
        write_atomic(self.root / SERVICE_FILE, json.dumps(info, indent=2) + "\n")

    # ------------------------------------------------------------------ checkpoints
    def save_checkpoint(
        self,
        data: bytes,
        meta: dict[str, Any],
        *,
        base: bool = False,
        experiment: bytes | None = None,
    ) -> Path:
        """Write a checkpoint (the policy file ``data``, the file of the service's
        experiment ``experiment`` when given, and the sidecar ``meta`` plus the files' names
        and checksums and the folder's id); keep the newest :data:`KEEP`. Returns the
        sidecar's path."""
        if base:
            pt, sidecar = self.root / "base.pt", self.root / "base.json"
        else:
            stem = f"ckpt-{int(meta['seq']):012d}"
            pt, sidecar = self.checkpoints / f"{stem}.pt", self.checkpoints / f"{stem}.json"
        write_atomic(pt, data)
        full = {
            **meta,
            "file": str(pt.relative_to(self.root)),
            "sha256": sha256(data),
            "folder_id": self.id,
        }
        if experiment is not None:
            extra = sidecar.with_suffix(EXPERIMENT_SUFFIX)
            write_atomic(extra, experiment)
            full["experiment"] = {
                "file": str(extra.relative_to(self.root)),
                "sha256": sha256(experiment),
            }
        write_atomic(sidecar, json.dumps(full, indent=2) + "\n")
        if not base:
            for old in self.sidecars()[KEEP:]:
                old.with_suffix(".pt").unlink(missing_ok=True)
                old.with_suffix(EXPERIMENT_SUFFIX).unlink(missing_ok=True)
                old.unlink(missing_ok=True)
        return sidecar

    def sidecars(self) -> list[Path]:
        """The checkpoints' sidecars, newest first (the base not included)."""
        if not self.checkpoints.is_dir():
            return []
        return sorted(self.checkpoints.glob("ckpt-*.json"), reverse=True)

    def _read_sidecar(self, sidecar: Path) -> dict[str, Any]:
        try:
            meta: dict[str, Any] = json.loads(sidecar.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CheckpointError(f"{sidecar.name} cannot be read: {exc}") from None
        if not isinstance(meta, dict):
            raise CheckpointError(f"{sidecar.name} is not a checkpoint's sidecar (a JSON object)")
        return meta

    def _load(self, sidecar: Path, meta: dict[str, Any]) -> Policy:
        try:
            pt = self.root / meta["file"]
            data = pt.read_bytes()
        except (OSError, KeyError, TypeError) as exc:
            raise CheckpointError(f"{sidecar.name} cannot be read: {exc}") from None
        if sha256(data) != meta.get("sha256"):
            raise CheckpointError(f"{pt.name} does not match the checksum in {sidecar.name}")
        self.read_experiment(meta)  # a checkpoint whose experiment is damaged is damaged
        return load_policy(pt)

    def read_experiment(self, meta: dict[str, Any]) -> bytes | None:
        """The bytes of the experiment file a checkpoint's sidecar ``meta`` names, checked
        against its checksum (None when it names none)."""
        entry = meta.get("experiment")
        if entry is None:
            return None
        try:
            data = (self.root / entry["file"]).read_bytes()
        except (OSError, KeyError, TypeError) as exc:
            raise CheckpointError(
                f"the experiment file of a checkpoint cannot be read: {exc}"
            ) from None
        if sha256(data) != entry.get("sha256"):
            raise CheckpointError(f"{entry['file']} does not match the checksum in its sidecar")
        return data

    def load_newest(self, notes: list[str]) -> tuple[Policy, dict[str, Any]] | None:
        """The newest checkpoint of this folder that loads (then the base), with its sidecar;
        each damaged one, and each of another folder, is added to ``notes`` and logged. None
        when none loads."""
        candidates = [*self.sidecars(), self.root / "base.json"]
        for sidecar in candidates:
            if not sidecar.exists():
                continue
            try:
                meta = self._read_sidecar(sidecar)
                theirs = meta.get("folder_id", self.id)
                if theirs != self.id:
                    note = (
                        f"checkpoint {sidecar.name} belongs to another state folder (id {theirs}),"
                        f" not this one (id {self.id}), and was skipped"
                    )
                else:
                    return self._load(sidecar, meta), meta
            except DeepBanditsError as exc:
                note = f"checkpoint {sidecar.name} is damaged and was skipped: {exc}"
            notes.append(note)
            LOG.warning(note)
        return None

    # ------------------------------------------------------------------ networks
    def write_network(self, version: int, state: dict[str, Any]) -> tuple[str, str]:
        """Write a network version (weights, optimizer, generator, counters); returns its file
        (relative to the folder) and checksum."""
        buffer = io.BytesIO()
        torch.save(state, buffer)
        data = buffer.getvalue()
        path = self.networks / f"net-{version:06d}.pt"
        write_atomic(path, data)
        return str(path.relative_to(self.root)), sha256(data)

    def read_network(self, file: str, checksum: str) -> dict[str, Any]:
        """A network version written by :meth:`write_network`, checked against its checksum."""
        path = self.root / file
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise EventLogError(f"network file {path} cannot be read: {exc}") from None
        if sha256(data) != checksum:
            raise EventLogError(f"network file {path} does not match its checksum in the log")
        state: dict[str, Any] = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
        return state


def describe_meta(meta: dict[str, Any]) -> str:
    """A checkpoint in a few words (for messages)."""
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(meta.get("time", 0.0))))
    return f"{meta.get('file')} (event {meta.get('seq')}, written {when})"
