"""The service's Prometheus metrics: one registry per app, so that two apps in one process (tests,
replicas) never share counters.

=========================================== ===============================================
``deepbandits_decisions_total``             decisions made (single and batch)
``deepbandits_rewards_total``               rewards learned
``deepbandits_expired_decisions``           decisions that expired before their reward
``deepbandits_pending_decisions``           decisions awaiting their reward
``deepbandits_errors_total{code}``          answers with an HTTP error status, by status
``deepbandits_request_seconds{endpoint}``   latency histogram, by endpoint (commit included)
``deepbandits_trainings_total``             network trainings swapped in by this process
``deepbandits_training_seconds``            their duration (histogram)
``deepbandits_model_version``               the network version in force
``deepbandits_events``                      decisions and rewards logged since the folder began
``deepbandits_pending_bytes``               bytes the pending decisions hold
``deepbandits_training_failures``           trainings that failed or timed out (since start)
=========================================== ===============================================

The live experiment's gauges (:mod:`deepbandits.serve.experiment`; a backend that runs one only,
not Ray Serve's replicas), read from ``/v1/lift`` and ``/v1/challengers``:

========================================================== ==================================
``deepbandits_group_rewards{group,window}``                rewards counted in the lift, by group
                                                           (``policy``, ``control``) and window
                                                           (``all``, ``recent``)
``deepbandits_group_mean_reward{group,window}``            their mean
``deepbandits_lift{window}``                               the policy's mean minus the control's
``deepbandits_lift_low{window}``, ``_lift_high{window}``   Welch's interval of the lift
``deepbandits_challenger_estimate{challenger,estimator}``  a challenger's estimated mean reward
                                                           (``ips``, ``snips``, ``dr``)
``deepbandits_challenger_low{...}``, ``_high{...}``        its 95 % interval
``deepbandits_challenger_rounds{challenger}``              rewarded requests it looked at
``deepbandits_champion_version``                           0, then one more per promotion
========================================================== ==================================

A value that is not known yet (a mean without rewards, an interval below two rewards per group)
has no sample until it is.

The gauges are read from the backend's health (and experiment) when the metrics are scraped, so
that they are the same on every backend (on Ray Serve: the replicas' sums).
"""

from __future__ import annotations

from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from deepbandits.serve.backend import Backend

#: Latency buckets (seconds): the service answers in milliseconds.
LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
TRAINING_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
#: The gauges read from the state's health: its key, the metric's name and help.
GAUGES = (
    (
        "expired",
        "expired_decisions",
        "Decisions that expired before their reward (since the folder was created)",
    ),
    ("pending", "pending_decisions", "Decisions awaiting their reward"),
    ("model_version", "model_version", "The network version in force"),
    ("events", "events", "Decisions and rewards logged since the state folder was created"),
    ("pending_bytes", "pending_bytes", "Bytes the decisions awaiting their reward hold"),
    ("training_failures", "training_failures", "Trainings that failed or timed out"),
)
ENDPOINTS = (
    "/v1/decide",
    "/v1/decide_batch",
    "/v1/reward",
    "/v1/health",
    "/v1/snapshot",
    "/v1/merge",
    "/v1/lift",
    "/v1/challengers",
    "/v1/promote",
)
#: The windows of the lift report, by the label of their samples.
WINDOWS = (("all", "all"), ("recent", "window"))
GROUPS = ("policy", "control")


