"""The registry's recipes: how each policy name turns its keywords into a composition.

Each ridge-family name is one call of :class:`~deepbandits.policies.ridge_ucb.RidgeUCB` with its
parts; the names and keywords are those of the paper's methods (Neural-σ²-LinUCB is
:func:`ridge_family` with ``variance="range"``). :data:`RIDGE_SPECS` and
:data:`NEURAL_SPECS` state each keyword's type, range and meaning once.
"""

from __future__ import annotations

from typing import Any

from deepbandits.networks.learner import NETWORK_PARAMS
from deepbandits.networks.training import LOSSES
from deepbandits.policies.params import (
    COMMON_SPECS,
    DELTA_SPEC,
    DISCOUNT_DEFAULTS,
    DISCOUNT_SPECS,
    HORIZON_SPEC,
    LAM_SPEC,
    M_SPEC,
    NETWORK_SPECS,
    R_SPEC,
    RANGE_CONFIDENCE_SPEC,
    REFRESH_EVERY_SPEC,
    REWARD_RANGE_SPEC,
    SCHEDULE_SPEC,
    THEORY_ALPHA_SPEC,
    Spec,
)
from deepbandits.policies.parts.explore import UCB, Greedy, InverseGapWeighting
from deepbandits.policies.parts.features import IdentityFeatures, NetworkFeatures
from deepbandits.policies.parts.heads import RidgeHead
from deepbandits.policies.parts.layers import LayeredSearch
from deepbandits.policies.parts.trainer import Trainer
from deepbandits.policies.parts.variance import (
    NoWeighting,
    OracleVariance,
    PredictiveVariance,
    RangeBound,
    ScheduledVariance,
)
from deepbandits.policies.ridge_ucb import RidgeUCB
from deepbandits.policies.space import ALPHA, FEATURE_DIM, HIDDEN, LAM, LR, TRAIN_STEPS

#: The variance source of each ``variance=`` keyword (Section 3, Section 5.5).
VARIANCE_SOURCES: dict[str, Any] = {
    "none": NoWeighting,
    "oracle": OracleVariance,
    "range": RangeBound,
    "mle-var": PredictiveVariance,
    "schedule": ScheduledVariance,
}

