"""The interface every policy implements, and what they all share.

A policy is built from keyword parameters (stored unchanged, returned by :meth:`Policy.get_params`)
and learns through :meth:`Policy.update`. Its learned state is a ``state_dict`` of arrays and plain
values; :meth:`Policy.save` writes it with ``torch.save`` and :func:`load_policy` reads it back with
``torch.load(weights_only=True)``, so loading a file never executes code.
"""

from __future__ import annotations

import io
import json
from abc import ABC, abstractmethod
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from numpy.typing import ArrayLike, NDArray

from deepbandits._io import write_atomic
from deepbandits._validation import (
    MAX_ABS_INPUT,
    check_arm,
    check_finite_scalar,
    check_positive,
    check_reward_range,
    check_unknown_keys,
)
from deepbandits.encoding import BlockContexts, Contexts, check_contexts
from deepbandits.errors import (
    CheckpointError,
    CheckpointNotFoundError,
    DeepBanditsError,
    InputValueError,
    NumericalError,
)
from deepbandits.policies.params import (
    SEED_SPEC,
    Spec,
    check_param,
    check_search_space,
    merge_specs,
)
from deepbandits.policies.space import Param

FORMAT_VERSION = 1
_CLASSES: dict[str, type[Policy]] = {}


def _to_saveable(obj: Any) -> Any:
    """Arrays become tensors; containers are walked; everything else must be a plain value."""
    if isinstance(obj, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(obj))
    if isinstance(obj, dict):
        return {k: _to_saveable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_to_saveable(v) for v in obj]
    return obj


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, tuple | list):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


