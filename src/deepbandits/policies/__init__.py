"""Bandit policies: the parts they are built from, the classes that compose them, and the
registry of names.

A policy is a composition: :class:`RidgeUCB` takes a feature map, a ridge head, a variance source,
an exploration rule and (for neural features) a trainer (:mod:`deepbandits.policies.parts`).
Every registry name is a :class:`Recipe` whose class takes the name's keywords and builds the
composition they describe (``LinUCB(alpha=0.1)`` is ``make_policy("linucb", alpha=0.1)``);
:data:`CONFIGURATIONS` are named settings of them.
"""

from __future__ import annotations

from deepbandits.policies.bootstrapped import BootstrappedNN
from deepbandits.policies.decision import Decision
from deepbandits.policies.evaluation import Evaluation, Learned, Observation
from deepbandits.policies.kernel_ucb import KernelUCB
from deepbandits.policies.named import NamedPolicy
from deepbandits.policies.neural_ucb import NeuralGradientBandit
from deepbandits.policies.params import Spec, render_spec
from deepbandits.policies.parts import (
    UCB,
    Exploration,
    ExplorationRule,
    Greedy,
    IdentityFeatures,
    LayeredSearch,
    NetworkFeatures,
    NoWeighting,
    OracleVariance,
    Part,
    PredictiveVariance,
    RangeBound,
    RidgeHead,
    ScheduledVariance,
    Thompson,
    Trainer,
)
from deepbandits.policies.pending import PendingDecisions
from deepbandits.policies.policy import Policy
from deepbandits.policies.recipes import builtin_recipes
from deepbandits.policies.registry import (
    CONFIGURATIONS,
    POLICIES,
    PolicyInfo,
    Recipe,
    distinct_policy_names,
    load_policy,
    make_policy,
    parameter_names,
    parameter_table,
    policy_info,
    policy_names,
    register_policy,
)
from deepbandits.policies.ridge_ucb import RidgeUCB

POLICIES.update(builtin_recipes())

# The classes of the registry's names, under the names of the paper's methods: each takes its
# name's keywords (``LinUCB(alpha=0.1)`` is ``make_policy("linucb", alpha=0.1)``).
LinUCB = POLICIES["linucb"].policy_class
Sigma2LinUCB = POLICIES["sigma2-linucb"].policy_class
NeuralUCB = POLICIES["neural-ucb"].policy_class
NeuralTS = POLICIES["neural-ts"].policy_class
NeuralLinGreedy = POLICIES["neural-lingreedy"].policy_class
NeuralLinUCB = POLICIES["neural-linucb"].policy_class
NeuralSigma2LinUCB = POLICIES["neural-sigma2-linucb"].policy_class
SaveNeuralLinUCB = POLICIES["save-neural-linucb"].policy_class

__all__ = [
    "CONFIGURATIONS",
    "POLICIES",
    "UCB",
    "BootstrappedNN",
    "Decision",
    "Evaluation",
    "Exploration",
    "ExplorationRule",
    "Greedy",
    "IdentityFeatures",
    "KernelUCB",
    "LayeredSearch",
    "Learned",
    "LinUCB",
    "NamedPolicy",
    "NetworkFeatures",
    "NeuralGradientBandit",
    "NeuralLinGreedy",
    "NeuralLinUCB",
    "NeuralSigma2LinUCB",
    "NeuralTS",
    "NeuralUCB",
    "NoWeighting",
    "Observation",
    "OracleVariance",
    "Part",
    "PendingDecisions",
    "Policy",
    "PolicyInfo",
    "PredictiveVariance",
    "RangeBound",
    "Recipe",
    "RidgeHead",
    "RidgeUCB",
    "SaveNeuralLinUCB",
    "ScheduledVariance",
    "Sigma2LinUCB",
    "Spec",
    "Thompson",
    "Trainer",
    "distinct_policy_names",
    "load_policy",
    "make_policy",
    "parameter_names",
    "parameter_table",
    "policy_info",
    "policy_names",
    "register_policy",
    "render_spec",
]
