"""Which estimator to trust on a log: a bounded estimate of each candidate's MSE, cross-validated
OPE, or SLOPE across candidate estimators.

:func:`select_estimator` scores every candidate on the log and chooses one, by one of three
rules.

``method="mse"`` (the default): each candidate's mean squared error on the whole log, bias² +
variance, with the variance σ_c² from the bootstrap and the bias bounded by its distance to an
unbiased reference (IPS, or DR): b̂_c = max(0, |V̂_c − V̂_ref| − z·s_c), s_c the bootstrap
standard error of the paired difference V̂_c − V̂_ref (the same resamples for both), so that a
difference the reference's own noise explains counts as no bias (the bias bound of MAGIC,
Thomas & Brunskill 2016, "Data-efficient off-policy policy evaluation for reinforcement
learning", Section 4, with a paired band instead of the reference's interval;
:func:`bounded_bias_mse`). The least MSE is chosen. A biased low-variance candidate (DM with a
poor model) is trusted only while the log cannot tell its bias from the reference's noise; the
reference itself has b̂ = 0 and MSE σ_ref², so it is chosen when every other candidate is
further from it than its noise allows and not less variable.

``method="cv"``: cross-validated off-policy evaluation (Cief, Kveton & Kompan 2025,
"Cross-validated off-policy evaluation", AAAI; arXiv:2405.15332, Algorithm 1, "OCV"). The log
is split ``n_splits`` times at random into a training part T of ``train_fraction`` of the
rounds and a validation part V of the rest. On V an unbiased *reference* estimator (IPS, or DR)
gives V̂_ref(V); on T each candidate gives V̂_c(T). As T and V are disjoint and the reference is
unbiased, E[(V̂_c(T) − V̂_ref(V))²] = b_c² + Var V̂_c(T) + Var V̂_ref(V), with b_c the
candidate's bias. Writing σ_c² and σ_ref² for the estimators' variances on the whole log of n
rounds (bootstrap, ``n_bootstrap`` resamples) and taking a variance to scale as 1/size,

    b̂_c² = max(0, mean over splits of (V̂_c(T) − V̂_ref(V))² − σ_c² n/|T| − σ_ref² n/|V|),
    MSE_c = b̂_c² + σ_c²,

the candidate's mean squared error on the whole log (:func:`cross_validated_mse`); the chosen
one has the least MSE, or, with ``one_standard_error=True``, the least MSE plus the standard
error of the mean squared difference over the splits (the authors' code's rule). A part's
estimate is the candidate's :meth:`~deepbandits.ope.estimator.Estimator.estimate_weighted` with
counts 1 on the part's rounds and 0 elsewhere (:func:`split_masks`), on the per-round terms of
the whole log: every split costs one matrix product, so many splits are cheap.

Where this differs from the paper: the paper's score is the raw mean squared difference,
which ranks the candidates by b² + Var V̂_c(T) (the reference's variance is common to all
when the split is), so a candidate's variance counts at the training part's size, and it
chooses the split ratio per candidate from the variances (``train_valid_ratio="theory"``);
here the reference's variance and the size difference are subtracted, so the score estimates
each candidate's MSE on the whole log, and one split ratio (``train_fraction``) serves every
candidate (the splits are shared); and the reward model is the one cross-fitted on the whole
log (as the bootstrap keeps it), where the paper's estimators fit theirs on the training part,
so a training round's q̂ has seen some validation rewards through the other folds (cross-fitting
keeps its own reward out), and a SLOPE-tuned candidate keeps the choice it made on the whole
log. With many splits the score tends to (V̂_c − V̂_ref)² − Var(V̂_c − V̂_ref) + σ_c² on the
whole log.

``method="slope"``: SLOPE's rule (Su, Srinath & Krishnamurthy 2020, "Adaptive estimator
selection for off-policy evaluation", Algorithm 1; :func:`~deepbandits.ope.tuning.slope_index`
with Tucker & Lee's c = √6 − 1) across the candidates ordered by their deviation
t₍ₙ₋₁₎(1 − δ) σ_c (σ_c the bootstrap standard error): from the widest down, each is accepted
while its estimate lies within its deviation plus c times each accepted one's; the last
accepted is chosen. It assumes the bias falls as the deviation grows (IPS widest and unbiased),
as the estimators tuned in :mod:`~deepbandits.ope.tuning` do by construction; across estimators
of different kinds that order is an assumption, not a fact.

No rule sees the truth; ``benchmarks/ope_selection.py`` measures how often each chooses an
estimator within 1.5 times the error of the best one in hindsight on simulated logs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from deepbandits._validation import (
    check_bool,
    check_choice,
    check_int,
    check_positive,
    check_seed,
)
from deepbandits.errors import DeepBanditsError, InputTypeError, InputValueError
from deepbandits.ope.estimator import Estimator, Terms, check_estimators, make_estimator
from deepbandits.ope.estimators import importance_weights, policy_model_value
from deepbandits.ope.evaluate import OPEResult, evaluate
from deepbandits.ope.tuning import slope_index

if TYPE_CHECKING:
    from deepbandits.ope import LoggedBandit

Array = NDArray[np.float64]
METHODS = ("mse", "cv", "slope")
#: z of the bias bound of ``method="mse"``: a bias within z paired standard errors of the
#: reference counts as none (chosen on the tuning seeds of ``benchmarks/ope_selection.py``).
BIAS_Z = 2.0
#: The unbiased estimators that may serve as the validation reference of ``method="cv"``.
REFERENCES = ("ips", "dr")


@dataclass(frozen=True)
class Selection:
    """What :func:`select_estimator` chose.

    Attributes
    ----------
    estimator : Estimator
        The chosen estimator.
    label : str
        Its label (the ``estimator`` column of the tables).
    method : str
        ``"mse"``, ``"cv"`` or ``"slope"``.
    table : DataFrame
        One row per candidate, in the order given: ``estimator`` (label), ``name``,
        ``estimate`` (on the whole log), ``std`` (its bootstrap standard error), the rule's
        columns (mse: ``difference``, ``difference_se``, ``bias2``, ``variance``, ``mse``; cv:
        ``bias2``, ``variance``, ``mse``, ``mse_se``; slope: ``deviation``), ``score`` (mse:
        ``mse``; cv: ``mse``, or ``mse + mse_se`` with the one-standard-error rule; slope:
        ``deviation``) and ``chosen``.
    reason : str
        Why, in one line.
    """

    estimator: Estimator
    label: str
    method: str
    table: pd.DataFrame
    reason: str

    @property
    def estimate(self) -> float:
        """The chosen estimator's estimate on the whole log."""
        return float(self.table.loc[self.table["chosen"], "estimate"].iloc[0])


