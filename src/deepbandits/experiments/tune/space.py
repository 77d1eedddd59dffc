"""What :func:`~deepbandits.experiments.tune.tune` searches for a policy, and how it rounds
what it found."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from deepbandits.errors import InputValueError
from deepbandits.policies import policy_info
from deepbandits.policies.space import Param
from deepbandits.specs import parse_spec

#: Significant digits of a searched real value (what the best specification shows and what every
#: trial runs with).
DIGITS = 4


def search_space(policy_spec: str, search: Sequence[str] | str | None = None) -> dict[str, Param]:
    """The parameters :func:`~deepbandits.experiments.tune.tune` searches for ``policy_spec``.

    The policy's declared search space (:func:`~deepbandits.policies.policy_info`) without
    the parameters that are fixed: by the policy (:attr:`~deepbandits.policies.PolicyInfo.fixed`:
    Neural-LinGreedy's ``alpha=0``), by a named configuration, or by the specification itself
    (``"linucb:lam=2"`` searches only ``alpha``). ``search`` (names, or one comma-separated
    string) restricts the result to those names.

    Raises
    ------
    InputValueError
        For an unknown policy, a ``search`` name the policy does not declare or that is fixed,
        or when nothing is left to search.
    """
    name, given = parse_spec(policy_spec)
    info = policy_info(name)
    declared = info.search_space  # each inside its spec (the policy checks)
    fixed: dict[str, str] = {}
    for key in declared:
        if key in info.fixed:
            fixed[key] = f"{name} fixes {key}={info.fixed[key]!r}"
        elif key in given:
            fixed[key] = f"the specification sets {key}={given[key]!r}"
        elif key in info.settings:
            fixed[key] = f"configuration {name!r} sets {key}={info.settings[key]!r}"
    searchable = [k for k in declared if k not in fixed]
    if search is None:
        names = searchable
    else:
        if isinstance(search, str):
            search = [s.strip() for s in search.split(",") if s.strip()]
        names = list(dict.fromkeys(search))
        if not names:
            raise InputValueError("search names no parameter")
        unknown = [k for k in names if k not in declared]
        if unknown:
            raise InputValueError(
                f"{name} has no searchable parameter {', '.join(map(repr, unknown))}; "
                f"it searches: {', '.join(searchable) or 'nothing'}"
            )
        for key in names:
            if key in fixed:
                raise InputValueError(f"cannot search {key!r}: {fixed[key]}")
    if not names:
        raise InputValueError(
            f"nothing to search for {policy_spec!r}: {name} declares "
            f"{', '.join(declared) or 'no parameter'}"
            + (f", all fixed ({'; '.join(fixed.values())})" if fixed else "")
        )
    return {k: declared[k] for k in names}


def _widened(param: Param, value: Any) -> Param | None:
    """``param`` grown to contain ``value`` (a choice added, a bound moved), or None when it
    cannot hold it (a value of another kind, or a log-scale range and a value <= 0)."""
    if param.kind == "categorical":
        if not isinstance(value, bool | int | float | str):
            return None
        choices = (*param.choices, value)
        if all(isinstance(c, int | float) and not isinstance(c, bool) for c in choices):
            choices = tuple(sorted(choices))  # type: ignore[type-var]
        return replace(param, choices=choices)
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    if not numeric or not math.isfinite(value) or (param.kind == "int" and value != int(value)):
        return None
    if param.log and value <= 0:
        return None
    assert param.low is not None and param.high is not None
    return replace(param, low=min(param.low, value), high=max(param.high, value))


def covering(
    space: Mapping[str, Param], untuned: Mapping[str, Any]
) -> tuple[dict[str, Param], dict[str, Any]]:
    """``space`` widened so that it contains the untuned value of every parameter, and the
    values that were outside it.

    The study's first trial is the untuned setting (:func:`~deepbandits.experiments.tune.tune`),
    so that the best setting is never worse than it on the tuning seeds; a default outside the
    declared space (``feature_dim=20`` against the choices 16, 32, 64) would otherwise be left
    out. A categorical parameter gains the value as a choice, a range moves its bound.

    Raises
    ------
    InputValueError
        When an untuned value cannot join its parameter's space (a value <= 0 for a log-scale
        range, or a value of another kind); the message names the parameter.
    """
    out, widened = {}, {}
    for key, param in space.items():
        value = untuned.get(key)
        if param.contains(value):
            out[key] = param
            continue
        grown = _widened(param, value)
        if grown is None:
            raise InputValueError(
                f"the untuned value of {key!r}, {value!r}, lies outside its search space "
                f"{param.describe()} and cannot join it, so the untuned setting could not be "
                f"the first trial: set {key} in the specification, or leave it out of search"
            )
        out[key], widened[key] = grown, value
    return out, widened


def round_sig(value: float, digits: int = DIGITS) -> float:
    """``value`` rounded to ``digits`` significant digits (``0.031234567`` → ``0.03123``)."""
    return float(f"{value:.{digits}g}")


def rounded(params: dict[str, Any]) -> dict[str, Any]:
    return {
        k: round_sig(v) if isinstance(v, float) and math.isfinite(v) else v
        for k, v in params.items()
    }


__all__ = ["DIGITS", "covering", "round_sig", "rounded", "search_space"]
