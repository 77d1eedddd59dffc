"""The JSON bodies of the HTTP API (pydantic models; FastAPI builds the OpenAPI page from them).

The request fields that the policy validates (contexts, mask, reward, reward range) are taken as
any JSON value here and checked by the library itself, so that an invalid request is answered
with the library's own message naming the field, what was expected and what was given.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

_NUMBERS = {"type": "array", "items": {"type": "array", "items": {"type": "number"}}}
_MASK = {"type": "array", "items": {"type": "boolean"}, "nullable": True}
_RANGE = {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}


class DecideRequest(BaseModel):
    """One request: every arm's context, and the arms available."""

    model_config = ConfigDict(extra="forbid")

    contexts: Any = Field(
        ...,
        description="every arm's context: K rows of d numbers",
        json_schema_extra=_NUMBERS,
    )
    mask: Any = Field(
        None,
        description="K booleans, true where the arm may be chosen (default: every arm)",
        json_schema_extra=_MASK,
    )


class DecideBatchRequest(BaseModel):
    """Several requests decided with the model as it is (one network pass)."""

    model_config = ConfigDict(extra="forbid")

    requests: list[DecideRequest] = Field(..., description="the requests, in order")


class DecisionOut(BaseModel):
    """A decision: what to play, and what the reward will be learned by."""

    decision_id: str = Field(..., description="the id to send the reward with")
    arm: int = Field(..., description="index of the arm chosen among the rows of contexts")
    propensity: float = Field(..., description="probability the policy had of choosing it")
    mean: list[float | None] = Field(..., description="every arm's estimated mean reward")
    width: list[float | None] = Field(..., description="every arm's exploration width")
    model_version: int = Field(..., description="the network version that decided")


class DecisionsOut(BaseModel):
    decisions: list[DecisionOut]


class RewardRequest(BaseModel):
    """The reward of a decision."""

    model_config = ConfigDict(extra="forbid")

    decision_id: str = Field(..., description="the id of the decision")
    reward: Any = Field(
        ..., description="the observed reward", json_schema_extra={"type": "number"}
    )
    reward_range: Any = Field(
        None,
        description="this reward's range [a, b] (default: the policy's)",
        json_schema_extra=_RANGE,
    )
    sigma2: Any = Field(
        None,
        description="an oracle bound on this reward's noise variance, if known",
        json_schema_extra={"type": "number", "nullable": True},
    )


class RewardOut(BaseModel):
    decision_id: str
    rewards_learned: int = Field(..., description="rewards the policy has learned, this one too")
    sigma2: float | None = Field(..., description="the variance bound the update was weighted by")
    model_version: int


class HealthOut(BaseModel):
    """The health of a service (a backend with replicas adds each replica's and its merges)."""

    model_config = ConfigDict(extra="allow")

    status: str = Field(..., description="ok, or degraded when the log cannot be written")
    model_version: int
    events: int = Field(..., description="decisions and rewards logged since the folder began")
    pending: int = Field(..., description="decisions awaiting their reward")
    pending_bytes: int = Field(..., description="bytes the pending decisions hold")
    decided: int
    learned: int
    expired: int
    rewards_learned: int
    training: bool
    trainings: int
    training_failures: int = Field(..., description="trainings that failed or timed out")
    last_training_error: str | None = Field(None, description="why the last one failed")
    last_event: int
    last_checkpoint: int
    policy: str
    champion: str | None = Field(None, description="the name the served policy is listed under")
    champion_version: int | None = Field(
        None, description="0, then one more at each promotion of a challenger"
    )
    control: str | None = Field(None, description="the control group's policy (null: none)")
    challengers: list[str] = Field([], description="the challengers' names, in shadow")
    durability: str
    notes: list[str] = Field(..., description="what the last start found and repaired")


class SnapshotOut(BaseModel):
    seq: int = Field(..., description="the last event the checkpoint includes")
    model_version: int
    rewards_learned: int


