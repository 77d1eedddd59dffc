"""Off-policy evaluation of one policy on one log: every estimator, its bootstrap interval and
the effective sample size, in one table.

:func:`evaluate` takes the log, the evaluation policy (an array π(a | xₜ) or a policy of the
library) and the estimators; it fits the cross-fitted reward model when a model-based
estimator is asked for (:mod:`~deepbandits.ope.reward_model`), builds the term table
(:mod:`~deepbandits.ope.estimators`), resamples it (:mod:`~deepbandits.ope.bootstrap`) and
checks the support (:mod:`~deepbandits.ope.support`, a
:class:`~deepbandits.ope.support.SupportWarning` per problem).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from deepbandits._validation import as_real_array, check_int, check_positive, check_seed
from deepbandits.errors import DeepBanditsError, InputValueError
from deepbandits.logs.bandit import LoggedBandit, check_log
from deepbandits.ope.bootstrap import bootstrap_intervals, point_estimates, shared_columns
from deepbandits.ope.estimator import Estimator, Terms, check_estimators, make_estimator
from deepbandits.ope.estimators import (
    SHRINKAGE_LAMBDA,
    SWITCH_TAU,
    check_threshold,
    importance_weights,
    policy_model_value,
)
from deepbandits.ope.reward_model import cross_fitted_rewards
from deepbandits.ope.support import (
    MIN_ESS,
    MIN_ESS_FRACTION,
    MIN_PROPENSITY,
    Support,
    support_messages,
    support_of,
    warn_support,
)
from deepbandits.ope.target import action_distribution

Array = NDArray[np.float64]


@dataclass(frozen=True)
class OPEResult:
    """What :func:`evaluate` found.

    Attributes
    ----------
    table : DataFrame
        One row per estimator: ``estimator`` (short name), ``name``, ``estimate``, ``lower``,
        ``upper`` (the bootstrap interval), ``std`` (bootstrap standard error), ``ess``, ``n``;
        with a known truth also ``truth``, ``relative_error`` |V̂ − V| / |V| and ``covered``.
    support : Support
        The support diagnostics; ``messages`` says what is poor, in words.
    action_dist : ndarray ``[n, K]``
        π(a | xₜ) as evaluated.
    q_hat : ndarray ``[n, K]`` or None
        The cross-fitted reward model's predictions.
    samples : ndarray ``[B, E]``
        The bootstrap estimates, one column per estimator.
    """

    table: pd.DataFrame
    support: Support
    messages: list[str]
    action_dist: Array
    q_hat: Array | None
    samples: Array = field(repr=False)
    alpha: float = 0.05

    def estimate(self, estimator: str) -> float:
        """The estimate of one estimator, by its label (``"switch-dr:tau=10.0"``) or, when one
        row has it, its short name (``"dr"``)."""
        table = self.table
        try:  # a specification spelled otherwise than the label: "dr-os:lam=100" is "dr-os"
            estimator = make_estimator(estimator).label
        except DeepBanditsError:
            pass
        rows = table.loc[table["estimator"] == estimator, "estimate"]
        if rows.empty:
            short = table["estimator"].str.partition(":")[0]
            if (short == estimator).sum() == 1:
                rows = table.loc[short == estimator, "estimate"]
        if rows.empty:
            raise InputValueError(
                f"no estimator {estimator!r} in this result; it has "
                f"{', '.join(self.table['estimator'])}"
            )
        return float(rows.iloc[0])

    def with_truth(self, truth: float) -> OPEResult:
        """The same result with the true value V: each estimator's relative error and whether
        its interval covers V."""
        table = self.table.copy()
        table["truth"] = float(truth)
        table["relative_error"] = (table["estimate"] - truth).abs() / abs(truth)
        table["covered"] = (table["lower"] <= truth) & (truth <= table["upper"])
        return replace(self, table=table)


def _check_q_hat(q_hat: ArrayLike, log: LoggedBandit) -> Array:
    q = as_real_array(q_hat, "q_hat")
    if q.shape != (len(log), log.n_actions) or not np.isfinite(q).all():
        raise InputValueError(
            f"q_hat must be finite, of shape ({len(log)}, {log.n_actions}), but shape "
            f"{q.shape} is given"
        )
    return q


def evaluate(
    log: LoggedBandit,
    policy: Any,
    *,
    estimators: str | Estimator | Sequence[str | Estimator] = "all",
    reward_model: Any = "auto",
    q_hat: ArrayLike | None = None,
    n_folds: int = 5,
    n_bootstrap: int = 1000,
    alpha: float = 0.05,
    switch_tau: float = SWITCH_TAU,
    shrinkage_lambda: float = SHRINKAGE_LAMBDA,
    truth: float | None = None,
    min_propensity: float = MIN_PROPENSITY,
    min_ess_fraction: float = MIN_ESS_FRACTION,
    min_ess: float = MIN_ESS,
    seed: int | None = 0,
    warn: bool = True,
    progress: bool = False,
) -> OPEResult:
    """Estimate the value of ``policy`` from ``log`` with each of ``estimators``.

    Parameters
    ----------
    log : LoggedBandit
        The logged rounds (:func:`~deepbandits.logs.bandit.make_log`,
        :func:`deepbandits.load_logged`, :func:`~deepbandits.ope.simulate.simulate_log`).
    policy : array ``[n, K]`` or Policy
        π(a | xₜ) on every round, or a policy of the library (its decision probabilities,
        :mod:`~deepbandits.ope.target`).
    estimators : "all", str, Estimator or a list of them
        Names or specifications of :data:`~deepbandits.ope.estimator.ESTIMATORS` (``ips``,
        ``snips``, ``dm``, ``dr``, ``sndr``, ``switch-dr``, ``dr-os``;
        ``"switch-dr:tau=10"``), or :class:`~deepbandits.ope.estimator.Estimator` objects.
    reward_model : str or scikit-learn estimator, default="auto"
        q̂ of the model-based estimators, cross-fitted over ``n_folds`` folds.
    q_hat : array ``[n, K]``, optional
        Reward model predictions to use instead of fitting one.
    n_bootstrap : int, default=1000
        Bootstrap resamples (0: no intervals).
    alpha : float, default=0.05
        The intervals cover 1 − alpha.
    switch_tau, shrinkage_lambda : float, default=100
        Switch-DR's weight threshold τ and DRos's λ where ``estimators`` names them without
        one.
    truth : float, optional
        The true value, when known: adds relative errors and coverage.
    min_propensity, min_ess_fraction, min_ess : float
        Thresholds of the support warnings (:mod:`~deepbandits.ope.support`): a logged
        propensity below ``min_propensity`` (1e-3), an effective sample size below
        ``min_ess_fraction`` of the rounds (1 %) or below ``min_ess`` rounds (10).
    seed : int, optional
        Seeds the folds, the reward model and the resamples.
    warn : bool, default=True
        Emit a :class:`~deepbandits.ope.support.SupportWarning` per support problem (they are
        in ``result.messages`` either way).
    progress : bool, default=False
        Show a progress bar of the reward model's folds (``reward model``) on stderr.
    """
    log = check_log(log)
    chosen = check_estimators(
        estimators,
        tau=check_threshold(switch_tau, "switch_tau"),
        lam=check_threshold(shrinkage_lambda, "shrinkage_lambda"),
    )
    n_bootstrap = check_int(n_bootstrap, "n_bootstrap", minimum=0)
    alpha = check_positive(alpha, "alpha")
    if alpha >= 1:
        raise InputValueError(f"alpha must be in (0, 1), but {alpha} is given")
    seed = check_seed(seed)
    dist = action_distribution(policy, log)
    w = importance_weights(dist, log.actions, log.propensities)
    q = None
    if q_hat is not None:
        q = _check_q_hat(q_hat, log)
    elif any(e.needs_model for e in chosen):
        q = cross_fitted_rewards(log, reward_model, n_folds=n_folds, seed=seed, progress=progress)
    dm = None if q is None else policy_model_value(dist, q)
    q_logged = None if q is None else q[np.arange(len(log)), log.actions]
    terms = Terms(log.rewards, w, dm, q_logged, dist, log)
    columns = shared_columns(chosen, terms)  # once: a tuned estimator chooses while building it
    estimates = point_estimates(chosen, terms, columns)
    if n_bootstrap:
        boot = bootstrap_intervals(
            chosen, terms, n_resamples=n_bootstrap, alpha=alpha, seed=seed, columns=columns
        )
        lower, upper, std, samples = boot.lower, boot.upper, boot.std, boot.samples
    else:
        lower = upper = std = np.full(len(chosen), np.nan)
        samples = np.empty((0, len(chosen)))
    support = support_of(log, dist, w, min_propensity)
    messages = support_messages(
        support,
        min_propensity=min_propensity,
        min_ess_fraction=min_ess_fraction,
        min_ess=min_ess,
    )
    if warn:
        warn_support(messages)
    frame = pd.DataFrame(
        {
            "estimator": [e.label for e in chosen],
            "name": [e.describe(terms) for e in chosen],
            "estimate": estimates,
            "lower": lower,
            "upper": upper,
            "std": std,
            "ess": support.ess,
            "n": len(log),
        }
    )
    result = OPEResult(frame, support, messages, dist, q, samples, alpha)
    return result if truth is None else result.with_truth(truth)
