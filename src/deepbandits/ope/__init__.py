"""Off-policy evaluation and warm starts from logged bandit data.

How good would a policy have been on the traffic already logged? :func:`evaluate` answers with
IPS, SNIPS, the direct method, DR, SNDR, Switch-DR and DRos (:mod:`~deepbandits.ope.estimators`),
their SLOPE-tuned forms (:mod:`~deepbandits.ope.tuning`), MIPS for actions with embeddings
(:mod:`~deepbandits.ope.marginal`), balanced IPW or estimated propensities for logs without
them (:mod:`~deepbandits.ope.propensity`) or any :class:`Estimator`
(:mod:`~deepbandits.ope.estimator`: one class per estimator), each with a bootstrap interval
and the effective sample size; :func:`replay` answers for a policy that learns as it goes
(Li et al. 2011); :func:`learn_log` starts a policy from the log, and :func:`learn_from_log`
learns a new one from it, unweighted, by IPS or on doubly robust pseudo-rewards
(:mod:`~deepbandits.ope.offline_learning`).
Logs come from :func:`make_log`, :func:`deepbandits.load_logged` (the Open Bandit Dataset, the
decision service's export) or :func:`simulate_log` (with the true values known).
"""

from deepbandits.logs.bandit import LoggedBandit, make_log
from deepbandits.ope.estimator import (
    ESTIMATORS,
    Estimator,
    MeanEstimator,
    RatioEstimator,
    Terms,
    make_estimator,
    register_estimator,
)
from deepbandits.ope.estimators import (
    DM,
    DR,
    IPS,
    SNDR,
    SNIPS,
    DRos,
    SwitchDR,
    effective_sample_size,
)
from deepbandits.ope.evaluate import OPEResult, evaluate
from deepbandits.ope.marginal import MIPS, SNMIPS
from deepbandits.ope.offline_learning import (
    LearnedPolicy,
    WeightSummary,
    dr_pseudo_rewards,
    learn_from_log,
    split_log_by_time,
)
from deepbandits.ope.propensity import (
    BalancedIPS,
    fit_logging_distribution,
    with_estimated_propensities,
)
from deepbandits.ope.replay import ReplayResult, replay
from deepbandits.ope.reward_model import cross_fitted_rewards
from deepbandits.ope.selection import Selection, select_estimator
from deepbandits.ope.simulate import SimulatedLog, simulate_log, true_value
from deepbandits.ope.support import Support, SupportWarning
from deepbandits.ope.target import action_distribution, policy_probabilities
from deepbandits.ope.tuning import DRosSlope, SlopeTuned, SwitchDRSlope
from deepbandits.ope.warm import WarmStart, learn_log

__all__ = [
    "DM",
    "DR",
    "ESTIMATORS",
    "IPS",
    "MIPS",
    "SNDR",
    "SNIPS",
    "SNMIPS",
    "BalancedIPS",
    "DRos",
    "DRosSlope",
    "Estimator",
    "LearnedPolicy",
    "LoggedBandit",
    "MeanEstimator",
    "OPEResult",
    "RatioEstimator",
    "ReplayResult",
    "Selection",
    "SimulatedLog",
    "SlopeTuned",
    "Support",
    "SupportWarning",
    "SwitchDR",
    "SwitchDRSlope",
    "Terms",
    "WarmStart",
    "WeightSummary",
    "action_distribution",
    "cross_fitted_rewards",
    "dr_pseudo_rewards",
    "effective_sample_size",
    "evaluate",
    "fit_logging_distribution",
    "learn_from_log",
    "learn_log",
    "make_estimator",
    "make_log",
    "policy_probabilities",
    "register_estimator",
    "replay",
    "select_estimator",
    "simulate_log",
    "split_log_by_time",
    "true_value",
    "with_estimated_propensities",
]
