"""Bandit policies and the registry behind their command-line names."""

from __future__ import annotations

from typing import Any

from deepbandits._validation import check_choice
from deepbandits.policies.base import Policy, load_policy
from deepbandits.policies.linucb import LinUCB, Sigma2LinUCB
from deepbandits.policies.neural_linear import (
    NeuralLinearBandit,
    NeuralLinGreedy,
    NeuralLinUCB,
    NeuralSigma2LinUCB,
)

POLICIES: dict[str, type[Policy]] = {
    "linucb": LinUCB,
    "sigma2-linucb": Sigma2LinUCB,
    "neural-lingreedy": NeuralLinGreedy,
    "neural-linucb": NeuralLinUCB,
    "neural-sigma2-linucb": NeuralSigma2LinUCB,
}


def policy_names() -> list[str]:
    """Registry names accepted by :func:`make_policy` and the CLI's ``--policy``."""
    return list(POLICIES)


def make_policy(name: str, **params: Any) -> Policy:
    """Build a policy by registry name, e.g. ``make_policy("linucb", per_arm=True)``."""
    check_choice(name, "policy", POLICIES)
    return POLICIES[name](**params)


__all__ = [
    "POLICIES",
    "LinUCB",
    "NeuralLinGreedy",
    "NeuralLinUCB",
    "NeuralLinearBandit",
    "NeuralSigma2LinUCB",
    "Policy",
    "Sigma2LinUCB",
    "load_policy",
    "make_policy",
    "policy_names",
]
