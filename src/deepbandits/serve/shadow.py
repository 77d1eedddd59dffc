"""Challengers in shadow: candidate policies that see every request and reward of a service,
never serve, and whose value on the served traffic is estimated as it grows.

The served requests are kept until their rewards arrive; the rewarded rounds are then given to
the challengers in batches (:data:`~deepbandits.serve.experiment.SHADOW_BATCH` at a time, in
log order, so that a replay gives the same batches). For each round of a batch a challenger
states what it would do, as it stands: its probability of every arm π(· | x) and its estimated
mean of every arm q̂(x, ·), one evaluation of the whole batch (``probabilities(...,
return_mean=True)``; for a policy that samples its index without a closed form, the one-hot of
the arm it would draw, whose expectation is its distribution). With the arm served and its
logged propensity π₀(a | x), it keeps one round of the off-policy terms of
:class:`~deepbandits.ope.estimator.Terms` (wₜ = π(aₜ | xₜ) / π₀(aₜ | xₜ), q̂(xₜ, π) and
q̂(xₜ, aₜ)), then learns the batch's rounds (``update_batch``: the served arms' rewards, with
the contexts they were served in). Its estimate is read by the library's estimators (IPS,
SNIPS and DR by default) from those columns, each with a normal interval from its per-round
influence (the delta method for the ratio estimators), and the support diagnostics of
:mod:`deepbandits.ope.support`.

The estimand is the challenger's value as it stood when it was given each round, averaged over
the rounds: Σₜ Σₐ π_t(a | xₜ) μ(xₜ, a) / n. Because π_t and q̂_t never depend on round t's own
reward, IPS and DR are unbiased for it whenever the logging policy gives every arm the
challenger plays a positive propensity (inverse gap weighting with a floor, ε-greedy, or a
uniform control); rounds logged with propensity 1 by a deterministic logger are flagged by the
diagnostics.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from deepbandits.errors import DeepBanditsError, InputValueError
from deepbandits.ope.estimator import RatioEstimator, Terms, make_estimator, ratio_columns
from deepbandits.ope.support import MIN_PROPENSITY, Support, support_messages
from deepbandits.policies import Policy

Array = NDArray[np.float64]
#: The estimators a challenger reports by default.
ESTIMATORS = ("ips", "snips", "dr")
#: z of the two-sided 95 % normal interval.
Z95 = 1.959963984540054
#: The per-round columns a challenger keeps: reward, w, q̂(x, π), q̂(x, a), π₀(a | x), and π's
#: mass off the logged arm on rounds logged with propensity 1.
COLUMNS = ("reward", "w", "dm", "q_logged", "propensity", "lost")


def ratio_estimate(
    estimator: RatioEstimator, index: dict[str, int], sums: Array, products: Array, n: int
) -> tuple[float, float]:
    """The estimate of ``estimator`` and its normal standard error from the sufficient
    statistics of its per-round columns (``index``: a column's position in ``sums`` Σₜ cₜ and
    ``products`` Σₜ cₜ cₜᵀ, over ``n`` rounds): the estimate is Σ over its ratios of
    Σ num / Σ den, and its influence on round t the linear combination Σ over its ratios of
    (numₜ − R·denₜ) / mean(den) (the delta method; for a mean estimator, the term minus its
    mean), whose sample variance over √n is the standard error. NaN where a denominator sums
    to 0 (and the error below two rounds)."""
    weights = np.zeros(len(sums))
    value = 0.0
    for num, den in estimator.ratios():
        total = float(sums[index[den]])
        if n == 0 or total == 0:
            return math.nan, math.nan
        ratio = float(sums[index[num]]) / total
        value += ratio
        weights[index[num]] += n / total
        weights[index[den]] -= ratio * n / total
    if n < 2:
        return value, math.nan
    spread = float(weights @ products @ weights) - float(weights @ sums) ** 2 / n
    return value, math.sqrt(max(spread, 0.0) / (n - 1) / n)


class Challenger:
    """A policy in shadow (module notes), registered under ``name`` from ``spec``."""

    def __init__(self, name: str, spec: str, policy: Policy) -> None:
        self.name = name
        self.spec = spec
        self.policy = policy
        self.errors = 0
        self.last_error: str | None = None
        self.estimators = [make_estimator(spec) for spec in ESTIMATORS]
        #: Rounds kept; the estimators' columns (their names, in order) and their sums and sums
        #: of products over the rounds (the estimates' sufficient statistics: the memory stays
        #: the same however many rounds a challenger sees).
        self.n = 0
        self.names = list(ratio_columns(self.estimators, _terms(np.zeros((0, len(COLUMNS))))))
        self.sums = np.zeros(len(self.names))
        self.products = np.zeros((len(self.names), len(self.names)))
        #: Sums of the support diagnostics: Σw, Σw², rounds with w > 0, below the small
        #: propensity, logged with propensity 1, and π's mass off the logged arm there.
        self.diagnostics = np.zeros(6)
        self.max_weight = 0.0
        self.min_propensity = 1.0
        self.taken = np.zeros(0, dtype=np.int64)
        self.played = np.zeros(0, dtype=bool)
        #: Whether the policy's index samples (its distribution read as the one-hot of a draw).
        self._samples = False

    def _looks(self, rounds: list[Any]) -> list[tuple[Array, Array] | None]:
        """π(· | x) and q̂(x, ·) of the challenger as it stands on each of ``rounds``: one
        evaluation of them all when they have one shape; a round it fails on is None (counted
        in :attr:`errors`, never failing a request)."""
        policy = self.policy
        if not self._samples and len({r.contexts.shape for r in rounds}) == 1:
            stacked = np.stack([r.contexts for r in rounds])
            masks = None
            if any(r.mask is not None for r in rounds):
                masks = np.stack(
                    [np.ones(len(r.contexts), bool) if r.mask is None else r.mask for r in rounds]
                )
            try:
                pi, q = policy.probabilities(stacked, masks, return_mean=True)
                return list(zip(pi, q, strict=True))
            except InputValueError:
                pass  # one by one below: which round fails, or an index that samples
        return [self._look(r.contexts, r.mask) for r in rounds]

    def _look(self, contexts: Array, mask: Any) -> tuple[Array, Array] | None:
        policy = self.policy
        try:
            if not self._samples:
                try:
                    return policy.probabilities(contexts, mask, return_mean=True)
                except InputValueError:  # an index that samples has no closed form
                    self._samples = True
            pi = np.zeros(len(contexts))
            pi[policy.select(contexts, mask)] = 1.0
            return pi, policy.predict(contexts)[0]
        except DeepBanditsError as exc:
            self._failed(exc)
            return None

    def _failed(self, exc: Exception) -> None:
        self.errors += 1
        self.last_error = f"{type(exc).__name__}: {exc}"

    def learn(self, rounds: list[Any], rewards: list[float], extras: list[dict[str, Any]]) -> None:
        """Keep the off-policy terms of ``rounds`` (each with its ``contexts``, ``mask``,
        ``arm`` and ``propensity``) under the challenger as it stands, then learn their
        ``rewards`` at once (``extras``: each reward's ``sigma2`` and ``reward_range``)."""
        rows = []
        for round_, look, reward in zip(rounds, self._looks(rounds), rewards, strict=True):
            if look is None:
                continue
            pi, q = look
            arm, propensity = round_.arm, round_.propensity
            lost = 1.0 - pi[arm] if propensity >= 1.0 else 0.0
            rows.append((reward, pi[arm] / propensity, float(pi @ q), q[arm], propensity, lost))
            self._saw(len(pi), arm, pi > 0)
        if rows:
            self._keep(np.array(rows))
        try:
            self.policy.update_batch(
                [r.contexts for r in rounds],
                [r.arm for r in rounds],
                rewards,
                sigma2=[e.get("sigma2") for e in extras],
                reward_ranges=[e.get("reward_range") for e in extras],
            )
        except DeepBanditsError as exc:
            self._failed(exc)

    def _saw(self, K: int, arm: int, plays: NDArray[np.bool_]) -> None:
        """Count the logged arm and the arms the challenger plays (unseen-arm diagnostic)."""
        if K > len(self.taken):
            self.taken = np.concatenate([self.taken, np.zeros(K - len(self.taken), np.int64)])
            self.played = np.concatenate([self.played, np.zeros(K - len(self.played), bool)])
        self.taken[arm] += 1
        self.played[:K] |= plays

    def _keep(self, rows: Array) -> None:
        """Add rounds ``rows`` (:data:`COLUMNS`) to the sufficient statistics."""
        columns = ratio_columns(self.estimators, _terms(rows))
        C = np.stack([columns[name] for name in self.names], axis=1)
        self.n += len(rows)
        self.sums += C.sum(axis=0)
        self.products += C.T @ C
        w, propensity = rows[:, 1], rows[:, 4]
        self.diagnostics += (
            w.sum(),
            (w * w).sum(),
            (w > 0).sum(),
            (propensity < MIN_PROPENSITY).sum(),
            (propensity >= 1.0).sum(),
            rows[:, 5].sum(),
        )
        self.max_weight = max(self.max_weight, float(w.max()))
        self.min_propensity = min(self.min_propensity, float(propensity.min()))

    def support(self) -> Support:
        """The support diagnostics of the served log for this challenger."""
        sw, sw2, matched, small, certain, lost = self.diagnostics.tolist()
        n = self.n
        return Support(
            n=n,
            ess=sw * sw / sw2 if sw2 > 0 else 0.0,
            max_weight=self.max_weight,
            n_small_propensity=int(small),
            min_propensity=self.min_propensity,
            unsupported_mass=lost / n if n else 0.0,
            unseen_arms=tuple(int(a) for a in np.flatnonzero(self.played & (self.taken == 0))),
            n_matched=int(matched),
            n_deterministic=int(certain),
            deterministic_mass=lost / n if n else 0.0,
        )

    def report(self) -> dict[str, Any]:
        """The challenger's estimates with 95 % intervals, its support and its errors."""
        estimates = []
        index = {name: i for i, name in enumerate(self.names)}
        for estimator in self.estimators:
            assert isinstance(estimator, RatioEstimator)
            value, se = ratio_estimate(estimator, index, self.sums, self.products, self.n)
            finite = math.isfinite(value) and math.isfinite(se)
            estimates.append(
                {
                    "estimator": estimator.label,
                    "value": value if math.isfinite(value) else None,
                    "se": se if math.isfinite(se) else None,
                    "low": value - Z95 * se if finite else None,
                    "high": value + Z95 * se if finite else None,
                }
            )
        support = self.support()
        return {
            "name": self.name,
            "spec": self.spec,
            "rounds": self.n,
            "estimates": estimates,
            "support": {
                "ess": support.ess,
                "max_weight": support.max_weight,
                "min_propensity": support.min_propensity,
                "matched": support.n_matched,
                "deterministic_rounds": support.n_deterministic,
                "deterministic_mass": support.deterministic_mass,
                "unseen_arms": list(support.unseen_arms),
                "warnings": support_messages(support) if self.n else [],
            },
            "errors": self.errors,
            "last_error": self.last_error,
        }

    def state(self) -> dict[str, Any]:
        """What a checkpoint keeps of the challenger besides its policy."""
        return {
            "name": self.name,
            "spec": self.spec,
            "errors": self.errors,
            "last_error": self.last_error,
            "n": self.n,
            "sums": self.sums.copy(),
            "products": self.products.copy(),
            "diagnostics": self.diagnostics.copy(),
            "extremes": [self.max_weight, self.min_propensity],
            "taken": self.taken.copy(),
            "played": self.played.copy(),
            "samples": self._samples,
        }

    def load(self, state: dict[str, Any]) -> None:
        """Inverse of :meth:`state`."""
        self.errors, self.last_error = int(state["errors"]), state["last_error"]
        self.n = int(state["n"])
        self.sums = np.array(state["sums"], dtype=np.float64)
        self.products = np.array(state["products"], dtype=np.float64)
        self.diagnostics = np.array(state["diagnostics"], dtype=np.float64)
        self.max_weight, self.min_propensity = (float(v) for v in state["extremes"])
        self.taken = np.array(state["taken"], dtype=np.int64)
        self.played = np.array(state["played"], dtype=bool)
        self._samples = bool(state["samples"])


def _terms(rows: Array) -> Terms:
    """The estimators' per-round terms of rounds ``rows`` (:data:`COLUMNS`)."""
    return Terms(rewards=rows[:, 0], w=rows[:, 1], dm=rows[:, 2], q_logged=rows[:, 3])
