"""The networks' optimizers: :class:`PlainSGD` (the default, stepped in place by the explicit
backward pass of :func:`~deepbandits.networks.training.train_feature_map`) and
:class:`torch.optim.Adam`, chosen by name with :func:`make_optimizer`."""

from __future__ import annotations

from typing import Any

import torch

from deepbandits.errors import CheckpointError

#: The names :func:`make_optimizer` takes (the networks' ``optimizer`` parameter).
OPTIMIZERS = ("sgd", "adam")


class PlainSGD:
    """Plain SGD with weight decay, p ← p − lr·(g + weight_decay·p): what the networks train with
    by default. It has no ``step``: :func:`~deepbandits.networks.training.train_feature_map`
    steps the weights in place from its explicit backward pass, with this object's rates.

    It keeps :class:`torch.optim.SGD`'s ``param_groups`` and ``state_dict`` format (one group;
    ``momentum`` 0; no per-parameter state), so checkpoints written with ``torch.optim.SGD``
    load, and it never constructs a ``torch.optim`` optimizer: the first such construction in a
    process imports ``torch._dynamo`` (2.3 s on this project's 2-core machines), which every
    worker process, CLI call and service would otherwise pay for an optimizer whose ``step`` the
    explicit backward pass never calls.
    """

    def __init__(self, params: Any, lr: float, weight_decay: float) -> None:
        self.param_groups: list[dict[str, Any]] = [
            {**_SGD_DEFAULTS, "lr": lr, "weight_decay": weight_decay, "params": list(params)}
        ]

    def state_dict(self) -> dict[str, Any]:
        """``torch.optim.SGD``'s format: no per-parameter state, the groups with their
        parameters as indices."""
        start, groups = 0, []
        for group in self.param_groups:
            n = len(group["params"])
            groups.append({**group, "params": list(range(start, start + n))})
            start += n
        return {"state": {}, "param_groups": groups}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the rates of :meth:`state_dict` (or of a ``torch.optim.SGD`` state dict)."""
        saved = state.get("param_groups", [])
        if len(saved) != len(self.param_groups) or any(
            len(s["params"]) != len(g["params"]) or s.get("momentum", 0) != 0
            for s, g in zip(saved, self.param_groups, strict=False)
        ):
            raise CheckpointError(
                "the saved optimizer state is not plain SGD over this network's "
                f"{sum(len(g['params']) for g in self.param_groups)} parameters"
            )
        for s, g in zip(saved, self.param_groups, strict=True):
            g.update({k: v for k, v in s.items() if k != "params"})


#: The hyperparameters ``torch.optim.SGD`` (torch 2.13) lists in a group beside lr and
#: weight_decay, with the values :class:`PlainSGD` stands for.
_SGD_DEFAULTS: dict[str, Any] = {
    "momentum": 0,
    "dampening": 0,
    "nesterov": False,
    "maximize": False,
    "foreach": True,
    "differentiable": False,
    "fused": None,
}

Optimizer = PlainSGD | torch.optim.Optimizer


def make_optimizer(name: str, params: Any, lr: float, weight_decay: float) -> Optimizer:
    """``"sgd"``: :class:`PlainSGD`; ``"adam"``: :class:`torch.optim.Adam`."""
    if name == "sgd":
        return PlainSGD(params, lr, weight_decay)
    return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay, foreach=True)
