"""The files of a service's experiment (:mod:`deepbandits.serve.experiment`): the settings a
state folder is created with (``service.json``'s ``experiment``), and the experiment's state in
a checkpoint (``ckpt-<seq>.experiment.pt``, :mod:`deepbandits.serve.store`): the control's and
the challengers' policies (their ``state_dict``), the lift's tallies, the challengers' sufficient
statistics, and the rounds awaiting their reward or queued for the challengers, as tensors and
plain values read back with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import io
import os
from collections import OrderedDict
from typing import Any

import numpy as np
import torch

from deepbandits.errors import InputValueError
from deepbandits.policies.checkpoint import to_saveable
from deepbandits.policies.registry import policy_from_state
from deepbandits.serve.control import SHARE, check_share, make_control
from deepbandits.serve.experiment import Experiment, Round
from deepbandits.serve.lift import WINDOW
from deepbandits.serve.shadow import Challenger


def experiment_state(experiment: Experiment) -> dict[str, Any]:
    """Everything of ``experiment`` a checkpoint keeps, as tensors and plain values
    (``torch.save``-able, read back with ``weights_only=True``)."""
    rounds = [[i, *_round_state(r)] for i, r in experiment.rounds.items()]
    queue = [_round_state(r) for r in experiment.queue]
    return to_saveable(
        {
            "champion_name": experiment.champion_name,
            "champion_spec": experiment.champion_spec,
            "champion_version": experiment.champion_version,
            "control": None if experiment.control is None else experiment.control.state_dict(),
            "lift": experiment.lift.state(),
            "challengers": [
                {**c.state(), "policy": c.policy.state_dict()}
                for c in experiment.challengers.values()
            ],
            "rounds": rounds,
            "queue": queue,
        }
    )


def load_experiment_state(experiment: Experiment, state: dict[str, Any], source: str) -> None:
    """Inverse of :func:`experiment_state`: ``experiment`` as ``state`` holds it (``source``
    names the file in errors)."""
    state = from_saved(state)
    experiment.champion_name = str(state["champion_name"])
    experiment.champion_spec = str(state["champion_spec"])
    experiment.champion_version = int(state["champion_version"])
    if state["control"] is not None:
        experiment.control = policy_from_state(state["control"], f"{source} (control)")
    experiment.lift.load(state["lift"])
    experiment.challengers = {}
    for saved in state["challengers"]:
        policy = policy_from_state(saved["policy"], f"{source} ({saved['name']})")
        challenger = Challenger(saved["name"], saved["spec"], policy)
        challenger.load(saved)
        experiment.challengers[challenger.name] = challenger
    experiment.rounds = OrderedDict((saved[0], _round_of(saved[1:])) for saved in state["rounds"])
    experiment.queue = [_round_of(saved) for saved in state["queue"]]


def _round_state(r: Round) -> list[Any]:
    extra = {
        "sigma2": r.extra.get("sigma2"),
        "reward_range": None
        if r.extra.get("reward_range") is None
        else list(r.extra["reward_range"]),
    }
    return [r.contexts, r.arm, r.propensity, r.mask, r.reward, extra, r.owner]


def _round_of(saved: list[Any]) -> Round:
    contexts, arm, propensity, mask, reward, extra, owner = saved
    bounds = extra["reward_range"]
    return Round(
        np.asarray(contexts, dtype=np.float64),
        int(arm),
        float(propensity),
        None if mask is None else np.asarray(mask, dtype=bool),
        float(reward),
        {"sigma2": extra["sigma2"], "reward_range": None if bounds is None else tuple(bounds)},
        owner,
    )


def from_saved(obj: Any) -> Any:
    """Tensors of a saved experiment back to arrays, a policy's state (a dict with ``"format"``
    and ``"recipe"``) left as the policy reads it."""
    if isinstance(obj, torch.Tensor):
        return obj.numpy()
    if isinstance(obj, dict):
        if "recipe" in obj and "format" in obj:
            return obj
        return {k: from_saved(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [from_saved(v) for v in obj]
    return obj


def settings_of(control: Any, share: Any, window: Any) -> dict[str, Any] | None:
    """The experiment settings of a new state folder (``service.json``'s ``experiment``),
    checked, with a fresh seed; None without a control. The control's policy is made once to
    check it."""
    if control is None:
        if share is not None:
            raise InputValueError("a control share needs a control (--control SPEC)")
        if window is not None:
            raise InputValueError("a lift window needs a control (--control SPEC)")
        return None
    share = SHARE if share is None else check_share(share)
    window = WINDOW if window is None else window
    if isinstance(window, bool) or not isinstance(window, int) or window < 2:
        raise InputValueError(f"lift window must be an integer >= 2, but {window!r} is given")
    make_control(control, 0)
    seed = int.from_bytes(os.urandom(7), "big")
    return {"control": control, "share": share, "seed": seed, "window": window}


def experiment_of(info: dict[str, Any], saved: bytes | None, max_rounds: int) -> Experiment:
    """The experiment of a state folder described by ``info``, as the checkpoint's experiment
    file ``saved`` holds it (None: as the folder was created)."""
    settings = info.get("experiment") or {}
    experiment = Experiment(
        str(info["policy"]),
        settings.get("control"),
        float(settings.get("share", 0.0)),
        int(settings.get("seed", 0)),
        int(settings.get("window", WINDOW)),
        max_rounds,
    )
    if saved is not None:
        state = torch.load(io.BytesIO(saved), weights_only=True, map_location="cpu")
        load_experiment_state(experiment, state, "the checkpoint's experiment file")
    return experiment


def experiment_bytes(experiment: Experiment) -> bytes:
    """The experiment file's bytes (:func:`experiment_state`, ``torch.save``'s format)."""
    buffer = io.BytesIO()
    torch.save(experiment_state(experiment), buffer)
    return buffer.getvalue()
