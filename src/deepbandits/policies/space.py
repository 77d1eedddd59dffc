"""Hyperparameter search spaces, declared by each policy class (``search_space``).

A policy class lists its main hyperparameters and their ranges as a class attribute::

    class LinUCB(Policy):
        search_space: ClassVar[dict[str, Param]] = {
            "alpha": log_float(1e-3, 10.0),
            "lam": log_float(1e-2, 100.0),
        }

:func:`deepbandits.experiments.tune.tune` searches them with Optuna. Every name is a constructor
parameter of the class; a preset's ``fixed_params`` (Neural-LinGreedy's ``alpha=0``) are never
searched. This module imports nothing from the rest of the package but its error types, so
policies and the tuner can both import it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from deepbandits.errors import InputValueError

Choice = bool | int | float | str
KINDS = ("float", "int", "categorical")


class Suggester(Protocol):
    """What :meth:`Param.suggest` needs of a trial (an ``optuna.Trial`` has it)."""

    def suggest_float(self, name: str, low: float, high: float, *, log: bool = False) -> float: ...

    def suggest_int(self, name: str, low: int, high: int, *, log: bool = False) -> int: ...

    def suggest_categorical(self, name: str, choices: Any) -> Any: ...


@dataclass(frozen=True)
class Param:
    """One searched hyperparameter.

    Parameters
    ----------
    kind : {"float", "int", "categorical"}
        A real or integer range [``low``, ``high``], or one of ``choices``.
    low, high : float, optional
        Bounds of a ``"float"`` or ``"int"`` range (both included).
    log : bool, default=False
        Sample the range uniformly on a log scale (needs ``low > 0``).
    choices : tuple, optional
        The values of a ``"categorical"`` parameter (booleans, numbers or strings).
    """

    kind: Literal["float", "int", "categorical"]
    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: tuple[Choice, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InputValueError(
                f"kind must be one of {', '.join(KINDS)}, but {self.kind!r} is given"
            )
        if self.kind == "categorical":
            if not self.choices:
                raise InputValueError("a categorical parameter needs at least one choice")
            if self.low is not None or self.high is not None or self.log:
                raise InputValueError("a categorical parameter takes choices, not low/high/log")
            return
        if self.low is None or self.high is None:
            raise InputValueError(f"a {self.kind} parameter needs low and high")
        if not (math.isfinite(self.low) and math.isfinite(self.high) and self.low < self.high):
            raise InputValueError(f"need finite low < high, but low={self.low}, high={self.high}")
        if self.log and self.low <= 0:
            raise InputValueError(f"a log-scale range needs low > 0, but low={self.low}")
        if self.kind == "int" and (self.low != int(self.low) or self.high != int(self.high)):
            raise InputValueError(
                f"an int parameter needs integer bounds, got {self.low}, {self.high}"
            )
        if self.choices:
            raise InputValueError(f"a {self.kind} parameter takes low/high, not choices")

    def suggest(self, trial: Suggester, name: str) -> Choice:
        """The value of this parameter that ``trial`` (an ``optuna.Trial``) proposes."""
        if self.kind == "categorical":
            return trial.suggest_categorical(name, list(self.choices))
        assert self.low is not None and self.high is not None
        if self.kind == "int":
            return trial.suggest_int(name, int(self.low), int(self.high), log=self.log)
        return trial.suggest_float(name, float(self.low), float(self.high), log=self.log)

    def contains(self, value: Any) -> bool:
        """Whether ``value`` lies in this parameter's range (or is one of its choices)."""
        if self.kind == "categorical":
            return value in self.choices
        assert self.low is not None and self.high is not None
        return isinstance(value, int | float) and self.low <= value <= self.high

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description, e.g. ``{"kind": "float", "low": 0.001, "high": 10.0,
        "log": True}``."""
        if self.kind == "categorical":
            return {"kind": self.kind, "choices": list(self.choices)}
        return {"kind": self.kind, "low": self.low, "high": self.high, "log": self.log}


def log_float(low: float, high: float) -> Param:
    """A real parameter sampled log-uniformly in [``low``, ``high``]."""
    return Param("float", low, high, log=True)


def uniform_float(low: float, high: float) -> Param:
    """A real parameter sampled uniformly in [``low``, ``high``]."""
    return Param("float", low, high)


def int_range(low: int, high: int, *, log: bool = False) -> Param:
    """An integer parameter in [``low``, ``high``] (log-uniform with ``log=True``)."""
    return Param("int", low, high, log=log)


def categorical(*choices: Choice) -> Param:
    """A parameter taking one of ``choices``."""
    return Param("categorical", choices=tuple(choices))


#: The ranges the policies share (each class picks the ones its constructor takes).
ALPHA = log_float(1e-3, 10.0)  # exploration rate α (γ, ν)
LAM = log_float(1e-2, 100.0)  # ridge regulariser λ
LR = log_float(1e-3, 1e-1)  # learning rate of the network
FEATURE_DIM = categorical(16, 32, 64)  # feature dimension d′ of φ
HIDDEN = categorical(50, 100, 200)  # hidden width m
TRAIN_STEPS = categorical(250, 500, 1000)  # gradient steps per training


__all__ = [
    "ALPHA",
    "FEATURE_DIM",
    "HIDDEN",
    "LAM",
    "LR",
    "TRAIN_STEPS",
    "Param",
    "Suggester",
    "categorical",
    "int_range",
    "log_float",
    "uniform_float",
]