def cross_validated_mse(
    squared_differences: Array,
    variances: Array,
    reference_variance: float,
    n: int,
    n_train: int,
) -> tuple[Array, Array, Array]:
    """(b̂², MSE, standard error) of each candidate from ``squared_differences`` ``[splits,
    candidates]`` (V̂_c(T) − V̂_ref(V))², their ``variances`` σ_c² and the reference's on the
    whole log of ``n`` rounds, T of ``n_train`` (module notes): b̂² = max(0, mean − σ_c² n/|T| −
    σ_ref² n/|V|), MSE = b̂² + σ_c², and the standard error of the mean over the splits. A
    candidate undefined on every split (NaN) gets an infinite MSE."""
    n_valid = n - n_train
    defined = np.isfinite(squared_differences)
    count = defined.sum(axis=0)
    filled = np.where(defined, squared_differences, 0.0)
    mean = np.divide(filled.sum(axis=0), count, out=np.full(count.shape, np.inf), where=count > 0)
    excess = mean - variances * n / n_train - reference_variance * n / n_valid
    bias2 = np.maximum(excess, 0.0)
    centred = np.where(defined, squared_differences - mean, 0.0)
    spread = np.sqrt((centred**2).sum(axis=0) / np.maximum(count - 1, 1))
    stderr = np.where(count > 1, spread / np.sqrt(np.maximum(count, 1)), 0.0)
    return bias2, bias2 + variances, stderr


def bounded_bias_mse(
    differences: Array, difference_se: Array, variances: Array, z: float
) -> tuple[Array, Array]:
    """(b̂², MSE) of each candidate from its difference to the unbiased reference on the whole
    log, V̂_c − V̂_ref, that difference's paired bootstrap standard error s and the candidate's
    variance σ_c²: b̂ = max(0, |V̂_c − V̂_ref| − z·s), the distance from the candidate to the
    reference's z·s band (MAGIC's bias bound, Thomas & Brunskill 2016, Section 4), and MSE =
    b̂² + σ_c². A candidate undefined (NaN) gets an infinite MSE."""
    excess = np.maximum(np.abs(differences) - z * difference_se, 0.0)
    bias2 = np.where(np.isfinite(excess), excess**2, np.inf)
    return bias2, np.where(np.isfinite(variances), bias2 + variances, np.inf)


def slope_deviations(std: Array, n: int, delta: float) -> Array:
    """t₍ₙ₋₁₎(1 − δ) σ: the half-width of a one-sided Student-t bound from the standard error
    σ of each candidate (Su et al. 2020 with the deviation of Thomas et al. 2015)."""
    return float(stats.t(max(n - 1, 1)).ppf(1.0 - delta)) * std


