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

The gauges are read from the backend's health when the metrics are scraped, so that they are
the same on every backend (on Ray Serve: the replicas' sums).
"""

from __future__ import annotations

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
)


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
        return generate_latest(self.registry)
