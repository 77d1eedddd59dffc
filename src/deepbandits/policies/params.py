"""Declared constructor parameters: each one's type, range and meaning, stated once.

Every policy class declares ``param_specs``, a dict of :class:`Spec` by parameter name (merged
along the class hierarchy, so a subclass states only its own). One table serves three readers:

* validation: a policy (:class:`~deepbandits.policies.Policy`) checks every parameter with
  :func:`check_param` (the library's errors, naming the parameter, what was expected and what was
  given), and a part (:class:`~deepbandits.policies.parts.Part`) its fields against its
  ``specs`` the same way; a class's ``_check_parts`` keeps only the rules that tie parameters
  or parts together;
* help: :func:`render_spec` writes a spec as text (``"float > 0"``, ``"None or int >= 1"``),
  shown by ``deepbandits list --params NAME``;
* the tuner: :func:`check_search_space` refuses, when the class is defined, a ``search_space``
  range that reaches outside its parameter's spec.

This module imports only the validation helpers, the error types and the option tuples of the
network modules, so every policy module may import it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from deepbandits._validation import (
    check_bool,
    check_choice,
    check_finite_scalar,
    check_int,
    check_real,
    check_reward_range,
)
from deepbandits.errors import DeepBanditsError, InputTypeError, InputValueError
from deepbandits.networks.conv import NETWORKS
from deepbandits.networks.optimizer import OPTIMIZERS
from deepbandits.networks.schedule import SCHEDULES
from deepbandits.policies.space import Param

Kind = Literal["real", "int", "bool", "choice", "str", "pair", "schedule"]
KINDS: tuple[str, ...] = ("real", "int", "bool", "choice", "str", "pair", "schedule")


@dataclass(frozen=True)
class Spec:
    """The type and range of one constructor parameter.

    Parameters
    ----------
    kind : {"real", "int", "bool", "choice", "str", "pair", "schedule"}
        A real number, an integer, a flag, one of ``choices``, any string (a torch device), a
        pair ``(a, b)`` with a < b (a reward range), or a σ² schedule (a string such as
        ``"linear:1:0"`` or a sequence of numbers; its content is checked by the policy).
    doc : str
        One line saying what the parameter does.
    low, high : float, optional
        Bounds of a ``"real"`` or ``"int"`` parameter (None: unbounded on that side).
    low_inclusive, high_inclusive : bool, default=True
        Whether each bound is allowed itself.
    choices : tuple of str
        The values of a ``"choice"`` parameter; for a ``"real"`` one, strings accepted besides
        numbers (``alpha="theory"``).
    optional : bool, default=False
        Whether ``None`` is allowed.
    """

    kind: Kind
    doc: str
    low: float | None = None
    high: float | None = None
    low_inclusive: bool = True
    high_inclusive: bool = True
    choices: tuple[str, ...] = ()
    optional: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InputValueError(
                f"kind must be one of {', '.join(KINDS)}, but {self.kind!r} is given"
            )
        if self.kind == "choice" and not self.choices:
            raise InputValueError("a choice parameter needs at least one choice")
        if self.kind not in ("real", "choice") and self.choices:
            raise InputValueError(f"a {self.kind} parameter takes no choices")
        bounded = self.low is not None or self.high is not None
        if bounded and self.kind not in ("real", "int"):
            raise InputValueError(f"a {self.kind} parameter takes no bounds")
        if self.low is not None and self.high is not None and not self.low < self.high:
            raise InputValueError(f"need low < high, but low={self.low}, high={self.high}")


def _number(x: float) -> str:
    """A bound as written in a message: ``0.001``, ``1``, ``2**63``."""
    if isinstance(x, int) and x >= 2**32 and x & (x - 1) == 0:
        return f"2**{x.bit_length() - 1}"
    return f"{x:g}" if isinstance(x, float) else str(x)


def render_bounds(spec: Spec) -> str:
    """The range of a numeric spec: ``"> 0"``, ``">= 1"``, ``"in (0, 1)"``, or ``""``."""
    low, high = spec.low, spec.high
    if low is not None and high is not None:
        left = "[" if spec.low_inclusive else "("
        right = "]" if spec.high_inclusive else ")"
        return f"in {left}{_number(low)}, {_number(high)}{right}"
    if low is not None:
        return f"{'>=' if spec.low_inclusive else '>'} {_number(low)}"
    if high is not None:
        return f"{'<=' if spec.high_inclusive else '<'} {_number(high)}"
    return ""


def render_spec(spec: Spec) -> str:
    """A spec as help text: ``"float > 0"``, ``"float >= 0 or 'theory'"``, ``"None or int >= 1"``,
    ``"one of 'mse', 'mle'"``."""
    choices = ", ".join(map(repr, spec.choices))
    if spec.kind in ("real", "int"):
        text = " ".join(
            filter(None, ("float" if spec.kind == "real" else "int", render_bounds(spec)))
        )
        if spec.choices:
            text += f" or {choices}"
    else:
        text = {
            "bool": "bool",
            "choice": f"one of {choices}",
            "str": "str",
            "pair": "pair (a, b) with a < b",
            "schedule": "str or sequence of float",
        }[spec.kind]
    return f"None or {text}" if spec.optional else text


def _check_bounds(name: str, spec: Spec, number: float, value: Any) -> None:
    """Refuse ``number`` (the checked form of the given ``value``) outside the spec's bounds."""
    low, high = spec.low, spec.high
    low_ok = low is None or (number >= low if spec.low_inclusive else number > low)
    high_ok = high is None or (number <= high if spec.high_inclusive else number < high)
    if not (low_ok and high_ok):
        raise InputValueError(f"{name} must be {render_bounds(spec)}, but {value!r} is given")


