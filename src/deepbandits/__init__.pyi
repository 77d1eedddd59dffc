"""The public names of :mod:`deepbandits` and where each is defined.

``__init__.py`` reads this stub (``lazy_loader.attach_stub``): each name is imported from its
module on first use. Type checkers and the documentation read it as the package's imports.
Only relative imports belong here.
"""

from . import ope, policies
from ._version import __version__
from .datasets import Dataset, data_home, dataset_names, load_dataset
from .encoding import BlockContexts, block_encode
from .envs import (
    ClassificationEnv,
    Environment,
    Round,
    SyntheticEnv,
    env_names,
    make_env,
)
from .errors import (
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
from .experiments import (
    RunResult,
    TuneResult,
    compare,
    load_results,
    make_executor,
    run,
    run_sweep,
    tune,
)
from .experiments.config import load_config
from .experiments.reproduce import reproduce_all, run_experiment
from .linalg import RidgeState
from .logs.load import load_logged
from .policies import (
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