class MergeOut(BaseModel):
    generation: int = Field(..., description="the merge round's number")
    rewards_learned: int = Field(..., description="rewards every replica has learned after it")
    model_version: int
    seconds: float = Field(..., description="how long the round took")


class ErrorOut(BaseModel):
    detail: str = Field(..., description="what is wrong, naming the field")
    error: str = Field(..., description="the library's exception class")


# ---------------------------------------------------------------------- the live experiment
class GroupOut(BaseModel):
    """A group's rewards counted in the lift."""

    rewards: int = Field(..., description="rewards of the group's decisions")
    mean: float | None = Field(..., description="their mean (null without rewards)")
    sd: float | None = Field(..., description="their standard deviation (null below two)")


class LiftWindowOut(BaseModel):
    """Both groups and the lift, over all time or over the window of recent rewards."""

    policy: GroupOut
    control: GroupOut
    lift: float | None = Field(..., description="the policy's mean reward minus the control's")
    se: float | None = Field(..., description="its standard error")
    low: float | None = Field(..., description="Welch's interval at level: lower bound")
    high: float | None = Field(..., description="upper bound")
    relative: float | None = Field(..., description="the lift over the control's mean")
    level: float


class LiftOut(BaseModel):
    """The served policy's lift over the control group."""

    control: str | None = Field(..., description="the control's policy (null: none)")
    share: float = Field(..., description="the share of requests the control decides")
    champion: str = Field(..., description="the served policy's name")
    champion_version: int
    window_rewards: int = Field(..., description="rewards in the sliding window")
    level: float = Field(..., description="the confidence level of the intervals")
    all: LiftWindowOut = Field(..., description="over every reward")
    window: LiftWindowOut = Field(..., description="over the window of recent rewards")


class ChampionOut(BaseModel):
    name: str
    spec: str
    champion_version: int
    rewards: int = Field(..., description="rewards of its group")
    mean_reward: float | None


class EstimateOut(BaseModel):
    estimator: str = Field(..., description="ips, snips or dr")
    value: float | None = Field(..., description="the challenger's estimated mean reward")
    se: float | None
    low: float | None = Field(..., description="95 % normal interval: lower bound")
    high: float | None


class SupportOut(BaseModel):
    """How well the served log supports the challenger's estimates."""

    ess: float = Field(..., description="effective sample size of the importance weights")
    max_weight: float
    min_propensity: float
    matched: int = Field(..., description="rounds where the challenger may play the logged arm")
    deterministic_rounds: int
    deterministic_mass: float
    unseen_arms: list[int]
    warnings: list[str]


class ChallengerOut(BaseModel):
    """A challenger in shadow: its estimated value on the served traffic."""

    name: str
    spec: str
    rounds: int = Field(..., description="rewarded requests it looked at")
    estimates: list[EstimateOut]
    support: SupportOut
    errors: int = Field(..., description="requests and rewards it failed on")
    last_error: str | None


class ChallengersOut(BaseModel):
    champion: ChampionOut
    challengers: list[ChallengerOut]
    queued: int = Field(
        ..., description="rewarded rounds waiting for the challengers' next batch of 32"
    )


class ChallengerRequest(BaseModel):
    """A challenger to run in shadow."""

    model_config = ConfigDict(extra="forbid")

    spec: str = Field(..., max_length=4096, description="a policy specification (linucb:alpha=0.5)")
    name: str | None = Field(
        None, description="the name to list it under, 1 to 64 characters (default: spec)"
    )


class RemovedOut(BaseModel):
    removed: str = Field(..., description="the challenger removed")


class PromoteRequest(BaseModel):
    """A challenger to swap in as champion."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., description="the challenger's name")


class PromoteOut(BaseModel):
    champion: str = Field(..., description="the challenger now serving")
    champion_version: int
    former: str = Field(..., description="the former champion, now a challenger of that name")
