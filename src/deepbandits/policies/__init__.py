"""Bandit policies, the registry behind their command-line names, and named configurations.

:data:`POLICIES` maps a registry name to a class; :data:`CONFIGURATIONS` maps a name to a
registry name plus keyword settings: the ablations of Section 5.5 (Fig. ablation_study) and the
heuristic σ² schedules of Fig. heuristic are settings of ``neural-sigma2-linucb``, not classes.
Both kinds of name are accepted by :func:`make_policy` and the CLI's ``--policy``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deepbandits._validation import check_choice, check_unknown_keys
from deepbandits.errors import InputTypeError, InputValueError
from deepbandits.policies.base import Policy, load_policy
from deepbandits.policies.bootstrapped import BootstrappedNN
from deepbandits.policies.decision import Decision, PendingDecisions
from deepbandits.policies.kernel_ucb import KernelUCB
from deepbandits.policies.linucb import LinUCB, Sigma2LinUCB
from deepbandits.policies.neural_linear import (
    NeuralLinearBandit,
    NeuralLinGreedy,
    NeuralLinUCB,
    NeuralSigma2LinUCB,
)
from deepbandits.policies.neural_ucb import NeuralGradientBandit, NeuralTS, NeuralUCB
from deepbandits.policies.params import Spec, render_spec
from deepbandits.policies.save import SaveNeuralLinUCB
from deepbandits.policies.space import Param

if TYPE_CHECKING:
    from deepbandits.envs.base import Environment

POLICIES: dict[str, type[Policy]] = {
    "linucb": LinUCB,
    "sigma2-linucb": Sigma2LinUCB,
    "neural-ucb": NeuralUCB,
    "neural-ts": NeuralTS,
    "neural-lingreedy": NeuralLinGreedy,
    "neural-linucb": NeuralLinUCB,
    "neural-sigma2-linucb": NeuralSigma2LinUCB,
    "save-neural-linucb": SaveNeuralLinUCB,
    "kernel-ucb": KernelUCB,
    "bootstrapped-nn": BootstrappedNN,
}

#: Named settings of registered policies (Section 5.5 and Appendix B.3 of the paper).
CONFIGURATIONS: dict[str, tuple[str, dict[str, Any]]] = {
    # Fig. ablation_study: oracle σ² / Eq. 13 estimate / φᵀA⁻¹φ, trained by MSE (Eq. 6) or MLE
    "oracle-mse": ("neural-sigma2-linucb", {"variance": "oracle", "loss": "mse"}),
    "range-mse": ("neural-sigma2-linucb", {"variance": "range", "loss": "mse"}),
    "range-mle": ("neural-sigma2-linucb", {"variance": "range", "loss": "mle"}),
    "mle-var": ("neural-sigma2-linucb", {"variance": "mle-var", "loss": "mle"}),
    # Fig. heuristic: σ²ₜ falling linearly from 1 (or 10) to 0 over the horizon
    "heuristic-1": ("neural-sigma2-linucb", {"variance": "schedule", "schedule": "linear:1:0"}),
    "heuristic-10": ("neural-sigma2-linucb", {"variance": "schedule", "schedule": "linear:10:0"}),
}


def register_policy(name: str, cls: type[Policy]) -> None:
    """Make a policy class available by ``name`` to :func:`make_policy`, the runner's policy
    specs and the command line (README, "Architecture": adding a policy). Its checkpoints load
    by class name once the class is defined, registered or not."""
    if not isinstance(name, str) or not name or name != name.strip().lower() or ":" in name:
        raise InputValueError(
            f"a policy name must be a non-empty lower-case string without ':', but {name!r} is "
            "given"
        )
    if not (isinstance(cls, type) and issubclass(cls, Policy)):
        raise InputTypeError(f"cls must be a Policy subclass, but {cls!r} is given")
    if name in POLICIES or name in CONFIGURATIONS:
        raise InputValueError(f"policy name {name!r} is taken; choose another")
    POLICIES[name] = cls


def policy_names(configurations: bool = True) -> list[str]:
    """Names accepted by :func:`make_policy` and ``--policy``: registry names, then
    (unless ``configurations=False``) the named configurations."""
    return list(POLICIES) + (list(CONFIGURATIONS) if configurations else [])


def parameter_names(cls: type[Policy]) -> list[str]:
    """Every constructor parameter of a policy class (those its specs declare)."""
    return list(cls.param_specs)


def parameter_table(name: str) -> list[tuple[str, str, str, str]]:
    """``(parameter, default, type and range, meaning)`` for every parameter of policy ``name``
    (a registry name or a configuration, whose settings are the defaults), from its specs; a
    preset's fixed parameters read ``fixed``. What ``deepbandits list --params NAME`` prints."""
    policy = make_policy(name)
    cls = type(policy)
    fixed = getattr(cls, "fixed_params", {})
    return [
        (
            key,
            repr(default),
            "fixed" if key in fixed else render_spec(cls.param_specs[key]),
            cls.param_specs[key].doc,
        )
        for key, default in policy.get_params().items()
    ]