#: The exploration rules of ``explore=``: UCB's μ + α·w (Eq. 4; Greedy when α = 0), or
#: inverse gap weighting (SquareCB), whose log supports off-policy evaluation.
EXPLORE_RULES = ("ucb", "igw")
EXPLORE_SPECS: dict[str, Spec] = {
    "explore": Spec(
        "choice",
        "exploration rule: UCB (Eq. 4) or inverse gap weighting (SquareCB)",
        choices=EXPLORE_RULES,
    ),
    **InverseGapWeighting.specs,
}
EXPLORE_DEFAULTS: dict[str, Any] = {
    "explore": "ucb",
    "gamma": InverseGapWeighting.gamma,
    "gamma_exponent": InverseGapWeighting.gamma_exponent,
    "min_propensity": InverseGapWeighting.min_propensity,
}
RIDGE_SPECS: dict[str, Spec] = {
    "alpha": THEORY_ALPHA_SPEC,
    "lam": LAM_SPEC,
    "per_arm": Spec("bool", "one ridge per arm instead of a shared θ"),
    "variance": Spec(
        "choice", "source of σ²ₜ for the weighted ridge", choices=tuple(VARIANCE_SOURCES)
    ),
    "R": R_SPEC,
    "range_confidence": RANGE_CONFIDENCE_SPEC,
    "reward_range": REWARD_RANGE_SPEC,
    "schedule": SCHEDULE_SPEC,
    "horizon": HORIZON_SPEC,
    "delta": DELTA_SPEC,
    "M": M_SPEC,
    "refresh_every": REFRESH_EVERY_SPEC,
    **DISCOUNT_SPECS,
    **EXPLORE_SPECS,
}
RIDGE_DEFAULTS: dict[str, Any] = {
    "alpha": 0.02,
    "lam": 1.0,
    "per_arm": False,
    "variance": "none",
    "R": 1.0,
    "range_confidence": 0.0,
    "reward_range": None,
    "schedule": None,
    "horizon": None,
    "delta": 0.05,
    "M": 1.0,
    "refresh_every": 500,
    **DISCOUNT_DEFAULTS,
    **EXPLORE_DEFAULTS,
}
#: LinUCB and σ²-LinUCB: the ridge on the raw context, with or without an intercept
#: (:class:`~deepbandits.policies.parts.features.IdentityFeatures`; a network has biases of its
#: own). Off by default, as Eq. 4 has none; the classification bandits recommend it
#: (:mod:`deepbandits.envs.settings`).
LINEAR_SPECS: dict[str, Spec] = {**RIDGE_SPECS, **IdentityFeatures.specs}
LINEAR_DEFAULTS: dict[str, Any] = {**RIDGE_DEFAULTS, "intercept": False}
NEURAL_SPECS: dict[str, Spec] = {
    **RIDGE_SPECS,
    **NETWORK_SPECS,
    "feature_dim": Spec("int", "feature dimension d′ of φ", low=1),
    "loss": Spec("choice", "network loss: MSE (Eq. 6) or likelihood (Eq. 14)", choices=LOSSES),
    "refit_on_update": Spec("bool", "refit A and b on the new features after a training"),
    "train_theta": Trainer.specs["train_theta"],
    "lam_warmup": Spec("bool", "scale λ by the mean weight until t₀"),
}
#: The defaults of the ridge-family networks (Neural-LinGreedy, Neural-LinUCB, Neural-σ²-LinUCB,
#: SAVE and their configurations): :data:`NETWORK_PARAMS` but for the schedule
#: ``"neural-linear"`` (trainings of n = 300 steps every 10 rounds before t₀ = 2000, then every
#: 100 rounds; the ``"default"`` schedule's are n = 1000 every 50 rounds) and a weight decay of
#: 0.005 (0 before). Why: without weight decay the network overfits the rounds played, and the
#: regret keeps growing late (h1, T = 10,000: 47 per 1,000 rounds from t = 5,000 on; 9 now).
#: How it was chosen: Neural-σ²-LinUCB on h1, T = 10,000, 28 settings (schedule, steps, weight
#: decay, learning rate, α, λ, d′, per-arm, refit, batch) on the tuning seeds 100–102 (defaults
#: 783.8 ± 128.8). The best all had weight decay with frequent early trainings: 0.01 with a
#: training every round to t₀ = 1000 (50 steps) 280.8 ± 37.6, 0.01 every 10 rounds (300 steps)
#: 316.0 ± 152.5, 0.005 every 10 rounds 341.7 ± 118.1; but weight decay sits near a cliff on
#: h1: 0.03 kills the network on two of the three seeds (3,005 ± 2,345), 0.1 on all (3,932), so
#: 0.005, 6x below it, was taken with the smaller change of schedule. Frequent early training
#: is what makes weight decay safe: 0.01 on the ``"default"`` schedule gave 503.5 ± 242.4, and
#: every 20 rounds 919.1 ± 603.0. Evaluated on seeds 0–4 (the issue's, disjoint from tuning):
#: 665.4 ± 116.0 → 328.5 ± 99.3, 12.9 → 9.6 s per run on one thread (Neural-LinUCB on the tuning
#: seeds: 1,076.4 ± 74.6 → 477.9 ± 65.6). Every setting with its per-seed regrets:
#: ``benchmarks/results/defaults_h1_tuning.csv``. The paper datasets keep their settings
#: (:mod:`deepbandits.envs.settings` pins the schedule and the weight decay), and NeuralUCB,
#: NeuralTS and BootstrappedNN keep :data:`NETWORK_PARAMS`.
NEURAL_DEFAULTS: dict[str, Any] = {
    **RIDGE_DEFAULTS,
    **NETWORK_PARAMS,
    "train_schedule": "neural-linear",
    "weight_decay": 0.005,
    "feature_dim": 20,
    "loss": "mse",
    "refit_on_update": False,
    "train_theta": False,
    "lam_warmup": True,
}
#: SAVE explores by its layered search: no ``explore`` keywords.
SAVE_SPECS: dict[str, Spec] = {
    **{k: v for k, v in NEURAL_SPECS.items() if k not in EXPLORE_SPECS},
    "threshold": LayeredSearch.specs["threshold"],
    "beta_scale": LayeredSearch.specs["beta_scale"],
}
RIDGE_SEARCH = {"alpha": ALPHA, "lam": LAM}
NEURAL_SEARCH = {
    **RIDGE_SEARCH,
    "lr": LR,
    "feature_dim": FEATURE_DIM,
    "hidden": HIDDEN,
    "train_steps": TRAIN_STEPS,
}
_TRAINER_KEYS = [k for k in Trainer.specs if k in NEURAL_SPECS]