def check_param(name: str, spec: Spec, value: Any) -> Any:
    """Validate ``value`` of parameter ``name`` against ``spec``; return the value to store.

    The value is returned as given, except a pair, which becomes a tuple of floats (a list read
    from JSON or the command line becomes ``(a, b)``). A value of the wrong type raises
    :class:`~deepbandits.errors.InputTypeError` (or ``InputValueError`` for an unknown option),
    one out of range :class:`~deepbandits.errors.InputValueError`; each message names the
    parameter, what was expected and what was given.
    """
    if value is None and spec.optional:
        return None
    if spec.kind == "real":
        if isinstance(value, str) and spec.choices:
            if value not in spec.choices:
                raise InputValueError(
                    f"{name} must be a number {render_bounds(spec)} or "
                    f"{', '.join(map(repr, spec.choices))}, but {value!r} is given"
                )
            return value
        _check_bounds(name, spec, check_finite_scalar(value, name), value)
    elif spec.kind == "int":
        _check_bounds(name, spec, check_int(value, name, minimum=-math.inf), value)
    elif spec.kind == "bool":
        check_bool(value, name)
    elif spec.kind == "choice":
        check_choice(value, name, spec.choices)
    elif spec.kind == "str":
        if not isinstance(value, str):
            raise InputTypeError(f"{name} must be a string, but {value!r} is given")
    elif spec.kind == "pair":
        return check_reward_range(value)
    elif not isinstance(value, str):  # a schedule: a string or a sequence of numbers
        if isinstance(value, bytes | dict) or not hasattr(value, "__len__"):
            raise InputTypeError(
                f"{name} must be a string or a sequence of numbers, but {value!r} is given"
            )
        for i, v in enumerate(value):
            check_real(v, f"{name}[{i}]")
    return value


def accepts(spec: Spec, value: Any) -> bool:
    """Whether :func:`check_param` accepts ``value``."""
    try:
        check_param("value", spec, value)
    except DeepBanditsError:
        return False
    return True


