"""Logs that lack propensities: the logging policy estimated, or the importance weights
estimated directly.

Two ways to evaluate from a log whose π₀(aₜ | xₜ) was not recorded (or not trusted):

* :func:`with_estimated_propensities`: a classifier of the logged action given the context,
  cross-fitted so that no round's estimate saw that round, gives π̂₀(· | xₜ) of every arm; the
  log's propensities become π̂₀(aₜ | xₜ) (floored at ``floor``) and its ``logging_dist``
  π̂₀(· | xₜ). Every estimator then runs on it; IPS with estimated propensities is consistent
  when the classifier is (Hirano, Imbens & Ridder 2003; Strehl, Langford, Li & Kakade 2010,
  Section 3 for bandit logs).
* :class:`BalancedIPS`: balanced IPW (Sondhi, Arbour & Dimmery 2020, "Balanced off-policy
  evaluation in general action spaces", Section 3) estimates the weight w(x, a) =
  π(a | x) / π₀(a | x) itself, as the odds of a classifier that tells the pairs (xₜ, a) with
  a ∼ π(· | xₜ) (label 1) from the logged pairs (xₜ, aₜ) (label 0): with both classes of
  equal total weight, P(1 | x, a) / P(0 | x, a) = π(a | x) / π₀(a | x). The pairs of class 1
  are every arm weighted by π(a | xₜ) (the expectation over a ∼ π, with no sampling noise).
  The estimate is self-normalised, Σ ŵr / Σ ŵ. It never reads the propensities.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from deepbandits._validation import check_int, check_positive, check_seed
from deepbandits.errors import InputTypeError, InputValueError
from deepbandits.logs.bandit import LoggedBandit, check_log
from deepbandits.ope.estimator import RatioEstimator, Terms, register_estimator
from deepbandits.ope.reward_model import design_rows

Array = NDArray[np.float64]
CLASSIFIERS = ("logistic", "hgb")
#: The smallest estimated propensity kept (a classifier's near-0 estimate would make one
#: round's weight unbounded).
FLOOR = 1e-3
#: P(class) kept inside [EPS, 1 − EPS] before taking odds.
EPS = 1e-6


def make_classifier(model: Any, seed: int | None) -> Any:
    """The scikit-learn classifier named by ``model`` (``"logistic"``: standardised
    multinomial logistic regression; ``"hgb"``: histogram gradient boosting), or ``model``
    itself, which must have ``fit`` and ``predict_proba``."""
    if not isinstance(model, str):
        if not (hasattr(model, "fit") and hasattr(model, "predict_proba")):
            raise InputTypeError(
                f"model must be one of {', '.join(map(repr, CLASSIFIERS))} or a scikit-learn "
                f"classifier with fit and predict_proba, but {type(model).__name__} is given"
            )
        from sklearn.base import clone

        return clone(model)
    if model == "logistic":
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        return make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000))
    if model == "hgb":
        from sklearn.ensemble import HistGradientBoostingClassifier

        return HistGradientBoostingClassifier(
            max_iter=100, learning_rate=0.1, max_leaf_nodes=15, random_state=seed
        )
    raise InputValueError(
        f"model must be one of {', '.join(map(repr, CLASSIFIERS))} or a scikit-learn "
        f"classifier, but {model!r} is given"
    )


def _round_features(log: LoggedBandit, rows: NDArray[np.int64]) -> Array:
    """What the logging policy saw at the rounds ``rows``: the context (all arms' contexts,
    flattened, for per-arm logs), then the one-hot position when there are positions."""
    x = log.contexts[rows].reshape(len(rows), -1)
    if log.positions is None:
        return x
    pos = np.zeros((len(rows), log.n_positions))
    pos[np.arange(len(rows)), log.positions[rows]] = 1.0
    return np.concatenate([x, pos], axis=1)


def _folds(n: int, n_folds: int, seed: int | None) -> NDArray[np.int64]:
    if n_folds > n:
        raise InputValueError(f"n_folds={n_folds} is more than the {n} logged rounds")
    return np.random.default_rng(seed).permutation(n) % n_folds


def fit_logging_distribution(
    log: LoggedBandit,
    model: Any = "logistic",
    *,
    n_folds: int = 5,
    floor: float = FLOOR,
    seed: int | None = 0,
) -> Array:
    """π̂₀(· | xₜ) ``[n, K]`` of every round, cross-fitted over ``n_folds`` folds (1: fitted
    and predicted on every round): the classifier's probabilities of the arms, 0 on arms a
    round's mask leaves out, floored at ``floor`` on the others and renormalised."""
    log = check_log(log)
    n_folds = check_int(n_folds, "n_folds", minimum=1)
    floor = check_positive(floor, "floor")
    if floor * log.n_actions >= 1.0:
        raise InputValueError(
            f"floor must be below 1/K = {1 / log.n_actions:g} for K = {log.n_actions} arms, "
            f"but {floor} is given"
        )
    seed = check_seed(seed)
    n, K = len(log), log.n_actions
    folds = _folds(n, n_folds, seed)
    dist = np.zeros((n, K))
    for k in range(n_folds):
        test = np.flatnonzero(folds == k)
        train = np.flatnonzero(folds != k) if n_folds > 1 else test
        seen = np.unique(log.actions[train])
        if len(seen) == 1:
            dist[np.ix_(test, seen)] = 1.0
            continue
        fitted = make_classifier(model, seed).fit(_round_features(log, train), log.actions[train])
        proba = fitted.predict_proba(_round_features(log, test))
        dist[np.ix_(test, np.asarray(fitted.classes_, dtype=np.int64))] = proba
    available = np.ones((n, K), dtype=bool) if log.masks is None else log.masks
    dist = np.where(available, np.maximum(dist, floor), 0.0)
    return dist / dist.sum(axis=1, keepdims=True)