def _check_candidates(candidates: Any) -> list[Estimator]:
    if not isinstance(candidates, str | Estimator | Sequence):
        raise InputTypeError(
            "candidates must be 'all', a name or specification, an Estimator or a list of "
            f"them, but {type(candidates).__name__} is given"
        )
    try:
        return check_estimators(candidates)
    except DeepBanditsError as exc:  # name the argument as this function calls it
        raise type(exc)(f"candidates: {exc}") from None


def _check_fraction(value: Any, name: str) -> float:
    """A number in (0, 1)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputTypeError(
            f"{name} must be a number in (0, 1), but {value!r} ({type(value).__name__}) is given"
        )
    if not 0.0 < value < 1.0:
        raise InputValueError(f"{name} must be in (0, 1), but {value} is given")
    return float(value)


def _training_size(train_fraction: float, n: int) -> int:
    """The training part's size of ``train_fraction`` of ``n`` rounds (both parts ≥ 2)."""
    n_train = round(train_fraction * n)
    if not 2 <= n_train <= n - 2:
        raise InputValueError(
            f"train_fraction={train_fraction} of the {n} logged rounds leaves a part with fewer "
            "than 2 rounds; cross-validation needs at least 4 rounds"
        )
    return n_train


def split_masks(n: int, n_train: int, n_splits: int, seed: int | None) -> Array:
    """``[n_splits, n]``: 1 on the ``n_train`` rounds of each random training part, 0 on the
    validation part (the rest)."""
    rng = np.random.default_rng(seed)
    masks = np.zeros((n_splits, n))
    for k in range(n_splits):
        masks[k, rng.permutation(n)[:n_train]] = 1.0
    return masks


def _terms(log: LoggedBandit, result: OPEResult) -> Terms:
    """The per-round terms that :func:`evaluate` read to give ``result``."""
    dist, q = result.action_dist, result.q_hat
    w = importance_weights(dist, log.actions, log.propensities)
    if q is None:
        return Terms(log.rewards, w, action_dist=dist, log=log)
    dm, q_logged = policy_model_value(dist, q), q[np.arange(len(log)), log.actions]
    return Terms(log.rewards, w, dm, q_logged, dist, log)