def given_params(
    frame: dict[str, Any], rest: str, defaults: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The keywords a policy's constructor was called with, from its ``locals()`` (taken first
    thing): its named parameters in order, then ``defaults``, then what it collected in
    ``**rest``. A constructor passes them on to :class:`~deepbandits.policies.policy.Policy`
    without writing each keyword a second time."""
    named = {k: v for k, v in frame.items() if k not in ("self", "__class__", rest)}
    return {**named, **(defaults or {}), **frame[rest]}


def check_search_space(owner: str, specs: Mapping[str, Spec], space: Mapping[str, Param]) -> None:
    """Refuse a search space that names an undeclared parameter or reaches outside its spec:
    a float range on a real spec, an int range on an int spec, every bound or choice accepted."""
    for name, param in space.items():
        spec = specs.get(name)
        if spec is None:
            raise InputValueError(f"{owner} searches {name!r}, which is not a parameter")
        if param.kind == "categorical":
            values: tuple[Any, ...] = param.choices
            kind_ok = True
        else:
            values = (param.low, param.high)
            kind_ok = spec.kind == ("real" if param.kind == "float" else "int")
            if param.kind == "int":
                values = tuple(int(v) for v in values if v is not None)
        if not kind_ok or not all(accepts(spec, v) for v in values):
            raise InputValueError(
                f"{owner} searches {name} over {param.describe()}, outside its spec "
                f"{render_spec(spec)!r}"
            )


#: Specs shared by several policy classes (each class picks the ones it takes).
SEED_SPEC = Spec(
    "int",
    "seed of the policy's generators (None: fresh entropy)",
    low=0,
    high=2**63,
    high_inclusive=False,
    optional=True,
)
ALPHA_SPEC = Spec("real", "exploration rate α", low=0)
LAM_SPEC = Spec("real", "ridge regulariser λ", low=0, low_inclusive=False)
REFRESH_EVERY_SPEC = Spec("int", "rank-one updates between exact re-inversions", low=1)

R_SPEC = Spec("real", "noise bound R (variance floor R²/d′)", low=0, low_inclusive=False)
HORIZON_SPEC = Spec("int", "number of rounds T (set by the runner)", low=1, optional=True)
RANGE_CONFIDENCE_SPEC = Spec(
    "real", "variance='range': σ̂² at the μ within c·√(φᵀA⁻¹φ) of μ̂ where it is largest", low=0
)
SCHEDULE_SPEC = Spec(
    "schedule", "σ²ₜ for variance='schedule': 'linear:START:END[:T]' or values", optional=True
)
REWARD_RANGE_SPEC = Spec(
    "pair", "reward range (a, b); rewards outside it are refused", optional=True
)
DELTA_SPEC = Spec(
    "real", "δ of Theorem 4.1", low=0, high=1, low_inclusive=False, high_inclusive=False
)
M_SPEC = Spec("real", "bound M ≥ ‖θ*‖ of Theorem 4.1", low=0)
THEORY_ALPHA_SPEC = Spec(
    "real", "exploration rate α, or 'theory' for Theorem 4.1", low=0, choices=("theory",)
)

#: The options of every policy for live use: exploration floor and the pending-decision table
#: (:mod:`deepbandits.policies.decision`), with their defaults.
DECISION_SPECS: dict[str, Spec] = {
    "epsilon": Spec(
        "real",
        "exploration floor ε: a uniformly drawn available arm with probability ε",
        low=0,
        high=1,
    ),
    "reward_timeout": Spec(
        "real",
        "age after which a pending decision expires (None: never)",
        low=0,
        low_inclusive=False,
        optional=True,
    ),
    "timeout_unit": Spec(
        "choice",
        "reward_timeout counted in decisions made since, or in seconds",
        choices=("decisions", "seconds"),
    ),
    "max_pending": Spec("int", "most decisions awaiting their reward", low=1),
    "max_pending_bytes": Spec(
        "int", "most bytes the arrays of the decisions awaiting their reward take", low=1
    ),
    "when_full": Spec(
        "choice",
        "a decision when max_pending await (or max_pending_bytes are held): expire the "
        "oldest, or refuse",
        choices=("expire-oldest", "refuse"),
    ),
    "threads": Spec(
        "int",
        "torch threads of a decision or reward (None: torch's setting); trainings use torch's",
        low=1,
        optional=True,
    ),
}
DECISION_DEFAULTS: dict[str, Any] = {
    "epsilon": 0.0,
    "reward_timeout": None,
    "timeout_unit": "decisions",
    "max_pending": 100_000,
    "max_pending_bytes": 2**30,
    "when_full": "expire-oldest",
    "threads": 1,
}
#: The keywords of every policy: its seed and the options for live use.
COMMON_SPECS: dict[str, Spec] = {"seed": SEED_SPEC, **DECISION_SPECS}
#: Forgetting for drifting data, on the policies whose statistics are sums (ridge heads).
DISCOUNT_SPECS: dict[str, Spec] = {
    "discount": Spec(
        "real",
        "γ: every discount_every rewards, statistics shrink to prior + γ·(data)",
        low=0,
        high=1,
        low_inclusive=False,
    ),
    "discount_every": Spec("int", "rewards learned between two discounts", low=1),
}
DISCOUNT_DEFAULTS: dict[str, Any] = {"discount": 1.0, "discount_every": 100}

#: The parameters of every network (``NETWORK_PARAMS`` of :mod:`deepbandits.networks.learner`).
NETWORK_SPECS: dict[str, Spec] = {
    "network": Spec(
        "choice",
        "architecture: perceptron, or a LeNet-5 trunk on image contexts first",
        choices=NETWORKS,
    ),
    "hidden": Spec("int", "width m of the hidden layers", low=1),
    "n_layers": Spec("int", "number of layers L", low=1),
    "train_schedule": Spec("choice", "named training schedule", choices=tuple(SCHEDULES)),
    "train_every": Spec(
        "int", "H: rounds between trainings (schedule's if None)", low=1, optional=True
    ),
    "train_start": Spec("int", "t₀: round of the first regular training", low=0, optional=True),
    "warmup_every": Spec(
        "int", "rounds between trainings before t₀ (0: none)", low=0, optional=True
    ),
    "train_steps": Spec("int", "gradient steps per training", low=0, optional=True),
    "batch_size": Spec("int", "minibatch size", low=1, optional=True),
    "warmup_steps": Spec(
        "int", "gradient steps per training before t₀ (train_steps if None)", low=0, optional=True
    ),
    "warmup_batch_size": Spec(
        "int",
        "minibatch size of the trainings before t₀ (batch_size if None)",
        low=1,
        optional=True,
    ),
    "warmup_lr": Spec(
        "real",
        "learning rate of the trainings before t₀ (lr if None)",
        low=0,
        low_inclusive=False,
        optional=True,
    ),
    "optimizer": Spec("choice", "optimizer of the network", choices=OPTIMIZERS),
    "lr": Spec("real", "learning rate", low=0, low_inclusive=False),
    "weight_decay": Spec("real", "L2 weight decay", low=0),
    "max_grad_norm": Spec(
        "real",
        "clip each gradient to this L2 norm (None: no clipping)",
        low=0,
        low_inclusive=False,
        optional=True,
    ),
    "max_history": Spec("int", "most rounds kept for training (None: all)", low=1, optional=True),
    "device": Spec("str", "torch device of the network ('cpu' or 'cuda')"),
}


__all__ = [
    "ALPHA_SPEC",
    "DECISION_DEFAULTS",
    "DECISION_SPECS",
    "DELTA_SPEC",
    "DISCOUNT_DEFAULTS",
    "DISCOUNT_SPECS",
    "HORIZON_SPEC",
    "LAM_SPEC",
    "M_SPEC",
    "NETWORK_SPECS",
    "RANGE_CONFIDENCE_SPEC",
    "REFRESH_EVERY_SPEC",
    "REWARD_RANGE_SPEC",
    "R_SPEC",
    "SCHEDULE_SPEC",
    "SEED_SPEC",
    "THEORY_ALPHA_SPEC",
    "Spec",
    "accepts",
    "check_param",
    "check_search_space",
    "render_bounds",
    "render_spec",
]