def _variance(p: dict[str, Any]) -> Any:
    source = VARIANCE_SOURCES[p["variance"]]
    if source is NoWeighting:
        return NoWeighting()
    if source is ScheduledVariance:
        return ScheduledVariance(p["schedule"], R=p["R"], horizon=p["horizon"])
    if source is RangeBound:
        return RangeBound(R=p["R"], confidence=p["range_confidence"])
    return source(R=p["R"])


def ridge_family(p: dict[str, Any]) -> dict[str, Any]:
    """The parts of LinUCB to Neural-σ²-LinUCB and SAVE from their keywords ``p`` (checked):
    the arguments of :class:`~deepbandits.policies.ridge_ucb.RidgeUCB` but the options every
    policy takes."""
    from deepbandits.errors import InputValueError

    if p["variance"] != "schedule" and p["schedule"] is not None:
        raise InputValueError("schedule is only used with variance='schedule'")
    if p["variance"] != "range" and p["range_confidence"]:
        raise InputValueError(
            f"range_confidence is only used with variance='range'; got "
            f"range_confidence={p['range_confidence']!r} with variance={p['variance']!r}"
        )
    neural = "feature_dim" in p
    head = RidgeHead(
        "per_arm" if p["per_arm"] else "shared",
        p["lam"],
        p["refresh_every"],
        p["discount"],
        p["discount_every"],
    )
    if "threshold" in p:  # SAVE: the head on φ only provides θ for training
        explore: Any = LayeredSearch(
            p["threshold"],
            p["beta_scale"],
            p["R"],
            p["M"],
            p["delta"],
            p["horizon"],
            p["refresh_every"],
        )
    elif p["explore"] == "igw":
        explore = InverseGapWeighting(p["gamma"], p["gamma_exponent"], p["min_propensity"])
    elif p["alpha"] == 0.0:
        explore = Greedy()
    else:
        explore = UCB(p["alpha"], p["delta"], p["M"])
    features: Any = (
        NetworkFeatures(p["feature_dim"], p["hidden"], p["n_layers"], p["device"], p["network"])
        if neural
        else IdentityFeatures(p["intercept"])
    )
    trainer = Trainer(**{k: p[k] for k in _TRAINER_KEYS}) if neural else None
    return {
        "features": features,
        "head": head,
        "variance": _variance(p),
        "explore": explore,
        "trainer": trainer,
        "reward_range": p["reward_range"],
        "horizon": p["horizon"],
    }


def _ridge_recipe(
    name: str,
    class_name: str,
    doc: str,
    specs: dict[str, Spec],
    defaults: dict[str, Any],
    *,
    weighted: bool = False,
    **kwargs: Any,
) -> Any:
    """A ridge-family recipe; ``weighted``: a σ² method (Eq. 9–10), whose ridge is weighted by
    Eq. 13's range bound unless told otherwise and never unweighted."""
    from deepbandits.policies.registry import Recipe

    if weighted:
        defaults = {**defaults, "variance": "range"}
        kwargs["forbidden"] = {"variance": "none"}
    return Recipe(
        name, doc, specs, defaults, RidgeUCB, ridge_family, class_name=class_name, **kwargs
    )


