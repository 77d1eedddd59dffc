"""The file format of a saved policy: what :meth:`~deepbandits.policies.base.Policy.save` writes
and :func:`~deepbandits.policies.base.load_policy` reads.

A file is ``torch.save`` of a dict of plain values and tensors (format version 1, the schema
below; ``pending``, the decisions awaiting their reward, is optional so that files written before
decisions existed load). It is read with ``torch.load(weights_only=True)``: loading a file never
executes code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

from deepbandits.errors import CheckpointError

FORMAT_VERSION = 1


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
    if state["format"] != FORMAT_VERSION:
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
