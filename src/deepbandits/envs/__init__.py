"""Environments and the registry behind their command-line names."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import partial
from typing import Any

from deepbandits._validation import check_choice, check_unknown_keys
from deepbandits.datasets import dataset_names
from deepbandits.envs.base import Environment, Holdout, Round
from deepbandits.envs.classification import DATASET_PREPROCESS, ClassificationEnv
from deepbandits.envs.keywords import keyword_table
from deepbandits.envs.preprocessing import PREPROCESSING, check_removed_keywords
from deepbandits.envs.synthetic import REWARD_FUNCTIONS, SyntheticEnv
from deepbandits.envs.table import TableError, TableFileNotFoundError, read_table, table_env
from deepbandits.errors import InputValueError

ENVS: dict[str, Callable[..., Environment]] = {
    **{name: partial(SyntheticEnv, name) for name in REWARD_FUNCTIONS},
    **{name: partial(ClassificationEnv.from_dataset, name) for name in dataset_names()},
    "classification": ClassificationEnv,
    "table": table_env,
}

#: Registry names whose factory builds a :class:`ClassificationEnv` and passes it the
#: constructor's keywords (``preprocess``, ``encoding``, ``seed``, ...).
CLASSIFICATION_ENVS = frozenset([*dataset_names(), "classification", "table"])


def env_names() -> list[str]:
    """Registry names accepted by :func:`make_env` and the CLI's ``--env``."""
    return list(ENVS)


def _keywords(factory: Callable[..., Any], exclude: tuple[str, ...] = ()) -> list[str]:
    return [
        k
        for k, p in inspect.signature(factory).parameters.items()
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and k not in exclude
    ]


def env_parameter_table(name: str) -> list[tuple[str, str, str, str]]:
    """Every keyword :func:`make_env` accepts for ``name``: keyword, default, type and range,
    and meaning (``deepbandits list --params NAME``), read by
    :func:`~deepbandits.envs.keywords.keyword_table`."""
    check_choice(name, "environment", ENVS)
    return keyword_table(ENVS[name], name in CLASSIFICATION_ENVS)


def make_env(name: str, **params: Any) -> Environment:
    """Build an environment by registry name.

    ``make_env("h1", seed=0, noise="rising")``, ``make_env("mnist", data_dir=..., seed=0)``,
    ``make_env("classification", X=X, y=y, seed=0)`` for your own labelled arrays,
    ``make_env("table", path="data.csv", label="class", categorical=["color"])`` for your own
    table file (``make_env("table", path="iris.data", label=-1)``: the label by position). The
    classification environments take ``preprocess`` ("standardize", "l2", "standardize+l2" or
    "none"; see :class:`ClassificationEnv`). A missing required keyword raises
    ``InputValueError`` naming it, its meaning and how to give it.
    """
    check_choice(name, "environment", ENVS)
    factory = ENVS[name]
    allowed = _keywords(factory)
    if name in CLASSIFICATION_ENVS:
        check_removed_keywords(params)
        allowed += _keywords(ClassificationEnv, exclude=("X", "y"))
    check_unknown_keys(params, allowed, f"environment {name!r}")
    _check_required(name, factory, params)
    return factory(**params)


def _check_required(name: str, factory: Callable[..., Any], params: dict[str, Any]) -> None:
    """Refuse a call of ``factory`` that misses a required keyword, naming each with its
    meaning and how to pass it (not Python's ``TypeError`` about the factory's signature)."""
    required = [
        k
        for k, p in inspect.signature(factory).parameters.items()
        if p.default is p.empty and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    missing = [k for k in required if k not in params]
    if not missing:
        return
    meanings = {row[0]: row[3] for row in env_parameter_table(name)}
    each = " and ".join(
        f"{k}= ({meanings[k][:1].lower() + meanings[k][1:]})"
        if meanings.get(k, "–") != "–"
        else f"{k}="
        for k in missing
    )
    given = ", ".join(f"{k}=..." for k in required)
    how = f"make_env({name!r}, {given})"
    if name != "classification":  # arrays cannot be given on the command line
        how += f"; on the command line --env {name}:{given.replace(', ', ',')}"
    raise InputValueError(f"environment {name!r} needs {each}: {how}")


__all__ = [
    "CLASSIFICATION_ENVS",
    "DATASET_PREPROCESS",
    "ENVS",
    "PREPROCESSING",
    "ClassificationEnv",
    "Environment",
    "Holdout",
    "Round",
    "SyntheticEnv",
    "TableError",
    "TableFileNotFoundError",
    "env_names",
    "env_parameter_table",
    "make_env",
    "read_table",
    "table_env",
]
