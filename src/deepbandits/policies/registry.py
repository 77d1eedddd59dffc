"""The registry: policy names, each a :class:`Recipe` that builds a composition, and named
configurations.

:data:`POLICIES` maps a registry name to its recipe; :data:`CONFIGURATIONS` maps a name to a
registry name plus keyword settings: the ablations of Section 5.5 (Fig. ablation_study) and the
heuristic σ² schedules of Fig. heuristic are settings of ``neural-sigma2-linucb``. Both kinds of
name are accepted by :func:`make_policy` and the CLI's ``--policy``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepbandits._validation import check_choice
from deepbandits.errors import (
    CheckpointError,
    CheckpointNotFoundError,
    InputTypeError,
    InputValueError,
)
from deepbandits.policies.checkpoint import check_checkpoint, read_checkpoint
from deepbandits.policies.legacy import upgrade
from deepbandits.policies.named import Recipe
from deepbandits.policies.params import (
    Spec,
    render_spec,
)
from deepbandits.policies.policy import Policy
from deepbandits.policies.space import Param

if TYPE_CHECKING:
    from deepbandits.envs.base import Environment


POLICIES: dict[str, Recipe] = {}

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


def register_policy(name: str, recipe: Recipe) -> type[Policy]:
    """Make a :class:`Recipe` available by ``name`` to :func:`make_policy`, the runner's policy
    specs and the command line (README, "Adding a policy"); returns the class whose
    constructor takes its keywords (:attr:`Recipe.policy_class`)."""
    if not isinstance(name, str) or not name or name != name.strip().lower() or ":" in name:
        raise InputValueError(
            f"a policy name must be a non-empty lower-case string without ':', but {name!r} is "
            "given"
        )
    if not isinstance(recipe, Recipe):
        raise InputTypeError(f"recipe must be a Recipe, but {recipe!r} is given")
    if name in POLICIES or name in CONFIGURATIONS:
        raise InputValueError(f"policy name {name!r} is taken; choose another")
    if recipe.name != name:
        raise InputValueError(
            f"register_policy needs the recipe's own name, but {name!r} is given for the "
            f"recipe {recipe.name!r}"
        )
    POLICIES[name] = recipe
    return recipe.policy_class


def policy_names(configurations: bool = True) -> list[str]:
    """Names accepted by :func:`make_policy` and ``--policy``: registry names, then
    (unless ``configurations=False``) the named configurations."""
    return list(POLICIES) + (list(CONFIGURATIONS) if configurations else [])


def recipe_of(name: str) -> tuple[Recipe, dict[str, Any]]:
    """The recipe behind a registry name or configuration, and the configuration's settings."""
    check_choice(name, "policy", policy_names())
    base, settings = CONFIGURATIONS.get(name, (name, {}))
    return POLICIES[base], dict(settings)


def load_policy(path: str | Path, into: Policy | None = None) -> Policy:
    """Rebuild a policy saved by :meth:`Policy.save`; damaged files raise
    :class:`~deepbandits.errors.CheckpointError`.

    A policy made from a registry name is rebuilt from its recipe. A composition built by hand
    is rebuilt as PyTorch rebuilds a module: build the same composition and pass it as
    ``into``; its state is then loaded (and it is returned).
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointNotFoundError(f"no saved policy at {path}")
    state = upgrade(read_checkpoint(path))
    if into is not None:
        policy = into
    elif not state.get("recipe"):
        raise CheckpointError(
            f"{path} holds a {state['class']} composed by hand; build the same composition and "
            "load it with load_policy(path, into=policy)"
        )
    elif state["recipe"] not in POLICIES:
        raise CheckpointError(
            f"{path} holds a {state['recipe']!r} policy, a name not registered here; register it "
            "(register_policy) before loading"
        )
    else:
        return POLICIES[state["recipe"]].policy_class.load(path)
    try:
        policy.load_state_dict(state)
    except CheckpointError as exc:
        raise CheckpointError(f"{path}: {exc}") from None
    return policy


def policy_from_state(state: Any, source: str = "the saved state") -> Policy:
    """A policy of a registry name rebuilt from its ``state_dict()`` (as :func:`load_policy`
    rebuilds one from a file, with the same checks; ``source`` names it in errors)."""
    try:
        check_checkpoint(state)
    except CheckpointError as exc:
        raise CheckpointError(f"{source} is not a valid policy state: {exc}") from None
    state = upgrade(state)
    if state.get("recipe") not in POLICIES:
        raise CheckpointError(
            f"{source} holds a {state.get('recipe') or state['class']!r} policy, which is not a "
            "registered name"
        )
    return POLICIES[state["recipe"]].policy_class.from_state(state, source)


def make_policy(name: str, *, env: Environment | None = None, **params: Any) -> Policy:
    """Build a policy by name, e.g. ``make_policy("linucb", per_arm=True)`` or
    ``make_policy("range-mle", seed=0)``; keywords override a configuration's settings.

    With ``env``, the environment's recommended settings
    (:attr:`~deepbandits.envs.Environment.policy_defaults`) fill the keywords that ``params``
    leave out and the policy accepts. This is the one rule every entry point follows: the
    command line, :func:`deepbandits.run` given a policy name, and this function with ``env``
    build the same policy; a policy object is always used as it is.
    """
    recipe, settings = recipe_of(name)
    extra: dict[str, Any] = {}
    if env is not None:  # in the build, so that they count when keywords are checked together
        recommended = env.policy_defaults_for(name).items()
        extra = {k: v for k, v in recommended if k not in params and k in recipe.specs}
    return recipe.policy_class(**{**settings, **extra, **params})


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
    recipe, settings = recipe_of(name)
    return PolicyInfo(
        name, dict(recipe.specs), dict(recipe.search_space), dict(recipe.fixed), settings
    )


def parameter_names(policy: str | Recipe) -> list[str]:
    """Every keyword a policy name (or recipe) accepts."""
    return list((policy if isinstance(policy, Recipe) else recipe_of(policy)[0]).specs)


def parameter_table(name: str) -> list[tuple[str, str, str, str]]:
    """``(parameter, default, type and range, meaning)`` for every parameter of policy ``name``
    (a registry name or a configuration, whose settings are the defaults), from its specs; a
    recipe's fixed parameters read ``fixed``. What ``deepbandits list --params NAME`` prints."""
    recipe, _ = recipe_of(name)
    policy = make_policy(name)
    return [
        (
            key,
            repr(default),
            "fixed" if key in recipe.fixed else render_spec(recipe.specs[key]),
            recipe.specs[key].doc,
        )
        for key, default in policy.get_params().items()
    ]


def distinct_policy_names() -> list[str]:
    """:func:`policy_names` without configurations equal to an earlier name's defaults
    (``range-mse`` is ``neural-sigma2-linucb`` as it comes): what ``--policy all`` runs."""
    seen: list[tuple[str, dict[str, Any]]] = []
    names = []
    for name in policy_names():
        recipe, _ = recipe_of(name)
        key = (recipe.name, make_policy(name).get_params())
        if key not in seen:
            seen.append(key)
            names.append(name)
    return names
