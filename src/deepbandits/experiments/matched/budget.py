"""The network and training budget each policy of the matched protocol runs with, and the check
that every policy of an environment runs with the same."""

from __future__ import annotations

from typing import Any

from deepbandits.envs import Environment
from deepbandits.errors import InputValueError
from deepbandits.policies import make_policy
from deepbandits.specs import parse_spec

#: Resolved training settings that must be equal across the policies of one environment.
BUDGET_KEYS = (
    "hidden",
    "n_layers",
    "optimizer",
    "weight_decay",
    "max_grad_norm",
    "train_every",
    "train_start",
    "warmup_every",
    "train_steps",
    "batch_size",
    "trainings",
    "sample_gradients",
)


def training_budget(policy_spec: str, env: Environment, T: int) -> dict[str, Any]:
    """The network and training schedule ``policy_spec`` runs with on ``env`` for ``T`` rounds
    (built as every run builds it, with the environment's recommended settings).

    Returns
    -------
    dict
        :data:`BUDGET_KEYS` (``trainings``: trainings in ``T`` rounds; ``sample_gradients``:
        Σ over the trainings of their steps × minibatch size), plus ``feature_dim`` for policies
        with a feature layer.
    """
    name, params = parse_spec(policy_spec)
    policy = make_policy(name, env=env, **params)
    p = policy.get_params()
    schedule = policy.train_schedule_  # type: ignore[attr-defined]
    trainings = schedule.n_trainings(T)
    budget = {k: p[k] for k in ("hidden", "n_layers", "optimizer", "weight_decay", "max_grad_norm")}
    budget.update(
        train_every=schedule.train_every,
        train_start=schedule.train_start,
        warmup_every=schedule.warmup_every,
        train_steps=schedule.train_steps,
        batch_size=schedule.batch_size,
        trainings=trainings,
        sample_gradients=schedule.sample_gradients(T),
    )
    if "feature_dim" in p:
        budget["feature_dim"] = p["feature_dim"]
    return budget


def common_budget(budgets: dict[str, dict[str, Any]], env_spec: str) -> dict[str, Any]:
    """The budget shared by every policy; raises when two policies differ in any of it."""
    first = next(iter(budgets))
    for spec, budget in budgets.items():
        for key in (*BUDGET_KEYS, "feature_dim"):
            if key in budget and key in budgets[first] and budget[key] != budgets[first][key]:
                raise InputValueError(
                    f"unequal training budget on {env_spec}: {first} has {key}="
                    f"{budgets[first][key]!r}, {spec} has {key}={budget[key]!r}"
                )
    common = {k: budgets[first][k] for k in BUDGET_KEYS}
    dims = {b["feature_dim"] for b in budgets.values() if "feature_dim" in b}
    if dims:
        common["feature_dim"] = dims.pop()
    return common


__all__ = ["BUDGET_KEYS", "common_budget", "training_budget"]