def with_estimated_propensities(
    log: LoggedBandit,
    model: Any = "logistic",
    *,
    n_folds: int = 5,
    floor: float = FLOOR,
    seed: int | None = 0,
) -> LoggedBandit:
    """The log with π̂₀ of :func:`fit_logging_distribution` as its propensities and its
    ``logging_dist`` (its recorded propensities, if any, replaced); named ``"<name>
    (estimated propensities)"``."""
    dist = fit_logging_distribution(log, model, n_folds=n_folds, floor=floor, seed=seed)
    return replace(
        log,
        propensities=dist[np.arange(len(log)), log.actions],
        logging_dist=dist,
        name=f"{log.name} (estimated propensities)",
    )


def balancing_weights(
    log: LoggedBandit,
    action_dist: Array,
    model: Any = "hgb",
    *,
    n_folds: int = 5,
    seed: int | None = 0,
) -> Array:
    """ŵ(xₜ, aₜ) of every logged round: the cross-fitted odds P(1 | x, a) / P(0 | x, a) of the
    classifier of the module notes (Sondhi et al. 2020), each pair weighted as there.

    With ``model="logistic"``, arms known only by their index (contexts per round, no action
    features) get a classifier each, on the round's context: the odds of a softmax-linear pair
    of policies are then linear in x for each arm, which one pooled linear model could not
    represent. Otherwise the arms share one classifier on :func:`design_rows` (a tree model
    splits on the arm's code or features itself)."""
    n = len(log)
    folds = _folds(n, check_int(n_folds, "n_folds", minimum=1), seed)
    rows_all, arms_all = np.nonzero(action_dist > 0)
    per_arm = model == "logistic" and not log.per_arm and log.action_features is None
    out = np.empty(n)
    for k in range(n_folds):
        test = np.flatnonzero(folds == k)
        train = np.flatnonzero(folds != k) if n_folds > 1 else test
        pairs = np.isin(rows_all, train)
        rows = np.concatenate([train, rows_all[pairs]])
        arms = np.concatenate([log.actions[train], arms_all[pairs]])
        labels = np.concatenate(
            [np.zeros(len(train), np.int64), np.ones(int(pairs.sum()), np.int64)]
        )
        weight = np.concatenate(
            [np.ones(len(train)), action_dist[rows_all[pairs], arms_all[pairs]]]
        )
        groups = log.actions[test] if per_arm else np.zeros(len(test), np.int64)
        for g in np.unique(groups):
            fit = (arms == g) if per_arm else np.ones(len(rows), dtype=bool)
            at = test[groups == g]
            if per_arm:
                X_fit, X_at = _round_features(log, rows[fit]), _round_features(log, at)
            else:
                X_fit, X_at = design_rows(log, rows, arms), design_rows(log, at, log.actions[at])
            out[at] = _odds(model, seed, X_fit, labels[fit], weight[fit], X_at)
    return out


def _odds(
    model: Any, seed: int | None, X: Array, y: NDArray[np.int64], weight: Array, at: Array
) -> Array:
    """P(1 | x) / P(0 | x) at the rows ``at`` of a classifier fitted on (X, y) with per-row
    ``weight``; where the fit saw one class only, that class's limit (EPS or 1/EPS)."""
    if np.unique(y).size < 2:
        p = np.full(len(at), EPS if y.size == 0 or y[0] == 0 else 1.0 - EPS)
    else:
        fitted = make_classifier(model, seed)
        fitted.fit(X, y, **{_sample_weight_keyword(fitted): weight})
        p = np.clip(fitted.predict_proba(at)[:, 1], EPS, 1.0 - EPS)
    return p / (1.0 - p)


def _sample_weight_keyword(classifier: Any) -> str:
    """The ``fit`` keyword of per-row weights: ``sample_weight``, routed to the last step of a
    pipeline."""
    steps = getattr(classifier, "steps", None)
    return f"{steps[-1][0]}__sample_weight" if steps else "sample_weight"


@register_estimator
@dataclass(frozen=True)
class BalancedIPS(RatioEstimator):
    """Σ ŵ(xₜ, aₜ) rₜ / Σ ŵ(xₜ, aₜ) with the weights estimated by classification, balanced IPW
    (module notes; self-normalised, as Sondhi et al. 2020 and Open Bandit Pipeline define it:
    an estimated weight's scale is only known up to the classifier's calibration);
    ``model``: ``"hgb"``, ``"logistic"`` or a scikit-learn classifier."""

    short = "bipw"
    display = "Balanced IPW"
    in_all = False  # fits a classifier on n·K pairs: asked for by name
    model: Any = "hgb"
    n_folds: int = 5
    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.model, str) and self.model not in CLASSIFIERS:
            raise InputValueError(
                f"model must be one of {', '.join(map(repr, CLASSIFIERS))} or a scikit-learn "
                f"classifier, but {self.model!r} is given"
            )
        object.__setattr__(self, "n_folds", check_int(self.n_folds, "n_folds", minimum=1))
        object.__setattr__(self, "seed", check_int(self.seed, "seed", minimum=0))

    def weights(self, terms: Terms) -> Array:
        """ŵ(xₜ, aₜ) of every round."""
        log, dist = terms.logged(self)
        return balancing_weights(log, dist, self.model, n_folds=self.n_folds, seed=self.seed)

    def columns(self, terms: Terms) -> dict[str, Array]:
        w = self.weights(terms)
        return {f"[{self.label}]": w * terms.rewards, f"w[{self.label}]": w}

    def ratios(self) -> tuple[tuple[str, str], ...]:
        return ((f"[{self.label}]", f"w[{self.label}]"),)
