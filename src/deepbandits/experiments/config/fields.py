"""The value types of config keys, as pydantic annotations: each checks a TOML value and, when
it does not fit, says what was expected (:func:`~deepbandits.experiments.config.errors.bad`),
in the words the error message shows."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict
from pydantic_core import PydanticCustomError

from deepbandits.envs import CLASSIFICATION_ENVS, ENVS, ClassificationEnv, make_env
from deepbandits.envs.synthetic import REWARD_FUNCTIONS
from deepbandits.errors import DeepBanditsError, InputValueError
from deepbandits.experiments.config.errors import Expect, bad, given
from deepbandits.policies import make_policy
from deepbandits.specs import parse_seeds, parse_spec

#: Policy specification meaning every distinct registered policy
#: (:func:`~deepbandits.policies.distinct_policy_names`).
ALL = "all"

Check = Callable[[Any], Any]


class Table(BaseModel):
    """A table of a config file: unknown keys refused, values never coerced (a TOML string is
    not an integer), the model frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)


def key(expected: str, check: Check) -> Any:
    """The annotation of a key whose values ``check`` accepts (and converts); ``expected`` is
    what a missing one says."""
    return Annotated[Any, BeforeValidator(check), Expect(expected)]


def text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        bad("a non-empty string")
    return value


def string(value: Any) -> str:
    if not isinstance(value, str):
        bad("a string")
    return value


def choice(options: tuple[str, ...]) -> Check:
    def check(value: Any) -> str:
        if value not in options:
            bad(f"one of {', '.join(map(repr, options))}")
        return str(value)

    return check


def integer(minimum: int) -> Check:
    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            bad(f"an integer >= {minimum}")
        return value

    return check


def number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        bad("a finite number >= 0")
    if not math.isfinite(value) or value < 0:
        bad("a finite number >= 0")
    return float(value)


def _inside(check: Check, item: Any, at: str) -> Any:
    """``check(item)``, its refusal moved to ``at`` inside the value."""
    try:
        return check(item)
    except PydanticCustomError as e:
        ctx = e.context or {}
        bad(ctx["expected"], at=at + ctx["at"], got=given(ctx, item), detail=ctx["detail"])


def items(check: Check, *, distinct: bool = False, empty: bool = False) -> Check:
    """A list whose items ``check`` accepts (their keys ``[i]``)."""
    what = f"a {'' if empty else 'non-empty '}list{' of distinct items' if distinct else ''}"

    def check_list(value: Any) -> list[Any]:
        if not isinstance(value, list) or (not value and not empty):
            bad(what)
        out: list[Any] = []
        for i, item in enumerate(value):
            out.append(_inside(check, item, f"[{i}]"))
            if distinct and out[-1] in out[:-1]:
                bad(f"{what} (each once)", at=f"[{i}]", got=item, detail="given twice")
        return out

    return check_list


def mapping(check: Check) -> Check:
    """A table whose values ``check`` accepts (their keys ``.name``)."""

    def check_table(value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            bad("a table")
        return {k: _inside(check, v, f".{k}") for k, v in value.items()}

    return check_table


def table(value: Any) -> dict[str, Any]:
    return mapping(lambda v: v)(value)


def seeds(value: Any) -> list[int]:
    if isinstance(value, str):
        try:
            return parse_seeds(value)
        except InputValueError as e:
            bad('seeds such as "0-4" or "1,3,5"', detail=str(e))
    return items(integer(0), distinct=True)(value)


def built(what: str, build: Callable[[str], Any]) -> Check:
    """A specification string that ``build`` accepts; its error becomes the detail."""

    def check(value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            bad(what)
        try:
            build(value)
        except (DeepBanditsError, ValueError, TypeError) as e:
            bad(what, detail=str(e))
        return value

    return check


def build_policy(spec: str) -> None:
    """Build the policy of ``spec`` (its keywords checked)."""
    name, params = parse_spec(spec)
    make_policy(name, **params)


def _keywords(factory: Callable[..., Any], exclude: tuple[str, ...] = ()) -> list[str]:
    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    params = inspect.signature(factory).parameters.items()
    return [k for k, p in params if p.kind in kinds and k not in exclude]


def build_env(spec: str) -> None:
    """Build a synthetic environment; of a dataset, table or array environment only check the
    name and the keywords, so that validation loads no data."""
    name, params = parse_spec(spec)
    if name in REWARD_FUNCTIONS:
        make_env(name, **params)
        return
    if name not in ENVS:
        raise InputValueError(f"unknown environment {name!r}; expected one of {', '.join(ENVS)}")
    allowed = _keywords(ENVS[name])
    if name in CLASSIFICATION_ENVS:
        allowed += _keywords(ClassificationEnv, exclude=("X", "y"))
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise InputValueError(
            f"unknown option(s) {', '.join(map(repr, unknown))} for environment {name!r}; "
            f"valid options: {', '.join(sorted(allowed))}"
        )


policy = built("a policy specification NAME[:key=value,...] that builds", build_policy)
env = built("an environment specification NAME[:key=value,...]", build_env)
env_list = items(env, distinct=True)


def policies(allow_all: bool) -> Check:
    specs = items(policy, distinct=True)

    def check(value: Any) -> list[str]:
        if allow_all and value == [ALL]:
            return [ALL]
        return specs(value)

    return check


def pair(value: Any) -> list[float]:
    if not isinstance(value, list) or len(value) != 2:
        bad("[arm selection seconds, update seconds]")
    return [number(v) for v in value]


Text = key("a non-empty string", text)
String = key("a string", string)
Number = key("a finite number >= 0", number)
Seeds = key('seeds such as "0-4" or "1,3,5", or a list of integers >= 0', seeds)
AnyTable = key("a table", table)


Count = key("an integer >= 1", integer(1))
Seed = key("an integer >= 0", integer(0))
EnvSpec = key("an environment specification NAME[:key=value,...]", env)
EnvList = key("a non-empty list", env_list)
PolicyList = key("a non-empty list of distinct items", policies(allow_all=False))
PolicyListOrAll = key("a non-empty list of distinct items", policies(allow_all=True))
TextList = key("a list", items(text, empty=True))
DistinctTexts = key("a non-empty list", items(text, distinct=True))
TextTable = key("a table", mapping(text))
