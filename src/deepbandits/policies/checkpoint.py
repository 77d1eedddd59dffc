"""Saved policies: the file format and the methods that write and read it
(:class:`Checkpointing`: ``state_dict``, ``load_state_dict``, ``save``; :func:`load_policy
<deepbandits.policies.registry.load_policy>` rebuilds a policy from a file).

A file is ``torch.save`` of a dict of plain values and tensors (the schema below; ``pending``,
the decisions awaiting their reward, is optional so that files written before decisions existed
load). It is read with ``torch.load(weights_only=True)``: loading a file never executes code.

Format 2 names the registry recipe that built the policy (``recipe``, with its keywords in
``params``) or, for a composition built by hand, the class and its parts; ``state`` is the union
of the parts' ``state_dict`` and the policy's own. Files of format 1 (each registry name a class,
before policies were built from parts) are converted on reading
(:mod:`deepbandits.policies.legacy`).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, Self

import numpy as np
import torch

from deepbandits._io import write_atomic
from deepbandits.errors import CheckpointError, CheckpointNotFoundError, DeepBanditsError
from deepbandits.policies.core import PolicyCore
from deepbandits.policies.legacy import upgrade
from deepbandits.policies.params import DECISION_DEFAULTS
from deepbandits.policies.transaction import atomic_whole

FORMAT_VERSION = 2


def to_saveable(obj: Any) -> Any:
    """Arrays become tensors; containers are walked; everything else must be a plain value."""
    if isinstance(obj, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(obj))
    if isinstance(obj, dict):
        return {k: to_saveable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_saveable(v) for v in obj]
    return obj


def jsonable(obj: Any) -> Any:
    """Arrays, tuples and numpy scalars as JSON values (parameters are stored as JSON)."""
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, tuple | list):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


#: The keys of a saved state and their types (the schema of format version 1).
SCHEMA: dict[str, type | tuple[type, ...]] = {
    "format": int,
    "class": str,
    "params": str,
    "rng": str,
    "t": int,
    "n_features_in": (int, type(None)),
    "state": dict,
}


def check_checkpoint(state: Any) -> None:
    """Check a saved state against the schema: keys, types, format version, JSON fields."""
    if not isinstance(state, dict):
        raise CheckpointError(f"a saved state must be a dict, but {type(state).__name__} is given")
    missing = sorted(set(SCHEMA) - set(state))
    if missing:
        raise CheckpointError(f"the saved state lacks {', '.join(missing)}")
    for key, kind in SCHEMA.items():
        if isinstance(state[key], bool) or not isinstance(state[key], kind):
            raise CheckpointError(
                f"the saved state's {key!r} must be {kind}, but {state[key]!r} is given"
            )
    if state["format"] not in (1, FORMAT_VERSION):
        raise CheckpointError(
            f"the saved state has format {state['format']}; this version reads format "
            f"{FORMAT_VERSION}"
        )
    if state["t"] < 0 or (state["n_features_in"] is not None and state["n_features_in"] < 1):
        raise CheckpointError(
            f"the saved state has t={state['t']}, n_features_in={state['n_features_in']}"
        )
    for key in ("params", "rng"):
        try:
            value = json.loads(state[key])
        except json.JSONDecodeError as exc:
            raise CheckpointError(f"the saved state's {key!r} is not valid JSON: {exc}") from None
        if not isinstance(value, dict):
            raise CheckpointError(f"the saved state's {key!r} must be a JSON object")


def read_checkpoint(path: Path) -> dict[str, Any]:
    """The checked state saved in ``path``; a file that is not one raises
    :class:`~deepbandits.errors.CheckpointError`."""
    try:
        state = torch.load(path, weights_only=True, map_location="cpu")
    except Exception as exc:
        raise CheckpointError(f"{path} is not a deepbandits policy file: {exc}") from None
    try:
        check_checkpoint(state)
    except CheckpointError as exc:
        raise CheckpointError(f"{path} is not a valid deepbandits policy file: {exc}") from None
    return state


def _json(obj: Any) -> Any:
    return json.loads(json.dumps(jsonable(obj)))


def _parts(policy: PolicyCore) -> dict[str, Any]:
    return {
        name: {"class": type(part).__name__, "params": jsonable(part.get_params())}
        for name, part in policy.parts.items()
    }


def _saved_params(
    policy: PolicyCore, state: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The saved parameters (with the defaults of any added since) and this policy's."""
    if policy.registry_name():
        mine = _json(policy.get_params(deep=False))
        defaults = _json(type(policy)().get_params(deep=False))
    else:  # a composition built by hand: the options every policy takes, added since
        mine, defaults = _json(policy._params), _json(DECISION_DEFAULTS)
    saved = {**{k: v for k, v in defaults.items() if k in mine}, **json.loads(state["params"])}
    if "parts" in state and not policy.registry_name():
        saved["parts"], mine["parts"] = json.loads(state["parts"]), _json(_parts(policy))
    return saved, mine


