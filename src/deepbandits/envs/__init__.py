"""Environments and the registry behind their command-line names."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import partial
from typing import Any

from deepbandits._validation import check_choice, check_unknown_keys
from deepbandits.datasets import dataset_names
from deepbandits.envs.base import Environment, Holdout, Round
from deepbandits.envs.classification import ClassificationEnv
from deepbandits.envs.synthetic import REWARD_FUNCTIONS, SyntheticEnv

ENVS: dict[str, Callable[..., Environment]] = {
    **{name: partial(SyntheticEnv, name) for name in REWARD_FUNCTIONS},
    **{name: partial(ClassificationEnv.from_dataset, name) for name in dataset_names()},
    "classification": ClassificationEnv,
}


def env_names() -> list[str]:
    """Registry names accepted by :func:`make_env` and the CLI's ``--env``."""
    return list(ENVS)


def make_env(name: str, **params: Any) -> Environment:
    """Build an environment by registry name.

    ``make_env("h1", seed=0, noise="rising")``, ``make_env("mnist", data_dir=..., seed=0)``,
    ``make_env("classification", X=X, y=y, seed=0)`` for your own labelled data.
    """
    check_choice(name, "environment", ENVS)
    factory = ENVS[name]
    signature = inspect.signature(factory)
    allowed = [
        k
        for k, p in signature.parameters.items()
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if name in dataset_names():
        allowed += [k for k in inspect.signature(ClassificationEnv).parameters if k not in "Xy"]
    check_unknown_keys(params, allowed, f"environment {name!r}")
    return factory(**params)


__all__ = [
    "ENVS",
    "ClassificationEnv",
    "Environment",
    "Holdout",
    "Round",
    "SyntheticEnv",
    "env_names",
    "make_env",
]
