"""deepbandits: neural contextual bandits, centred on Neural-σ²-LinUCB.

Quick start::

    import deepbandits as db
    env = db.make_env("h1", seed=0)
    policy = db.make_policy("neural-sigma2-linucb", seed=0)
    result = db.run(policy, env, T=2000)
    best = db.tune("linucb", "h1", T=2000, tuning_seeds=[100, 101], eval_seeds=[0, 1],
                   out="results/tune", n_trials=20)   # Optuna; best.best_spec

    mnist = db.make_env("mnist", seed=0)   # reads $DEEPBANDITS_DATA (downloads when online)

    d = policy.decide(contexts, mask=available)   # live: a Decision (id, arm, propensity, ...)
    policy.learn(d.id, reward)                      # whenever its reward arrives, in any order

    db.run_experiment(db.load_config("my.toml"), "results/my")   # an experiment config
    runs = db.load_results("results/my")   # every run of a folder: one row per round
"""

from deepbandits import ope, policies
from deepbandits._version import __version__
from deepbandits.datasets import Dataset, data_home, dataset_names, load_dataset
from deepbandits.datasets.logged import load_logged
from deepbandits.encoding import BlockContexts, block_encode
from deepbandits.envs import (
    ClassificationEnv,
    Environment,
    Round,
    SyntheticEnv,
    env_names,
    make_env,
)
from deepbandits.errors import (
    AuthenticationError,
    CallOrderError,
    CheckpointError,
    CheckpointNotFoundError,
    ConcurrentUseError,
    DataError,
    DataNotFoundError,
    DecisionError,
    DeepBanditsError,
    EventLogError,
    ExpiredDecisionError,
    InputTypeError,
    InputValueError,
    NumericalError,
    PayloadTooLargeError,
    RewardAlreadyLearnedError,
    ServiceError,
    UnknownDecisionError,
)
from deepbandits.experiments import (
    RunResult,
    TuneResult,
    compare,
    load_results,
    make_executor,
    run,
    run_sweep,
    tune,
)
from deepbandits.experiments.config import load_config
from deepbandits.experiments.reproduce import reproduce_all, run_experiment
from deepbandits.linalg import RidgeState
from deepbandits.policies import (  # noqa: F401 (in __all__ by the names policies exports)
    BootstrappedNN,
    Decision,
    KernelUCB,
    LinUCB,
    NeuralGradientBandit,
    NeuralLinGreedy,
    NeuralLinUCB,
    NeuralSigma2LinUCB,
    NeuralTS,
    NeuralUCB,
    Policy,
    Recipe,
    RidgeUCB,
    SaveNeuralLinUCB,
    Sigma2LinUCB,
    load_policy,
    make_policy,
    policy_names,
    register_policy,
)

__all__ = [
    # the names imported from deepbandits.policies above, as it exports them
    *(name for name in policies.__all__ if name in globals()),
    "BlockContexts",
    "CallOrderError",
    "CheckpointError",
    "CheckpointNotFoundError",
    "ClassificationEnv",
    "ConcurrentUseError",
    "DataError",
    "DataNotFoundError",
    "Dataset",
    "DecisionError",
    "DeepBanditsError",
    "Environment",
    "InputTypeError",
    "InputValueError",
    "NumericalError",
    "RidgeState",
    "Round",
    "RunResult",
    "SyntheticEnv",
    "TuneResult",
    "AuthenticationError",
    "EventLogError",
    "ExpiredDecisionError",
    "PayloadTooLargeError",
    "RewardAlreadyLearnedError",
    "ServiceError",
    "UnknownDecisionError",
    "__version__",
    "block_encode",
    "compare",
    "data_home",
    "dataset_names",
    "env_names",
    "load_config",
    "load_dataset",
    "load_logged",
    "load_results",
    "make_env",
    "make_executor",
    "ope",
    "reproduce_all",
    "run",
    "run_experiment",
    "run_sweep",
    "tune",
]