def _class_recipe(
    name: str, cls: type[Any], doc: str, class_name: str | None = None, **kwargs: Any
) -> Any:
    """A recipe for a policy class with keyword parameters of its own."""
    from deepbandits.policies.registry import Recipe

    specs = {k: v for k, v in cls.param_specs.items() if k not in COMMON_SPECS}
    defaults = {k: v for k, v in cls().get_params().items() if k not in COMMON_SPECS}
    search = dict(cls.search_space)
    return Recipe(
        name, doc, specs, defaults, cls, search_space=search, class_name=class_name, **kwargs
    )


def builtin_recipes() -> dict[str, Any]:
    """The sixteen names' ten recipes (the configurations are settings of them)."""
    from deepbandits.policies.bootstrapped import BootstrappedNN
    from deepbandits.policies.kernel_ucb import KernelUCB
    from deepbandits.policies.neural_ucb import NeuralGradientBandit

    neural = {"specs": NEURAL_SPECS, "defaults": NEURAL_DEFAULTS}
    return {
        "linucb": _ridge_recipe(
            "linucb",
            "LinUCB",
            "LinUCB (OFUL), Eq. 4–5 on the raw context",
            LINEAR_SPECS,
            LINEAR_DEFAULTS,
            search_space=RIDGE_SEARCH,
        ),
        "sigma2-linucb": _ridge_recipe(
            "sigma2-linucb",
            "Sigma2LinUCB",
            "σ²-LinUCB: LinUCB with the variance-weighted ridge of Eq. 9–10",
            LINEAR_SPECS,
            LINEAR_DEFAULTS,
            search_space=RIDGE_SEARCH,
            weighted=True,
        ),
        "neural-ucb": _class_recipe(
            "neural-ucb",
            NeuralGradientBandit,
            "NeuralUCB (Zhou et al. 2020)",
            "NeuralUCB",
            fixed={"exploration": "ucb"},
        ),
        "neural-ts": _class_recipe(
            "neural-ts",
            NeuralGradientBandit,
            "NeuralTS (Zhang et al. 2021)",
            "NeuralTS",
            fixed={"exploration": "ts"},
        ),
        "neural-lingreedy": _ridge_recipe(
            "neural-lingreedy",
            "NeuralLinGreedy",
            "Neural-LinGreedy (Xu et al. 2022): greedy on θᵀφ(x; w)",
            **neural,
            search_space=NEURAL_SEARCH,
            fixed={"alpha": 0.0, "variance": "none", "range_confidence": 0.0},
        ),
        "neural-linucb": _ridge_recipe(
            "neural-linucb",
            "NeuralLinUCB",
            "Neural-LinUCB (Xu et al. 2022): UCB on φ(x; w), Eq. 5",
            **neural,
            search_space=NEURAL_SEARCH,
            fixed={"variance": "none", "range_confidence": 0.0},
        ),
        "neural-sigma2-linucb": _ridge_recipe(
            "neural-sigma2-linucb",
            "NeuralSigma2LinUCB",
            "Neural-σ²-LinUCB (Algorithm 1): UCB on φ(x; w), ridge weighted by 1/σ̄²ₜ (Eq. 10, 13)",
            **neural,
            search_space=NEURAL_SEARCH,
            weighted=True,
        ),
        "save-neural-linucb": _ridge_recipe(
            "save-neural-linucb",
            "SaveNeuralLinUCB",
            "SAVE-SupNeural-LinUCB (Appendix B.3): SAVE's layered search on φ(x; w)",
            SAVE_SPECS,
            {
                **{k: v for k, v in NEURAL_DEFAULTS.items() if k not in EXPLORE_SPECS},
                "threshold": None,
                "beta_scale": 1.0,
            },
            search_space=NEURAL_SEARCH,
            fixed={"alpha": 0.0, "variance": "none", "range_confidence": 0.0, "discount": 1.0},
        ),
        "kernel-ucb": _class_recipe("kernel-ucb", KernelUCB, "KernelUCB (Valko et al. 2013)"),
        "bootstrapped-nn": _class_recipe(
            "bootstrapped-nn", BootstrappedNN, "BootstrappedNN (Riquelme et al. 2018)"
        ),
    }
