"""The parts a policy is built from, one job each: feature maps, the ridge head, variance
sources, exploration rules and the trainer."""

from deepbandits.policies.parts.explore import (
    UCB,
    Exploration,
    ExplorationRule,
    Greedy,
    InverseGapWeighting,
    Situation,
    TheoryInputs,
    Thompson,
)
from deepbandits.policies.parts.features import IdentityFeatures, NetworkFeatures
from deepbandits.policies.parts.heads import RidgeHead
from deepbandits.policies.parts.layers import LayeredSearch
from deepbandits.policies.parts.part import Part
from deepbandits.policies.parts.trainer import Trainer
from deepbandits.policies.parts.variance import (
    NoWeighting,
    OracleVariance,
    PredictiveVariance,
    RangeBound,
    RoundEstimate,
    ScheduledVariance,
)

__all__ = [
    "UCB",
    "Exploration",
    "ExplorationRule",
    "Greedy",
    "IdentityFeatures",
    "InverseGapWeighting",
    "LayeredSearch",
    "NetworkFeatures",
    "NoWeighting",
    "OracleVariance",
    "Part",
    "PredictiveVariance",
    "RangeBound",
    "RidgeHead",
    "RoundEstimate",
    "ScheduledVariance",
    "Situation",
    "TheoryInputs",
    "Thompson",
    "Trainer",
]