class ExperimentGauges:
    """The live experiment's gauges in ``registry`` (module notes), set from the backend's lift
    and challengers reports."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def gauge(name: str, text: str, labels: tuple[str, ...] = ()) -> Gauge:
            return Gauge(f"deepbandits_{name}", text, labels, registry=registry)

        self.group_rewards = gauge(
            "group_rewards", "Rewards counted in the lift, by group", ("group", "window")
        )
        self.group_mean = gauge(
            "group_mean_reward", "Mean reward of a group's decisions", ("group", "window")
        )
        self.lift = gauge(
            "lift", "The served policy's mean reward minus the control's", ("window",)
        )
        self.lift_low = gauge(
            "lift_low", "Lower bound of Welch's interval of the lift", ("window",)
        )
        self.lift_high = gauge(
            "lift_high", "Upper bound of Welch's interval of the lift", ("window",)
        )
        pair = ("challenger", "estimator")
        self.estimate = gauge(
            "challenger_estimate",
            "A challenger's estimated mean reward on the served traffic",
            pair,
        )
        self.low = gauge("challenger_low", "Lower bound of the estimate's 95 % interval", pair)
        self.high = gauge("challenger_high", "Upper bound of the estimate's 95 % interval", pair)
        self.rounds = gauge(
            "challenger_rounds", "Rewarded requests a challenger looked at", ("challenger",)
        )
        self.champion_version = gauge(
            "champion_version", "The champion's version: 0, then one more per promotion"
        )

    def read(self, lift: dict[str, Any], challengers: dict[str, Any]) -> None:
        """Set every gauge from the reports; a value not known (None) leaves no sample."""
        labelled = (
            self.group_rewards,
            self.group_mean,
            self.lift,
            self.lift_low,
            self.lift_high,
            self.estimate,
            self.low,
            self.high,
            self.rounds,
        )
        for gauge in labelled:  # a challenger removed, a value no longer known: no sample
            gauge.clear()
        for label, key in WINDOWS:
            report = lift[key]
            for group in GROUPS:
                self.group_rewards.labels(group, label).set(report[group]["rewards"])
                _set(self.group_mean, (group, label), report[group]["mean"])
            for gauge, field in (
                (self.lift, "lift"),
                (self.lift_low, "low"),
                (self.lift_high, "high"),
            ):
                _set(gauge, (label,), report[field])
        for challenger in challengers["challengers"]:
            name = challenger["name"]
            self.rounds.labels(name).set(challenger["rounds"])
            for estimate in challenger["estimates"]:
                labels = (name, estimate["estimator"])
                _set(self.estimate, labels, estimate["value"])
                _set(self.low, labels, estimate["low"])
                _set(self.high, labels, estimate["high"])
        self.champion_version.set(lift["champion_version"])


def _set(gauge: Gauge, labels: tuple[str, ...], value: float | None) -> None:
    """Set the sample of ``gauge`` with ``labels`` (cleared before): none when ``value`` is
    None."""
    if value is not None:
        gauge.labels(*labels).set(value)


class ServiceMetrics:
    """The metrics of one app over ``backend`` (module notes)."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.registry = registry = CollectorRegistry()
        self.decisions = Counter("deepbandits_decisions", "Decisions made", registry=registry)
        self.rewards = Counter("deepbandits_rewards", "Rewards learned", registry=registry)
        self.trainings = Counter(
            "deepbandits_trainings", "Network trainings swapped in", registry=registry
        )
        self.errors = Counter(
            "deepbandits_errors", "Answers with an HTTP error status", ["code"], registry=registry
        )
        latency = Histogram(
            "deepbandits_request_seconds",
            "Time to answer a request, its commit included",
            ["endpoint"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.latency = {path: latency.labels(path) for path in ENDPOINTS}  # one lookup each
        self.training_seconds = Histogram(
            "deepbandits_training_seconds",
            "Duration of a network training",
            buckets=TRAINING_BUCKETS,
            registry=registry,
        )
        self.gauges = {
            key: Gauge(f"deepbandits_{name}", text, registry=registry) for key, name, text in GAUGES
        }
        self.experiment = ExperimentGauges(registry) if backend.experiments else None
        backend.training_listeners.append(self._trained)

    def _trained(self, seconds: float) -> None:
        self.trainings.inc()
        self.training_seconds.observe(seconds)

    def observe(self, path: str, status: int, seconds: float) -> None:
        """Record one answer: its latency by endpoint, and its status when it is an error."""
        histogram = self.latency.get(path)
        if histogram is not None:
            histogram.observe(seconds)
        if status >= 400:
            self.errors.labels(str(status)).inc()

    async def render(self) -> bytes:
        """The metrics in Prometheus' text format, the gauges read from the backend now."""
        health = await self.backend.health()
        for key, gauge in self.gauges.items():
            gauge.set(health[key])
        if self.experiment is not None:
            lift = await self.backend.lift()
            self.experiment.read(lift, await self.backend.challengers())
        return generate_latest(self.registry)
