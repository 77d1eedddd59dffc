"""Reading files of format 1, written when every registry name was a class of its own.

A format-1 file names its class (``"NeuralSigma2LinUCB"``) and keeps the ridge family's state
flat (``ridge``, ``by_block``, ``learner``, ``torch_gen``, ...). :func:`upgrade` maps the class to
its registry name and that state to the parts' state of format 2, so that old checkpoints load
and continue exactly as they would have.
"""

from __future__ import annotations

import json
from typing import Any

#: The registry name of each class of format 1.
RECIPES_OF_CLASSES: dict[str, str] = {
    "LinUCB": "linucb",
    "Sigma2LinUCB": "sigma2-linucb",
    "NeuralLinGreedy": "neural-lingreedy",
    "NeuralLinUCB": "neural-linucb",
    "NeuralSigma2LinUCB": "neural-sigma2-linucb",
    "SaveNeuralLinUCB": "save-neural-linucb",
    "NeuralUCB": "neural-ucb",
    "NeuralTS": "neural-ts",
    "KernelUCB": "kernel-ucb",
    "BootstrappedNN": "bootstrapped-nn",
}
_RIDGE_FAMILY = {
    "LinUCB",
    "Sigma2LinUCB",
    "NeuralLinGreedy",
    "NeuralLinUCB",
    "NeuralSigma2LinUCB",
    "SaveNeuralLinUCB",
}
_CLASSES_NOW = {"NeuralUCB": "NeuralGradientBandit", "NeuralTS": "NeuralGradientBandit"}


def upgrade(state: dict[str, Any]) -> dict[str, Any]:
    """A format-2 state equal to ``state`` (returned as it is when already format 2)."""
    if state["format"] != 1:
        return state
    old = state["class"]
    if old not in RECIPES_OF_CLASSES:
        return state  # an unknown class: load_policy names it
    new = dict(state, format=2, recipe=RECIPES_OF_CLASSES[old])
    if old in _RIDGE_FAMILY:
        new["class"] = "RidgeUCB"
        params = json.loads(state["params"])
        if state["n_features_in"] is not None:
            new["state"] = _ridge_state(state["state"], params, old == "SaveNeuralLinUCB")
    else:
        new["class"] = _CLASSES_NOW.get(old, old)
    return new


def _ridge_state(old: dict[str, Any], params: dict[str, Any], save: bool) -> dict[str, Any]:
    """The parts' state of a format-1 ridge-family state."""
    by_block = bool(old.get("by_block", False))
    ridge = old["ridge"]
    neural = "learner" in old
    dim = int(ridge["dim"]) if ridge is not None else int(params.get("feature_dim", 0))
    state: dict[str, Any] = {
        "head": {"ridge": ridge, "by_block": by_block, "dim": dim},
        "variance": {},
        "last_sigma2_bar": old["last_sigma2_bar"],
    }
    if neural:
        learner = old["learner"]
        state["features"] = {"network": learner["network"]}
        state["trainer"] = {
            "learner": {k: v for k, v in learner.items() if k != "network"},
            "weight_sum": old.get("weight_sum", 0.0),
        }
        state["torch_gen"] = old["torch_gen"]
    else:
        state["features"] = {"blockwise": by_block}
    state["explore"] = {"layers": old["layers"], "sq_rewards": old["sq_rewards"]} if save else {}
    return state
