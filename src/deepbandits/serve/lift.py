"""The served policy's lift over a control group: each group's mean reward, their difference
and its confidence interval, over all time and over a sliding window of recent rewards.

A share of requests is decided by a control policy (:mod:`deepbandits.serve.control`); every
reward counts in the group of the decision it rewards. The lift is the served policy's mean
reward minus the control's, with Welch's interval (unequal variances, Welch–Satterthwaite
degrees of freedom): the groups are drawn by a hash of random decision ids, so each is a random
sample of the same traffic and the interval covers the difference of the two policies' expected
rewards on it. The window holds the most recent ``window`` rewards of both groups together, so
that a change of the lift shows before it moves the all-time figure.

:class:`LiftTracker` is rebuilt bit for bit by replaying the log (rewards in log order), and
kept in the service's checkpoints (:meth:`LiftTracker.state`).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import stdtrit

#: The groups of a request: decided by the served policy, or by the control.
GROUPS = ("policy", "control")
#: Default number of recent rewards in the sliding window.
WINDOW = 10_000
#: Default confidence level of the lift's interval.
LEVEL = 0.95


@dataclass
class Tally:
    """Count, mean and sum of squared deviations of a group's rewards (Welford's update, so
    that the variance stays exact over millions of rewards)."""

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0

    def add(self, value: float) -> None:
        self.n += 1
        delta = value - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (value - self.mean)

    @property
    def variance(self) -> float:
        """The sample variance (0 below two rewards)."""
        return self.m2 / (self.n - 1) if self.n > 1 else 0.0

    @classmethod
    def of(cls, values: np.ndarray) -> Tally:  # type: ignore[type-arg]
        n = len(values)
        mean = float(values.mean()) if n else 0.0
        return cls(n, mean, float(((values - mean) ** 2).sum()) if n else 0.0)


def welch_interval(policy: Tally, control: Tally, level: float = LEVEL) -> dict[str, Any]:
    """The lift ``policy.mean − control.mean``, its standard error, Welch's interval at
    ``level`` and the relative lift (over the control's mean); the interval is None below two
    rewards in either group, the relative lift when the control's mean is 0."""
    out: dict[str, Any] = {
        "lift": None,
        "se": None,
        "low": None,
        "high": None,
        "relative": None,
        "level": level,
    }
    if policy.n == 0 or control.n == 0:
        return out
    lift = policy.mean - control.mean
    out["lift"] = lift
    if control.mean != 0:
        out["relative"] = lift / abs(control.mean)
    if policy.n < 2 or control.n < 2:
        return out
    a, b = policy.variance / policy.n, control.variance / control.n
    se = math.sqrt(a + b)
    out["se"] = se
    if se == 0:
        out["low"] = out["high"] = lift
        return out
    df = (a + b) ** 2 / (a**2 / (policy.n - 1) + b**2 / (control.n - 1))
    half = float(stdtrit(df, 0.5 + level / 2)) * se
    out["low"], out["high"] = lift - half, lift + half
    return out


def group_summary(tally: Tally) -> dict[str, Any]:
    """A group's rewards, mean and standard deviation (None without rewards)."""
    return {
        "rewards": tally.n,
        "mean": tally.mean if tally.n else None,
        "sd": math.sqrt(tally.variance) if tally.n > 1 else None,
    }


class LiftTracker:
    """The rewards of both groups, over all time and the last ``window`` (module notes)."""

    def __init__(self, window: int = WINDOW, level: float = LEVEL) -> None:
        self.window = window
        self.level = level
        self.all = {group: Tally() for group in GROUPS}
        self.recent: deque[tuple[bool, float]] = deque(maxlen=window)

    def add(self, group: str, reward: float) -> None:
        """Count a reward of ``group``."""
        self.all[group].add(reward)
        self.recent.append((group == "control", reward))

    def _window(self) -> dict[str, Tally]:
        flags = np.fromiter((c for c, _ in self.recent), dtype=bool, count=len(self.recent))
        values = np.fromiter((r for _, r in self.recent), dtype=float, count=len(self.recent))
        return {"policy": Tally.of(values[~flags]), "control": Tally.of(values[flags])}

    def report(self) -> dict[str, Any]:
        """Each group's summary, the lift and its interval, over ``"all"`` time and the
        ``"window"``."""
        out: dict[str, Any] = {"window_rewards": self.window, "level": self.level}
        for name, tallies in (("all", self.all), ("window", self._window())):
            out[name] = {
                **{group: group_summary(tallies[group]) for group in GROUPS},
                **welch_interval(tallies["policy"], tallies["control"], self.level),
            }
        return out

    def state(self) -> dict[str, Any]:
        """What a checkpoint keeps (plain numbers and two arrays)."""
        return {
            "all": {g: [t.n, t.mean, t.m2] for g, t in self.all.items()},
            "control": np.array([c for c, _ in self.recent], dtype=bool),
            "reward": np.array([r for _, r in self.recent], dtype=np.float64),
        }

    def load(self, state: dict[str, Any]) -> None:
        """Inverse of :meth:`state`."""
        for group, (n, mean, m2) in state["all"].items():
            self.all[group] = Tally(int(n), float(mean), float(m2))
        self.recent.clear()
        self.recent.extend(
            zip(
                np.asarray(state["control"], dtype=bool).tolist(),
                np.asarray(state["reward"], dtype=np.float64).tolist(),
                strict=True,
            )
        )
