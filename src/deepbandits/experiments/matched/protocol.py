"""The settings of the matched protocol (:class:`MatchedProtocol`): written once here, as the
field defaults, and read by the shipped config ``matched.toml``, whose ``[matched]`` table
gives only what differs from them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from deepbandits._validation import check_int
from deepbandits.errors import InputValueError
from deepbandits.experiments.compare import label_of
from deepbandits.experiments.tune import search_space
from deepbandits.experiments.tune.study import check_seeds
from deepbandits.networks.learner import PLAIN_TRAINING
from deepbandits.policies import make_policy
from deepbandits.specs import parse_spec, with_params

#: The policies of the matched protocol.
MATCHED_POLICIES: tuple[str, ...] = (
    "neural-lingreedy",
    "neural-linucb",
    "neural-sigma2-linucb",
    "neural-sigma2-linucb:variance=oracle",
    "neural-ucb",
)

#: The network budget every policy of the protocol trains on unless told otherwise: the
#: library's defaults for NeuralUCB (the ``"default"`` schedule, no weight decay), given to the
#: ridge family too, whose own defaults differ (the ``"neural-linear"`` schedule, weight decay
#: 0.005: :data:`~deepbandits.policies.recipes.NEURAL_DEFAULTS`); the committed results
#: (``benchmarks/results/matched.md``) were measured on it.
MATCHED_BUDGET: dict[str, Any] = dict(PLAIN_TRAINING)


@dataclass(frozen=True)
class MatchedProtocol:
    """The settings of the matched protocol (:data:`MATCHED`; :data:`QUICK_MATCHED` for a smoke
    test).

    Attributes
    ----------
    envs : tuple of str
        Environment specifications ``NAME[:key=value,...]``.
    policies : tuple of str
        Policy specifications; none may set a key of ``budget``.
    reference : str
        The policy every other is compared with (one of ``policies``).
    T : dict
        Rounds per run by environment specification or name; others get ``default_T``.
    default_T : int
        Rounds per run of an environment not in ``T``.
    tuning_seeds, eval_seeds : tuple of int
        Seeds of every trial (the objective is their mean final regret) and of the evaluation;
        disjoint.
    n_trials : int
        Optuna trials per environment and policy.
    search : tuple of str
        Parameters searched, each only for the policies that search it.
    budget : dict
        Training settings added to the specification of every policy that takes them (e.g.
        ``{"train_steps": 100}``); :data:`MATCHED_BUDGET` by default: the ``"default"``
        schedule without weight decay, NeuralUCB's defaults, which the ridge family's
        (``"neural-linear"``, weight decay 0.005) differ from; with the environment's recommended
        settings, the same for all. Never searched.
    sampler_seed : int
        Seed of every study's TPE sampler.
    """

    envs: tuple[str, ...] = ("h1", "h2", "h3", "shuttle", "covertype", "mnist")
    policies: tuple[str, ...] = MATCHED_POLICIES
    reference: str = "neural-sigma2-linucb"
    T: dict[str, int] = field(default_factory=lambda: {"mnist": 2000})
    default_T: int = 5000
    tuning_seeds: tuple[int, ...] = (100, 101)
    eval_seeds: tuple[int, ...] = tuple(range(10))
    n_trials: int = 20
    search: tuple[str, ...] = ("alpha", "lam", "lr")
    budget: dict[str, Any] = field(default_factory=lambda: dict(MATCHED_BUDGET))
    sampler_seed: int = 0

    def horizon(self, env_spec: str) -> int:
        """Rounds per run on ``env_spec``: ``T[env_spec]``, else ``T[name]``, else
        ``default_T``."""
        if env_spec in self.T:
            return int(self.T[env_spec])
        return int(self.T.get(parse_spec(env_spec)[0], self.default_T))

    def policy_spec(self, policy: str) -> str:
        """``policy`` with the keys of :attr:`budget` that it takes appended."""
        name, _ = parse_spec(policy)
        accepted = make_policy(name).get_params()  # what the policy takes, whatever its class
        return with_params(policy, {k: v for k, v in self.budget.items() if k in accepted})

    def check(self) -> None:
        """Validate the settings (before anything runs).

        Raises
        ------
        InputValueError
            For empty or repeated environments or policies, a ``reference`` not among the
            policies, overlapping or empty seed sets, a bad T or ``n_trials``, a budget key that
            no policy takes or that is searched or that a policy specification also sets, or a
            search name that no policy searches.
        """
        if not self.envs:
            raise InputValueError("no environment to run")
        if not self.policies:
            raise InputValueError("no policy to run")
        for what, items in (("environment", self.envs), ("policy", self.policies)):
            labels = [label_of(s.strip()) for s in items]
            repeated = sorted({s for s in labels if labels.count(s) > 1})
            if repeated:
                raise InputValueError(f"{what} {', '.join(repeated)} given twice")
        if self.reference not in self.policies:
            raise InputValueError(
                f"the reference policy {self.reference!r} is not among the policies "
                f"({', '.join(self.policies)})"
            )
        tuning = check_seeds(self.tuning_seeds, "tuning")
        evaluation = check_seeds(self.eval_seeds, "evaluation")
        overlap = sorted(set(tuning) & set(evaluation))
        if overlap:
            raise InputValueError(
                "tuning seeds and evaluation seeds must be disjoint, but "
                f"{', '.join(map(str, overlap))} {'is' if len(overlap) == 1 else 'are'} in both"
            )
        check_int(self.n_trials, "n_trials", minimum=1)
        check_int(self.default_T, "T", minimum=1)
        for key, value in self.T.items():
            check_int(value, f"T of {key}", minimum=1)
        if not self.search:
            raise InputValueError("the protocol searches no parameter")
        searched = set(self.search) & set(self.budget)
        if searched:
            raise InputValueError(
                f"the budget fixes {', '.join(sorted(searched))}, which the protocol searches"
            )
        accepted: set[str] = set()
        declared: set[str] = set()
        for policy in self.policies:
            name, given = parse_spec(policy)
            params = make_policy(name).get_params()
            accepted |= set(params)
            both = sorted(set(given) & set(self.budget))
            if both:
                raise InputValueError(
                    f"{policy!r} sets {', '.join(both)}, which the budget fixes for every policy"
                )
            declared |= set(search_space(policy))
        unused = sorted(set(self.budget) - accepted)
        if unused:
            raise InputValueError(f"no policy takes the budget key(s) {', '.join(unused)}")
        unknown = sorted(set(self.search) - declared)
        if unknown:
            raise InputValueError(f"no policy searches {', '.join(unknown)}")


#: The full experiment.
MATCHED = MatchedProtocol()
#: What ``deepbandits list`` says about the experiment.
DESCRIPTION = (
    "matched protocol: Neural-LinGreedy, Neural-LinUCB, Neural-σ²-LinUCB (range, oracle) and "
    "NeuralUCB with one network budget and one tuning budget (alpha, lam, lr), paired against "
    "Neural-σ²-LinUCB on fresh seeds ["
    + "; ".join(f"{e} T={MATCHED.horizon(e)}" for e in MATCHED.envs)
    + f"; {MATCHED.n_trials} trials; tuning seeds "
    + ",".join(map(str, MATCHED.tuning_seeds))
    + f"; {len(MATCHED.eval_seeds)} evaluation seeds; --quick: a smoke test]"
)
#: Smoke-test scale (a few minutes on 2 cores): h1 and shuttle, T = 1000, 3 trials, 2 tuning
#: seeds, 3 evaluation seeds and a tenth of the default training steps (100 per training) for
#: every policy. It checks the pipeline, not the paper's claim.
QUICK_MATCHED = MatchedProtocol(
    envs=("h1", "shuttle"),
    T={},
    default_T=1000,
    tuning_seeds=(100, 101),
    eval_seeds=(0, 1, 2),
    n_trials=3,
    budget={**MATCHED_BUDGET, "train_steps": 100},
)


def matched_protocol(
    *,
    quick: bool = False,
    envs: Sequence[str] | None = None,
    policies: Sequence[str] | None = None,
    n_trials: int | None = None,
    eval_seeds: Sequence[int] | None = None,
    tuning_seeds: Sequence[int] | None = None,
    T: int | Mapping[str, int] | None = None,
    budget: Mapping[str, Any] | None = None,
    base: MatchedProtocol | None = None,
) -> MatchedProtocol:
    """``base`` (default :data:`MATCHED`, or :data:`QUICK_MATCHED` with ``quick``) with the
    given settings replaced, checked (:meth:`MatchedProtocol.check`); an int ``T`` applies to
    every environment, a mapping overrides single ones; ``budget`` replaces the keys it gives
    and keeps the others."""
    protocol = base if base is not None else QUICK_MATCHED if quick else MATCHED
    changes: dict[str, Any] = {}
    if envs is not None:
        changes["envs"] = tuple(s.strip() for s in envs)
    if policies is not None:
        changes["policies"] = tuple(s.strip() for s in policies)
    if n_trials is not None:
        changes["n_trials"] = n_trials
    if eval_seeds is not None:
        changes["eval_seeds"] = tuple(eval_seeds)
    if tuning_seeds is not None:
        changes["tuning_seeds"] = tuple(tuning_seeds)
    if isinstance(T, Mapping):
        changes["T"] = {**protocol.T, **T}
    elif T is not None:
        changes.update(T={}, default_T=T)
    if budget is not None:
        changes["budget"] = {**protocol.budget, **budget}
    protocol = replace(protocol, **changes)
    protocol.check()
    return protocol


__all__ = [
    "DESCRIPTION",
    "MATCHED",
    "MATCHED_BUDGET",
    "MATCHED_POLICIES",
    "QUICK_MATCHED",
    "MatchedProtocol",
    "matched_protocol",
]
