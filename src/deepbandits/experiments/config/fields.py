"""The value types of config keys: pydantic types and constraints, each with the words an error
message says it expected (its ``description``). A custom validator only says what pydantic
cannot: a specification that builds, items given once, seeds written as a range, ``["all"]``."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)

from deepbandits.envs import CLASSIFICATION_ENVS, ENVS, ClassificationEnv, make_env
from deepbandits.envs.synthetic import REWARD_FUNCTIONS
from deepbandits.errors import DeepBanditsError, InputValueError
from deepbandits.experiments.config.errors import bad
from deepbandits.policies import distinct_policy_names, make_policy
from deepbandits.specs import parse_seeds, parse_spec

#: Policy specification meaning every distinct registered policy
#: (:func:`~deepbandits.policies.distinct_policy_names`).
ALL = "all"


class Table(BaseModel):
    """A table of a config file: unknown keys refused, values never coerced (strict: a TOML
    string is not an integer), the model frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def _distinct(items: list[Any]) -> list[Any]:
    for i, item in enumerate(items):
        if item in items[:i]:
            bad("distinct items (each once)", at=f"[{i}]", got=item, detail="given twice")
    return items


def _seed_range(value: Any) -> Any:
    """Seeds written as text (``"0-4"``, ``"1,3,5"``) as their list; any other value as it is."""
    if not isinstance(value, str):
        return value
    try:
        return parse_seeds(value)
    except InputValueError as e:
        bad(detail=str(e))


def _builds(build: Callable[[str], object]) -> AfterValidator:
    """A specification that ``build`` accepts; its error becomes the detail."""

    def check(spec: str) -> str:
        try:
            build(spec)
        except DeepBanditsError as e:
            bad(detail=str(e))
        return spec

    return AfterValidator(check)


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


def _all_or_each(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """``["all"]`` as it is; any other list checked item by item."""
    return [ALL] if value == [ALL] else handler(value)


def policy_list(specs: list[str] | tuple[str, ...]) -> list[str]:
    """``specs`` with ``["all"]`` expanded to every distinct registered policy."""
    return distinct_policy_names() if list(specs) == [ALL] else list(specs)


def distinct_list(item: Any, description: str, min_length: int = 1) -> Any:
    """The type of a list of ``item`` values (at least ``min_length``), each given once."""
    return Annotated[
        list[item],  # type: ignore[valid-type]
        Field(min_length=min_length, description=description),
        AfterValidator(_distinct),
    ]


Text = Annotated[str, StringConstraints(pattern=r"\S"), Field(description="a non-empty string")]
String = Annotated[str, Field(description="a string")]
Count = Annotated[int, Field(ge=1, description="an integer >= 1")]
Seed = Annotated[int, Field(ge=0, description="an integer >= 0")]
Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False, description="a finite number >= 0")]
AnyTable = Annotated[dict[str, Any], Field(description="a table")]
TextTable = Annotated[dict[str, Text], Field(description="a table")]
TextList = Annotated[list[Text], Field(description="a list")]
DistinctTexts = distinct_list(Text, "a non-empty list of distinct items")
Seeds = Annotated[
    distinct_list(Seed, 'seeds such as "0-4" or "1,3,5", or a list of integers >= 0'),
    BeforeValidator(_seed_range),
]
Checkpoints = distinct_list(Seed, "a list", min_length=0)
PolicySpec = Annotated[
    Text,
    _builds(build_policy),
    Field(description="a policy specification NAME[:key=value,...] that builds"),
]
EnvSpec = Annotated[
    Text, _builds(build_env), Field(description="an environment specification NAME[:key=value,...]")
]
PolicyList = distinct_list(PolicySpec, "a non-empty list of distinct items")
PolicyListOrAll = Annotated[PolicyList, WrapValidator(_all_or_each)]
EnvList = distinct_list(EnvSpec, "a non-empty list of distinct items")