class Checkpointing(PolicyCore):
    """A policy's learned state as a dict and as a file."""

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly where this policy is: its parameters (the
        recipe's keywords, or the class and its parts), the generator, the counters, the union of
        the parts' state and the pending decisions."""
        recipe = self.registry_name()
        params = self.get_params(deep=False) if recipe else self._params
        return {
            "format": FORMAT_VERSION,
            "class": type(self).__name__,
            "recipe": recipe,
            "params": json.dumps(jsonable(params)),
            "parts": json.dumps(_parts(self)),
            "rng": json.dumps(self._rng.bit_generator.state),
            "t": self.t_,
            "n_features_in": self.n_features_in_,
            "block_dim": self.block_dim_,
            "state": self._state() if self.n_features_in_ is not None else {},
            "pending": self.pending_.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state produced by :meth:`state_dict` of a policy with the same parameters.

        The state is checked against its schema (format version, class, parameter names and
        values, round counter, generator state) and the saved parameters against this policy's
        (``device`` and ``threads`` may differ); anything that does not fit raises
        :class:`~deepbandits.errors.CheckpointError` and leaves this policy as it was.
        """
        check_checkpoint(state)
        state = upgrade(state)
        here = type(self).__name__
        saved_as = state.get("recipe") or state["class"]
        if saved_as != (self.registry_name() or here):
            raise CheckpointError(
                f"state was saved from {saved_as!r}, cannot load into "
                f"{self.registry_name() or here}"
            )
        saved, mine = _saved_params(self, state)
        differ = sorted(
            k
            for k in set(saved) | set(mine)
            if k not in ("device", "threads") and saved.get(k) != mine.get(k)
        )
        if differ:
            detail = "; ".join(f"{k}: saved {saved.get(k)!r}, here {mine.get(k)!r}" for k in differ)
            raise CheckpointError(
                f"state was saved by a {here} with other parameters ({detail}); build the policy "
                "with the saved parameters, or use load_policy"
            )
        try:
            with atomic_whole(self):
                self.reset()
                self._rng.bit_generator.state = json.loads(state["rng"])
                if state["n_features_in"] is not None:
                    self.n_features_in_ = int(state["n_features_in"])
                    block_dim = state.get("block_dim")  # files written before it have none
                    self.block_dim_ = None if block_dim is None else int(block_dim)
                    self._initialize(self._initial_contexts())
                    self._load_state(state["state"])
                self.t_ = int(state["t"])
                if "pending" in state:  # files written before decisions existed have none
                    self.pending_.load_state_dict(state["pending"])
        except DeepBanditsError:
            raise
        except Exception as exc:
            raise CheckpointError(
                f"the saved state of this {here} is damaged or incomplete: "
                f"{type(exc).__name__}: {exc}"
            ) from None

    @classmethod
    def load(cls, path: str | Path) -> Self:
        """Read a policy of this class written by :meth:`save`: a class that a registry name
        builds (``NeuralSigma2LinUCB.load(path)``) rebuilds it from the saved keywords. A file
        of another name, or of a composition built by hand (load it into the same composition
        with :meth:`load_state_dict` or ``load_policy(path, into=...)``), raises
        :class:`~deepbandits.errors.CheckpointError`."""
        path = Path(path)
        if not path.is_file():
            raise CheckpointNotFoundError(f"no saved policy at {path}")
        return cls.from_state(upgrade(read_checkpoint(path)), str(path))

    @classmethod
    def from_state(cls, state: dict[str, Any], source: str = "the saved state") -> Self:
        """The policy of a checked ``state`` (``state_dict()``'s, as :meth:`load` reads it
        from a file): rebuilt from the saved keywords, then loaded. ``source`` names it in
        errors."""
        held = state.get("recipe") or state["class"]
        if not cls.registry_name() or held != cls.registry_name():
            raise CheckpointError(
                f"{source} holds a {held} policy; {cls.__name__}.load reads files of "
                f"{cls.registry_name() or 'a registry name'} only"
            )
        params = json.loads(state["params"])
        for key, value in params.items():  # JSON has no tuples: a pair comes back a list
            spec = cls.param_specs.get(key)
            if spec is not None and spec.kind == "pair" and isinstance(value, list):
                params[key] = tuple(value)
        try:
            policy = cls(**params)
        except (DeepBanditsError, TypeError, ValueError) as exc:
            raise CheckpointError(f"{source} holds invalid {held} parameters: {exc}") from None
        try:
            policy.load_state_dict(state)
        except CheckpointError as exc:
            raise CheckpointError(f"{source}: {exc}") from None
        return policy

    def save(self, path: str | Path) -> None:
        """Write parameters and learned state to ``path`` (tensors + JSON, no code).

        The file is written atomically: a kill during a save leaves the previous file intact.
        """
        buffer = io.BytesIO()
        torch.save(to_saveable(self.state_dict()), buffer)
        write_atomic(path, buffer.getvalue())