def distinct_policy_names() -> list[str]:
    """:func:`policy_names` without configurations equal to an earlier name's defaults
    (``range-mse`` is ``neural-sigma2-linucb`` as it comes): what ``--policy all`` runs."""
    seen: list[tuple[str, dict[str, Any]]] = []
    names = []
    for name in policy_names():
        policy = make_policy(name)
        key = (type(policy).__name__, policy.get_params())
        if key not in seen:
            seen.append(key)
            names.append(name)
    return names


@dataclass(frozen=True)
class PolicyInfo:
    """What a policy name accepts, without building it: the spec of every keyword, the
    hyperparameters ``deepbandits tune`` searches, the keywords the name fixes (a variant's
    defining values, e.g. Neural-LinGreedy's ``alpha=0``) and a named configuration's settings
    (defaults the user may override)."""

    name: str
    specs: dict[str, Spec]
    search_space: dict[str, Param]
    fixed: dict[str, Any]
    settings: dict[str, Any]


def policy_info(name: str) -> PolicyInfo:
    """:class:`PolicyInfo` of a registry name or named configuration."""
    check_choice(name, "policy", policy_names())
    base, settings = CONFIGURATIONS.get(name, (name, {}))
    cls = POLICIES[base]
    return PolicyInfo(
        name,
        dict(cls.param_specs),
        dict(cls.search_space),
        dict(getattr(cls, "fixed_params", {})),
        dict(settings),
    )


def make_policy(name: str, *, env: Environment | None = None, **params: Any) -> Policy:
    """Build a policy by name, e.g. ``make_policy("linucb", per_arm=True)`` or
    ``make_policy("range-mle", seed=0)``; keywords override a configuration's settings.

    With ``env``, the environment's recommended settings
    (:attr:`~deepbandits.envs.Environment.policy_defaults`) fill the keywords that ``params``
    leave out and the policy accepts. This is the one rule every entry point follows: the
    command line, :func:`deepbandits.run` given a policy name, and this function with ``env``
    build the same policy; a policy object is always used as it is.
    """
    check_choice(name, "policy", policy_names())
    if name in CONFIGURATIONS:
        base, settings = CONFIGURATIONS[name]
        cls, params = POLICIES[base], {**settings, **params}
    else:
        cls = POLICIES[name]
    check_unknown_keys(params, parameter_names(cls), f"policy {name!r}")
    policy = cls(**params)
    if env is not None:
        accepted = policy.get_params()
        extra = {k: v for k, v in env.policy_defaults.items() if k not in params and k in accepted}
        if extra:
            policy.set_params(**extra)
    return policy


__all__ = [
    "CONFIGURATIONS",
    "POLICIES",
    "BootstrappedNN",
    "Decision",
    "KernelUCB",
    "LinUCB",
    "NeuralGradientBandit",
    "NeuralLinGreedy",
    "NeuralLinUCB",
    "NeuralLinearBandit",
    "NeuralSigma2LinUCB",
    "NeuralTS",
    "NeuralUCB",
    "PendingDecisions",
    "Policy",
    "PolicyInfo",
    "SaveNeuralLinUCB",
    "Sigma2LinUCB",
    "Spec",
    "distinct_policy_names",
    "load_policy",
    "make_policy",
    "parameter_table",
    "policy_info",
    "policy_names",
    "register_policy",
]
