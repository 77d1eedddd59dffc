"""Saved policies: the file format, :meth:`Policy.state_dict` / ``load_state_dict`` /
``save`` and :func:`load_policy`.

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
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from deepbandits._io import write_atomic
from deepbandits.errors import CheckpointError, DeepBanditsError
from deepbandits.policies.legacy import upgrade
from deepbandits.policies.params import DECISION_DEFAULTS
from deepbandits.policies.transaction import atomic_whole

if TYPE_CHECKING:
    from deepbandits.policies.hooks import PolicyCore

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


def state_dict(policy: PolicyCore) -> dict[str, Any]:
    """Everything needed to continue exactly where this policy is: its parameters (the
    recipe's keywords, or the class and its parts), the generator, the counters, the union of
    the parts' state and the pending decisions."""
    recipe = policy.recipe_.name if policy.recipe_ is not None else ""
    params = policy.get_params() if recipe else policy._params
    return {
        "format": FORMAT_VERSION,
        "class": type(policy).__name__,
        "recipe": recipe,
        "params": json.dumps(jsonable(params)),
        "parts": json.dumps(_parts(policy)),
        "rng": json.dumps(policy._rng.bit_generator.state),
        "t": policy.t_,
        "n_features_in": policy.n_features_in_,
        "block_dim": policy.block_dim_,
        "state": policy._state() if policy.n_features_in_ is not None else {},
        "pending": policy.pending_.state_dict(),
    }


def _saved_params(
    policy: PolicyCore, state: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The saved parameters (with the defaults of any added since) and this policy's."""
    if policy.recipe_ is not None:
        mine = _json(policy.get_params())
        defaults = _json(policy.recipe_.build({}).get_params())
    else:  # a composition built by hand: the options every policy takes, added since
        mine, defaults = _json(policy._params), _json(DECISION_DEFAULTS)
    saved = {**{k: v for k, v in defaults.items() if k in mine}, **json.loads(state["params"])}
    if "parts" in state and policy.recipe_ is None:
        saved["parts"], mine["parts"] = json.loads(state["parts"]), _json(_parts(policy))
    return saved, mine


def load_state_dict(policy: PolicyCore, state: dict[str, Any]) -> None:
    """Restore a state produced by :meth:`state_dict` of a policy with the same parameters.

    The state is checked against its schema (format version, class, parameter names and
    values, round counter, generator state) and the saved parameters against this policy's
    (``device`` may differ); anything that does not fit raises
    :class:`~deepbandits.errors.CheckpointError` and leaves this policy as it was.
    """
    check_checkpoint(state)
    state = upgrade(state)
    here = type(policy).__name__
    if state["class"] != here or state.get("recipe", "") != (
        policy.recipe_.name if policy.recipe_ is not None else ""
    ):
        raise CheckpointError(
            f"state was saved from {state.get('recipe') or state['class']!r}, cannot load into "
            f"{policy.recipe_.name if policy.recipe_ is not None else here}"
        )
    saved, mine = _saved_params(policy, state)
    differ = sorted(
        k for k in set(saved) | set(mine) if k != "device" and saved.get(k) != mine.get(k)
    )
    if differ:
        detail = "; ".join(f"{k}: saved {saved.get(k)!r}, here {mine.get(k)!r}" for k in differ)
        raise CheckpointError(
            f"state was saved by a {here} with other parameters ({detail}); build the policy "
            "with the saved parameters, or use load_policy"
        )
    try:
        with atomic_whole(policy):
            policy.reset()
            policy._rng.bit_generator.state = json.loads(state["rng"])
            if state["n_features_in"] is not None:
                policy.n_features_in_ = int(state["n_features_in"])
                block_dim = state.get("block_dim")  # files written before it have none
                policy.block_dim_ = None if block_dim is None else int(block_dim)
                policy._initialize(policy._initial_contexts())
                policy._load_state(state["state"])
            policy.t_ = int(state["t"])
            if "pending" in state:  # files written before decisions existed have none
                policy.pending_.load_state_dict(state["pending"])
    except DeepBanditsError:
        raise
    except Exception as exc:
        raise CheckpointError(
            f"the saved state of this {here} is damaged or incomplete: {type(exc).__name__}: {exc}"
        ) from None


def save(policy: PolicyCore, path: str | Path) -> None:
    """Write parameters and learned state to ``path`` (tensors + JSON, no code).

    The file is written atomically: a kill during a save leaves the previous file intact.
    """
    buffer = io.BytesIO()
    torch.save(to_saveable(policy.state_dict()), buffer)
    write_atomic(path, buffer.getvalue())
