"""Cross-fitted reward models q̂(x, a) for the direct method and the doubly robust family.

q̂ is fitted on the logged (context, action, position) → reward pairs and predicted for every
arm of every round. Cross-fitting (Chernozhukov et al. 2018, "Double/debiased machine
learning", Definition 3.1; Narita, Yasui & Yata 2021 for OPE) splits the rounds into k folds
and predicts each fold with the model fitted on the others, so that no round's q̂ has seen
its own reward: the DR correction wₜ (rₜ − q̂(xₜ, aₜ)) keeps mean zero.

The regressor is any scikit-learn estimator (cloned per fold): a classifier's
``predict_proba[:, 1]`` for rewards in {0, 1}, a regressor's ``predict`` otherwise. ``"auto"``
is logistic regression for rewards in {0, 1} (clicks) and scikit-learn's histogram gradient
boosting regressor otherwise; ``"logistic"``, ``"hgb"`` (a classifier for {0, 1} rewards, as
OBP's example uses LightGBM), ``"ridge"`` and ``"network"`` (the library's MLP,
:class:`~deepbandits.ope.network_model.NetworkRegressor`) name them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray
from tqdm.auto import tqdm

from deepbandits._validation import check_int, check_seed
from deepbandits.errors import InputTypeError, InputValueError
from deepbandits.logs.bandit import LoggedBandit

Array = NDArray[np.float64]
MODEL_NAMES = ("auto", "logistic", "ridge", "hgb", "network")


def binary_rewards(rewards: Array) -> bool:
    """Whether every reward is 0 or 1 (clicks): q̂ is then a probability."""
    return bool(np.isin(rewards, (0.0, 1.0)).all())


def make_regressor(model: Any, binary: bool, seed: int | None) -> Any:
    """The scikit-learn estimator named by ``model`` (or ``model`` itself, which must have
    ``fit`` and ``predict``)."""
    if not isinstance(model, str):
        if not (hasattr(model, "fit") and hasattr(model, "predict")):
            raise InputTypeError(
                "reward_model must be a name "
                f"({', '.join(MODEL_NAMES)}) or a scikit-learn estimator with fit and predict, "
                f"but {type(model).__name__} is given"
            )
        return model
    if model == "auto":
        model = "logistic" if binary else "hgb"
    if model == "hgb":
        from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

        cls = HistGradientBoostingClassifier if binary else HistGradientBoostingRegressor
        return cls(max_iter=100, learning_rate=0.05, max_leaf_nodes=15, random_state=seed)
    if model == "logistic":
        if not binary:
            raise InputValueError("reward_model='logistic' needs rewards in {0, 1}")
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(C=1.0, max_iter=1000)
    if model == "ridge":
        from sklearn.linear_model import Ridge

        return Ridge(alpha=1.0)
    if model == "network":
        from deepbandits.ope.network_model import NetworkRegressor

        return NetworkRegressor(seed=seed)
    raise InputValueError(
        f"unknown reward_model {model!r}; expected one of {', '.join(map(repr, MODEL_NAMES))} "
        "or a scikit-learn estimator"
    )


def design_rows(log: LoggedBandit, rows: NDArray[np.int64], arms: NDArray[np.int64]) -> Array:
    """Regression inputs of the pairs (round ``rows[i]``, arm ``arms[i]``): the arm's context
    (per-arm logs), else the round's context with the arm's features (or its one-hot code);
    then the one-hot position when the log has positions."""
    m = len(rows)
    if log.per_arm:
        first = [log.contexts[rows, arms]]
    elif log.action_features is not None:
        first = [log.contexts[rows], log.action_features[arms]]
    else:
        first = [log.contexts[rows], None]  # the arm's one-hot code
    widths = [a.shape[1] if a is not None else log.n_actions for a in first]
    n_pos = _position_width(log)
    out = np.zeros((m, sum(widths) + n_pos))
    start = 0
    for part, width in zip(first, widths, strict=True):
        if part is None:
            out[np.arange(m), start + arms] = 1.0
        else:
            out[:, start : start + width] = part
        start += width
    if n_pos:
        out[np.arange(m), start + log.positions[rows]] = 1.0  # type: ignore[index]
    return out


def _position_width(log: LoggedBandit) -> int:
    """The columns of the one-hot position in :func:`design_rows` (0 without positions)."""
    return log.n_positions if log.positions is not None else 0


def linear_scores(
    log: LoggedBandit, rows: NDArray[np.int64], coef: Array, intercept: float
) -> Array:
    """``design_rows(pairs) @ coef + intercept`` of every arm of the rounds ``rows``,
    ``[len(rows), K]``, without the ``len(rows)·K`` rows of the design: a linear score is the
    sum of its blocks' scores, the context's per round (per arm and round on per-arm logs), the
    arm's per arm, the position's per round."""
    d = log.contexts.shape[-1]
    scores = log.contexts[rows] @ coef[:d]  # [m, K] per arm, else [m]
    start = d
    if not log.per_arm:  # the arm's features, or its one-hot code
        arms = np.eye(log.n_actions) if log.action_features is None else log.action_features
        width = arms.shape[1]
        scores = scores[:, None] + (arms @ coef[start : start + width])[None, :]
        start += width
    n_pos = _position_width(log)
    if n_pos:
        scores = scores + coef[start : start + n_pos][log.positions[rows]][:, None]  # type: ignore[index]
    return scores + intercept


def _linear_model(estimator: Any) -> tuple[Array, float, bool] | None:
    """The coefficients, intercept and whether a logistic link follows, of a fitted model
    named by :func:`make_regressor` that is linear in the design (logistic regression on
    {0, 1}, ridge); None for any other (a user's estimator, a subclass, a constant model)."""
    from sklearn.linear_model import LogisticRegression, Ridge

    if type(estimator) is LogisticRegression and list(estimator.classes_) == [0, 1]:
        return estimator.coef_[0], float(estimator.intercept_[0]), True
    if type(estimator) is Ridge and estimator.coef_.ndim == 1:
        return estimator.coef_, float(estimator.intercept_), False
    return None


def predict_arms(estimator: Any, log: LoggedBandit, rows: NDArray[np.int64]) -> Array:
    """q̂ of every arm of the rounds ``rows`` ``[len(rows), K]`` by the fitted ``estimator``:
    from the blocks' scores for a linear model (:func:`linear_scores`; what its own predict
    gives, to rounding), else by its predict on the ``len(rows)·K`` design rows."""
    linear = _linear_model(estimator)
    if linear is not None:
        from scipy.special import expit

        coef, intercept, logistic = linear
        scores = linear_scores(log, rows, coef, intercept)
        return expit(scores) if logistic else scores
    K = log.n_actions
    pairs = design_rows(log, np.repeat(rows, K), np.tile(np.arange(K), len(rows)))
    return _predict(estimator, pairs).reshape(len(rows), K)


def _predict(estimator: Any, X: Array) -> Array:
    from sklearn.base import is_classifier  # scikit-learn: imported when a model is fitted

    if is_classifier(estimator):
        proba = estimator.predict_proba(X)
        classes = list(estimator.classes_)
        return proba[:, classes.index(1.0)] if 1.0 in classes else np.zeros(len(X))
    return np.asarray(estimator.predict(X), dtype=np.float64)


def _fit(estimator: Any, X: Array, y: Array, binary: bool) -> Any:
    from sklearn.base import is_classifier

    if is_classifier(estimator):
        if not binary:
            raise InputValueError(
                "a classifier as reward_model needs rewards in {0, 1}; use a regressor"
            )
        if np.unique(y).size < 2:  # a fold without a click: a constant model
            from sklearn.dummy import DummyRegressor

            return DummyRegressor(strategy="constant", constant=float(y[0])).fit(X, y)
        return estimator.fit(X, y.astype(np.int64))
    return estimator.fit(X, y)


def cross_fitted_rewards(
    log: LoggedBandit,
    model: Any = "auto",
    *,
    n_folds: int = 5,
    seed: int | None = 0,
    batch_rows: int = 4096,
    progress: bool = False,
) -> Array:
    """q̂(xₜ, a) of every round and arm ``[n, K]`` at the round's position, each round predicted
    by the model fitted on the other folds (``n_folds`` = 1: fitted and predicted on every
    round, no cross-fitting).

    Parameters
    ----------
    log : LoggedBandit
    model : str or scikit-learn estimator, default="auto"
        See the module notes.
    n_folds : int, default=5
    seed : int, optional
        Seeds the fold assignment and the regressor.
    batch_rows : int, default=4096
        Rounds predicted at a time (bounds the memory of the ``rows × K`` design matrix that a
        model other than the linear ones, :func:`predict_arms`, is predicted on).
    progress : bool, default=False
        Show a progress bar of the folds (``reward model``) on stderr.
    """
    n_folds = check_int(n_folds, "n_folds", minimum=1)
    seed = check_seed(seed)
    n, K = len(log), log.n_actions
    if n_folds > n:
        raise InputValueError(f"n_folds={n_folds} is more than the {n} logged rounds")
    from sklearn.base import clone

    binary = binary_rewards(log.rewards)
    base = make_regressor(model, binary, seed)
    folds = np.random.default_rng(seed).permutation(n) % n_folds
    q_hat = np.empty((n, K))
    for k in tqdm(range(n_folds), desc="reward model", unit="fold", disable=not progress):
        test = np.flatnonzero(folds == k)
        train = np.flatnonzero(folds != k) if n_folds > 1 else test
        X = design_rows(log, train, log.actions[train])
        fitted = _fit(clone(base), X, log.rewards[train], binary)
        for start in range(0, len(test), batch_rows):
            rows = test[start : start + batch_rows]
            q_hat[rows] = predict_arms(fitted, log, rows)
    return q_hat