def select_estimator(
    log: LoggedBandit,
    policy: Any,
    candidates: str | Estimator | Sequence[str | Estimator] = "all",
    *,
    method: str = "mse",
    z: float = BIAS_Z,
    n_splits: int = 200,
    train_fraction: float = 0.5,
    reference: str = "ips",
    one_standard_error: bool = False,
    delta: float = 0.05,
    reward_model: Any = "auto",
    q_hat: ArrayLike | None = None,
    n_folds: int = 5,
    n_bootstrap: int = 200,
    seed: int | None = 0,
) -> Selection:
    """Choose which of ``candidates`` to trust for the value of ``policy`` on ``log`` (module
    notes: cross-validated OPE, Cief et al. 2025, or SLOPE, Su et al. 2020).

    Parameters
    ----------
    log : LoggedBandit
    policy : array ``[n, K]`` or Policy
        π(a | xₜ) on every round, or a policy of the library.
    candidates : "all", str, Estimator or a list of them, default="all"
        As :func:`~deepbandits.ope.evaluate.evaluate`'s ``estimators``.
    method : {"mse", "cv", "slope"}, default="mse"
    z : float, default=2
        mse: a difference from the reference within z paired standard errors counts as no bias.
    n_splits : int, default=200
        cv: random training/validation splits (≥ 2).
    train_fraction : float, default=0.5
        cv: the share of the rounds in each training part.
    reference : {"ips", "dr"}, default="ips"
        mse, cv: the unbiased estimator the candidates are compared with (cv: on the
        validation parts).
    one_standard_error : bool, default=False
        cv: choose by MSE plus its standard error over the splits (the authors' rule).
    delta : float, default=0.05
        slope: the level of the deviations t₍ₙ₋₁₎(1 − δ) σ.
    reward_model, q_hat, n_folds
        The reward model of the model-based candidates, as :func:`evaluate` takes them.
    n_bootstrap : int, default=200
        Resamples of the standard errors σ (≥ 2).
    seed : int, optional
        Seeds the splits, the reward model and the resamples: the same seed, the same choice.
    """
    chosen_method = check_choice(method, "method", METHODS)
    estimators = _check_candidates(candidates)
    n_splits = check_int(n_splits, "n_splits", minimum=2)
    train_fraction = _check_fraction(train_fraction, "train_fraction")
    ref = make_estimator(check_choice(reference, "reference", REFERENCES))
    one_se = check_bool(one_standard_error, "one_standard_error")
    delta = _check_fraction(delta, "delta")
    z = check_positive(z, "z", allow_zero=True)
    n_bootstrap = check_int(n_bootstrap, "n_bootstrap", minimum=2)
    seed = check_seed(seed)
    labels = [e.label for e in estimators]
    scored = estimators if ref.label in labels else [*estimators, ref]
    whole = evaluate(
        log,
        policy,
        estimators=scored,
        q_hat=q_hat,
        n_bootstrap=n_bootstrap,
        seed=seed,
        warn=False,
        reward_model=reward_model,
        n_folds=n_folds,
    )  # checks the log, the policy and the reward model
    n = len(log)
    n_train = _training_size(train_fraction, n)
    table = whole.table.iloc[: len(estimators)][["estimator", "name", "estimate", "std"]]
    table = table.reset_index(drop=True)
    std = table["std"].to_numpy(dtype=np.float64)
    ref_row = labels.index(ref.label) if ref.label in labels else len(estimators)
    if chosen_method == "mse":
        samples = whole.samples
        paired = samples[:, : len(estimators)] - samples[:, [ref_row]]
        with np.errstate(invalid="ignore"):
            difference_se = np.nanstd(paired, axis=0, ddof=1)
        difference = (
            table["estimate"].to_numpy(dtype=np.float64) - whole.table["estimate"].iloc[ref_row]
        )
        bias2, mse = bounded_bias_mse(difference, difference_se, std**2, z)
        table = table.assign(
            difference=difference,
            difference_se=difference_se,
            bias2=bias2,
            variance=std**2,
            mse=mse,
            score=mse,
        )
        index = int(np.argmin(mse))
        reason = _mse_reason(table.iloc[index], len(table), ref, z)
    elif chosen_method == "cv":
        terms = _terms(log, whole)
        masks = split_masks(n, n_train, n_splits, seed)
        trained = np.column_stack([e.estimate_weighted(terms, masks) for e in estimators])
        validated = ref.estimate_weighted(terms, 1.0 - masks)
        squared = (trained - validated[:, None]) ** 2
        ref_std = float(whole.table["std"].iloc[ref_row])
        bias2, mse, stderr = cross_validated_mse(squared, std**2, ref_std**2, n, n_train)
        score = mse + stderr if one_se else mse
        table = table.assign(bias2=bias2, variance=std**2, mse=mse, mse_se=stderr, score=score)
        index = int(np.argmin(score))
        reason = _cv_reason(table.iloc[index], len(table), ref, n_splits, n - n_train, one_se)
    else:
        deviation = slope_deviations(std, n, delta)
        values = table["estimate"].to_numpy(dtype=np.float64)
        index = slope_index(list(values), list(deviation))
        table = table.assign(deviation=deviation, score=deviation)
        reason = _slope_reason(table, index)
    table["chosen"] = np.arange(len(table)) == index
    return Selection(estimators[index], labels[index], chosen_method, table, reason)


def _mse_reason(row: pd.Series, n_candidates: int, ref: Estimator, z: float) -> str:
    return (
        f"mse: trust {row['name']} (estimate {row['estimate']:.5g}): the least estimated MSE of "
        f"{n_candidates} candidates, {row['mse']:.3g} = bias² {row['bias2']:.3g} (its distance "
        f"to {ref.title}, {row['difference']:+.3g}, beyond {z:g} paired standard errors of "
        f"{row['difference_se']:.3g}) + variance {row['variance']:.3g}"
    )


def _cv_reason(
    row: pd.Series, n_candidates: int, ref: Estimator, n_splits: int, n_valid: int, one_se: bool
) -> str:
    rule = "MSE + its standard error" if one_se else "MSE"
    return (
        f"cv: trust {row['name']} (estimate {row['estimate']:.5g}): the least estimated {rule} "
        f"of {n_candidates} candidates, {row['mse']:.3g} = bias² {row['bias2']:.3g} + variance "
        f"{row['variance']:.3g}, against {ref.title} on {n_valid} held-out rounds over "
        f"{n_splits} splits"
    )


def _slope_reason(table: pd.DataFrame, index: int) -> str:
    row = table.iloc[index]
    order = list(np.argsort(-table["deviation"].to_numpy(), kind="stable"))
    position = order.index(index)
    head = (
        f"slope: trust {row['name']} (estimate {row['estimate']:.5g} ± {row['deviation']:.3g}):"
        f" the narrowest of {len(table)} candidates whose estimate agrees with every wider one's"
    )
    if position + 1 == len(order):
        return head
    nxt = table.iloc[order[position + 1]]
    return (
        f"{head}; the next narrower, {nxt['name']} ({nxt['estimate']:.5g} ± "
        f"{nxt['deviation']:.3g}), does not"
    )
