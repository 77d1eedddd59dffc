"""Environments and the registry behind their command-line names."""

from __future__ import annotations

import inspect
from functools import partial
from typing import Any

from deepbandits._validation import check_choice, check_unknown_keys
from deepbandits.envs.base import Environment, Round
from deepbandits.envs.synthetic import REWARD_FUNCTIONS, SyntheticEnv

ENVS: dict[str, Any] = {name: partial(SyntheticEnv, name) for name in REWARD_FUNCTIONS}


def env_names() -> list[str]:
    """Registry names accepted by :func:`make_env` and the CLI's ``--env``."""
    return list(ENVS)


def make_env(name: str, **params: Any) -> Environment:
    """Build an environment by registry name, e.g. ``make_env("h1", seed=0, noise="rising")``."""
    check_choice(name, "environment", ENVS)
    allowed = [k for k in inspect.signature(SyntheticEnv).parameters if k != "reward_fn"]
    check_unknown_keys(params, allowed, f"environment {name!r}")
    return ENVS[name](**params)


__all__ = ["ENVS", "Environment", "Round", "SyntheticEnv", "env_names", "make_env"]
