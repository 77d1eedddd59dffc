"""What an off-policy estimator is: one object (:class:`Estimator`), its hyperparameters its
fields, reading the per-round :class:`Terms` of a (log, policy) pair.

An estimator implements :meth:`Estimator.estimate_weighted`: its estimate on resamples of the
rounds given as count vectors (a row of ones is the log itself), which is all the bootstrap of
:func:`~deepbandits.ope.bootstrap.bootstrap_intervals` needs. Most estimators in use are sums of
ratios of column means (:class:`RatioEstimator`: IPS, SNIPS, DM, the DR family; a
:class:`MeanEstimator` is the mean of one per-round term): they name their per-round columns
and ratios instead, so that one resample of one table of every column
serves all of them at once. A column's name says what it holds, its parameters included
(``"switch-dr[tau=10]"``), so that estimators sharing a column (``"w"``) share it and those
with other parameters do not.

Writing a new estimator is one class: a frozen dataclass subclass of :class:`Estimator` (or of
:class:`RatioEstimator`) with ``short``, ``title`` and, when it reads a reward model,
``needs_model = True``; :func:`register_estimator` makes its short name one of
:data:`ESTIMATORS`, accepted by :func:`~deepbandits.ope.evaluate.evaluate` and the command line
(``--estimators "ips,switch-dr:tau=10"``).
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np
from numpy.typing import NDArray

from deepbandits._validation import check_unknown_keys
from deepbandits.errors import InputTypeError, InputValueError
from deepbandits.specs import parse_spec, with_params

if TYPE_CHECKING:
    from deepbandits.logs.bandit import LoggedBandit

Array = NDArray[np.float64]
E = TypeVar("E", bound="type[Estimator]")


@dataclass(frozen=True)
class Terms:
    """What the estimators read of a log and an evaluation policy π, per round.

    Attributes
    ----------
    rewards : ndarray ``[n]``
        rₜ.
    w : ndarray ``[n]``
        Importance weights wₜ = π(aₜ | xₜ) / π₀(aₜ | xₜ).
    dm : ndarray ``[n]`` or None
        q̂(xₜ, π) = Σₐ π(a | xₜ) q̂(xₜ, a), the direct method's term (None without a model).
    q_logged : ndarray ``[n]`` or None
        q̂(xₜ, aₜ), the model's prediction of the logged action (None without a model).
    action_dist : ndarray ``[n, K]`` or None
        π(· | xₜ) of every arm, for estimators that read more than the logged arm's weight
        (MIPS's marginal weights, balanced IPW's classifier).
    log : LoggedBandit or None
        The log itself, for estimators that read its contexts, action features or logging
        distribution.
    """

    rewards: Array
    w: Array
    dm: Array | None = None
    q_logged: Array | None = None
    action_dist: Array | None = None
    log: LoggedBandit | None = None

    def __len__(self) -> int:
        return len(self.rewards)

    def model(self, estimator: Estimator) -> tuple[Array, Array]:
        """(q̂(xₜ, π), rₜ − q̂(xₜ, aₜ)) for ``estimator``, which needs a reward model."""
        if self.dm is None or self.q_logged is None:
            raise InputValueError(
                f"{estimator.title} needs a reward model: give reward_model= or q_hat="
            )
        return self.dm, self.rewards - self.q_logged

    def logged(self, estimator: Estimator) -> tuple[LoggedBandit, Array]:
        """(the log, π(· | xₜ) ``[n, K]``) for ``estimator``, which reads them."""
        if self.log is None or self.action_dist is None:
            raise InputValueError(
                f"{estimator.title} reads the log and the policy's distribution of every arm: "
                "evaluate(log, policy, ...) gives them"
            )
        return self.log, self.action_dist


@dataclass(frozen=True)
class Estimator(ABC):
    """An off-policy estimator of V(π) = E_x E_{a∼π(·|x)}[r]; its hyperparameters are its
    fields (checked in ``__post_init__``), as ``get_params`` returns them.

    Subclasses set ``short`` (the registry name), ``display`` (the name in tables),
    ``needs_model`` and implement :meth:`estimate_weighted`.
    """

    short: ClassVar[str]
    display: ClassVar[str]
    #: Whether the estimator reads the reward model (``Terms.dm``, ``Terms.q_logged``).
    needs_model: ClassVar[bool] = False
    #: Whether ``estimators="all"`` includes it (not for one whose defaults repeat another, nor
    #: for one that needs what most logs lack or fits a model of its own: asked for by name).
    in_all: ClassVar[bool] = True

    def get_params(self) -> dict[str, Any]:
        """The hyperparameters, by name (scikit-learn's convention)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @property
    def label(self) -> str:
        """The short name, with the hyperparameters that differ from the defaults in the
        specification syntax (``"switch-dr:tau=10.0"``, which :func:`make_estimator` reads
        back): the ``estimator`` column of a table."""
        changed = {k: list(v) if isinstance(v, tuple) else v for k, v in _changed(self).items()}
        return with_params(self.short, changed)

    @property
    def title(self) -> str:
        """The display name, with the hyperparameters that differ from the defaults."""
        changed = "; ".join(f"{k}={_shown(v)}" for k, v in _changed(self).items())
        return f"{self.display} ({changed})" if changed else self.display

    def describe(self, terms: Terms) -> str:
        """The name in a table of results on ``terms``: the :attr:`title`, and what the
        estimator chose from the data where it chose something."""
        return self.title

    def estimate(self, terms: Terms) -> float:
        """The estimate on the log itself."""
        return float(self.estimate_weighted(terms, np.ones((1, len(terms))))[0])

    @abstractmethod
    def estimate_weighted(self, terms: Terms, counts: Array) -> Array:
        """The estimate on each resample ``counts`` ``[B, n]`` (how often each round is drawn):
        ``[B]``, NaN where a resample leaves it undefined."""


@dataclass(frozen=True)
class RatioEstimator(Estimator):
    """An estimator that is Σ over its :meth:`ratios` of (Σₜ numerator column) / (Σₜ
    denominator column): it names its per-round :meth:`columns`, and the bootstrap resamples one
    table of every such estimator's columns at once."""

    @abstractmethod
    def columns(self, terms: Terms) -> dict[str, Array]:
        """The per-round columns ``[n]`` of its ratios, by name (a name that says what the
        column holds, parameters included: equal names must hold equal columns). The column
        ``"one"`` (1 on every round: its sum is the number of rounds) is always there."""

    @abstractmethod
    def ratios(self) -> tuple[tuple[str, str], ...]:
        """(numerator, denominator) column names; the estimate is the sum of their ratios."""

    def from_sums(self, sums: Mapping[str, Array]) -> Array:
        """The estimate from column sums (``[B]`` each: the log's, or every resample's)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return sum(sums[num] / sums[den] for num, den in self.ratios())  # type: ignore[return-value]

    def estimate_weighted(self, terms: Terms, counts: Array) -> Array:
        columns = ratio_columns([self], terms)
        return self.from_sums({name: counts @ column for name, column in columns.items()})


@dataclass(frozen=True)
class MeanEstimator(RatioEstimator):
    """An estimator that is the mean of one per-round :meth:`term` (most of the DR family): its
    column is named by its label, so estimators of other settings keep other columns."""

    @abstractmethod
    def term(self, terms: Terms) -> Array:
        """The per-round term ``[n]`` whose mean is the estimate."""

    def columns(self, terms: Terms) -> dict[str, Array]:
        return {f"[{self.label}]": self.term(terms)}

    def ratios(self) -> tuple[tuple[str, str], ...]:
        return ((f"[{self.label}]", "one"),)


def ratio_columns(estimators: Sequence[RatioEstimator], terms: Terms) -> dict[str, Array]:
    """Every column the ratio ``estimators`` name, each once (columns of one name are equal),
    and ``"one"``; a ratio that names a column none of them gives is an
    :class:`~deepbandits.errors.InputValueError` naming the estimator."""
    out: dict[str, Array] = {"one": np.ones(len(terms))}
    for estimator in estimators:
        for name, column in estimator.columns(terms).items():
            out.setdefault(name, column)
    for estimator in estimators:
        for pair in estimator.ratios():
            missing = [name for name in pair if name not in out]
            if missing:
                raise InputValueError(
                    f"{type(estimator).__name__}.ratios() names the column {missing[0]!r}, "
                    f"which its columns() does not give (it gives {', '.join(out)})"
                )
    return out


def _shown(value: Any) -> str:
    if isinstance(value, tuple | list):
        return "[" + ", ".join(map(_shown, value)) + "]"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _changed(estimator: Estimator) -> dict[str, Any]:
    """The hyperparameters of ``estimator`` that differ from its class's defaults."""
    out = {}
    for f in dataclasses.fields(estimator):
        value = getattr(estimator, f.name)
        if f.default is dataclasses.MISSING or value != f.default:
            out[f.name] = value
    return out


#: Estimator classes by short name (:func:`register_estimator`), in table order.
ESTIMATORS: dict[str, type[Estimator]] = {}


def register_estimator(cls: E) -> E:
    """Class decorator: make ``cls.short`` a name of :data:`ESTIMATORS`."""
    if not (isinstance(cls, type) and issubclass(cls, Estimator)):
        raise InputTypeError(f"an estimator must subclass Estimator, but {cls!r} is given")
    if cls.short in ESTIMATORS and ESTIMATORS[cls.short] is not cls:
        raise InputValueError(f"an estimator named {cls.short!r} is registered already")
    ESTIMATORS[cls.short] = cls
    return cls


def make_estimator(spec: str, **defaults: Any) -> Estimator:
    """The estimator of a specification, ``"dr-os"`` or ``"switch-dr:tau=10"``; ``defaults``
    are hyperparameters taken where the specification gives none and the class has them."""
    name, params = parse_spec(spec)
    if name not in ESTIMATORS:
        raise InputValueError(
            f"unknown estimator(s) {name!r}; expected 'all' or some of {', '.join(ESTIMATORS)}"
        )
    cls = ESTIMATORS[name]
    known = {f.name for f in dataclasses.fields(cls)}
    if params and not known:
        raise InputValueError(
            f"estimator {name!r} takes no settings, but {', '.join(map(repr, params))} given"
        )
    check_unknown_keys(params, known, f"estimator {name!r}")
    return cls(**{**{k: v for k, v in defaults.items() if k in known}, **params})


def check_estimators(
    estimators: str | Estimator | Sequence[str | Estimator], **defaults: Any
) -> list[Estimator]:
    """``"all"``, one specification or estimator, or a list of them, as estimators (in the
    order given; ``"all"``: every registered one in table order but those whose defaults repeat
    another, ``sg-ips`` and ``sg-dr`` at λ = 0, and those asked for by name, ``mips``,
    ``snmips`` and ``bipw``). Two with the same label are refused: the table names each row by
    it."""
    if isinstance(estimators, str | Estimator):
        given: list[Any] = (
            [name for name, cls in ESTIMATORS.items() if cls.in_all]
            if estimators == "all"
            else [estimators]
        )
    else:
        given = list(estimators)
    if not given:
        raise InputValueError(
            f"unknown estimator(s) (none given); expected 'all' or some of {', '.join(ESTIMATORS)}"
        )
    out: list[Estimator] = []
    for item in given:
        if isinstance(item, Estimator):
            out.append(item)
        elif isinstance(item, str):
            out.append(make_estimator(item, **defaults))
        else:
            raise InputTypeError(
                "estimators must be names, specifications or Estimator objects, but a "
                f"{type(item).__name__} is given"
            )
    labels = [e.label for e in out]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise InputValueError(f"estimator {twice[0]!r} is given twice; give each once")
    return out
