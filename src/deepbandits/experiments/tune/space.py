"""What :func:`~deepbandits.experiments.tune.tune` searches for a policy, and how it rounds
what it found."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from deepbandits.experiments.specs import parse_spec
from deepbandits.policies import policy_info
from deepbandits.policies.space import Param

#: Significant digits of a searched real value (what the best specification shows and what every
#: trial runs with).
DIGITS = 4


def search_space(policy_spec: str, search: Sequence[str] | str | None = None) -> dict[str, Param]:
    """The parameters :func:`tune` searches for ``policy_spec``.

    The policy's declared search space (:func:`~deepbandits.policies.policy_info`) without
    the parameters that are fixed: by the policy (:attr:`~deepbandits.policies.PolicyInfo.fixed`:
    Neural-LinGreedy's ``alpha=0``), by a named configuration, or by the specification itself
    (``"linucb:lam=2"`` searches only ``alpha``). ``search`` (names, or one comma-separated
    string) restricts the result to those names.

    Raises
    ------
    ValueError
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
            raise ValueError("search names no parameter")
        unknown = [k for k in names if k not in declared]
        if unknown:
            raise ValueError(
                f"{name} has no searchable parameter {', '.join(map(repr, unknown))}; "
                f"it searches: {', '.join(searchable) or 'nothing'}"
            )
        for key in names:
            if key in fixed:
                raise ValueError(f"cannot search {key!r}: {fixed[key]}")
    if not names:
        raise ValueError(
            f"nothing to search for {policy_spec!r}: {name} declares "
            f"{', '.join(declared) or 'no parameter'}"
            + (f", all fixed ({'; '.join(fixed.values())})" if fixed else "")
        )
    return {k: declared[k] for k in names}


def round_sig(value: float, digits: int = DIGITS) -> float:
    """``value`` rounded to ``digits`` significant digits (``0.031234567`` → ``0.03123``)."""
    return float(f"{value:.{digits}g}")


def rounded(params: dict[str, Any]) -> dict[str, Any]:
    return {
        k: round_sig(v) if isinstance(v, float) and math.isfinite(v) else v
        for k, v in params.items()
    }


__all__ = ["DIGITS", "round_sig", "rounded", "search_space"]