class Policy(ABC):
    """Base class of all bandit policies.

    Subclasses implement :meth:`_initialize` (build state once the context dimension is known),
    :meth:`_predict` (mean and exploration width per arm), :meth:`_index` (the score maximised by
    :meth:`select`), :meth:`_learn` and the ``_state``/``_load_state`` pair.

    Every public call is all or nothing: its inputs are validated before any state changes, and a
    call that raises leaves the policy as it was (parameters, learned statistics, context
    dimension, random generator, diagnostics). Subclasses keep that promise by raising only
    before they change learned state.

    Attributes
    ----------
    n_features_in_ : int or None
        Context dimension, inferred from the first contexts seen.
    t_ : int
        Number of rounds learned from.
    last_selection_ : dict
        ``mean`` and ``width`` of every arm scored by the last :meth:`select`.
    last_update_ : dict
        Diagnostics of the last :meth:`update`: ``sigma2`` (σ̄² used as weight), ``sigma2_hat``
        (the Eq. 13 estimate, NaN when not estimated) and ``train_seconds``.
    """

    #: Whether the policy works on :class:`~deepbandits.encoding.BlockContexts` directly; the
    #: others receive the dense matrix they stand for.
    block_contexts: ClassVar[bool] = False
    #: The type, range and meaning of every constructor parameter
    #: (:mod:`deepbandits.policies.params`). A class declares its own; once the class is defined
    #: this holds the specs of its whole hierarchy, with a preset's forbidden options removed.
    param_specs: ClassVar[dict[str, Spec]] = {"seed": SEED_SPEC}
    #: Hyperparameters searched by ``deepbandits tune`` (:mod:`deepbandits.policies.space`),
    #: each inside its parameter's spec.
    search_space: ClassVar[dict[str, Param]] = {}
    #: The reward range a reward must lie in (set from a ``reward_range`` parameter), if any.
    _reward_range: tuple[float, float] | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _CLASSES[cls.__name__] = cls
        specs = merge_specs(cls.__mro__)
        for key, value in getattr(cls, "forbidden_params", {}).items():
            spec = specs[key]
            if spec.kind == "choice":
                specs[key] = replace(spec, choices=tuple(c for c in spec.choices if c != value))
        cls.param_specs = specs
        check_search_space(cls.__name__, specs, cls.search_space)

    def __init__(self, **params: Any) -> None:
        check_unknown_keys(params, self.param_specs, type(self).__name__)
        self._params = params
        self._validate()
        self.reset()

    # ------------------------------------------------------------------ parameters
    def get_params(self) -> dict[str, Any]:
        """The constructor parameters, as given (with the subclass's fixed presets)."""
        return dict(self._params)

    def set_params(self, **params: Any) -> Policy:
        """Change constructor parameters (validated) and :meth:`reset` the policy.

        Only existing parameters may be set; like refitting an estimator after changing its
        parameters, the policy forgets what it learned.
        """
        unknown = sorted(set(params) - set(self._params))
        if unknown:
            raise InputValueError(
                f"{type(self).__name__} has no parameter {unknown[0]!r}; "
                f"parameters: {', '.join(sorted(self._params))}"
            )
        old = dict(self._params)
        self._params.update(params)
        try:
            self._validate()
        except Exception:
            self._params = old
            self._validate()
            raise
        return self.reset()

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._params.items())
        return f"{type(self).__name__}({args})"

    def _validate(self) -> None:
        """Check every parameter against its spec, then the rules that tie them together."""
        p = self._params
        for key, spec in self.param_specs.items():
            p[key] = check_param(key, spec, p[key])
        self._reward_range = p.get("reward_range")
        self._validate_params()

    def _validate_params(self) -> None:
        """Check the rules between parameters (each one alone is checked by its spec), and
        build what they define; raise the library's errors naming the parameters."""
        return None

    # ------------------------------------------------------------------ lifecycle
    def reset(self, seed: int | None = None) -> Policy:
        """Forget everything learned; with ``seed``, also replace the ``seed`` parameter."""
        if seed is not None:
            self._params["seed"] = check_param("seed", self.param_specs["seed"], seed)
        self.n_features_in_: int | None = None
        self.t_ = 0
        self.last_selection_: dict[str, NDArray[np.float64]] = {}
        self.last_update_: dict[str, float] = {}
        self._rng = np.random.default_rng(self._params.get("seed"))
        return self

    def _snapshot(self) -> tuple[Any, ...]:
        """What a failing call may have changed before it raised: the dimension fixed by a first
        call, the round counter and the diagnostics. Learned statistics and the generator are
        never touched before a call's inputs are validated (random draws come last), so they
        need no snapshot; ``tests/test_robustness.py`` checks the whole ``state_dict``."""
        return (self.n_features_in_, self.t_, self.last_selection_, self.last_update_)

    def _restore(self, kept: tuple[Any, ...]) -> None:
        """Undo a failing call: put back what :meth:`_snapshot` recorded."""
        (self.n_features_in_, self.t_, self.last_selection_, self.last_update_) = kept

    def _check(self, contexts: ArrayLike | BlockContexts) -> Contexts:
        X = check_contexts(contexts, self.n_features_in_)
        if isinstance(X, BlockContexts) and not self.block_contexts:
            X = X.dense()
        if self.n_features_in_ is None:
            self.n_features_in_ = X.shape[1]
            self._initialize(X)
        return X

    @abstractmethod
    def _initialize(self, X: Contexts) -> None:
        """Build the learned state once the context dimension is known."""

    # ------------------------------------------------------------------ acting
    def select(self, contexts: ArrayLike) -> int:
        """Index of the arm to play among the rows of ``contexts`` ``[K_t, d]``.

        Ties are broken uniformly at random by the policy's own seeded generator.
        """
        kept = self._snapshot()
        try:
            X = self._check(contexts)
            index = self._index(X)
            top = index.max()
            if np.isnan(top):
                raise NumericalError(
                    f"{type(self).__name__} scored an arm NaN; its state is not finite (contexts "
                    "or rewards too large for its settings?)"
                )
            best = np.flatnonzero(index == top)
            return int(best[0] if len(best) == 1 else self._rng.choice(best))
        except BaseException:
            self._restore(kept)
            raise

    def predict(self, contexts: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Estimated mean reward and exploration width of every arm, each of shape ``[K_t]``.

        The width is the posterior standard deviation of the mean that the policy's UCB index
        multiplies by α (‖φ‖_{A⁻¹} for the ridge policies, ‖g/√m‖_{Z⁻¹} for NeuralUCB/TS, the
        ensemble's spread for BootstrappedNN). Predicting changes no state: it draws no random
        numbers and leaves :attr:`last_selection_` as it was.
        """
        kept = self._snapshot()
        try:
            X = self._check(contexts)
            return self._predict(X)
        except BaseException:
            self._restore(kept)
            raise
        finally:
            self.last_selection_ = kept[2]

    def update(
        self,
        contexts: ArrayLike,
        arm: int,
        reward: float,
        *,
        sigma2: float | None = None,
        reward_range: tuple[float, float] | None = None,
    ) -> None:
        """Learn from the round just played.

        Parameters
        ----------
        contexts : array of shape [K_t, d]
            The contexts the arm was chosen from.
        arm : int
            Index of the arm played.
        reward : float
            Observed reward.
        sigma2 : float, optional
            Oracle bound on this round's noise variance, when the caller has one.
        reward_range : (a, b), optional
            This round's reward range; overrides the policy's ``reward_range`` (dynamic ranges,
            Fig. ab_dynamic (b)). A reward outside the range in force is refused.

        ``_learn`` receives the validated values and the range in force (or None).
        """
        kept = self._snapshot()
        try:
            X = self._check(contexts)
            arm = check_arm(arm, X.shape[0])
            reward = check_finite_scalar(reward, "reward", bound=MAX_ABS_INPUT)
            if sigma2 is not None:
                sigma2 = check_positive(sigma2, "sigma2", allow_zero=True, bound=MAX_ABS_INPUT)
            bounds = (
                check_reward_range(reward_range) if reward_range is not None else self._reward_range
            )
            if bounds is not None and not bounds[0] <= reward <= bounds[1]:
                raise InputValueError(
                    f"reward {reward} is outside the reward range [{bounds[0]}, {bounds[1]}]"
                )
            self.last_update_ = {"sigma2": 1.0, "sigma2_hat": float("nan"), "train_seconds": 0.0}
            self._learn(X, arm, reward, sigma2, bounds)
            self.t_ += 1
        except BaseException:
            self._restore(kept)
            raise

    @abstractmethod
    def _index(self, X: Contexts) -> NDArray[np.float64]: ...

    @abstractmethod
    def _predict(self, X: Contexts) -> tuple[NDArray[np.float64], NDArray[np.float64]]: ...

    @abstractmethod
    def _learn(
        self,
        X: NDArray[np.float64],
        arm: int,
        reward: float,
        sigma2: float | None,
        reward_range: tuple[float, float] | None,
    ) -> None: ...

    # ------------------------------------------------------------------ state
    @abstractmethod
    def _state(self) -> dict[str, Any]:
        """Learned state (arrays and plain values) once initialised."""

    @abstractmethod
    def _load_state(self, state: dict[str, Any]) -> None: ...

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly where this policy is."""
        return {
            "format": FORMAT_VERSION,
            "class": type(self).__name__,
            "params": json.dumps(_jsonable(self._params)),
            "rng": json.dumps(self._rng.bit_generator.state),
            "t": self.t_,
            "n_features_in": self.n_features_in_,
            "state": self._state() if self.n_features_in_ is not None else {},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state produced by :meth:`state_dict` of a policy with the same parameters.

        The state is checked against its schema (format version, class, parameter names and
        values, round counter, generator state) and the saved parameters against this policy's
        (``device`` may differ); anything that does not fit raises
        :class:`~deepbandits.errors.CheckpointError` and leaves this policy as it was.
        """
        check_checkpoint(state)
        here = type(self).__name__
        if state["class"] != here:
            raise CheckpointError(
                f"state was saved from {state['class']!r}, cannot load into {here}"
            )
        mine = json.loads(json.dumps(_jsonable(self._params)))
        # a parameter added since the state was saved takes its default (older files load)
        defaults = json.loads(json.dumps(_jsonable(type(self)().get_params())))
        saved = {**{k: v for k, v in defaults.items() if k in mine}, **json.loads(state["params"])}
        differ = sorted(
            k for k in set(saved) | set(mine) if k != "device" and saved.get(k) != mine.get(k)
        )
        if differ:
            detail = "; ".join(f"{k}: saved {saved.get(k)!r}, here {mine.get(k)!r}" for k in differ)
            raise CheckpointError(
                f"state was saved by a {here} with other parameters ({detail}); build the policy "
                "with the saved parameters, or use load_policy"
            )
        before = dict(self.__dict__)
        try:
            self.reset()
            self._rng.bit_generator.state = json.loads(state["rng"])
            if state["n_features_in"] is not None:
                self.n_features_in_ = int(state["n_features_in"])
                self._initialize(np.zeros((1, self.n_features_in_)))
                self._load_state(state["state"])
            self.t_ = int(state["t"])
        except Exception as exc:
            self.__dict__.clear()
            self.__dict__.update(before)
            if isinstance(exc, DeepBanditsError):
                raise
            raise CheckpointError(
                f"the saved state of this {here} is damaged or incomplete: "
                f"{type(exc).__name__}: {exc}"
            ) from None

    def save(self, path: str | Path) -> None:
        """Write parameters and learned state to ``path`` (tensors + JSON, no code).

        The file is written atomically: a kill during a save leaves the previous file intact.
        """
        buffer = io.BytesIO()
        torch.save(_to_saveable(self.state_dict()), buffer)
        write_atomic(path, buffer.getvalue())

    @classmethod
    def load(cls, path: str | Path) -> Policy:
        """Read a policy written by :meth:`save`; the file is parsed with ``weights_only=True``."""
        policy = load_policy(path)
        if not isinstance(policy, cls):
            raise CheckpointError(f"{path} holds a {type(policy).__name__}, not a {cls.__name__}")
        return policy


#: The keys of a saved state and their types (the schema of format version 1).
_SCHEMA: dict[str, type | tuple[type, ...]] = {
    "format": int,
    "class": str,
    "params": str,
    "rng": str,
    "t": int,
    "n_features_in": (int, type(None)),
    "state": dict,
}


def check_checkpoint(state: Any) -> None:
    """Check a saved state against the schema: keys, types, format version, JSON fields."""
    if not isinstance(state, dict):
        raise CheckpointError(f"a saved state must be a dict, but {type(state).__name__} is given")
    missing = sorted(set(_SCHEMA) - set(state))
    if missing:
        raise CheckpointError(f"the saved state lacks {', '.join(missing)}")
    for key, kind in _SCHEMA.items():
        if isinstance(state[key], bool) or not isinstance(state[key], kind):
            raise CheckpointError(
                f"the saved state's {key!r} must be {kind}, but {state[key]!r} is given"
            )
    if state["format"] != FORMAT_VERSION:
        raise CheckpointError(
            f"the saved state has format {state['format']}; this version reads format "
            f"{FORMAT_VERSION}"
        )
    if state["t"] < 0 or (state["n_features_in"] is not None and state["n_features_in"] < 1):
        raise CheckpointError(
            f"the saved state has t={state['t']}, n_features_in={state['n_features_in']}"
        )
    for key in ("params", "rng"):
        try:
            value = json.loads(state[key])
        except json.JSONDecodeError as exc:
            raise CheckpointError(f"the saved state's {key!r} is not valid JSON: {exc}") from None
        if not isinstance(value, dict):
            raise CheckpointError(f"the saved state's {key!r} must be a JSON object")


def load_policy(path: str | Path) -> Policy:
    """Rebuild any policy saved by :meth:`Policy.save`; damaged files raise
    :class:`~deepbandits.errors.CheckpointError`."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointNotFoundError(f"no saved policy at {path}")
    try:
        state = torch.load(path, weights_only=True, map_location="cpu")
    except Exception as exc:
        raise CheckpointError(f"{path} is not a deepbandits policy file: {exc}") from None
    try:
        check_checkpoint(state)
    except CheckpointError as exc:
        raise CheckpointError(f"{path} is not a valid deepbandits policy file: {exc}") from None
    cls = _CLASSES.get(state["class"])
    if cls is None:
        raise CheckpointError(f"{path} holds an unknown policy class {state['class']!r}")
    try:
        policy = cls(**json.loads(state["params"]))
    except (DeepBanditsError, TypeError, ValueError) as exc:
        raise CheckpointError(f"{path} holds invalid {cls.__name__} parameters: {exc}") from None
    try:
        policy.load_state_dict(state)
    except CheckpointError as exc:
        raise CheckpointError(f"{path}: {exc}") from None
    return policy


class Preset:
    """Mixin for a named variant of a policy class: parameters it defaults and parameters it fixes.

    ``preset_params`` are defaults the user may override; ``fixed_params`` define the variant
    (Neural-LinGreedy is ``alpha=0``) and may not be changed; ``forbidden_params`` lists values
    that would turn the variant into another one.
    """

    preset_params: ClassVar[dict[str, Any]] = {}
    fixed_params: ClassVar[dict[str, Any]] = {}
    forbidden_params: ClassVar[dict[str, Any]] = {}

    def __init__(self, **params: Any) -> None:
        self._check_preset(params)
        super().__init__(**{**self.preset_params, **params, **self.fixed_params})

    def _check_preset(self, params: dict[str, Any]) -> None:
        name = type(self).__name__
        for key, value in self.fixed_params.items():
            if key in params and params[key] != value:
                raise InputValueError(f"{name} fixes {key}={value!r}, but {params[key]!r} is given")
        for key, value in self.forbidden_params.items():
            if params.get(key) == value:
                raise InputValueError(f"{name} does not allow {key}={value!r}")

    def set_params(self, **params: Any) -> Any:
        self._check_preset(params)
        return super().set_params(**params)  # type: ignore[misc]
